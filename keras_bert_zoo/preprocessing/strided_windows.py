"""Strided windows over a long piece sequence, and the max-context rule.

google-research/bert's run_squad.py cuts a long context into windows of
`window` pieces starting every `doc_stride` pieces; each piece is then read
from the window where it has the most context on both sides. Question
answering and token classification share this one mechanism.
"""

import numpy as np


def default_doc_stride(window):
    """Half of `window` pieces (at least one): the stride a token classifier
    reads long sentences with, in Python and in its export alike."""
    return max(1, window // 2)


def window_starts(length, window, stride):
    """Start offsets of windows of `window` pieces covering `length` pieces.

    Graph twin: `graph_windows.piece_windows`; parity:
    `tests/test_bert_question_answerer.py::test_graph_windows_match_window_starts`.
    """
    # run_squad.py advances by min(doc_stride, window): no piece is skipped.
    step = max(1, min(stride, window))
    starts = [0]
    while starts[-1] + window < length:
        starts.append(starts[-1] + step)
    return starts


def max_context_windows(starts, window, length):
    """For each piece, the index of the window where it has the most context.

    run_squad.py's `_check_is_max_context`: a piece's score in a window is
    min(pieces left of it, pieces right of it) + 0.01 * window length; the
    first window with the highest score wins.

    Graph twin: `graph_windows.max_context`; parity:
    `tests/test_bert_question_answerer.py::test_graph_windows_and_max_context_match_build_features`.
    """
    # Window by window over the pieces each holds: O(pieces * window / stride), where a [windows, pieces]
    # matrix took O(pieces^2 / stride) memory (4.4 GB for one 107 KB context at a 16-piece window).
    best = np.zeros(length, "int64")
    best_score = np.full(length, -np.inf)
    for index, start in enumerate(np.asarray(starts, "int64").tolist()):
        size = min(window, length - start)
        if size <= 0:
            continue
        relative = np.arange(size)
        score = np.minimum(relative, size - 1 - relative) + 0.01 * size
        better = score > best_score[start : start + size]  # strictly: the first window with the best score wins
        best_score[start : start + size][better] = score[better]
        best[start : start + size][better] = index
    return best


def word_windows(pieces_per_word, window, stride):
    """Windows over a sentence of words, each holding at most `window` pieces.

    Windows are laid in piece space (as `window_starts`) and snapped to the
    words whose first piece falls inside, so every word's first piece lies in
    at least one window (a long word's tail may be cut; only its first piece
    carries its tag).

    Graph twin: `graph_windows.snap_windows_to_words`; parity:
    `tests/test_bert_token_classifier.py::test_graph_word_windows_match_word_windows`.

    Args:
        pieces_per_word: word-piece count of each word.
        window: pieces per window.
        stride: pieces between window starts (`doc_stride`).

    Returns:
        `(ranges, best)`: word ranges `[(first_word, end_word)]`, and for
        each word the index of its max-context window (-1 for words that
        have no pieces).
    """
    counts = np.asarray(pieces_per_word, dtype="int64")
    first_piece = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype("int64")
    total = int(counts.sum())
    starts = window_starts(total, window, stride)
    # The words with pieces, by first piece (ascending): each window's are one run, found by bisection.
    readable = np.flatnonzero(counts > 0)
    starts_array = np.asarray(starts, "int64")
    low = np.searchsorted(first_piece[readable], starts_array, side="left")
    high = np.searchsorted(first_piece[readable], starts_array + window, side="left")
    ranges = [(int(readable[a]), int(readable[b - 1]) + 1) if b > a else (0, 0)
              for a, b in zip(low.tolist(), high.tolist())]
    best = np.full(len(counts), -1, "int64")
    if total:
        has_pieces = counts > 0
        best[has_pieces] = max_context_windows(starts, window, total)[first_piece[has_pieces]]
    return ranges, best
