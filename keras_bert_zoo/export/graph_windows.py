"""Strided windows over long texts and the max-context rule, in the graph.

The graph twins of `preprocessing/strided_windows.py`, for every signature
that reads texts longer than the model's window: run_squad.py's windows of
pieces every `doc_stride` pieces (`piece_windows`), the same windows snapped
to whole words for token classification (`snap_windows_to_words`), and the
window each piece is read from (`max_context`). Question answering windows
a context after its question, token classification a text's words; both
read each piece from the window where it has the most context.
"""

import collections

import tensorflow as tf

# Per window (flat over the batch): its text, the word range it holds (flat
# over all texts' words), and its first piece (among all texts' pieces) and
# piece count as laid in piece space, before snapping to words.
WordWindows = collections.namedtuple("WordWindows", ["example", "first_word", "end_word", "first_piece", "length"])


def piece_windows(context_length, window, doc_stride):
    """run_squad's strided windows over every context of a batch.

    The graph twin of `strided_windows.window_starts`, for all examples at
    once: windows start every `min(doc_stride, window)` pieces until one
    reaches the end of its context; an empty context still gets one
    (empty) window.

    Numpy twin: `strided_windows.window_starts`; parity:
    `tests/test_bert_question_answerer.py::test_graph_windows_match_window_starts`.

    Args:
        context_length: int32 `[batch]`, pieces per context.
        window: int32 `[batch]`, context pieces one window holds.
        doc_stride: int, pieces between window starts.

    Returns:
        `(example, start, length)`, int32 `[windows]`: each window's example,
        its first piece within the context, and its piece count.
    """
    step = tf.maximum(1, tf.minimum(doc_stride, window))
    count = 1 + tf.maximum(0, (context_length - window + step - 1) // step)
    example = tf.repeat(tf.range(tf.shape(count)[0]), count)
    start = tf.ragged.range(count).flat_values * tf.gather(step, example)
    length = tf.maximum(0, tf.minimum(tf.gather(window, example), tf.gather(context_length, example) - start))
    return example, start, length


def snap_windows_to_words(pieces_per_word, window, doc_stride):
    """Strided windows over each text's words, each within `window` pieces.

    The graph twin of `strided_windows.word_windows`, for all texts at once:
    windows are laid in piece space (`piece_windows`) and hold the words
    whose first piece falls inside, so every word with pieces starts in at
    least one window (a long word's tail may be cut; its first piece carries
    its tag). A range may also hold words without pieces beside those: they
    pack to nothing.

    Numpy twin: `strided_windows.word_windows`; parity:
    `tests/test_bert_token_classifier.py::test_graph_word_windows_match_word_windows`.

    Args:
        pieces_per_word: ragged int32 `[batch, None]`, each word's piece count.
        window: int, pieces one window holds.
        doc_stride: int, pieces between window starts.

    Returns:
        `(windows, word_first_piece)`: the `WordWindows`, and int32 `[words]`,
        each word's first piece among all texts' pieces (for a word without
        pieces, the next word's).
    """
    counts = pieces_per_word.flat_values
    word_first_piece = tf.cumsum(counts, exclusive=True)
    text_length = tf.reduce_sum(pieces_per_word, axis=1)
    example, start, length = piece_windows(text_length, tf.fill(tf.shape(text_length), window), doc_stride)
    first_piece = tf.gather(tf.cumsum(text_length, exclusive=True), example) + start
    # First pieces ascend over the flat words, so a window's words are one run; clipped to its own text, as a
    # text's trailing words without pieces share the next text's first piece.
    first_word = tf.maximum(tf.searchsorted(word_first_piece, first_piece, side="left"),
                            tf.gather(tf.cast(pieces_per_word.row_starts(), tf.int32), example))
    end_word = tf.minimum(tf.searchsorted(word_first_piece, first_piece + length, side="left"),
                          tf.gather(tf.cast(pieces_per_word.row_limits(), tf.int32), example))
    return WordWindows(example, first_word, tf.maximum(first_word, end_word), first_piece, length), word_first_piece


def max_context(relative, length, flat_piece, is_context, total_pieces):
    """run_squad's `_check_is_max_context` for every (window, position).

    The graph twin of `strided_windows.max_context_windows`, read at each
    window's positions.

    Numpy twin: `strided_windows.max_context_windows`; parity:
    `tests/test_bert_question_answerer.py::test_graph_windows_and_max_context_match_build_features`.

    Args:
        relative: int32 `[windows, positions]`, each position's index in its
            window's context pieces (outside `[0, length)` off the context).
        length: int32 `[windows]`, context pieces per window.
        flat_piece: int32 `[windows, positions]`, each position's piece
            index among all contexts' pieces.
        is_context: bool `[windows, positions]`, the position holds a piece
            (of those the max-context rule chooses among).
        total_pieces: int32 scalar, pieces in all contexts.

    Returns:
        bool `[windows, positions]`: the position holds a piece and this
        window is the piece's max-context window.
    """
    lengths = tf.cast(length, tf.float64)[:, None]
    relative64 = tf.cast(relative, tf.float64)
    score = tf.minimum(relative64, lengths - 1 - relative64) + 0.01 * lengths
    keys = tf.boolean_mask(flat_piece, is_context)
    scores = tf.boolean_mask(score, is_context)
    window_ids = tf.boolean_mask(tf.broadcast_to(tf.range(tf.shape(relative)[0])[:, None], tf.shape(relative)),
                                 is_context)
    best_score = tf.math.unsorted_segment_max(scores, keys, total_pieces)
    # The first window with the best score wins, as in run_squad. A spare
    # last segment keeps the gather below valid when no context has pieces.
    contender = tf.where(scores >= tf.gather(best_score, keys), window_ids, tf.int32.max)
    best_window = tf.math.unsorted_segment_min(contender, keys, total_pieces + 1)
    chosen = tf.gather(best_window, tf.clip_by_value(flat_piece, 0, total_pieces))
    return is_context & (chosen == tf.range(tf.shape(relative)[0])[:, None])
