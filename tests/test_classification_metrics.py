"""GLUE metrics against hand-computed values."""

import warnings

import pytest

from keras_bert_zoo.metrics import classification_metrics as m


def test_binary_metrics_hand_computed():
    labels = [1, 1, 1, 0, 0, 0, 1, 0]
    preds = [1, 1, 0, 0, 1, 0, 1, 0]
    # tp=3 fp=1 fn=1 tn=3
    assert m.accuracy(labels, preds) == 0.75
    assert m.binary_f1(labels, preds) == pytest.approx(0.75)
    assert m.matthews_corrcoef(labels, preds) == pytest.approx((9 - 1) / 16)


def test_mcc_degenerate_is_zero():
    assert m.matthews_corrcoef([1, 0, 1], [1, 1, 1]) == 0.0


def test_correlations():
    assert m.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert m.spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)
    # Ties take their average rank: ranks [0.5, 0.5, 2] vs [0, 1, 2].
    assert m.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(0.8660254, abs=1e-6)


def test_macro_f1():
    assert m.macro_f1([0, 1, 2, 2], [0, 1, 2, 1], 3) == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)


def _warnings_of(score, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = score(*args)
    return report, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


ADVICE = ": scores on so few say little about the model; score a larger held-out set."


def test_a_set_too_small_to_score_warns_once_naming_the_count():
    """A held-out set of one example scored F1 = 1.0 (or 0.0) without a word."""
    report, caught = _warnings_of(m.classification_report, [1], [1], 2)
    assert caught == ["Scoring 1 example, fewer than the 2 classes" + ADVICE]
    assert report["f1"] == 1.0 and report["accuracy"] == 1.0  # still scored
    # Fewer examples than classes: a class without one scores F1 0 in the macro average (here (1 + 1 + 0) / 3).
    report, caught = _warnings_of(m.classification_report, [0, 1], [0, 1], 3)
    assert caught == ["Scoring 2 examples, fewer than the 3 classes" + ADVICE]
    assert report["macro_f1"] == pytest.approx(2 / 3)
    _, caught = _warnings_of(m.multi_label_report, [[1, 0, 1], [0, 1, 0]], [[1, 0, 1], [0, 1, 0]])
    assert caught == ["Scoring 2 examples, fewer than the 3 classes" + ADVICE]
    _, caught = _warnings_of(m.regression_report, [0.5], [0.4])
    assert caught == ["Scoring 1 example" + ADVICE]
    # One of each class, or two examples of a regression: no warning.
    for score, args in ((m.classification_report, ([0, 1], [1, 1], 2)), (m.regression_report, ([0.5, 1], [0, 2])),
                        (m.multi_label_report, ([[1, 0], [0, 1]], [[1, 0], [1, 1]]))):
        assert _warnings_of(score, *args)[1] == [], score.__name__
