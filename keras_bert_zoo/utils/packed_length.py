"""The packed length of a model whose length was not given: one rule for the library and the command line."""


def packed_length(sequence_length, default, max_sequence_length):
    """The length a model of `max_sequence_length` positions packs.

    A length given is kept (one beyond the positions is refused where the preprocessor is built, not cut in
    silence); without one, `default` is cut to the positions, so that a model with fewer (a small checkpoint's
    16, a model of 64) packs all it has instead of being refused for a length nobody asked for.

    Args:
        sequence_length: the length given; None: none.
        default: the length without one (e.g. a task's `default_sequence_length`).
        max_sequence_length: the model's positions; None: not known (`default` stands).

    Examples:
    >>> packed_length(None, 128, 512), packed_length(None, 128, 16), packed_length(64, 128, 16)
    (128, 16, 64)
    """
    if sequence_length is not None:
        return sequence_length
    return default if max_sequence_length is None else min(default, max_sequence_length)
