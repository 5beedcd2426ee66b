"""Checks of classifier labels: up front for Python data, in the graph for tf.data.

A wrong label otherwise trains silently (0.7 is cast to class 0) or fails
only after the training graph is traced, in a long TensorFlow error (on GPU,
an out-of-range class gives a NaN loss instead).
"""

import math
import numbers

import numpy as np
import tensorflow as tf

from keras_bert_zoo.utils.placeholder_labels import unnamed_labels
from keras_bert_zoo.utils.text_files import untrusted_repr


def check_label_names(label_names):
    """`label_names` (None, or names: strings or whole numbers) as a list, checked where a task is built: a string
    was read as its characters ("OBI": tags O, B and I), and a number or a nested list failed in Python's
    `set` with "unhashable type" or "not iterable".

    Raises:
        TypeError: naming what was given and what to give.
    """
    if label_names is None:
        return None
    example = "a list of names, e.g. ['O', 'B-Gene', 'I-Gene'] or ['negative', 'positive']"
    if isinstance(label_names, (str, bytes)) or not isinstance(label_names, (list, tuple, np.ndarray)):
        raise TypeError(f"label_names must be {example}; got {untrusted_repr(label_names)}.")
    names = label_names.tolist() if isinstance(label_names, np.ndarray) else list(label_names)
    bad = [n for n in names if isinstance(n, (bool, np.bool_)) or not isinstance(n, (str, numbers.Real))
           or not isinstance(n, str) and not (math.isfinite(n) and n == int(n))]
    if bad:
        raise TypeError(f"label_names must be {example}: each a string or a whole number; {untrusted_repr(bad[0])} "
                        "is neither.")
    # numpy's scalars (pandas' `unique()`) as Python's, and whole floats (a column that held a NaN) as the whole
    # numbers they are: configs, messages and predicted labels show them plainly.
    return [str(n) if isinstance(n, str) else int(n) for n in names]


def _is_number(name):
    """Whether a label name is a number, or one written as text ("1", "-1", "1.0", as a file exported with
    floats holds them)."""
    if isinstance(name, numbers.Integral):
        return True
    try:
        float(name)
    except ValueError:
        return False
    return True


def _reads_ids(label_names):
    """Whether a classifier reads a class id written as text: unless its names are numbers too (an id and a
    name could then mean two classes: against the names ["1.0", "0.0"], "1" read as id 1 was the class named
    "0.0")."""
    return not any(_is_number(name) for name in label_names or ())


def misnumbered_class(label_names):
    """`(class id, name)` of the first class named by a number other than its id (names [1, 0]: `(0, 1)`), or None.

    Against such names a label that is a number could mean two classes: label 1 against [1, 0] (pandas' `unique()`
    of 0/1 labels, in the order met) is class id 1, named 0, or the class named 1, id 0; ratings [1, 2, 3] shift
    by one. Either reading trained the wrong classes for some users in silence, so such a label is refused
    (`ambiguous_number`), and text is read by name."""
    for i, name in enumerate(label_names or ()):
        if _is_number(name) and float(name) != i:
            return i, name
    return None


def ambiguous_number(what, label_names, as_text="`[str(v) for v in labels]`; numpy: `labels.astype(str)`"):
    """The error of `what` (e.g. "Example 3's label, the number 1,"), a number read against names that
    `misnumbered_class` finds; `as_text`: how to write such labels as text, which is read by name."""
    i, name = misnumbered_class(label_names)
    return ValueError(
        f"{what} is refused: the label_names {list(label_names)} name classes by numbers other than their class ids "
        f"(class id {i} is named {untrusted_repr(name)}), so a number could be either. If the labels are the names, "
        f"write them as text, which is read by name ({as_text}); if they are class ids (a reader's `.labels`, an "
        "`argmax`), give their names instead (`[label_names[i] for i in ids]`; a reader's result whole, or its "
        "`.y`).")


def positive_class(label_names):
    """The class id whose F1 GLUE reports (MRPC's and QQP's positive class, labelled 1): that of the class named 1
    where one is (names [1, 0]: id 0), else class id 1."""
    return next((i for i, name in enumerate(label_names or ()) if _is_number(name) and float(name) == 1), 1)


def class_index(label_names, num_classes):
    """`{label: class id}` of the labels a classifier reads as text (a file's labels are text).

    A label is read by name first: one of `label_names` is that class (transformers' placeholders `LABEL_0`,
    `LABEL_1`, ... of a checkpoint without `id2label` too: `LABEL_i` is class i). Otherwise a class id written as
    text, "0" .. "n-1", is that class, as an id in Python is: data labelled by id (GLUE's SST-2 and MRPC: 0 and
    1) scores a classifier without names of its own. Where the names are numbers themselves (["1", "0"]), text is
    read by name alone, so that data labelled "0" / "1" follow the names, not their positions, and a whole number is
    read in each way it is written as text: "1", "1.0" (a float column's `astype(str)`), "1.00" (a spreadsheet's),
    up to "1.000000" (TensorFlow's `as_string`). The keys are text: a name that is a whole number (`0`) is read as "0".

    Args:
        label_names: the classifier's (None: none).
        num_classes: its number of classes.
    """
    # Names that are whole numbers (label_names=[0, 1]) are read as their text, as a file writes them.
    index = {str(name): i for i, name in enumerate(label_names or ())}
    if _reads_ids(label_names):
        index.update((str(i), i) for i in range(num_classes))
        return index
    for i, name in enumerate(label_names):
        value = float(name) if _is_number(name) else math.nan
        if value.is_integer():
            # Fixed decimals up to six places: "1.00" (a spreadsheet's), "1.000000" (as_string's, Python's "%f").
            for spelling in (str(int(value)), *(f"{value:.{places}f}" for places in range(1, 7))):
                index.setdefault(spelling, i)
    return index


def _readable_labels(label_names, num_classes):
    """What `class_index` reads, as messages name it."""
    ids = f"a class id 0..{num_classes - 1}"
    if label_names is None:
        return ids + " (the classifier has no label_names)"
    if unnamed_labels(label_names):
        return (f"{ids} or its placeholder name {label_names[0]}..{label_names[-1]} (transformers' names of a "
                "checkpoint without id2label)")
    names = f"one of the label_names {list(label_names)}"
    return f"{names} or {ids}" if _reads_ids(label_names) else f"{names} (which name classes by numbers, so text is read as names alone)"


def unreadable_label(what, label_names, num_classes):
    """The error of a text label that `class_index` does not read, `what` (e.g. "Example 3's label 'pos'"), naming the
    labels read and the fix."""
    fix = ("relabel the data with these labels" if not unnamed_labels(label_names) else
           "give class ids, or give the classifier label_names=[...] in the order of its outputs")
    return ValueError(f"{what} is not {_readable_labels(label_names, num_classes)}: {fix}.")


def _label_of(index):
    # Not "Label 0": that reads as the class 0.
    return f"Example {index}'s label"


def _class_id(label, index, num_classes, label_names, names):
    """One multi_class label -> its class id, or an error naming it (`names`: `class_index`)."""
    if isinstance(label, np.ndarray):
        label = label.tolist()
    while isinstance(label, (list, tuple)) and len(label) == 1:
        label = label[0]  # an [n, 1] column
    if isinstance(label, (list, tuple)):  # np.ravel refused a ragged one with numpy's own message
        raise ValueError(
            f"{_label_of(index)} is a sequence ({untrusted_repr(label)}); multi_class takes one class per "
            "example. For multi-hot labels use problem_type='multi_label'."
        )
    if isinstance(label, bytes):
        label = label.decode("utf-8", "replace")
    if isinstance(label, str):
        if label not in names:
            raise unreadable_label(f"{_label_of(index)} {untrusted_repr(label)}", label_names, num_classes)
        return names[label]
    if not isinstance(label, numbers.Real):
        raise TypeError(f"{_label_of(index)} is {untrusted_repr(label)} ({type(label).__name__}); expected a class id "
                        "or name.")
    if misnumbered_class(label_names):
        raise ambiguous_number(f"{_label_of(index)}, the number {untrusted_repr(label)},", label_names)
    if not isinstance(label, numbers.Integral) and (not math.isfinite(label) or label != int(label)):
        raise ValueError(f"{_label_of(index)} is {untrusted_repr(label)}, not a whole class id in [0, {num_classes}).")
    if not 0 <= label < num_classes:
        raise ValueError(f"{_label_of(index)} is {untrusted_repr(int(label))}, outside the classes [0, {num_classes}).")
    return int(label)


def _multi_hot(label, index, num_classes, label_names, names):
    """One multi_label label (a multi-hot row, or a list of names) -> a 0/1 row (`names`: `class_index`)."""
    row = np.ravel(np.asarray(label, dtype=object)).tolist()
    if all(isinstance(v, str) for v in row):  # names, or ids as text, read as one label of them is
        unknown = [v for v in row if v not in names]
        if unknown:
            raise unreadable_label(f"{_label_of(index)} name {untrusted_repr(unknown[0])}", label_names, num_classes)
        if len(set(row)) != len(row):  # a multi-hot row written as text ("1", "0", "1") is no list of names
            repeated = next(v for v in row if row.count(v) > 1)
            raise ValueError(f"{_label_of(index)} lists {untrusted_repr(repeated)} twice; a list of names names each "
                             "class once (multi-hot values are the numbers 0 and 1).")
        hot = np.zeros(num_classes, "float32")
        hot[[names[v] for v in row]] = 1.0
        return hot
    if len(row) != num_classes:
        raise ValueError(
            f"{_label_of(index)} has {len(row)} values; multi_label takes num_classes={num_classes} "
            "multi-hot values (0 or 1) per example, or a list of label names or class ids as text."
        )
    bad = [v for v in row if isinstance(v, (str, bytes)) or v not in (0, 1)]
    if bad:
        raise ValueError(f"{_label_of(index)} holds {untrusted_repr(bad[0])}; multi-hot values must be 0 or 1.")
    return np.asarray(row, "float32")


def _target(label, index, num_classes):
    """One regression label -> finite float32 target(s)."""
    values = np.ravel(np.asarray(label, dtype=object)).tolist()
    if len(values) != num_classes:
        raise ValueError(f"{_label_of(index)} has {len(values)} values; regression has num_classes={num_classes} "
                         "targets.")
    for value in values:
        if isinstance(value, (str, bytes)) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"{_label_of(index)} is {untrusted_repr(value)}; regression targets must be finite "
                             "numbers.")
    return np.asarray(values, "float32")


def class_labels(labels, problem_type, num_classes, label_names=None):
    """Check Python / numpy labels and return the array the loss takes.

    Args:
        labels: one label per example: a class id or name (`multi_class`;
            whole floats such as 1.0 are ids; text as `class_index` reads
            it), a multi-hot row or a list of names (`multi_label`), or
            number(s) (`regression`).
        problem_type / num_classes / label_names: the classifier's.

    Returns:
        int32 `[n]` class ids, or float32 `[n, num_classes]` multi-hot rows,
        or float32 `[n]` (one target) / `[n, num_classes]` targets.

    Raises:
        ValueError / TypeError: naming the first bad label's index and value.
    """
    if isinstance(labels, (tf.Tensor, tf.RaggedTensor)):
        labels = labels.numpy()
    if isinstance(labels, np.ndarray):
        labels = labels.tolist()
    labels = list(labels)
    names = class_index(label_names, num_classes)
    if problem_type == "multi_class":
        return np.array([_class_id(v, i, num_classes, label_names, names) for i, v in enumerate(labels)], "int32")
    if problem_type == "multi_label":
        return np.stack([_multi_hot(v, i, num_classes, label_names, names)
                         for i, v in enumerate(labels)]).reshape(-1, num_classes)
    targets = np.stack([_target(v, i, num_classes) for i, v in enumerate(labels)]).reshape(-1, num_classes)
    return targets[:, 0] if num_classes == 1 else targets


def _assert_labels(holds, labels, message):
    """Assert `holds` of every label in the graph, naming the labels it fails for (TensorFlow's own asserts name
    only the first few of the batch, or for names, which of them matched)."""
    holds = tf.reshape(holds, [-1])
    failing = tf.boolean_mask(tf.reshape(labels, [-1]), tf.logical_not(holds))
    tf.debugging.Assert(tf.reduce_all(holds), [message, "The labels:", failing], summarize=10)


def _one_class_each(labels):
    """`[batch]` class labels, of `[batch]` or `[batch, 1]` ones: a rank known when traced. A packing function
    traced for both forms (in two `fit`s) gave labels of unknown rank, which Keras' loss refused ("Cannot take the
    length of shape with unknown rank")."""
    if labels.shape.rank == 1:
        return labels
    one = tf.debugging.assert_equal(tf.size(labels), tf.shape(labels)[0], message=(
        "A multi_class label holds several values: one class per example (multi-hot rows: problem_type="
        "'multi_label')."))
    with tf.control_dependencies([one]):
        return tf.reshape(labels, [-1])


def check_label_tensor(labels, problem_type, num_classes, label_names=None):
    """In-graph label checks for tf.data inputs (they fail when the batch is read).

    String class labels are read as `class_index` reads them. Returns the
    labels the loss takes.
    """
    if problem_type == "multi_class":
        labels = _one_class_each(labels)
        if labels.dtype == tf.string:
            names = class_index(label_names, num_classes)
            matches = tf.equal(labels[..., tf.newaxis], tf.constant(list(names)))
            _assert_labels(tf.reduce_any(matches, -1), labels, (
                f"A label is not {_readable_labels(label_names, num_classes)}. (A Dataset of two strings is read "
                "as (text, label), as Keras reads (x, y); pairs are ((text_a, text_b), label).)"))
            return tf.gather(tf.constant(list(names.values()), tf.int32), tf.argmax(matches, -1))
        if labels.dtype.is_floating:
            _assert_labels(labels == tf.round(labels), labels, "A class label is not a whole number.")
        ids = tf.cast(labels, tf.int64)
        _assert_labels(ids >= 0, labels, f"A class label is negative; classes are 0..{num_classes - 1}.")
        _assert_labels(ids < num_classes, labels, f"A class label is >= num_classes={num_classes}.")
        return labels
    if labels.dtype == tf.string:
        raise TypeError(f"{problem_type} labels must be numbers; the tf.data input gives strings.")
    values = tf.cast(labels, tf.float32)
    if problem_type == "multi_label":
        tf.debugging.assert_equal(tf.logical_or(values == 0.0, values == 1.0), True,
                                  message="A multi-hot label value is not 0 or 1.")
        if labels.shape.rank is not None and labels.shape[-1] is not None and labels.shape[-1] != num_classes:
            raise ValueError(f"multi_label labels have {labels.shape[-1]} values per example; "
                             f"expected num_classes={num_classes}.")
        # A width unknown when traced (a function traced for several inputs) is checked as the batch is read.
        width = tf.debugging.assert_equal(tf.shape(labels)[-1], num_classes, message=(
            f"multi_label labels have another number of values per example than num_classes={num_classes}."))
        with tf.control_dependencies([width]):
            labels = tf.reshape(labels, [-1, num_classes])  # a rank unknown when traced, as `_one_class_each`
    else:
        tf.debugging.assert_all_finite(values, message="A regression target is NaN or infinite.")
    return labels
