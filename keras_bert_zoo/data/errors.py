"""Errors in training and evaluation data files."""


class DataFormatError(ValueError):
    """A row of a data file cannot be used; the message names file and line."""
