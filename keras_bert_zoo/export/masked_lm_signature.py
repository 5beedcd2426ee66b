"""`fill_mask`: text with `[MASK]` in, the likeliest tokens for each mask out."""

import tensorflow as tf

from keras_bert_zoo.export.request_inputs import checked_request
from keras_bert_zoo.export.request_inputs import clean_text
from keras_bert_zoo.export.request_inputs import trim_to_bucket
from keras_bert_zoo.export.row_chunks import chunk_rows
from keras_bert_zoo.export.row_chunks import map_row_chunks
from keras_bert_zoo.export.serving_signature import ServingSignature
from keras_bert_zoo.preprocessing.masked_text import tokenize_with_masks
from keras_bert_zoo.preprocessing.special_tokens import special_token_count

# Vocabulary logits one chunk of masks computes (128 MB in float32, and as much for their softmax).
_MAX_CHUNK_LOGITS = 2**25


def masked_lm_outputs(pretrainer, preprocessor, columns, top_k):
    """The masked-LM predictions for one or two string tensors (a text, or
    text pairs), in the graph or eagerly.

    Returns a dict: `top_token_ids` / `top_scores` `[batch, masks, top_k]`
    (probabilities over the vocabulary), `mask_count` `[batch]`, `truncated`.
    Masks are counted inside the packed window; rows with fewer masks (and
    the one column of a batch without any) are padded with id 0 and score 0.
    """
    tokens = [tokenize_with_masks(preprocessor.tokenizer, column) for column in columns]
    pieces = tf.add_n([t.row_lengths() for t in tokens])
    truncated = pieces + special_token_count(len(tokens)) > preprocessor.sequence_length
    inputs = trim_to_bucket(preprocessor.pack(tokens), preprocessor.sequence_length)
    is_mask = inputs["token_ids"] == preprocessor.tokenizer.mask_token_id
    positions = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(tf.shape(is_mask)[1]), tf.shape(is_mask)), is_mask)
    mask_count = tf.cast(positions.row_lengths(), tf.int32)
    # At least one (padding) column: the head's gather cannot reshape an
    # empty batch with zero masks.
    positions = positions.to_tensor(default_value=0)
    positions = tf.pad(positions, [[0, 0], [0, tf.maximum(0, 1 - tf.shape(positions)[1])]])

    def top_tokens(part):
        logits = pretrainer(part, training=False)["masked_lm_logits"]
        scores, ids = tf.math.top_k(tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1), k=top_k)
        return ids, scores

    # A chunk's logits are rows x masks x vocabulary floats: its rows are bounded by both.
    rows = tf.minimum(chunk_rows(tf.shape(inputs["token_ids"])[1]),
                      chunk_rows(tf.shape(positions)[1] * pretrainer.backbone.vocabulary_size, _MAX_CHUNK_LOGITS))
    ids, scores = map_row_chunks(top_tokens, {**inputs, "mask_positions": positions},
                                 (tf.TensorSpec([None, None, top_k], tf.int32),
                                  tf.TensorSpec([None, None, top_k], tf.float32)), rows)
    real = tf.sequence_mask(mask_count, tf.shape(ids)[1])[:, :, None]
    return {
        "top_token_ids": tf.where(real, ids, 0),
        "top_scores": tf.where(real, scores, 0.0),
        "mask_count": mask_count,
        "truncated": truncated,
    }


def masked_lm_signatures(pretrainer, preprocessor, top_k=5):
    """Signatures `fill_mask` (`text`) and `fill_mask_pairs` (`text`,
    `text_b`) of a `BertPretrainer` -> `top_tokens` (strings),
    `top_token_ids`, `top_scores` `[batch, masks, top_k]`, `mask_count`,
    `truncated`."""
    vocabulary = tf.constant(preprocessor.tokenizer.get_vocabulary())

    def outputs(*columns):
        result = masked_lm_outputs(pretrainer, preprocessor, [clean_text(c) for c in columns], top_k)
        real = tf.sequence_mask(result["mask_count"], tf.shape(result["top_token_ids"])[1])[:, :, None]
        result["top_tokens"] = tf.where(real, tf.gather(vocabulary, result["top_token_ids"]), "")
        return result

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def fill_mask(text):
        return outputs(*checked_request(text=text))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                  tf.TensorSpec([None], tf.string, name="text_b")])
    def fill_mask_pairs(text, text_b):
        return outputs(*checked_request(text=text, text_b=text_b))

    return [
        ServingSignature("fill_mask", fill_mask, {"text": ["The patient was given [MASK]."]}),
        ServingSignature("fill_mask_pairs", fill_mask_pairs, {"text": ["He [MASK] hi."], "text_b": ["He [MASK]."]}),
    ]
