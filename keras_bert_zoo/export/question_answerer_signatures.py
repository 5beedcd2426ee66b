"""`answer`: a question and a raw context in, the answer span out.

The graph does what `BertQuestionAnswerer.predict_answers` does in Python,
one step per function, each beside the numpy code it mirrors:
run_squad.py's strided windows over the context (`_pack_windows` mirrors
`build_features`, on `graph_windows.piece_windows`), max-context filtering
of start positions (`_context_positions`, on `graph_windows.max_context`),
the n-best span search with `max_answer_length` (`_span_candidates`,
`_n_best`), the softmax score over the n best and SQuAD v2.0's null
threshold (`_answer_scores`), all mirroring
`BertQuestionAnswerer._best_answer`.
"""

import collections

import tensorflow as tf

from keras_bert_zoo.export.graph_windows import max_context
from keras_bert_zoo.export.graph_windows import piece_windows
from keras_bert_zoo.export.request_inputs import byte_to_char_offsets
from keras_bert_zoo.export.request_inputs import checked_request
from keras_bert_zoo.export.request_inputs import clean_text
from keras_bert_zoo.export.request_inputs import trim_to_bucket
from keras_bert_zoo.export.row_chunks import run_model
from keras_bert_zoo.export.serving_signature import ServingSignature
from keras_bert_zoo.preprocessing.special_tokens import special_token_count

# Per window (flat over the batch): its example, the index of its first piece
# among all contexts' pieces, its piece count, and the position of that
# first piece in the packed row.
_WindowLayout = collections.namedtuple("_WindowLayout", ["example", "first_piece", "length", "offset"])


def _pack_windows(preprocessor, query, pieces, doc_stride):
    """`[CLS] question [SEP] window [SEP]` for every window of every context.

    The graph twin of `build_features`' rows.

    Numpy twin: `question_answering_features.build_features`; parity:
    `tests/test_bert_question_answerer.py::test_graph_windows_and_max_context_match_build_features`.

    Args:
        preprocessor: the task's `BertPreprocessor`.
        query: ragged int `[batch, None]`, question pieces (already cut to
            `max_query_length`).
        pieces: ragged int `[batch, None]`, context pieces.
        doc_stride: int, pieces between window starts.

    Returns:
        `(inputs, layout)`: the packed windows, trimmed to their bucket, and
        their `_WindowLayout`.
    """
    query_length = tf.cast(query.row_lengths(), tf.int32)
    context_length = tf.cast(pieces.row_lengths(), tf.int32)
    window = preprocessor.sequence_length - query_length - special_token_count(2)
    example, start, length = piece_windows(context_length, window, doc_stride)
    first_piece = tf.gather(tf.cast(pieces.row_starts(), tf.int32), example) + start
    window_pieces = tf.gather(pieces.flat_values, tf.ragged.range(first_piece, first_piece + length))
    inputs = trim_to_bucket(preprocessor.pack([tf.gather(query, example), window_pieces]),
                            preprocessor.sequence_length)
    offset = tf.gather(query_length, example) + 2  # [CLS] question [SEP]
    return inputs, _WindowLayout(example, first_piece, length, offset)


def _context_positions(layout, width, total_pieces):
    """Which window positions hold context pieces, and which are read there.

    The graph twin of `build_features`' `char_spans >= 0` and `max_context`.

    Numpy twin: `question_answering_features.build_features`; parity:
    `tests/test_bert_question_answerer.py::test_graph_windows_and_max_context_match_build_features`.

    Args:
        layout: the windows' `_WindowLayout`.
        width: int32 scalar, positions per packed row.
        total_pieces: int32 scalar, pieces in all contexts.

    Returns:
        `(is_context, max_context)`, bool `[windows, width]`.
    """
    relative = tf.range(width)[None, :] - layout.offset[:, None]
    is_context = (relative >= 0) & (relative < layout.length[:, None])
    flat_piece = layout.first_piece[:, None] + relative
    return is_context, max_context(relative, layout.length, flat_piece, is_context, total_pieces)


def _span_candidates(start_logits, end_logits, real, is_context, max_context, n_best_size, max_answer_length):
    """run_squad's candidate spans: each window's n best starts x n best ends.

    The graph twin of the loops of `BertQuestionAnswerer._best_answer`.
    Padding is never a candidate; a span must start at a max-context piece,
    end at a context piece no earlier, and hold at most `max_answer_length`
    pieces. Invalid pairs keep their place with score `-inf`, so the result
    is dense.

    Numpy twin: `BertQuestionAnswerer._best_answer`; parity:
    `tests/test_bert_question_answerer.py::test_graph_decoding_matches_best_answer`.

    Args:
        start_logits / end_logits: float32 `[windows, positions]`.
        real: bool `[windows, positions]`, the position is not padding.
        is_context / max_context: bool `[windows, positions]`, from
            `_context_positions`.
        n_best_size / max_answer_length: run_squad.py's flags.

    Returns:
        `(score, start, end, window)`, flat `[windows * k * k]` with
        `k = min(n_best_size, positions)`: the span's start + end logit, its
        start and end positions and its window.
    """
    k = tf.minimum(n_best_size, tf.shape(start_logits)[1])
    start_score, start_at = tf.math.top_k(tf.where(real, start_logits, -float("inf")), k)
    end_score, end_at = tf.math.top_k(tf.where(real, end_logits, -float("inf")), k)
    s, e = start_at[:, :, None], end_at[:, None, :]
    valid = (tf.gather(max_context, start_at, batch_dims=1)[:, :, None]
             & tf.gather(is_context, end_at, batch_dims=1)[:, None, :]
             & (e >= s) & (e - s + 1 <= max_answer_length))
    score = tf.where(valid, start_score[:, :, None] + end_score[:, None, :], -float("inf"))
    return (tf.reshape(score, [-1]),
            tf.reshape(tf.broadcast_to(s, tf.shape(valid)), [-1]),
            tf.reshape(tf.broadcast_to(e, tf.shape(valid)), [-1]),
            tf.repeat(tf.range(tf.shape(valid)[0]), k * k))


def _n_best(scores, example, batch, n_best_size):
    """Each example's `n_best_size` highest `scores` (`-inf` padded) and
    the index of its best; ties go to the earlier index, as in `top_k`.

    The graph twin of `_best_answer`'s `sorted(candidates)[:n_best_size]`.
    Sorting keeps memory linear in the candidates: padding every example
    to the longest context's count would grow with batch x longest.

    Numpy twin: `BertQuestionAnswerer._best_answer`; parity:
    `tests/test_bert_question_answerer.py::test_graph_decoding_matches_best_answer`,
    `tests/test_serving_fuzz.py::test_n_best_per_example_matches_a_sort_per_example`.
    """
    order = tf.argsort(scores, direction="DESCENDING", stable=True)
    order = tf.gather(order, tf.argsort(tf.gather(example, order), stable=True))
    counts = tf.math.bincount(example, minlength=batch, maxlength=batch)
    starts = tf.cumsum(counts, exclusive=True)
    rank = tf.range(tf.size(order)) - tf.repeat(starts, counts)
    kept = rank < n_best_size
    top = tf.RaggedTensor.from_value_rowids(tf.boolean_mask(tf.gather(scores, order), kept),
                                            tf.boolean_mask(tf.repeat(tf.range(batch), counts), kept), nrows=batch)
    return top.to_tensor(default_value=-float("inf"), shape=[None, n_best_size]), tf.gather(order, starts)


def _answer_scores(top_score, null_score, version_2_with_negative, null_score_diff_threshold):
    """Whether each example is answered, and the answer's score.

    The graph twin of the end of `BertQuestionAnswerer._best_answer`: the
    best span's softmax probability among the n best; in SQuAD v2.0, "no
    answer" (scored `sigmoid(null - best)`) when the null score beats the
    best span by more than the threshold; 1.0 when no span is valid.

    Numpy twin: `BertQuestionAnswerer._best_answer`; parity:
    `tests/test_bert_question_answerer.py::test_graph_decoding_matches_best_answer`.

    Args:
        top_score: float32 `[batch, n_best_size]`, from `_n_best`.
        null_score: float32 `[batch]`, each example's lowest `[CLS]` start
            + end logit over its windows.
        version_2_with_negative / null_score_diff_threshold: the task's.

    Returns:
        `(answered, score)`: bool and float32 `[batch]`.
    """
    best_score = top_score[:, 0]
    probability = 1.0 / tf.reduce_sum(tf.exp(top_score - best_score[:, None]), axis=1)
    answered = tf.math.is_finite(best_score)
    if version_2_with_negative:
        abstain = answered & (null_score - best_score > null_score_diff_threshold)
        score = tf.where(abstain, tf.sigmoid(null_score - best_score), probability)
        answered = answered & ~abstain
    else:
        score = probability
    return answered, tf.where(tf.math.is_finite(best_score), score, 1.0)


def _gather_or_zero(values, index):
    """`values[index]`, or 0 where `values` is empty (a batch of empty contexts)."""
    padded = tf.concat([values, tf.zeros([1], values.dtype)], 0)
    return tf.gather(padded, tf.clip_by_value(index, 0, tf.size(values)))


def _decode_answers(context, piece_starts, piece_ends, layout, padding_mask, outputs, qa):
    """The answer span of each example, from its windows' logits.

    The graph twin of `BertQuestionAnswerer._best_answer`, for a batch.

    Numpy twin: `BertQuestionAnswerer._best_answer`; parity:
    `tests/test_bert_question_answerer.py::test_graph_decoding_matches_best_answer`.

    Args:
        context: string `[batch]`, the (cleaned) contexts.
        piece_starts / piece_ends: ragged int64 `[batch, None]`, each
            context piece's byte offsets in its context.
        layout: the windows' `_WindowLayout`.
        padding_mask: int `[windows, positions]`, the packed windows'.
        outputs: the model's `start_logits` / `end_logits` on the windows.
        qa: anything with the task's `n_best_size`, `max_answer_length`,
            `version_2_with_negative` and `null_score_diff_threshold`.

    Returns:
        The `answer` signature's outputs: `answer`, character `start` and
        `end` (-1 for no answer), `score`.
    """
    batch = tf.shape(context)[0]
    start_logits = tf.cast(outputs["start_logits"], tf.float32)
    end_logits = tf.cast(outputs["end_logits"], tf.float32)
    is_context, max_context = _context_positions(layout, tf.shape(start_logits)[1],
                                                 tf.shape(piece_starts.flat_values)[0])
    score, start, end, window = _span_candidates(start_logits, end_logits, padding_mask > 0, is_context,
                                                 max_context, qa.n_best_size, qa.max_answer_length)
    top_score, best = _n_best(score, tf.gather(layout.example, window), batch, qa.n_best_size)
    null_score = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], layout.example, batch)
    answered, score = _answer_scores(top_score, null_score, qa.version_2_with_negative,
                                     qa.null_score_diff_threshold)

    # Window position -> the piece's index among all contexts' pieces -> its bytes.
    best_window = tf.gather(window, best)
    to_piece = tf.gather(layout.first_piece, best_window) - tf.gather(layout.offset, best_window)
    byte_start = _gather_or_zero(piece_starts.flat_values, to_piece + tf.gather(start, best))
    byte_end = _gather_or_zero(piece_ends.flat_values, to_piece + tf.gather(end, best))
    byte_start = tf.where(answered, byte_start, 0)
    byte_end = tf.where(answered, byte_end, 0)
    rows = tf.range(batch)
    return {
        "answer": tf.strings.substr(context, byte_start, byte_end - byte_start),
        "start": tf.where(answered, byte_to_char_offsets(context, rows, byte_start), -1),
        "end": tf.where(answered, byte_to_char_offsets(context, rows, byte_end), -1),
        "score": score,
    }


def question_answerer_signatures(qa):
    """Signature `answer` of a `BertQuestionAnswerer`.

    `question`, `context` `[batch]` -> `answer` (text), `start`, `end`
    (character offsets in the context; -1 for no answer) and `score` (the
    answer's probability among the n best spans, or of "no answer").
    """
    preprocessor = qa.preprocessor
    tokenizer = preprocessor.tokenizer
    sequence_length = preprocessor.sequence_length
    if qa.max_query_length + special_token_count(2) >= sequence_length:  # no context piece would fit
        raise ValueError(f"max_query_length={qa.max_query_length} leaves no room for the context in "
                         f"{sequence_length} positions; lower it before exporting.")
    logits = tf.TensorSpec([None, None], tf.float32)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                  tf.TensorSpec([None], tf.string, name="context")])
    def answer(question, context):
        question, context = checked_request(question=question, context=context)
        context = clean_text(context)
        query = tokenizer(clean_text(question))[:, : qa.max_query_length]
        pieces, piece_starts, piece_ends = tokenizer.tokenize_with_offsets(context)
        inputs, layout = _pack_windows(preprocessor, query, pieces, qa.doc_stride)
        outputs = run_model(qa, inputs, {"start_logits": logits, "end_logits": logits})
        return _decode_answers(context, piece_starts, piece_ends, layout, inputs["padding_mask"], outputs, qa)

    return [ServingSignature("answer", answer, {"question": ["Who ran?"], "context": ["Ann ran to the park."]})]
