"""`answer`: a question and a raw context in, the answer span out.

The graph does what `BertQuestionAnswerer.predict_answers` does in Python:
run_squad.py's strided windows over the context, max-context filtering of
start positions, the n-best span search with `max_answer_length`, the
softmax score over the n best, and SQuAD v2.0's null threshold.
"""

import tensorflow as tf

from keras_bert_zoo.export.request_inputs import byte_to_char_offsets
from keras_bert_zoo.export.request_inputs import checked_request
from keras_bert_zoo.export.request_inputs import clean_text
from keras_bert_zoo.export.request_inputs import trim_to_bucket
from keras_bert_zoo.export.serving_signature import ServingSignature
from keras_bert_zoo.preprocessing.special_tokens import special_token_count

_STRING = tf.TensorSpec([None], tf.string)


def _windows(query_length, context_length, window, doc_stride):
    """Per example, run_squad's window count; per window its example and start."""
    step = tf.maximum(1, tf.minimum(doc_stride, window))
    count = 1 + tf.maximum(0, (context_length - window + step - 1) // step)
    example = tf.repeat(tf.range(tf.shape(count)[0]), count)
    start = tf.ragged.range(count).flat_values * tf.gather(step, example)
    length = tf.maximum(0, tf.minimum(tf.gather(window, example), tf.gather(context_length, example) - start))
    return example, start, length


def _max_context(relative, length, flat_piece, is_context, total_pieces):
    """run_squad's `_check_is_max_context` for every (window, position)."""
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


def _n_best(scores, example, batch, n_best_size):
    """Each example's `n_best_size` highest `scores` (`-inf` padded) and
    the index of its best; ties go to the earlier index, as in `top_k`.

    Sorting keeps memory linear in the candidates: padding every example
    to the longest context's count would grow with batch x longest.
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


def _gather_or_zero(values, index):
    """`values[index]`, or 0 where `values` is empty (a batch of empty contexts)."""
    padded = tf.concat([values, tf.zeros([1], values.dtype)], 0)
    return tf.gather(padded, tf.clip_by_value(index, 0, tf.size(values)))


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

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                  tf.TensorSpec([None], tf.string, name="context")])
    def answer(question, context):
        question, context = checked_request(question=question, context=context)
        context = clean_text(context)
        batch = tf.shape(context)[0]
        query = tokenizer(clean_text(question))[:, : qa.max_query_length]
        pieces, piece_starts, piece_ends = tokenizer.tokenize_with_offsets(context)
        query_length = tf.cast(query.row_lengths(), tf.int32)
        context_length = tf.cast(pieces.row_lengths(), tf.int32)
        window = sequence_length - query_length - special_token_count(2)
        example, start, length = _windows(query_length, context_length, window, qa.doc_stride)
        first_piece = tf.gather(tf.cast(pieces.row_starts(), tf.int32), example) + start
        window_pieces = tf.gather(pieces.flat_values, tf.ragged.range(first_piece, first_piece + length))
        inputs = trim_to_bucket(preprocessor.pack([tf.gather(query, example), window_pieces]), sequence_length)
        outputs = qa(inputs, training=False)
        start_logits = tf.cast(outputs["start_logits"], tf.float32)
        end_logits = tf.cast(outputs["end_logits"], tf.float32)

        # Where each position sits in its context, and whether it is its max-context window.
        offset = tf.gather(query_length, example)[:, None] + 2  # [CLS] question [SEP]
        relative = tf.range(tf.shape(start_logits)[1])[None, :] - offset
        is_context = (relative >= 0) & (relative < length[:, None])
        flat_piece = first_piece[:, None] + relative
        total_pieces = tf.shape(pieces.flat_values)[0]
        max_context = _max_context(relative, length, flat_piece, is_context, total_pieces)

        # n-best spans per window (padding is not a candidate), then per example.
        real = inputs["padding_mask"] > 0
        k = tf.minimum(qa.n_best_size, tf.shape(start_logits)[1])
        start_score, start_at = tf.math.top_k(tf.where(real, start_logits, -float("inf")), k)
        end_score, end_at = tf.math.top_k(tf.where(real, end_logits, -float("inf")), k)
        s, e = start_at[:, :, None], end_at[:, None, :]
        valid = (tf.gather(max_context, start_at, batch_dims=1)[:, :, None]
                 & tf.gather(is_context, end_at, batch_dims=1)[:, None, :]
                 & (e >= s) & (e - s + 1 <= qa.max_answer_length))
        pair_score = tf.where(valid, start_score[:, :, None] + end_score[:, None, :], -float("inf"))
        pair_score = tf.reshape(pair_score, [-1])
        pair_start = tf.reshape(tf.broadcast_to(s, tf.shape(valid)), [-1])
        pair_end = tf.reshape(tf.broadcast_to(e, tf.shape(valid)), [-1])
        pair_window = tf.repeat(tf.range(tf.shape(valid)[0]), k * k)
        top_score, best = _n_best(pair_score, tf.gather(example, pair_window), batch, qa.n_best_size)
        best_score = top_score[:, 0]
        best_window = tf.gather(pair_window, best)
        # Window position -> the piece's index among all contexts' pieces.
        to_piece = tf.gather(first_piece, best_window) - tf.gather(offset[:, 0], best_window)
        byte_start = _gather_or_zero(piece_starts.flat_values, to_piece + tf.gather(pair_start, best))
        byte_end = _gather_or_zero(piece_ends.flat_values, to_piece + tf.gather(pair_end, best))
        probability = 1.0 / tf.reduce_sum(tf.exp(top_score - best_score[:, None]), axis=1)

        answered = tf.math.is_finite(best_score)
        null_score = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], example, batch)
        if qa.version_2_with_negative:
            abstain = answered & (null_score - best_score > qa.null_score_diff_threshold)
            score = tf.where(abstain, tf.sigmoid(null_score - best_score), probability)
            answered = answered & ~abstain
        else:
            score = probability
        rows = tf.range(batch)
        byte_start = tf.where(answered, byte_start, 0)
        byte_end = tf.where(answered, byte_end, 0)
        return {
            "answer": tf.strings.substr(context, byte_start, byte_end - byte_start),
            "start": tf.where(answered, byte_to_char_offsets(context, rows, byte_start), -1),
            "end": tf.where(answered, byte_to_char_offsets(context, rows, byte_end), -1),
            "score": tf.where(tf.math.is_finite(best_score), score, 1.0),
        }

    return [ServingSignature("answer", answer, {"question": ["Who ran?"], "context": ["Ann ran to the park."]})]
