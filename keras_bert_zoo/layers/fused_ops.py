"""The element-wise steps around BERT's matrix products, each one memory pass.

Between its matmuls an encoder layer only adds biases, splits heads, masks
and normalizes attention scores, applies GELU and adds the residual before a
LayerNorm. Written as separate TensorFlow ops each step
reads and writes the whole activation again, and on a CPU with AMX the
matmuls themselves are fast enough that these passes would dominate. Each
function here is one such epilogue, compiled by XLA into a single pass that
computes in float32 (bfloat16 `erf`, `exp` and sums lose precision) and
returns the input's dtype.

The matmuls stay outside XLA: oneDNN's kernels are faster than XLA:CPU's
(whole-model XLA: 3.7x slower in mixed bfloat16), and in bfloat16 TF's own
MatMul+BiasAdd fusion picks a kernel ~2.4x slower than the plain MatMul
(4096x768 by 768x3072 on a 2-core AMX Xeon: 75 ms against 31 ms), so the
bias belongs in the epilogue, not in the matmul. The softmax is left to
TensorFlow: oneDNN's beats XLA:CPU's (BERT-Base 32x128: +9% in mixed
bfloat16, MiniLM +16%).

TF Serving disables XLA:CPU JIT by default, so exports trace the model under
`xla_fusion(False)`, which runs the same formulas as plain ops.
"""

import contextlib
import math
import threading

import tensorflow as tf

_state = threading.local()


def xla_fusion_enabled():
    return getattr(_state, "enabled", True)


@contextlib.contextmanager
def xla_fusion(enabled):
    """Trace the fused ops with (True) or without (False) XLA."""
    previous = xla_fusion_enabled()
    _state.enabled = enabled
    try:
        yield
    finally:
        _state.enabled = previous


def _f32(x):
    return tf.cast(x, tf.float32)


def _gelu_erf(x):
    x32 = _f32(x)
    return 0.5 * x32 * (1.0 + tf.math.erf(x32 * (1.0 / math.sqrt(2.0))))


def _gelu_tanh(x):
    x32 = _f32(x)
    inner = math.sqrt(2.0 / math.pi) * (x32 + 0.044715 * x32 * x32 * x32)
    return 0.5 * x32 * (1.0 + tf.math.tanh(inner))


_GELUS = {"erf": _gelu_erf, "tanh": _gelu_tanh}


def _bias_gelu(y, bias, form):
    return tf.cast(_GELUS[form](_f32(y) + _f32(bias)), y.dtype)


def _gelu(x, form):
    return tf.cast(_GELUS[form](x), x.dtype)


def _bias_add_layer_norm(y, bias, residual, gamma, beta, epsilon):
    # LayerNorm(y + bias + residual): the sub-layer's bias, residual and norm.
    z = _f32(y) + _f32(bias) + _f32(residual)
    mean, variance = tf.nn.moments(z, axes=[-1], keepdims=True)
    normed = (z - mean) * tf.math.rsqrt(variance + epsilon)
    return tf.cast(normed * _f32(gamma) + _f32(beta), residual.dtype)


def _split_heads(query, key, value, query_bias, key_bias, value_bias, padding_mask, batch, query_length, length,
                 num_heads, scale):
    # Each [batch * its length, hidden] + its bias -> [heads, batch, length, head_dim] (heads first: each head's
    # slice is contiguous), the query scaled by 1/sqrt(head_dim) as Keras' MultiHeadAttention does. The query
    # may cover fewer tokens than the keys and values (see BertEncoderLayer's `query_positions`). Every size
    # given: an empty batch has no -1 to infer.
    #
    # The attention mask rides in the query-key product: queries gain a column of ones, keys a column of 0
    # (real token) or a large negative number (padding), so `query @ key^T` is the masked scores with no
    # pass of its own over the [batch, query, key] scores (MiniLM 8x512: that pass was 2% of the forward).
    def heads(x, bias, rows, factor=1.0):
        x = tf.reshape((_f32(x) + _f32(bias)) * factor, [batch, rows, num_heads, x.shape[-1] // num_heads])
        return tf.transpose(x, [2, 0, 1, 3])

    def with_column(x, column):
        column = tf.broadcast_to(column[None, :, :, None], tf.concat([tf.shape(x)[:3], [1]], 0))
        return tf.cast(tf.concat([x, column], axis=-1), query.dtype)

    mask_bias = (1.0 - tf.cast(padding_mask, tf.float32)) * _large_negative_number(query.dtype)
    query = with_column(heads(query, query_bias, query_length, scale), tf.ones([batch, query_length]))
    key = with_column(heads(key, key_bias, length), mask_bias)
    return query, key, tf.cast(heads(value, value_bias, length), query.dtype)


def _large_negative_number(dtype):
    """What masked attention scores get: -1e9, or -3e4 in float16 (whose
    range ends at 65504), as in Keras."""
    return -3e4 if tf.as_dtype(dtype) == tf.float16 else -1e9


def _with_xla(function):
    compiled = tf.function(function, jit_compile=True, reduce_retracing=True)

    def dispatch(*args):
        return (compiled if xla_fusion_enabled() else function)(*args)

    return dispatch


gelu_erf = _with_xla(lambda x: _gelu(x, "erf"))
gelu_tanh = _with_xla(lambda x: _gelu(x, "tanh"))
bias_gelu_erf = _with_xla(lambda y, bias: _bias_gelu(y, bias, "erf"))
bias_gelu_tanh = _with_xla(lambda y, bias: _bias_gelu(y, bias, "tanh"))
bias_add_layer_norm = _with_xla(_bias_add_layer_norm)
split_heads = _with_xla(_split_heads)
