"""SQuAD features: question + strided context windows, as run_squad.py builds them.

Each context is tokenized once with offsets; windows of
`max_seq_length - len(question) - 3` context pieces start every `doc_stride`
pieces. Every context piece remembers the character span it came from, so
predicted spans map straight back to the original text.
"""

import dataclasses

import numpy as np

from keras_bert_zoo.preprocessing.special_tokens import special_token_count
from keras_bert_zoo.preprocessing.strided_windows import max_context_windows
from keras_bert_zoo.preprocessing.strided_windows import window_starts
from keras_bert_zoo.preprocessing.text_offsets import byte_to_char


@dataclasses.dataclass
class QAFeatures:
    """Packed windows, with what post-processing needs to map them back.

    Attributes:
        inputs: dict of int32 arrays `token_ids`, `segment_ids`,
            `padding_mask` `[windows, max_seq_length]`.
        example_index: the example each window belongs to.
        char_spans: per window, `[max_seq_length, 2]` character offsets of
            each context piece in its context (-1 for non-context positions).
        max_context: per window, `[max_seq_length]` bool: the window is the
            one where this piece has the most context on both sides.
        start_positions / end_positions: gold piece positions (0 = [CLS]
            when the answer is not inside the window), if answers were given.
    """

    inputs: dict
    example_index: np.ndarray
    char_spans: np.ndarray
    max_context: np.ndarray
    start_positions: np.ndarray = None
    end_positions: np.ndarray = None


def build_features(tokenizer, questions, contexts, answers=None, max_seq_length=384, doc_stride=128,
                   max_query_length=64):
    """Build run_squad-style windows for question/context pairs.

    Args:
        tokenizer: a `BertTokenizer`.
        questions / contexts: lists of strings.
        answers: optional per-example `(text, char_start)` of the answer used
            for training (None or empty for unanswerable).
        max_seq_length / doc_stride / max_query_length: run_squad.py's flags.

    Returns:
        A `QAFeatures`.

    Graph twins: `question_answerer_signatures._pack_windows` (the rows),
    `question_answerer_signatures._context_positions` (`char_spans >= 0`,
    `max_context`); parity:
    `tests/test_bert_question_answerer.py::test_graph_windows_and_max_context_match_build_features`.
    """
    question_ids = [q[:max_query_length] for q in tokenizer(list(questions)).to_list()]
    context_ids, starts, ends = tokenizer.tokenize_with_offsets(list(contexts))
    context_ids, starts, ends = context_ids.to_list(), starts.to_list(), ends.to_list()
    rows, examples, spans, best, start_labels, end_labels = [], [], [], [], [], []
    for index, (query, pieces) in enumerate(zip(question_ids, context_ids)):
        to_char = byte_to_char(contexts[index])
        piece_spans = np.stack([to_char[np.array(starts[index], "int64")], to_char[np.array(ends[index], "int64")]], -1) \
            if pieces else np.zeros((0, 2), "int64")
        window = max_seq_length - len(query) - special_token_count(2)
        if window <= 0:
            raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the context after a "
                             f"{len(query)}-piece question; raise it or lower max_query_length.")
        window_offsets = window_starts(len(pieces), window, doc_stride)
        answer_pieces = None
        if answers is not None and answers[index]:
            text, char_start = answers[index]
            char_end = char_start + len(text)
            inside = np.flatnonzero((piece_spans[:, 1] > char_start) & (piece_spans[:, 0] < char_end))
            if len(inside):
                answer_pieces = (inside[0], inside[-1])
        best_window = max_context_windows(window_offsets, window, len(pieces))
        offset = len(query) + 2  # [CLS] question [SEP]
        for window_index, start in enumerate(window_offsets):
            span = range(start, min(start + window, len(pieces)))
            rows.append([tokenizer.cls_token_id] + query + [tokenizer.sep_token_id]
                        + [pieces[i] for i in span] + [tokenizer.sep_token_id])
            examples.append(index)
            char_span = np.full((max_seq_length, 2), -1, "int64")
            is_best = np.zeros(max_seq_length, bool)
            char_span[offset : offset + len(span)] = piece_spans[span.start : span.stop]
            is_best[offset : offset + len(span)] = best_window[span.start : span.stop] == window_index
            spans.append(char_span)
            best.append(is_best)
            if answers is not None:
                if answer_pieces and span and span.start <= answer_pieces[0] and answer_pieces[1] < span.stop:
                    start_labels.append(offset + answer_pieces[0] - span.start)
                    end_labels.append(offset + answer_pieces[1] - span.start)
                else:
                    start_labels.append(0)
                    end_labels.append(0)
    ids = np.full((len(rows), max_seq_length), tokenizer.pad_token_id, "int32")
    segments = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
        segments[r, len(question_ids[examples[r]]) + 2 : len(row)] = 1
    labels = {}
    if answers is not None:
        labels = {"start_positions": np.array(start_labels, "int32"), "end_positions": np.array(end_labels, "int32")}
    return QAFeatures({"token_ids": ids, "segment_ids": segments, "padding_mask": mask},
                      np.array(examples), np.stack(spans), np.stack(best), **labels)
