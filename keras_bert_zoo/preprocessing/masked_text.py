"""Tokenize text in which the literal `[MASK]` stands for the mask token."""

import tensorflow as tf
import tensorflow_text as tf_text

MASK_TEXT = "[MASK]"
_MASK_PATTERN = r"\[MASK\]"


def tokenize_with_masks(tokenizer, texts):
    """Word-piece ids of `texts` `[batch]` with every `[MASK]` as `mask_token_id`.

    The tokenizer alone would read `[MASK]` as the words `[`, `mask`, `]`;
    here the text is cut around each `[MASK]`, the pieces between are
    tokenized as usual, and each `[MASK]` becomes one mask id. Runs in the
    graph.

    Returns:
        int32 `tf.RaggedTensor` `[batch, None]`.
    """
    parts = tf_text.regex_split(texts, _MASK_PATTERN, _MASK_PATTERN)
    is_mask = parts.flat_values == MASK_TEXT
    pieces = tokenizer(parts.flat_values)  # [parts, None]
    kept = tf.ragged.boolean_mask(pieces, pieces.with_flat_values(tf.repeat(~is_mask, pieces.row_lengths())))
    masks = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(tf.cast(is_mask, tf.int64))], tf.cast(tokenizer.mask_token_id, pieces.dtype)),
        tf.cast(is_mask, tf.int64),
    )
    # Each part is either its pieces or a single mask id, in order.
    per_part = tf.concat([kept, masks], axis=1)
    return parts.with_flat_values(per_part).merge_dims(1, 2)
