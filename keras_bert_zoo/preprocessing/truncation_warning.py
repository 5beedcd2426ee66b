"""The warning of inputs cut to a preprocessor's `sequence_length`."""


class TruncationWarning(UserWarning):
    """Inputs longer than `sequence_length` word-pieces were truncated.

    Its own category, so that it can be filtered alone
    (`warnings.simplefilter("ignore", kbz.TruncationWarning)`), and so that
    the command line can give its own fix (a flag, not an argument).

    Args:
        truncated: how many inputs were cut.
        total: how many inputs there were.
        sequence_length: the packed length.
        longest: the longest input, in word-pieces with the special tokens.
        fix: what to do, one sentence.

    Examples:
    >>> print(TruncationWarning(1, 2, 8, 11))
    1 of 2 inputs are longer than sequence_length=8 word-pieces (longest: 11) and were truncated. Raise sequence_length (up to the model's positions), or read long texts in windows (BertClassifier.predict_windowed; taggers and question answerers window theirs).
    """

    LIBRARY_FIX = "Raise sequence_length (up to the model's positions), or read long texts in windows (BertClassifier.predict_windowed; taggers and question answerers window theirs)."

    def __init__(self, truncated, total, sequence_length, longest, fix=LIBRARY_FIX):
        self.truncated, self.total, self.sequence_length, self.longest = truncated, total, sequence_length, longest
        self.fix = fix
        super().__init__(f"{truncated} of {total} inputs are longer than sequence_length={sequence_length} "
                         f"word-pieces (longest: {longest}) and were truncated. {fix}")

    def __reduce__(self):
        # An exception pickles (and copies) as its class called on `args`, here the message alone.
        return TruncationWarning, (self.truncated, self.total, self.sequence_length, self.longest, self.fix)

    def with_fix(self, fix):
        """The same warning with another fix (the command line's flag)."""
        return TruncationWarning(self.truncated, self.total, self.sequence_length, self.longest, fix)
