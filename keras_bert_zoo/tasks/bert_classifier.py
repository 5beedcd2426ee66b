"""Sentence and sentence-pair classification (and regression) on [CLS]."""

import re
import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert_zoo.data.classification_examples import ClassificationExamples
from keras_bert_zoo.export.classifier_signatures import classifier_signatures
from keras_bert_zoo.metrics.classification_metrics import classification_report
from keras_bert_zoo.metrics.classification_metrics import multi_label_report
from keras_bert_zoo.metrics.classification_metrics import regression_report
from keras_bert_zoo.preprocessing.special_tokens import special_token_count
from keras_bert_zoo.preprocessing.strided_windows import window_starts
from keras_bert_zoo.tasks.class_labels import ambiguous_number
from keras_bert_zoo.tasks.class_labels import check_label_names
from keras_bert_zoo.tasks.class_labels import check_label_tensor
from keras_bert_zoo.tasks.class_labels import class_index
from keras_bert_zoo.tasks.class_labels import class_labels
from keras_bert_zoo.tasks.class_labels import misnumbered_class
from keras_bert_zoo.tasks.class_labels import positive_class
from keras_bert_zoo.tasks.class_labels import unreadable_label
from keras_bert_zoo.tasks.task import Task
from keras_bert_zoo.tokenizers.text_inputs import check_texts

PROBLEM_TYPES = ("multi_class", "multi_label", "regression")


def _one_pair_hint(x, expected_pairs):
    """A tuple of two strings is a batch of two single texts, as Keras reads a tuple: not one pair."""
    if expected_pairs and isinstance(x, tuple) and len(x) == 2 and all(isinstance(t, (str, bytes)) for t in x):
        return " A tuple of two strings is two single texts; one pair is a list of one: [(text_a, text_b)]."
    return ""


def text_form_name(pairs):
    """How messages name a classifier's examples: "sentence pairs" or "single texts"."""
    return "sentence pairs" if pairs else "single texts"


class _StepSeen(keras.callbacks.Callback):
    """Whether `fit` finished a train step."""

    def __init__(self):
        super().__init__()
        self.seen = False

    def on_train_batch_end(self, batch, logs=None):
        self.seen = True


def _class_ids_as_text(label_names):
    """Whether a reader's names are class ids written as text ("0", "2"; or none: regression), which a
    classifier without names reads as those ids, not by the file's names."""
    return label_names is None or all(re.fullmatch("[0-9]+", name) for name in label_names)


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertClassifier(Task):
    """BERT's classifier: dropout + dense on the pooled `[CLS]` vector.

    Args:
        backbone: a `BertBackbone`.
        preprocessor: a `BertPreprocessor` (texts or pairs -> packed ids).
        num_classes: number of classes (of targets, for regression).
        problem_type: `"multi_class"` (softmax, integer labels),
            `"multi_label"` (sigmoid per class, multi-hot labels) or
            `"regression"` (raw outputs, mean squared error; STS-B style).
        dropout: dropout rate before the output layer (BERT: 0.1).
        threshold: probability above which a multi-label class is predicted.
        label_names: optional class names for `predict_labels`.
        text_pairs: whether the examples are `(text_a, text_b)` pairs
            (True) or single texts (False); None: not known yet. `fit` on
            texts or pairs sets it, and from then on `evaluate`, `predict`
            and the export take only that form: an SST-2 model given
            sentence pairs, or an MRPC model single sentences, would
            answer with numbers that mean nothing. Set it to None to accept
            either.

    Examples:
    >>> clf = BertClassifier.from_preset("minilm_l6_h384_en_uncased",
    ...                                  num_classes=2, sequence_length=32)
    >>> clf.predict_proba([("He said hi.", "He greeted them.")]).shape
    (1, 2)
    >>> clf.predict((["He said hi."], ["He greeted them."])).shape  # two columns
    (1, 2)
    """

    def __init__(
        self,
        backbone,
        preprocessor,
        num_classes=None,
        problem_type="multi_class",
        dropout=0.1,
        threshold=0.5,
        label_names=None,
        text_pairs=None,
        **kwargs,
    ):
        if problem_type not in PROBLEM_TYPES:
            raise ValueError(f"problem_type must be one of {PROBLEM_TYPES}; got '{problem_type}'.")
        if num_classes is None:  # Python's own message named a missing argument, not what to give
            count = "" if label_names is None or isinstance(label_names, (str, bytes)) else \
                f" (num_classes={len(label_names)} for the {len(label_names)} label_names given)"
            raise ValueError(f"BertClassifier needs num_classes: the number of classes (of targets, for regression)"
                             f"{count}.")
        if not isinstance(num_classes, (int, np.integer)) or num_classes < 1:
            raise ValueError(f"num_classes must be a positive integer; got {num_classes!r}.")
        if problem_type == "multi_class" and num_classes == 1:
            # A softmax over one class is 1.0 whatever the input.
            raise ValueError(
                "num_classes=1 with problem_type='multi_class' would predict that one class for every input. "
                "Use num_classes=2 for a yes/no task, problem_type='regression' for one score, or "
                "problem_type='multi_label' for one independent yes/no."
            )
        label_names = check_label_names(label_names)
        if label_names is not None and len(label_names) != num_classes:
            raise ValueError(f"{len(label_names)} label_names for num_classes={num_classes}.")
        if label_names is not None and len(set(label_names)) != len(label_names):
            repeated = sorted({n for n in label_names if list(label_names).count(n) > 1}, key=str)
            raise ValueError(f"label_names must be distinct; {repeated} appear more than once.")
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        self.output_dense = self.logits_layer(backbone, num_classes)

        # === Functional Model ===
        inputs = self.backbone_inputs(backbone)
        # No positions but [CLS]'s: the last layer runs on [CLS] alone, all the head reads of it.
        pooled = backbone(inputs, positions=inputs["token_ids"][:, :0])["pooled_output"]
        logits = self.output_dense(self.output_dropout(pooled))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.problem_type = problem_type
        self.dropout = dropout
        self.threshold = threshold
        self.label_names = list(label_names) if label_names is not None else None
        self.text_pairs = text_pairs
        self._fitting_form = None  # during fit: whether it trains on pairs (see `training_starts`)
        self.compile()

    @property
    def output_layer(self):
        """The dense layer of the logits (a fine-tuned checkpoint's head loads into it)."""
        return self.output_dense

    @classmethod
    def head_arguments(cls, head, units):
        # One output and no problem type: a regression, as transformers reads a one-label head.
        problem_type = head.problem_type or ("regression" if units == 1 else "multi_class")
        names = None if problem_type == "regression" else head.names(units)
        return {"num_classes": units, "problem_type": problem_type, "label_names": names, **head.dropout_argument()}

    @property
    def text_pairs(self):
        """Whether the classifier takes `(text_a, text_b)` pairs (True),
        single texts (False) or either (None); see the class docstring."""
        return self._text_pairs

    @text_pairs.setter
    def text_pairs(self, value):
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"text_pairs must be True, False or None; got {value!r}.")
        self._text_pairs = None if value is None else bool(value)

    def _expected_form(self):
        # While fit prepares its data, the form it trains on; otherwise the one recorded.
        return self._fitting_form if self._fitting_form is not None else self.text_pairs

    def takes_pairs_now(self):
        return self._expected_form() is not False

    def weighed_classes(self):
        if self.problem_type != "multi_class":
            return None
        return self.label_names, self.num_classes, class_index(self.label_names, self.num_classes)

    def takes_text_labels(self, labeled=True):
        # fit / evaluate read text as class_labels.class_index does: names, or (multi_class) ids as text, names or
        # none. predict drops a label: only names tell it from a pair's text_b, which was dropped in silence.
        return self.label_names is not None or labeled and self.problem_type == "multi_class"

    def check_example_form(self, x, labeled=True):
        """Refuse single texts to a classifier trained on pairs, and pairs to
        one trained on single texts (during `fit`: of the form it is given)."""
        expected = self._expected_form()
        pairs = self.examples_are_pairs(x, labeled)
        if pairs is None or expected is None or pairs == expected:
            return
        during_fit = self._fitting_form is not None
        raise ValueError(
            (f"fit trains this classifier on {text_form_name(expected)} but its validation data are "
             f"{text_form_name(pairs)}." if during_fit else
             f"This classifier was fine-tuned on {text_form_name(expected)} (text_pairs={expected}) but is given "
             f"{text_form_name(pairs)}: its outputs would mean nothing. Pass "
             + ("(text_a, text_b) pairs" if expected else "single texts")
             + ", as it was trained; to use it on either regardless, set its text_pairs = None (in Python)."
             + _one_pair_hint(x, expected))
        )

    def fit(self, x=None, y=None, *args, **kwargs):
        """`Task.fit`; fitting on texts or pairs records which in `text_pairs`
        once training starts (a warning where that changes it). A classifier
        without `label_names` fitted on a reader's result takes its names."""
        previous_names = self.label_names
        self._adopt_label_names(x)
        x, y = self.standardize_examples(x, y)
        self._fitting_form, previous = self.examples_are_pairs(x, labeled=True), self.text_pairs
        steps = _StepSeen()
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), steps]
        try:
            return super().fit(x, y, *args, **kwargs)
        except BaseException:
            if not steps.seen:  # stopped before a step (a Dataset's label is checked in the graph)
                self.text_pairs, self.label_names = previous, previous_names
            raise
        finally:
            self._fitting_form = None

    def _adopt_label_names(self, examples):
        """Take the names of a reader's result that `fit` trains a classifier without names on: its ids count
        them, and without them a later file of another set of names (a dev file without one class) was read by
        its own ids, scored against other classes in silence, and the saved model answered ids. Names that are
        class ids as text ("0", "1") stay ids (see `standardize_examples`)."""
        if not isinstance(examples, ClassificationExamples) or self.label_names is not None \
                or _class_ids_as_text(examples.label_names):
            return
        if len(examples.label_names) != self.num_classes:
            raise ValueError(
                f"{examples.source + ' holds' if examples.source else 'The examples hold'} "
                f"{len(examples.label_names)} labels {examples.label_names} but the classifier has "
                f"num_classes={self.num_classes}: give it label_names=[...] of all its classes, in the order of "
                "its outputs.")
        self.label_names = list(examples.label_names)

    def training_starts(self):
        pairs, previous = self._fitting_form, self.text_pairs
        if pairs is None:
            return
        if previous is not None and pairs != previous:
            warnings.warn(f"This classifier was fine-tuned on {text_form_name(previous)}; fit now trains it on "
                          f"{text_form_name(pairs)}, which it will take from now on (text_pairs={pairs}).",
                          stacklevel=4)
        self.text_pairs = pairs

    def default_loss(self):
        if self.problem_type == "multi_class":
            return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if self.problem_type == "multi_label":
            return keras.losses.BinaryCrossentropy(from_logits=True)
        return keras.losses.MeanSquaredError()

    def default_metrics(self):
        if self.problem_type == "multi_class":
            return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        if self.problem_type == "multi_label":
            # On logits, probability threshold p is logit log(p / (1 - p)).
            return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=float(np.log(self.threshold / (1 - self.threshold))))]
        return [keras.metrics.MeanAbsoluteError(name="mae")]

    def standardize_examples(self, x, y=None):
        """`Task.standardize_examples`; a reader's labels by name (its `y`, read as `class_labels.class_index`
        reads them), as they are unpacked: the reader's ids count the names of its one file, sorted as text, so
        they are no class ids of the classifier (a GLUE file's "0" / "1" were read by position against the names
        ["1", "0"]; a file's "2" was class 4 among "0".."11" ("10" sorts before "2"), and class 1 of a file
        without a "1"; multi-label rows as well). Names that are no class ids, to a classifier without names
        of its own, keep the reader's ids: there are no names to match them to (`fit` gives it the names
        first). A result labelled with names the classifier does not read is refused, naming both lists."""
        if isinstance(x, ClassificationExamples) and y is None and self.label_names is None \
                and not _class_ids_as_text(x.label_names):
            x, y = x.texts, x.labels
        elif isinstance(x, ClassificationExamples) and None not in (self.label_names, x.label_names):
            self._check_names_read(x)
        return super().standardize_examples(x, y)

    def _check_names_read(self, examples):
        """Refuse a reader's result labelled with names the classifier does not read, naming both lists."""
        readable = class_index(self.label_names, self.num_classes)
        for index, label in enumerate(examples.named_labels()):
            unknown = [name for name in (label if isinstance(label, list) else [label]) if str(name) not in readable]
            if unknown:
                what = f"Example {index}'s label" + (" name" if isinstance(label, list) else "") + f" {unknown[0]!r}"
                error = unreadable_label(what, self.label_names, self.num_classes)
                raise ValueError(f"{examples.source + ': ' if examples.source else ''}{error} The data's labels are "
                                 f"{examples.label_names}.")

    def check_dataset_labels(self, spec):
        # Numbers against names that are other numbers, as in memory (`class_labels.misnumbered_class`).
        if self.problem_type == "multi_class" and misnumbered_class(self.label_names) \
                and isinstance(spec, tf.TensorSpec) and spec.dtype != tf.string:
            raise ambiguous_number(f"A label of the Dataset, a number ({spec.dtype.name}),", self.label_names,
                                   "`ds.map(lambda x, y, *w: (x, tf.strings.as_string(y), *w))`")

    def packed_dataset_labels(self, y):
        # Labels in a structure ((y,), {"logits": y}) pass as they are, as Keras reads them.
        if isinstance(y, tf.Tensor):
            return check_label_tensor(y, self.problem_type, self.num_classes, self.label_names)
        return y

    def prepare_labels(self, y):
        """Labels as the loss takes them, checked (see `class_labels`)."""
        return class_labels(y, self.problem_type, self.num_classes, self.label_names)

    def preprocess(self, x, y=None, sample_weight=None):
        # Labels of a tf.data input can only be checked as they stream by.
        if y is not None:
            y = check_label_tensor(y, self.problem_type, self.num_classes, self.label_names)
        return super().preprocess(x, y, sample_weight)

    def predict_windowed(self, texts, batch_size=32, doc_stride=None, stride=None):
        """Logits of single texts of any length: a text longer than the
        window is read as overlapping windows (`doc_stride` pieces apart,
        half a window by default) whose logits are averaged.

        Args:
            texts: a list of strings (pairs are packed and truncated as usual).
            doc_stride: word-pieces between window starts.
            stride: the old name of `doc_stride` (deprecated).

        Returns:
            `[len(texts), num_classes]` logits.
        """
        texts = check_texts(texts)
        if any(isinstance(t, (tuple, list)) for t in texts):
            return self.predict(texts, batch_size=batch_size)
        self.check_example_form(texts)
        tokenizer = self.preprocessor.tokenizer
        window = self.preprocessor.sequence_length - special_token_count(1)
        if stride is not None:
            warnings.warn("predict_windowed's `stride` is now `doc_stride` (as in every task); `stride` will be "
                          "removed in the next release.", DeprecationWarning, stacklevel=2)
            doc_stride = doc_stride or stride
        stride = doc_stride or max(window // 2, 1)
        rows, owners = [], []
        for index, pieces in enumerate(tokenizer(list(texts)).to_list()):
            for start in window_starts(len(pieces), window, stride):
                rows.append([tokenizer.cls_token_id] + pieces[start : start + window] + [tokenizer.sep_token_id])
                owners.append(index)
        length = self.preprocessor.sequence_length
        ids = np.full((len(rows), length), tokenizer.pad_token_id, "int32")
        mask = np.zeros((len(rows), length), "int32")
        for i, row in enumerate(rows):
            ids[i, : len(row)], mask[i, : len(row)] = row, 1
        packed = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
        logits = self.predict(packed, batch_size=batch_size)
        sums = np.zeros((len(texts), logits.shape[-1]), "float32")
        np.add.at(sums, owners, logits)
        return sums / np.bincount(owners, minlength=len(texts))[:, None].astype(sums.dtype)  # float32, not float64

    def predict_proba(self, x, batch_size=32):
        """Class probabilities (softmax / sigmoid), or raw values for regression.

        Single texts longer than the window are read whole, by overlapping
        windows with averaged logits (`predict_windowed`)."""
        if isinstance(x, (list, np.ndarray)):
            logits = self.predict_windowed(x, batch_size=batch_size)
        else:
            logits = self.predict(x, batch_size=batch_size)
        return self._probabilities(logits)

    def _probabilities(self, logits):
        if self.problem_type == "multi_class":
            shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
            return shifted / shifted.sum(axis=-1, keepdims=True)
        if self.problem_type == "multi_label":
            return 1.0 / (1.0 + np.exp(-logits))
        return logits

    def predict_labels(self, x, batch_size=32):
        """Predicted label names (or ids): one per example; a list of names
        per example for multi-label; the values for regression."""
        probabilities = self.predict_proba(x, batch_size=batch_size)
        names = self.label_names or list(range(self.num_classes))
        if self.problem_type == "multi_class":
            return [names[i] for i in probabilities.argmax(axis=-1)]
        if self.problem_type == "multi_label":
            return [[names[i] for i in np.flatnonzero(row >= self.threshold)] for row in probabilities]
        return probabilities[:, 0] if self.num_classes == 1 else probabilities

    def evaluate_glue(self, x, y=None, batch_size=32):
        """The figures GLUE (and SciBERT) report, over the whole set.

        Texts longer than the window are cut to it, as run_classifier.py,
        Keras' `evaluate` and the served `classify` read them, so the figures
        compare with published ones (`predict_proba` reads them whole, by
        windows).

        Args:
            x, y: labelled examples held in memory, as Keras' `evaluate(x, y)`
                takes them: texts or pairs as `x`, their labels (names or
                ids) as `y`; or a reader's result alone as `x`. A tuple
                `(texts, labels)` as `x` is not unpacked: to a pair
                classifier it is two text columns.

        Returns:
            Multi-class: `accuracy` and `macro_f1`, with `f1` (of the
            class named 1 where the names are numbers, else of class id 1)
            and `mcc` for two classes; regression: `pearson`, `spearman`
            and `mse`; multi-label (at `threshold`): `accuracy` (per
            label), `exact_match`, `micro_f1` and `macro_f1`.

        Examples:
        >>> from keras_bert_zoo.tasks.bert_classifier import BertClassifier
        >>> clf = BertClassifier.from_preset("minilm_l6_h384_en_uncased", num_classes=2,
        ...                                  sequence_length=16)
        >>> sorted(clf.evaluate_glue(["a good film", "a dull film"], [1, 0]))
        ['accuracy', 'f1', 'macro_f1', 'mcc']
        """
        columns = isinstance(x, tuple) and len(x) == 2 and not any(isinstance(c, str) for c in x)
        x, y = self.standardize_examples(x, y)
        if not isinstance(x, (list, tuple, np.ndarray)):
            raise ValueError(f"evaluate_glue scores examples held in memory (texts or pairs, and their labels); for "
                             f"a {'dict of packed inputs' if isinstance(x, dict) else 'tf.data.Dataset'}, use "
                             "evaluate().")
        if y is None:
            raise ValueError(
                "evaluate_glue needs the labels: pass them as y, evaluate_glue(texts, labels), as Keras' "
                "evaluate(x, y) takes them, or a reader's result alone, evaluate_glue(read_glue(path))."
                + (" A tuple (texts, labels) as x is not unpacked: to a pair classifier it is two text columns."
                   if columns else ""))
        labels = self.prepare_labels(y)
        outputs = self._probabilities(self.predict(x, batch_size=batch_size))
        if self.problem_type == "regression":
            return regression_report(labels, outputs)
        if self.problem_type == "multi_label":
            return multi_label_report(labels, outputs >= self.threshold)
        return classification_report(labels, outputs.argmax(-1), self.num_classes, positive_class(self.label_names))

    def task_signatures(self, text_preprocessor):
        return classifier_signatures(self)

    def get_config(self):
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "problem_type": self.problem_type,
            "dropout": self.dropout,
            "threshold": self.threshold,
            "label_names": self.label_names,
            "text_pairs": self.text_pairs,
        }
