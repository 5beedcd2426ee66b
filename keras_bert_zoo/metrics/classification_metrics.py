"""GLUE's evaluation metrics, on numpy arrays."""

import numpy as np

from keras_bert_zoo.metrics.scored_set_size import warn_if_too_few


def accuracy(labels, predictions):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    return float((labels == predictions).mean())


def binary_f1(labels, predictions, positive=1):
    """F1 of the positive class (MRPC, QQP)."""
    labels, predictions = np.asarray(labels) == positive, np.asarray(predictions) == positive
    tp = float((labels & predictions).sum())
    precision = tp / max(predictions.sum(), 1)
    recall = tp / max(labels.sum(), 1)
    return 0.0 if tp == 0 else float(2 * precision * recall / (precision + recall))


def macro_f1(labels, predictions, num_classes):
    """Mean of per-class F1 (SciBERT's citation-intent and ChemProt report it)."""
    return float(np.mean([binary_f1(labels, predictions, c) for c in range(num_classes)]))


def matthews_corrcoef(labels, predictions):
    """Matthews correlation of binary labels (CoLA)."""
    y, p = np.asarray(labels) == 1, np.asarray(predictions) == 1
    tp, tn = float((y & p).sum()), float((~y & ~p).sum())
    fp, fn = float((~y & p).sum()), float((y & ~p).sum())
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return 0.0 if denominator == 0 else float((tp * tn - fp * fn) / denominator)


def pearson(x, y):
    x, y = np.asarray(x, "float64"), np.asarray(y, "float64")
    return float(np.corrcoef(x, y)[0, 1])


def spearman(x, y):
    """Pearson correlation of the ranks (ties get their average rank)."""

    def ranks(v):
        v = np.asarray(v, "float64")
        order = np.argsort(v, kind="mergesort")
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        for value in np.unique(v):  # average ranks of ties
            tied = v == value
            r[tied] = r[tied].mean()
        return r

    return pearson(ranks(x), ranks(y))


def classification_report(labels, predictions, num_classes, positive=1):
    """Accuracy plus the F1 / MCC figures GLUE and SciBERT report; two classes' `f1` is that of class id
    `positive`."""
    warn_if_too_few(len(labels), num_classes)
    report = {"accuracy": accuracy(labels, predictions), "macro_f1": macro_f1(labels, predictions, num_classes)}
    if num_classes == 2:
        report["f1"] = binary_f1(labels, predictions, positive)
        report["mcc"] = matthews_corrcoef(labels, predictions)
    return report


def multi_label_report(labels, predictions):
    """Multi-hot `[n, num_classes]` labels and predictions: per-label `accuracy` (Keras' binary accuracy),
    `exact_match` (every label of an example right), `micro_f1` (over all label decisions) and `macro_f1`
    (mean of the labels' F1)."""
    labels, predictions = np.asarray(labels) == 1, np.asarray(predictions) == 1
    warn_if_too_few(len(labels), labels.shape[1])
    columns = range(labels.shape[1])
    return {
        "accuracy": float((labels == predictions).mean()),
        "exact_match": float((labels == predictions).all(axis=1).mean()),
        "micro_f1": binary_f1(labels.ravel(), predictions.ravel(), True),
        "macro_f1": float(np.mean([binary_f1(labels[:, c], predictions[:, c], True) for c in columns])),
    }


def regression_report(labels, predictions):
    warn_if_too_few(len(labels))
    predictions = np.asarray(predictions).reshape(-1)
    return {
        "pearson": pearson(labels, predictions),
        "spearman": spearman(labels, predictions),
        "mse": float(np.mean((np.asarray(labels) - predictions) ** 2)),
    }
