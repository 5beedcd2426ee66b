"""How many of a packed sequence's positions BERT's special tokens take."""


def special_token_count(num_segments):
    """The special tokens packed around `num_segments` segments.

    BERT packs `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`: one `[CLS]` and
    one `[SEP]` per segment. Every word-piece budget (truncation, windows,
    the "was it truncated" flags) subtracts this from the packed length.

    Args:
        num_segments: the number of segments (1 or 2), an int or an int
            tensor.

    Returns:
        `num_segments + 1`.

    Examples:
    >>> special_token_count(1), special_token_count(2)
    (2, 3)
    >>> 128 - special_token_count(2)  # pieces of a pair that fit in 128 positions
    125
    """
    return num_segments + 1


def shortest_sequence_length(num_segments):
    """The shortest packed length with a piece of text in each of `num_segments` segments: the rule of every
    length check (`[CLS] a [SEP]` for texts, `[CLS] a [SEP] b [SEP]` for pretraining pairs).

    Examples:
    >>> shortest_sequence_length(1), shortest_sequence_length(2)
    (3, 5)
    """
    return special_token_count(num_segments) + num_segments
