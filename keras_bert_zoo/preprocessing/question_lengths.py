"""Question answering's `max_query_length` and `doc_stride` at a packed length: one rule for the library and the
command line."""

from keras_bert_zoo.preprocessing.special_tokens import special_token_count

# google-research/bert's run_squad.py defaults, made for its max_seq_length of 384.
DEFAULT_MAX_QUERY_LENGTH = 64
DEFAULT_DOC_STRIDE = 128


def _named(name, value):
    return f"{name}={value}"


def question_lengths(sequence_length, doc_stride=None, max_query_length=None, spell=_named):
    """`(doc_stride, max_query_length)` of question answering packed at `sequence_length`.

    Values not given are run_squad.py's 64 and 128 wherever its question leaves room for the context: windows
    then step `min(doc_stride, room)` pieces, as run_squad.py's do (at 128: 61, windows that meet), so a model
    trained with its flags reads the same windows here. Where its 64-piece question leaves none (a small
    model's 16 positions, a model of 64), both are fitted instead: the question to a quarter of the length and
    the stride to half the context a window holds (its room), so that windows overlap.

    A `max_query_length` given that leaves no room for the context is refused (run_squad.py refuses it too);
    a `doc_stride` given is kept (beyond the room, windows step by the room, as run_squad.py's).

    Args:
        sequence_length: the packed length (`max_seq_length`).
        doc_stride: pieces between window starts; None: the default.
        max_query_length: question pieces kept; None: the default.
        spell: `spell(name, value)` names an argument in a refusal (`sequence_length` or `max_query_length`;
            the command line spells its flags).

    Returns:
        `(doc_stride, max_query_length)`.

    Raises:
        ValueError: a `max_query_length` that leaves no room for the context, naming the most that fits; a
            `sequence_length` too short for a question and a context.

    Examples:
    >>> question_lengths(384), question_lengths(128), question_lengths(16)
    ((128, 64), (128, 64), (4, 4))
    >>> question_lengths(128, doc_stride=32, max_query_length=64)  # given: kept
    (32, 64)
    """
    specials = special_token_count(2)  # [CLS] question [SEP] context [SEP]
    shortest = specials + 2  # a piece of question and one of context
    if sequence_length < shortest:
        raise ValueError(f"{spell('sequence_length', sequence_length)} leaves no room for a question and a context "
                         f"([CLS] q [SEP] c [SEP] takes {shortest} positions): pass at least {shortest}.")
    fitted = max_query_length is None and sequence_length - DEFAULT_MAX_QUERY_LENGTH - specials < 1
    if max_query_length is None:
        max_query_length = max(1, sequence_length // 4) if fitted else DEFAULT_MAX_QUERY_LENGTH
    room = sequence_length - max_query_length - specials
    if room < 1:
        raise ValueError(f"{spell('max_query_length', max_query_length)} leaves no room for the context in "
                         f"{sequence_length} positions (the question and {specials} special tokens take them all): "
                         f"pass {spell('max_query_length', sequence_length - specials - 1)} or less.")
    if doc_stride is None:
        doc_stride = min(DEFAULT_DOC_STRIDE, max(1, room // 2)) if fitted else DEFAULT_DOC_STRIDE
    return doc_stride, max_query_length
