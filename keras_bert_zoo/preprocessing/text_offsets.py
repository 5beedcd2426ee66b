"""Character offsets: the tokenizer's byte offsets mapped back to str indices."""

import numpy as np


def byte_to_char(text):
    """Map every UTF-8 byte offset of `text` (0..len(bytes)) to its character offset."""
    mapping = np.zeros(len(text.encode("utf-8")) + 1, "int64")
    position = 0
    for index, ch in enumerate(text):
        width = len(ch.encode("utf-8"))
        mapping[position : position + width] = index
        position += width
    mapping[position] = len(text)
    return mapping
