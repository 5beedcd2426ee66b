"""keras-hub's masked-LM head, its tied vocabulary projection as one matmul."""

import keras
import keras_hub
import tensorflow as tf


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class MaskedLMHead(keras_hub.layers.MaskedLMHead):
    """keras-hub's `MaskedLMHead` (dense + activation + LayerNorm, then the
    decoder tied to the token embedding plus an output bias), with the same
    arguments, weights and outputs, on rows already gathered.

    keras-hub multiplies by the transposed embedding matrix; TensorFlow then
    transposes its gradient back, a pass over the whole `[vocabulary,
    hidden]` matrix each step (MiniLM pretraining at 16x128: 17 ms of an
    800 ms step, 2-core AMX Xeon). Here the matmul reads the matrix
    transposed, and its gradient comes out in the matrix's own layout. A
    quantized, untied or soft-capped decoder decodes as keras-hub's does.

    It keeps keras-hub's class name: Keras keys a model's weights in its
    files by each layer's class name, so presets saved with keras-hub's head
    load into this one.

    Args:
        token_embedding: the backbone's `ReversibleEmbedding`, whose
            weights the decoder shares.
        **kwargs: `MaskedLMHead`'s (`intermediate_activation`,
            `layer_norm_epsilon`, `kernel_initializer`, ...).

    Call arguments:
        inputs: the encoder's rows to predict, `[batch, predictions, hidden]`.
        mask_positions: optional int `[batch, predictions]`: gather these
            positions of `inputs` first, as keras-hub's head does.

    Examples:
    >>> from keras_hub.layers import ReversibleEmbedding
    >>> embedding = ReversibleEmbedding(input_dim=10, output_dim=4)
    >>> embedding.build((None,))
    >>> head = MaskedLMHead(token_embedding=embedding, intermediate_activation="gelu")
    >>> tuple(head(keras.ops.ones((2, 3, 4))).shape)
    (2, 3, 10)
    """

    def call(self, inputs, mask_positions=None):
        if mask_positions is not None:
            inputs = keras.ops.take_along_axis(inputs, keras.ops.expand_dims(mask_positions, axis=-1), axis=1)
        x = self._intermediate_layer_norm(self._intermediate_dense(inputs))
        # keras.ops.add, not `+`: a tensor's own `+` with the float32 bias of a mixed policy fails in eager mode,
        # where in a graph it falls back to Keras' add (float32 logits). Now both give Keras' add. (keras-hub's
        # call adds with `+`: a quantized mixed-precision head failed there.)
        logits = keras.ops.add(keras.ops.cast(self._decode(x), self.compute_dtype), self._bias)
        return logits if self.activation is None else self.activation(logits)

    def _decode(self, x):
        """The vocabulary scores of `x` before the bias: one matmul reading the tied embedding transposed, or
        keras-hub's decoding where the embedding is quantized, untied or soft-capped."""
        if not self._projects_in_one_matmul():
            if self.token_embedding is None:
                return keras.ops.matmul(x, self._kernel)
            return self.token_embedding(x, reverse=True)
        rows = tf.reshape(x, [-1, x.shape[-1]])
        logits = tf.matmul(rows, tf.cast(self.token_embedding.embeddings, rows.dtype), transpose_b=True)
        return tf.reshape(logits, tf.concat([tf.shape(x)[:-1], [self.vocabulary_size]], axis=0))

    def compute_output_shape(self, inputs_shape, mask_positions_shape=None):
        rows = inputs_shape[:2] if mask_positions_shape is None else mask_positions_shape
        return tuple(rows) + (self.vocabulary_size,)

    def _projects_in_one_matmul(self):
        embedding = self.token_embedding
        return (embedding is not None and embedding.tie_weights and embedding.quantization_mode is None
                and embedding.reverse_dtype is None and embedding.logit_soft_cap is None)
