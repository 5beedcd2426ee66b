"""BERT's post-LN Transformer layer: keras-hub's TransformerEncoder weights,
computed as 2-D matmuls with single-pass epilogues."""

import contextlib
import math
import threading

import keras
import tensorflow as tf
from keras_hub.layers import TransformerEncoder

from keras_bert_zoo.layers import activations, fused_ops
from keras_bert_zoo.layers.weight_copies import read_weight

_BIAS_GELUS = {activations.gelu: fused_ops.bias_gelu_erf, activations.gelu_tanh: fused_ops.bias_gelu_tanh}


ENCODER_DEVICES = ("cpu", "gpu")
# Inference runs attention over all heads at once up to this many scores (heads x batch x query x key): BERT-Base
# or MiniLM (12 heads) up to 5 sequences of 128 tokens; head by head above it (see BertEncoderLayer).
ALL_HEADS_MAX_SCORES = 1 << 20
_target = threading.local()


@contextlib.contextmanager
def encoder_device(device):
    """Shape the encoder layers traced inside for `device` ("cpu" or "gpu"),
    wherever TensorFlow runs now: an export traced on a GPU machine for CPU
    serving, or the reverse. `None` keeps the default (the device TensorFlow
    sees)."""
    if device not in (None, *ENCODER_DEVICES):
        raise ValueError(f"The encoder's device must be one of {ENCODER_DEVICES} (or None: where TensorFlow runs); "
                         f"got {device!r}.")
    previous = getattr(_target, "device", None)
    _target.device = device
    try:
        yield
    finally:
        _target.device = previous


def _tensorflow_sees_a_gpu():
    # Where ops with no device scope run: TensorFlow's first visible GPU, if any (asked at each call, ~2 us:
    # `tf.config.set_visible_devices` may hide the GPUs after import).
    return bool(tf.config.get_visible_devices("GPU"))


def runs_on_gpu():
    """Whether the layers traced now are shaped for a GPU (see `encoder_device`)."""
    device = getattr(_target, "device", None)
    return _tensorflow_sees_a_gpu() if device is None else device == "gpu"


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertEncoderLayer(TransformerEncoder):
    """A post-LN `TransformerEncoder` (BERT's layout), computed matmul by matmul.

    The sub-layers, weights and config are keras-hub's `TransformerEncoder`
    with `normalize_first=False`, so checkpoints and presets load unchanged;
    only the forward pass differs:

    - every projection is one 2-D matmul on `[batch * seq, hidden]` (Keras'
      4-D EinsumDense products cost ~1.35x more per FLOP with oneDNN on an
      AVX-512 Xeon, and Eigen runs them worse), query, key and value each
      their own (one matmul on the three kernels side by side would copy them
      on every call: at batch 1 that copy cost MiniLM 6% and Base 14% on a
      2-core AVX2 CPU, Eigen's kernels);
    - attention runs head by head on `[batch, seq, seq]` scores (`[batch, n,
      seq]` with `query_positions`; one head's scores stay in cache) where
      the scores of all heads are large: batched matmuls and softmax over
      all heads at once made MiniLM's whole forward pass slower at 8x512
      (1.04x with oneDNN's kernels on a 2-core AVX2 CPU, 1.43x with Eigen's;
      1.09-1.22x in float32 and mixed bfloat16 on a 2-core AMX Xeon) and as
      fast at 32x128. Where they are small (up to `ALL_HEADS_MAX_SCORES`
      scores, a few sentences), inference runs all heads at once: a head's
      matmul is then mostly per-op overhead, and one batched product per
      layer made single sentences faster (1x128 on the AMX Xeon: MiniLM
      1.20-1.27x, Base 1.10-1.15x, float32 and mixed bfloat16). Training
      stays head by head (all heads: a MiniLM step 0.92x as fast);
    - the work between matmuls (bias, head split, GELU, residual dropout,
      residual + LayerNorm) runs as single-pass fused epilogues computed in
      float32 (the dropout draws from the layer's seed generator as Keras'
      Dropout does: in float32 its very mask; under a mixed policy the
      uniform numbers are drawn in float32, where Keras draws them in 16
      bits); the padding mask rides in the query-key product as one
      more column of the queries and keys, and the softmax is TensorFlow's
      own op (see `fused_ops`).

    With `query_positions` the layer computes its output only at those
    tokens (keys and values still come from every token): what a head that
    reads `[CLS]` or the masked positions needs from the last layer, at a
    fraction of its cost.

    The epilogues' gradients are written out, first-order only: a gradient
    of a gradient through this layer (a gradient penalty) is wrong, with no
    error (see `fused_ops`). On keras-hub's pass too, below, the GELU is
    `activations.gelu` (or `gelu_tanh`), such an op: build the layer with
    Keras' `"gelu"` for second derivatives.

    All of this is shaped for CPUs. On a GPU, and after Keras'
    `quantize(...)` or `enable_lora(...)` of any projection (whose kernels and
    scales, or low-rank updates, Keras' own layer calls apply), the layer
    runs keras-hub's forward pass, the same function: head by head,
    BERT-Base's graph holds 4x the attention matmuls (288) and 12x the
    softmaxes (144) of keras-hub's, each a kernel launch, and on an H100
    (TensorFlow 2.21) it ran 0.49-0.71x keras-hub's speed on single
    sentences and 0.75-0.93x at 32x128 under XLA; it led only at 32x128
    without XLA in float32 (1.14x) and bfloat16 (1.08x). The choice is made
    when the call is traced; `encoder_device("cpu"|"gpu")` makes it for
    another machine (exports use it: see `export_for_serving`).

    Call args:
        inputs: `[batch, seq, hidden]`.
        padding_mask: int or bool `[batch, seq]`, 1 on real tokens.
        query_positions: optional int `[batch, n]`: return `[batch, n,
            hidden]`, the outputs at these positions only.

    Examples:
    >>> layer = BertEncoderLayer(intermediate_dim=16, num_heads=2)
    >>> tuple(layer(keras.ops.ones((1, 3, 8))).shape)
    (1, 3, 8)
    """

    def __init__(self, *args, **kwargs):
        kwargs["normalize_first"] = False
        super().__init__(*args, **kwargs)

    def call(self, inputs, padding_mask=None, training=None, query_positions=None):
        on_gpu = runs_on_gpu()
        if on_gpu or self._keras_applies_projections():
            # keras-hub's forward pass (see the class docstring); on a GPU its GELU as plain ops too, as keras-hub's.
            with fused_ops.xla_fusion(fused_ops.xla_fusion_enabled() and not on_gpu):
                outputs = super().call(inputs, padding_mask=padding_mask, training=training)
            return outputs if query_positions is None else tf.gather(outputs, query_positions, batch_dims=1)
        # Training fuses the epilogues with XLA too, forward and backward passes: BERT-Base classifier steps
        # 1.12x faster in float32 and, with the passes split (see `fused_ops._with_gradient`), no more memory
        # than plain ops (2-core AMX Xeon). Before that split XLA kept each epilogue's input alive for the
        # backward pass and gained nothing in float32 training. MiniLM's float32 steps are level, and its first
        # fit pays the compiling once (~3 s of ~23).
        return self._fused_call(inputs, padding_mask, training, query_positions)

    def _projections(self):
        attention = self._self_attention_layer
        return (attention._query_dense, attention._key_dense, attention._value_dense, attention._output_dense,
                self._feedforward_intermediate_dense, self._feedforward_output_dense)

    def _keras_applies_projections(self):
        """Whether any projection's kernel is more than its variable: after
        Keras' `quantize(...)` (int8 values and their scales) or
        `enable_lora(...)` (plus a low-rank update), whatever layers a filter
        chose; only Keras' own layer calls apply those."""
        return any(dense.quantization_mode is not None or dense.lora_enabled for dense in self._projections())

    def cast_on_read(self):
        """The weights every call casts to the compute dtype: the kernels and
        biases, under a mixed policy on the CPU path (see `WeightCopies`)."""
        if self.compute_dtype == self.variable_dtype or runs_on_gpu() or self._keras_applies_projections():
            return []
        return [variable for dense in self._projections() for variable in (dense.kernel, dense.bias)]

    def _fused_call(self, inputs, padding_mask, training, query_positions):
        attention = self._self_attention_layer
        dtype = inputs.dtype
        shape = tf.shape(inputs)
        hidden = inputs.shape[-1]
        if padding_mask is None:
            padding_mask = tf.ones(shape[:2], "int32")
        tokens = tf.reshape(inputs, [-1, hidden])
        # The rows this layer outputs: every token, or the queried ones (the residual path follows them).
        query_length = shape[1] if query_positions is None else tf.shape(query_positions)[1]
        x = tokens if query_positions is None else \
            tf.reshape(tf.gather(inputs, query_positions, batch_dims=1), [-1, hidden])

        # === Self-attention ===
        def project(dense, rows):
            # EinsumDense kernels [hidden, heads, head_dim] are [hidden, hidden] matrices (three matmuls: see above).
            return tf.matmul(rows, tf.reshape(read_weight(dense.kernel, dtype), [hidden, hidden]))

        query, key, value = (project(attention._query_dense, x), project(attention._key_dense, tokens),
                             project(attention._value_dense, tokens))
        biases = [tf.reshape(read_weight(p.bias, dtype), [hidden])
                  for p in (attention._query_dense, attention._key_dense, attention._value_dense)]
        # The keys carry the padding mask as one more column (see `fused_ops.split_heads`).
        query, key, value = fused_ops.split_heads(query, key, value, *biases, padding_mask, shape[0], query_length,
                                                  shape[1], self.num_heads, 1.0 / math.sqrt(hidden // self.num_heads))
        context = self._attend(query, key, value, training)
        output = attention._output_dense
        y = tf.matmul(context, tf.reshape(read_weight(output.kernel, dtype), [hidden, hidden]))
        x = self._residual_norm(y, output.bias, x, self._self_attention_dropout,
                                self._self_attention_layer_norm, training)

        # === Feed-forward ===
        intermediate = self._feedforward_intermediate_dense
        y = tf.matmul(x, read_weight(intermediate.kernel, dtype))
        y = self._bias_activation(y, read_weight(intermediate.bias, dtype))
        output = self._feedforward_output_dense
        y = tf.matmul(y, read_weight(output.kernel, dtype))
        x = self._residual_norm(y, output.bias, x, self._feedforward_dropout, self._feedforward_layer_norm, training)
        return tf.reshape(x, [shape[0], query_length, hidden])

    def _attend(self, query, key, value, training):
        # [heads, batch, query, head_dim (+1)] each -> the context, [batch * query, hidden].
        def head_by_head():
            contexts = []
            for head_query, head_key, head_value in zip(tf.unstack(query), tf.unstack(key), tf.unstack(value)):
                probabilities = tf.nn.softmax(tf.matmul(head_query, head_key, transpose_b=True))
                probabilities = self._self_attention_layer._dropout_layer(probabilities, training=training)
                contexts.append(tf.matmul(probabilities, head_value))
            return tf.reshape(tf.concat(contexts, axis=-1), [-1, hidden])

        def all_heads():
            context = tf.matmul(tf.nn.softmax(tf.matmul(query, key, transpose_b=True)), value)
            return tf.reshape(tf.transpose(context, [1, 2, 0, 3]), [-1, hidden])

        # When to run which: see the class docstring.
        hidden = value.shape[0] * value.shape[-1]
        if training:
            return head_by_head()
        static = [query.shape[0], query.shape[1], query.shape[2], key.shape[2]]
        if None not in static:
            return all_heads() if math.prod(static) <= ALL_HEADS_MAX_SCORES else head_by_head()
        scores = tf.reduce_prod(tf.cast(tf.concat([tf.shape(query)[:3], tf.shape(key)[2:3]], 0), tf.int64))
        return tf.cond(scores <= ALL_HEADS_MAX_SCORES, all_heads, head_by_head)

    def compute_output_shape(self, inputs_shape, query_positions_shape=None):
        if query_positions_shape is None:
            return inputs_shape
        return (inputs_shape[0], query_positions_shape[1], inputs_shape[2])

    def _bias_activation(self, y, bias):
        bias_gelu = _BIAS_GELUS.get(self.activation)
        if bias_gelu is not None:
            return bias_gelu(y, bias)
        return self.activation(tf.nn.bias_add(y, bias))

    @staticmethod
    def _residual_norm(y, bias, residual, dropout, layer_norm, training):
        keep = None
        if training and dropout.rate > 0:
            # Keras' Dropout's rule (uniform >= rate, from the layer's seed generator: in float32 Keras' very mask;
            # under a mixed policy Keras draws in 16 bits, here in float32), applied inside the epilogue:
            # BERT-Base classifier steps 1.08x as fast in mixed bfloat16 (pretraining 1.03x), float32 1.015x
            # (16x128, 2-core AMX Xeon).
            keep = keras.random.uniform(tf.shape(y), seed=dropout.seed_generator) >= dropout.rate
        return fused_ops.bias_add_layer_norm(y, read_weight(bias, y.dtype), residual,
                                             read_weight(layer_norm.gamma, "float32"),
                                             read_weight(layer_norm.beta, "float32"), layer_norm.epsilon, keep=keep,
                                             rate=dropout.rate)
