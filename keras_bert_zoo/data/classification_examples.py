"""Labelled text (or text-pair) examples, built row by row with checks."""

import dataclasses
import math
import re
import warnings

from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.errors import UnknownLabelError
from keras_bert_zoo.data.parallel_examples import LabelledExamples
from keras_bert_zoo.utils.text_files import untrusted_repr


@dataclasses.dataclass
class ClassificationExamples(LabelledExamples):
    """Examples for `BertClassifier`: pass them whole to its `fit` /
    `evaluate`, or unpack them: `texts, labels = read_glue(path)`, the
    labels by name (`y`, `named_labels`), as the classifier reads them whole.

    Attributes:
        texts: strings, or `(text_a, text_b)` tuples.
        labels: the reader's own class ids, counting `label_names` (floats
            for regression; multi-hot 0/1 rows for multi-label): no
            classifier's ids, unless its names are these in this order.
        label_names: the class names, index = id (None for regression).
        skipped: rows skipped as bad (only with `on_error="skip"`).
        source: the file they came from.
    """

    texts: list
    labels: list
    label_names: list
    skipped: int = 0
    source: str = ""

    _PARALLEL = ("texts", "labels")

    @property
    def y(self):
        """The labels by name (`named_labels`): unpacked, `fit(texts, labels)` reads them by the classifier's
        own names (or ids as text) as `fit(examples)` does; the reader's ids (`labels`) count names of one file,
        sorted as text, which scored other classes against a classifier's names in another order."""
        return self.named_labels()

    def named_labels(self):
        """The labels by their names: each example's (multi-label: the list of its names); regression's
        numbers as they are. The ids count `label_names`: the names this one file holds, sorted as text ("10"
        before "2"), or its GLUE task's, which a classifier's need not
        follow (`BertClassifier` matches them by name).

        Examples:
        >>> ClassificationExamples(["good", "bad", "so-so"], [1, 0, 1], ["neg", "pos"]).named_labels()
        ['pos', 'neg', 'pos']
        """
        if self.label_names is None:
            return self.labels
        if self.labels and isinstance(self.labels[0], list):  # multi-hot rows
            return [[name for name, hot in zip(self.label_names, row) if hot] for row in self.labels]
        return [self.label_names[i] for i in self.labels]


# A whole number written as a float: pandas writes an integer column holding a gap as 1.0.
_WHOLE_FLOAT = re.compile(r"([+-]?\d+)\.0+")
# A file with at least this many examples, over half of them with a label of their own, is warned about.
_FEW_EXAMPLES = 20


def _whole_number(label):
    """`label` ("1.0") as the integer it writes ("1"), or None if it writes none."""
    match = _WHOLE_FLOAT.fullmatch(label)
    return str(int(match.group(1))) if match else None


_SKIP_ROWS = "skip bad rows (on_error='skip'; --skip_bad_rows on the command line)."
_SHOWN_CHARACTERS = 60  # of a label or text a message names: a 5,000-digit label filled the screen


def _shown(text):
    """`text` as a message names it: cut to `_SHOWN_CHARACTERS`, its length said where cut."""
    if len(text) <= _SHOWN_CHARACTERS:
        return text
    return f"{text[:_SHOWN_CHARACTERS]}... ({len(text):,} characters)"


def _lone_surrogate(value):
    """What is wrong with a string `value` that holds half a UTF-16 surrogate pair (JSON's "\\ud83d" without its
    "\\ude00"): no character, which the tokenizer's tensors refuse after the file is read; None if it holds none."""
    if not isinstance(value, str):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        return (f"{_shown(repr(value))} holds {value[e.start]!r} at character {e.start + 1}: half of a UTF-16 "
                "surrogate pair (JSON escapes one emoji as two, \\ud83d\\ude00), no character alone. Write the "
                "pair whole, or the character itself (json.dumps(..., ensure_ascii=False)).")
    return None


class ExampleBuilder:
    """Collects rows, mapping labels to ids and reporting bad rows.

    Args:
        source: file name, for messages.
        label_names: allowed labels in id order; None to collect them (sorted)
            or, with `regression=True`, to parse floats.
        multi_label: each row has any number of labels: a list of names, or
            names separated by commas ("sports,politics"; empty: none).
        on_error: `"raise"` (default) or `"skip"` (count and drop bad rows).
    """

    def __init__(self, source, label_names=None, regression=False, on_error="raise", multi_label=False):
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip'; got '{on_error}'.")
        if label_names is not None and len(set(label_names)) != len(label_names):
            repeated = sorted({n for n in label_names if list(label_names).count(n) > 1})
            raise ValueError(f"label_names must be distinct; {repeated} appear more than once.")
        self.source = source
        self.label_names = list(label_names) if label_names is not None else None
        self.regression = regression
        self.multi_label = multi_label
        self.on_error = on_error
        self.rows = []
        self.skipped = 0

    def fail(self, line, message, unknown_label=None):
        """Skip the row, or raise naming it (`unknown_label`: the label none of `label_names` is)."""
        if self.on_error == "skip":
            self.skipped += 1
            return
        where = f"{self.source}, line {line}: {message}"
        raise DataFormatError(where) if unknown_label is None else UnknownLabelError(where, line, unknown_label)

    def add(self, line, texts, label):
        """Add one row; `texts` is a tuple of one or two strings."""
        for text in texts:
            if text is not None and not isinstance(text, str):
                return self.fail(line, f"the text {_shown(repr(text))} ({type(text).__name__}) is not a string.")
            if text is None or not text.strip():
                return self.fail(line, "empty text. Remove the row, or " + _SKIP_ROWS)
        labels = label if isinstance(label, list) else [label]
        unencodable = next(filter(None, map(_lone_surrogate, (*texts, *labels))), None)
        if unencodable:
            return self.fail(line, unencodable)
        if self.multi_label:
            # A list in a list, null or true was a class named "['x']", "None" or "True".
            bad = [name for name in label if not isinstance(name, (str, int)) or isinstance(name, bool)] \
                if isinstance(label, list) else []
            if bad:
                return self.fail(line, f"the labels {untrusted_repr(label)} hold {untrusted_repr(bad[0])} "
                                       f"({type(bad[0]).__name__}); a multi-label row is a list of label names.")
            names = label if isinstance(label, list) else str(label or "").split(",")
            value = tuple(sorted({str(name).strip() for name in names} - {""}))
            unknown = [name for name in value if self.label_names is not None and name not in self.label_names]
            if unknown:
                return self.fail(line, f"unknown label '{_shown(unknown[0])}'; expected some of {self.label_names}. "
                                       "Fix the row or the label list.", unknown[0])
            self.rows.append((texts[0] if len(texts) == 1 else tuple(texts), value))
            return
        if isinstance(label, (list, dict)):
            return self.fail(line, f"the label {untrusted_repr(label)} is a {type(label).__name__}, not one label. "
                                   "For any number of labels per example, read the file as multi-label "
                                   "(multi_label=True; --problem_type multi_label on the command line).")
        if isinstance(label, float) and not math.isfinite(label) and not self.regression:
            # JSON's NaN (Python's json writes a missing value so) or a number past a float (1e400) was a class
            # named 'nan' or 'inf'.
            return self.fail(line, f"label {label} is no class but a number that is not finite: a missing label? "
                                   "Label the row or remove it, or " + _SKIP_ROWS)
        if isinstance(label, float) and label.is_integer():
            label = int(label)  # JSON has one kind of number: 1.0 (pandas' float column) and 1 are one class
        label = str(label).strip() if label is not None else ""
        if not label:  # an unlabelled row would otherwise be taught as a class named ''
            return self.fail(line, "empty label. Label the row or remove it, or " + _SKIP_ROWS)
        if self.regression:
            try:
                value = float(label)
            except ValueError:
                return self.fail(line, f"label '{_shown(label)}' is not a number (regression task).")
            if not math.isfinite(value):
                return self.fail(line, f"label '{_shown(label)}' is not a finite number (regression task).")
        elif self.label_names is not None and label not in self.label_names and \
                _whole_number(label) in self.label_names:
            value = _whole_number(label)  # a CSV's "1.0" for the class "1", as JSON's 1.0
        elif self.label_names is not None and label not in self.label_names:
            return self.fail(
                line, f"unknown label '{_shown(label)}'; expected one of {self.label_names}. Fix the row or the "
                      "label list.", label)
        else:
            value = label
        self.rows.append((texts[0] if len(texts) == 1 else tuple(texts), value))

    def build(self):
        if not self.rows:
            raise DataFormatError(f"{self.source}: no usable examples ({self.skipped} bad rows skipped).")
        texts = [t for t, _ in self.rows]
        if self.regression:
            return ClassificationExamples(texts, [v for _, v in self.rows], None, self.skipped, self.source)
        if self.multi_label:
            names = self.label_names or sorted({name for _, value in self.rows for name in value})
            hot = [[int(name in value) for name in names] for _, value in self.rows]
            return ClassificationExamples(texts, hot, names, self.skipped, self.source)
        found = {v for _, v in self.rows}
        # "1" and "1.0" in one file (a CSV column pandas wrote as floats, then edited) are one class, as in JSON.
        same = {} if self.label_names else {v: _whole_number(v) for v in found if _whole_number(v) in found}
        values = [same.get(v, v) for _, v in self.rows]
        names = self.label_names or sorted(set(values))
        if not self.label_names and len(values) >= _FEW_EXAMPLES and len(names) > len(values) / 2:
            warnings.warn(f"{self.source}: {len(names):,} different labels in {len(values):,} examples (e.g. "
                          f"{untrusted_repr(names[0])}), most of them a class of their own: is the label column the "
                          "right one? For a number to predict, read it as regression (regression=True; "
                          "--problem_type regression).", stacklevel=3)
        index = {name: i for i, name in enumerate(names)}
        return ClassificationExamples(texts, [index[v] for v in values], names, self.skipped, self.source)
