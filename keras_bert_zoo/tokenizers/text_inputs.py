"""The one check of Python text batches, shared by every entry point that takes texts.

TensorFlow reports a `None`, a number or a missing value (NaN) inside a list
of strings as "Can't convert Python sequence with mixed types"; these checks
name the item instead, before any model or graph work.
"""

import math

import numpy as np
import tensorflow as tf


def _describe(item):
    if isinstance(item, float) and math.isnan(item):
        return "a missing value (float NaN)"
    return f"{item!r} ({type(item).__name__})"


def check_text(item, where):
    """Check one text: a `str`, or `bytes` that decode as UTF-8.

    Args:
        item: the text.
        where: how messages name it, e.g. `"text 3"`.

    Raises:
        TypeError: not a string.
        ValueError: bytes that are not UTF-8.
    """
    if isinstance(item, str):
        return
    if isinstance(item, bytes):
        try:
            item.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{where} is bytes that are not UTF-8 ({e.reason} at byte {e.start}); "
                             "decode it to str with its real encoding first.") from None
        return
    raise TypeError(f"{where} is {_describe(item)}; every text must be a string. Remove or fill that item.")


def check_texts(texts, pairs=True):
    """Check a batch of texts (and `(text_a, text_b)` pairs) held in Python.

    Args:
        texts: a list, tuple or 1-D/2-D numpy array of examples.
        pairs: whether an example may be a `(text_a, text_b)` pair.

    Returns:
        The examples as a list (numpy arrays become lists of str / tuples).

    Raises:
        TypeError: one string instead of a batch (it would be read
            character by character), or an item that is not a string (or
            pair of strings), naming its index and type.
        ValueError: a pair that is not exactly two texts.
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"Expected a batch of texts, got one {type(texts).__name__} ({texts[:40]!r}): "
                        "pass a list, e.g. [text].")
    if isinstance(texts, np.ndarray):
        texts = texts.tolist()
    texts = list(texts)
    for index, item in enumerate(texts):
        if pairs and isinstance(item, (tuple, list)):
            if len(item) != 2:
                raise ValueError(f"Text {index} is a {len(item)}-item {type(item).__name__}; a pair must be "
                                 "exactly (text_a, text_b).")
            for part, text in zip("ab", item):
                check_text(text, f"text_{part} of pair {index}")
        else:
            check_text(item, f"Text {index}")
    return texts


def text_columns(examples):
    """Checked texts or pairs (a non-empty list) as tensors: one string
    tensor, or a tuple of two for pairs, as the preprocessors take them."""
    pairs = [isinstance(e, (tuple, list)) for e in examples]
    if any(pairs) and not all(pairs):
        index = pairs.index(not pairs[0])
        raise ValueError(f"Text {index} is {'a pair' if pairs[index] else 'a single text'} but text 0 is "
                         f"{'a pair' if pairs[0] else 'a single text'}: give a task one kind of example at a time.")
    if pairs[0]:
        return tuple(tf.constant([e[i] for e in examples]) for i in range(len(examples[0])))
    return tf.constant(list(examples))
