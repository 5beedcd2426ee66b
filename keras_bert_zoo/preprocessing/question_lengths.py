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

    A value not given is run_squad.py's default, cut to fit: the question to a quarter of the length, so that the
    context (where the answer is) keeps most of each window; the stride to half the context a window holds (its
    room: the length less the longest question and 3 special tokens), so that windows overlap and each piece is
    read, in one of them, with context on both sides. At 384 both stay run_squad.py's 64 and 128; at 128 they are
    32 and 46; at 16 (a small checkpoint) 4 and 4, where run_squad.py's would leave no room for the context.

    A value given is kept, or refused where it cannot fit: a `max_query_length` that leaves no room for the
    context (run_squad.py refuses it too), a `doc_stride` beyond the room (windows that far apart would skip the
    pieces between them; run_squad.py steps less, in silence).

    Args:
        sequence_length: the packed length (`max_seq_length`).
        doc_stride: pieces between window starts; None: the default, fitted.
        max_query_length: question pieces kept; None: the default, fitted.
        spell: `spell(name, value)` names an argument in a refusal (`sequence_length`, `max_query_length` or
            `doc_stride`; the command line spells its flags).

    Returns:
        `(doc_stride, max_query_length)`.

    Raises:
        ValueError: a given value that cannot fit, naming it and the most that fits; a `sequence_length` too
            short for a question and a context.

    Examples:
    >>> question_lengths(384), question_lengths(128), question_lengths(16)
    ((128, 64), (46, 32), (4, 4))
    >>> question_lengths(128, doc_stride=32, max_query_length=64)  # given: kept
    (32, 64)
    """
    specials = special_token_count(2)  # [CLS] question [SEP] context [SEP]
    shortest = specials + 2  # a piece of question and one of context
    if sequence_length < shortest:
        raise ValueError(f"{spell('sequence_length', sequence_length)} leaves no room for a question and a context "
                         f"([CLS] q [SEP] c [SEP] takes {shortest} positions): pass at least {shortest}.")
    if max_query_length is None:
        max_query_length = min(DEFAULT_MAX_QUERY_LENGTH, max(1, sequence_length // 4))
    room = sequence_length - max_query_length - specials
    if room < 1:
        raise ValueError(f"{spell('max_query_length', max_query_length)} leaves no room for the context in "
                         f"{sequence_length} positions (the question and {specials} special tokens take them all): "
                         f"pass {spell('max_query_length', sequence_length - specials - 1)} or less.")
    if doc_stride is None:
        return min(DEFAULT_DOC_STRIDE, max(1, room // 2)), max_query_length
    if doc_stride > room:
        raise ValueError(f"{spell('doc_stride', doc_stride)} is more than the {room} context pieces a window holds "
                         f"({sequence_length} positions less a {max_query_length}-piece question and {specials} "
                         f"special tokens): windows that far apart would skip the pieces between them. Pass "
                         f"{spell('doc_stride', room)} or less.")
    return doc_stride, max_query_length
