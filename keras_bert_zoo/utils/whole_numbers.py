"""Counts a caller gives (batch sizes, lengths, steps), checked at the boundary of every layer that takes one."""

import numpy as np


def positive_whole_number(value, name):
    """`value` as an int, or a ValueError naming `name` unless it is a positive whole number.

    Examples:
    >>> positive_whole_number(np.int64(8), "batch_size")
    8
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive whole number; got {value!r}.")
    return int(value)
