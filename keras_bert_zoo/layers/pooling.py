"""One vector per text from the backbone's outputs: mean, [CLS] or BERT's pooler."""

import tensorflow as tf

POOLINGS = ("mean", "cls", "pooled")


def pool(outputs, padding_mask, pooling="mean"):
    """Reduce backbone outputs to one vector per text.

    Args:
        outputs: the backbone's output dict.
        padding_mask: int or bool `[batch, seq]`, nonzero on real tokens.
        pooling: `"mean"` (average over real tokens, as sentence-transformers),
            `"cls"` (the `[CLS]` token vector) or `"pooled"` (BERT's tanh
            pooler).
    """
    if pooling == "pooled":
        return outputs["pooled_output"]
    sequence = outputs["sequence_output"]
    if pooling == "cls":
        return sequence[:, 0, :]
    if pooling != "mean":
        raise ValueError(f"pooling must be one of {POOLINGS}; got '{pooling}'.")
    mask = tf.cast(tf.cast(padding_mask, tf.bool), sequence.dtype)[:, :, None]  # any nonzero is real, as in Keras
    return tf.reduce_sum(sequence * mask, axis=1) / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
