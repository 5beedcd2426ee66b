"""`strided_windows` against the whole-matrix form of run_squad's max-context rule, and in linear memory."""

import tracemalloc

import numpy as np

from keras_bert_zoo.preprocessing.strided_windows import max_context_windows
from keras_bert_zoo.preprocessing.strided_windows import window_starts
from keras_bert_zoo.preprocessing.strided_windows import word_windows


def _max_context_matrix(starts, window, length):
    """The rule as a [windows, pieces] score matrix (the first window with the best score wins)."""
    starts = np.array(starts)[:, None]
    lengths = np.minimum(window, length - starts)
    ends = starts + lengths - 1
    position = np.arange(length)[None, :]
    score = np.minimum(position - starts, ends - position) + 0.01 * lengths
    return np.where((position >= starts) & (position <= ends), score, -np.inf).argmax(axis=0)


def _word_windows_by_scan(counts, window, stride):
    counts = np.asarray(counts, "int64")
    first_piece = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype("int64")
    ranges = []
    for start in window_starts(int(counts.sum()), window, stride):
        inside = np.flatnonzero((first_piece >= start) & (first_piece < start + window) & (counts > 0))
        ranges.append((int(inside[0]), int(inside[-1]) + 1) if len(inside) else (0, 0))
    return ranges


def test_max_context_and_word_windows_match_the_whole_matrix_rule():
    rng = np.random.default_rng(0)
    for _ in range(300):
        window, stride = int(rng.integers(1, 12)), int(rng.integers(1, 14))
        length = int(rng.integers(0, 60))
        starts = window_starts(length, window, stride)
        np.testing.assert_array_equal(max_context_windows(starts, window, length),
                                      _max_context_matrix(starts, window, length))
        counts = rng.integers(0, 4, int(rng.integers(0, 30)))
        ranges, best = word_windows(counts, window, stride)
        assert ranges == _word_windows_by_scan(counts, window, stride)
        assert best.shape == counts.shape and (best[counts == 0] == -1).all()


def test_a_long_text_is_windowed_in_linear_memory():
    # 400,000 pieces in 16-piece windows every 7: the [windows, pieces] matrix was 57,000 x 400,000 floats (180 GB).
    counts = np.ones(400_000, "int64")
    tracemalloc.start()
    try:
        ranges, best = word_windows(counts, 16, 7)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20
    assert len(ranges) == len(window_starts(400_000, 16, 7)) and best.min() >= 0
