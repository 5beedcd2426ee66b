"""Errors in training and evaluation data files."""


class DataFormatError(ValueError):
    """A row of a data file cannot be used; the message names file and line."""


class UnknownLabelError(DataFormatError):
    """A row's label is none of the reader's `label_names`: `line` and `label` for a caller that knows what the
    names it gave mean (the command line's evaluate: a model's names, and its ids as text)."""

    def __init__(self, message, line=None, label=None):
        super().__init__(message)
        self.line = line
        self.label = label
