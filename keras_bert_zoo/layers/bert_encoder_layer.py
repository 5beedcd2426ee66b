"""BERT's post-LN Transformer layer: keras-hub's TransformerEncoder with fused
residual + LayerNorm steps."""

import keras
import tensorflow as tf
from keras import ops
from keras_hub.layers import TransformerEncoder

from keras_bert_zoo.layers import fused_ops


def _add_and_norm(x, residual, layer_norm):
    # Read the variables here, so the fused function sees plain tensors.
    gamma = tf.convert_to_tensor(layer_norm.gamma.value)
    beta = tf.convert_to_tensor(layer_norm.beta.value)
    return fused_ops.add_layer_norm(x, residual, gamma, beta, layer_norm.epsilon)


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertEncoderLayer(TransformerEncoder):
    """A post-LN `TransformerEncoder` (BERT's layout) with fused add + LayerNorm.

    The sub-layers, weights and config are keras-hub's `TransformerEncoder`
    with `normalize_first=False`; only the forward pass differs: each
    `LayerNorm(x + residual)` runs as one XLA-fused pass in float32 (see
    `fused_ops`), which is the same computation in fewer memory passes.

    Call args:
        inputs: `[batch, seq, hidden]`.
        padding_mask: int or bool `[batch, seq]`, 1 on real tokens.

    Examples:
    >>> layer = BertEncoderLayer(intermediate_dim=16, num_heads=2)
    >>> tuple(layer(keras.ops.ones((1, 3, 8))).shape)
    (1, 3, 8)
    """

    def __init__(self, *args, **kwargs):
        kwargs["normalize_first"] = False
        super().__init__(*args, **kwargs)

    def call(self, inputs, padding_mask=None, training=None):
        attention_mask = None
        if padding_mask is not None:
            # [batch, 1, seq]: every query attends to the real keys only.
            attention_mask = ops.cast(padding_mask, "bool")[:, None, :]
        x = self._self_attention_layer(query=inputs, value=inputs, attention_mask=attention_mask, training=training)
        x = self._self_attention_dropout(x, training=training)
        x = _add_and_norm(x, inputs, self._self_attention_layer_norm)

        y = self._feedforward_intermediate_dense(x)
        y = self._feedforward_output_dense(y)
        y = self._feedforward_dropout(y, training=training)
        return _add_and_norm(y, x, self._feedforward_layer_norm)
