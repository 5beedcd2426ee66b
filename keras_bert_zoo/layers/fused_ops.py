"""The element-wise steps around BERT's matrix products, each one memory pass.

Between its matmuls an encoder layer only adds biases, splits heads, masks
and normalizes attention scores, applies GELU and adds the residual (after
its dropout, in training) before a LayerNorm. Written as separate
TensorFlow ops each step reads and writes the whole activation again, and
on a CPU with AMX the matmuls themselves are fast enough that these passes
would dominate. The
masked-LM loss's softmax over the vocabulary, after the head's matmul, is
another (`sparse_softmax_cross_entropy`). Each function here is one such
epilogue, compiled by XLA into a single pass that
computes in float32 (bfloat16 `erf`, `exp` and sums lose precision) and
returns the input's dtype; its gradient is written out and compiled the same
way. Those gradients are first-order: differentiating a gradient again (a
gradient penalty, a Hessian-vector product) misses the epilogues' second
derivatives, and gives wrong numbers without an error.

The matmuls stay outside XLA: oneDNN's kernels are faster than XLA:CPU's
(whole-model XLA: 3.7x slower in mixed bfloat16), and in bfloat16 TF's own
MatMul+BiasAdd fusion picks a kernel ~2.4x slower than the plain MatMul
(4096x768 by 768x3072 on a 2-core AMX Xeon: 75 ms against 31 ms), so the
bias belongs in the epilogue, not in the matmul. The attention softmax is
left to TensorFlow: oneDNN's beats XLA:CPU's (BERT-Base 32x128: +9% in mixed
bfloat16, MiniLM +16%).

TF Serving disables XLA:CPU JIT by default, so exports trace the model under
`xla_fusion(False)`, which runs the same formulas as plain ops (the loss,
which exports do not carry, then runs Keras' own).
"""

import contextlib
import functools
import math
import threading

import tensorflow as tf

try:
    # Whether a GradientTape is recording: TensorFlow asks no public question for it. Whatever else asks for a
    # gradient (a symbolic `tf.gradients`, a forward accumulator) gets what it needs recomputed.
    from tensorflow.python.eager.record import could_possibly_record as _tape_recording
except ImportError:  # gone from this TensorFlow: every call keeps what a gradient needs
    def _tape_recording():
        return True

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


def _forward_only():
    return getattr(_state, "forward_only", False)


@contextlib.contextmanager
def forward_only():
    """Trace the fused ops as their forward passes alone, without written-out
    gradients: for a graph that is never trained, such as a serving export.
    Differentiating it still works, by autodiff of the forward ops."""
    previous = _forward_only()
    _state.forward_only = True
    try:
        yield
    finally:
        _state.forward_only = previous


def _for_xla_cpu():
    """Whether the pass being traced is compiled for XLA:CPU (see `_compiled`)."""
    return getattr(_state, "xla_cpu", False)


# bfloat16 is the top half of a float32, so passes compiled for XLA:CPU convert it by moving bits: its own
# conversions kept the pass around them from vectorizing (a bias + GELU on [4096, 1536] bfloat16: 2.0 ms against
# 1.0, the same numbers; 2-core AVX-512 BF16 EPYC). Plain TensorFlow ops cast (each bit op there is a pass), and
# so does a TPU's XLA, whose conversions are native.
def _f32(x):
    if not (x.dtype == tf.bfloat16 and _for_xla_cpu()):
        return tf.cast(x, tf.float32)
    return tf.bitcast(tf.bitwise.left_shift(tf.cast(tf.bitcast(x, tf.uint16), tf.uint32), 16), tf.float32)


def _cast(x32, dtype):
    """A float32 tensor in `dtype`: bfloat16 rounded to nearest, ties to
    even, as TensorFlow's cast."""
    if not (tf.as_dtype(dtype) == tf.bfloat16 and _for_xla_cpu()):
        return tf.cast(x32, dtype)
    bits = tf.bitcast(x32, tf.uint32)
    rounded = tf.bitwise.right_shift(bits + tf.bitwise.bitwise_and(tf.bitwise.right_shift(bits, 16), 1) + 0x7FFF, 16)
    # A NaN whose payload lies in the low half would round to infinity: it stays a NaN.
    halves = tf.where(tf.math.is_nan(x32), tf.constant(0x7FC0, tf.uint32), rounded)
    return tf.bitcast(tf.cast(halves, tf.uint16), tf.bfloat16)


def _row_mean(x):
    """The mean along the last axis, keeping it. XLA:CPU's reductions along
    rows ran LayerNorm's pass at half the speed ([4096, 768] bfloat16: 1.95 ms
    against 0.98; 2-core AVX-512 BF16 EPYC), so there it is a product with a
    column of ones (summed in another order: last-bit differences). Not
    elsewhere: a TPU multiplies float32 at bfloat16's precision."""
    if not _for_xla_cpu():
        return tf.reduce_mean(x, axis=-1, keepdims=True)
    width = tf.shape(x)[-1]  # a traced function's shapes may be unknown (`reduce_retracing`)
    sums = tf.matmul(tf.reshape(x, [-1, width]), tf.ones([width, 1], x.dtype))
    return tf.reshape(sums, tf.concat([tf.shape(x)[:-1], [1]], 0)) / tf.cast(width, x.dtype)


def _compiled(f):
    """`f` compiled by XLA: for XLA:CPU traced with its workarounds (`_f32`,
    `_cast`, `_row_mean`), where a TPU is seen as written."""
    @functools.wraps(f)  # the compiled function keeps its name in graphs
    def for_xla_cpu(*args, **kwargs):
        previous = _for_xla_cpu()
        _state.xla_cpu = True
        try:
            return f(*args, **kwargs)
        finally:
            _state.xla_cpu = previous

    on_cpu, on_tpu = (tf.function(g, jit_compile=True, reduce_retracing=True) for g in (for_xla_cpu, f))

    def call(*args, **kwargs):
        # Asked at each call (once per trace of the graph calling it): a TPU may connect after a call on the host.
        return (on_tpu if tf.config.list_logical_devices("TPU") else on_cpu)(*args, **kwargs)

    return call


def _gelu_erf(x32):
    # GELU(x) = x * Phi(x), and its slope Phi(x) + x * phi(x), sharing Phi.
    cdf = 0.5 * (1.0 + tf.math.erf(x32 * (1.0 / math.sqrt(2.0))))
    return x32 * cdf, cdf + x32 * tf.exp(-0.5 * x32 * x32) * (1.0 / math.sqrt(2.0 * math.pi))


_TANH_SCALE = math.sqrt(2.0 / math.pi)


def _gelu_tanh(x32):
    # 0.5 * x * (1 + tanh(inner(x))), and its slope, sharing the tanh.
    t = tf.math.tanh(_TANH_SCALE * (x32 + 0.044715 * x32 * x32 * x32))
    return 0.5 * x32 * (1.0 + t), 0.5 * (1.0 + t) + 0.5 * x32 * (1.0 - t * t) * _TANH_SCALE * (
        1.0 + 3.0 * 0.044715 * x32 * x32)


_GELUS = {"erf": _gelu_erf, "tanh": _gelu_tanh}

# The gradients below are written out so that backpropagation keeps one tensor of each function's
# activation size, in the activations' dtype: the GELU's derivative, the LayerNorm's normalized input (and its
# per-row scale). Differentiated op by op, several float32 intermediates stayed alive until the backward pass:
# a BERT-Base classifier step at 16x128 peaked at 5.8 GB in float32 and 5.2 in mixed_bfloat16 (keras-hub: 6.2
# and 4.6), with these at 4.9 and 4.6 (2-core AMX Xeon). Recomputing the derivative from the inputs in the
# backward pass instead cost a mixed bfloat16 MiniLM step 6%.


def _bias_gradient(gradient):
    return tf.reduce_sum(gradient, axis=tf.range(tf.rank(gradient) - 1))


def _with_gradient(forward, backward):
    """An op with a written-out gradient, each pass one function: `forward(*inputs, **constants)` returns the
    outputs (a tensor or a tuple) and a tuple of the tensors that `backward(*upstream, *saved, **constants)`
    needs to return the gradients of the leading inputs (the others, such as sizes and masks, get none). Where
    `xla_fusion` is on when the op is called, both passes run XLA-compiled (the backward one too, though it
    runs later).

    The gradient wraps the compiled functions, not the reverse: TensorFlow differentiating a compiled function
    makes it return, for its backward function, what that might need, and its choice is wide: each
    epilogue's input, and the head split's float32 copies of the projections (a concat's gradient asks for its
    inputs' shapes), all stayed alive until the backward pass (BERT-Base classifier, mixed bfloat16, 16x128:
    0.4 GB more at the step's peak).
    """
    def outputs_only(*inputs, **constants):
        return forward(*inputs, **constants)[0]

    compiled_forward, compiled_backward, compiled_outputs = (_compiled(f) for f in (forward, backward, outputs_only))

    def op(*inputs, **constants):
        xla = xla_fusion_enabled()
        if _forward_only():
            return (compiled_outputs if xla else outputs_only)(*inputs, **constants)
        recording = _tape_recording()

        @tf.custom_gradient
        def fused(*inputs):
            # Cut from the tape: a tape that recorded the forward function would differentiate it, and so
            # make it return what autodiff's backward pass might need (a persistent tape, or any in eager mode).
            unrecorded = [tf.stop_gradient(x) for x in inputs]
            if recording:
                outputs, saved = (compiled_forward if xla else forward)(*unrecorded, **constants)
            else:
                # Inference: writing out the saved tensors would cost it a pass each (MiniLM 32x128: 0.81x as
                # fast in mixed bfloat16). A symbolic `tf.gradients` recomputes them.
                outputs, saved = (compiled_outputs if xla else outputs_only)(*unrecorded, **constants), None

            def gradient(*upstream):
                kept = saved if saved is not None else \
                    (compiled_forward if xla else forward)(*unrecorded, **constants)[1]
                gradients = list((compiled_backward if xla else backward)(*upstream, *kept, **constants))
                gradients += [None] * (len(inputs) - len(gradients))
                return [None if g is None else tf.cast(g, x.dtype) for g, x in zip(gradients, inputs)]

            return outputs, gradient

        return fused(*inputs)

    return op


def _bias_gelu_passes(form):
    def forward(y, bias):
        outputs, slope = _GELUS[form](_f32(y) + _f32(bias))
        return _cast(outputs, y.dtype), (_cast(slope, y.dtype),)

    def backward(upstream, slope):
        d = _f32(upstream) * _f32(slope)
        return _cast(d, slope.dtype), _bias_gradient(d)

    return forward, backward


def _gelu_passes(form):
    def forward(x):
        outputs, slope = _GELUS[form](_f32(x))
        return _cast(outputs, x.dtype), (_cast(slope, x.dtype),)

    def backward(upstream, slope):
        return (_cast(_f32(upstream) * _f32(slope), slope.dtype),)

    return forward, backward


# LayerNorm(y + bias + residual): the sub-layer's bias, residual and norm.
def _layer_norm(z, gamma, beta, epsilon, dtype):
    mean = _row_mean(z)
    centered = z - mean
    rstd = tf.math.rsqrt(_row_mean(centered * centered) + epsilon)
    normed = centered * rstd
    return _cast(normed * _f32(gamma) + _f32(beta), dtype), _cast(normed, dtype), rstd


def _layer_norm_backward(upstream, kept, rstd, gamma):
    # The input's gradient (float32), gamma's and beta's.
    upstream, normed = _f32(upstream), _f32(kept)
    d_normed = upstream * _f32(gamma)
    dz = rstd * (d_normed - _row_mean(d_normed) - normed * _row_mean(d_normed * normed))
    return dz, _bias_gradient(upstream * normed), _bias_gradient(upstream)


def _bias_add_layer_norm_forward(y, bias, residual, gamma, beta, epsilon):
    outputs, normed, rstd = _layer_norm(_f32(y) + _f32(bias) + _f32(residual), gamma, beta, epsilon, residual.dtype)
    return outputs, (normed, rstd, gamma)


def _bias_add_layer_norm_backward(upstream, kept, rstd, gamma, epsilon):
    dz, d_gamma, d_beta = _layer_norm_backward(upstream, kept, rstd, gamma)
    dz_kept = _cast(dz, kept.dtype)
    # y, bias, residual, gamma, beta (`op` casts each to its input's dtype); the sums in float32.
    return dz_kept, _bias_gradient(dz), dz_kept, d_gamma, d_beta


# LayerNorm(dropout(y + bias) + residual), `keep` the dropout's mask: the bias, the dropout and the select of its
# gradient join the pass (TensorFlow's random kernel draws the mask: XLA:CPU's Philox made the pass 2x slower).
def _kept_scale(rate):
    # What kept entries are multiplied by; at rate 1 none is kept (Keras' dropout then gives zeros).
    return 1.0 / (1.0 - rate) if rate < 1.0 else 0.0


def _bias_dropout_add_layer_norm_forward(y, bias, residual, gamma, beta, keep, epsilon, rate):
    z = tf.where(keep, (_f32(y) + _f32(bias)) * _kept_scale(rate), 0.0) + _f32(residual)
    outputs, normed, rstd = _layer_norm(z, gamma, beta, epsilon, residual.dtype)
    return outputs, (normed, rstd, gamma, keep)


def _bias_dropout_add_layer_norm_backward(upstream, kept, rstd, gamma, keep, epsilon, rate):
    dz, d_gamma, d_beta = _layer_norm_backward(upstream, kept, rstd, gamma)
    dy = tf.where(keep, dz * _kept_scale(rate), 0.0)
    return _cast(dy, kept.dtype), _bias_gradient(dy), _cast(dz, kept.dtype), d_gamma, d_beta


def _split_heads_forward(query, key, value, query_bias, key_bias, value_bias, padding_mask, batch, query_length,
                         length, num_heads, scale):
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
        # Each part cast before the concat: XLA:CPU kept a cast of the concat from fusing with it, and wrote the
        # float32 concat out first, a pass more (the same values).
        column = tf.broadcast_to(_cast(column, query.dtype)[None, :, :, None], tf.concat([tf.shape(x)[:3], [1]], 0))
        return tf.concat([_cast(x, query.dtype), column], axis=-1)

    real = tf.cast(tf.cast(padding_mask, tf.bool), tf.float32)  # any nonzero is a real token, as in Keras
    mask_bias = (1.0 - real) * _large_negative_number(query.dtype)
    query = with_column(heads(query, query_bias, query_length, scale), tf.ones([batch, query_length]))
    key = with_column(heads(key, key_bias, length), mask_bias)
    # A sequence with no real token: every score is masked, the same large number once rounded, so its softmax
    # is uniform whatever its queries and keys; their gradient must be zero too (see the backward pass).
    attends = tf.cast(tf.reduce_any(real > 0, axis=1), tf.float32)  # 0, not reduce_max's -inf, with no keys
    return (query, key, _cast(heads(value, value_bias, length), query.dtype)), (attends,)


def _split_heads_backward(d_query, d_key, d_value, attends, num_heads, scale):
    # The mask and ones columns take no gradient; each head's part goes back to its columns of the rows. The
    # scores' gradient reaches a sequence with no real token as if its softmax followed its scores (a
    # softmax's gradient at the uniform point): its queries and keys get none, as its forward pass uses none.
    head_dim, dtype = d_value.shape[-1], d_value.dtype

    def rows(d, factor=1.0):
        d = tf.transpose(_f32(d[..., :head_dim]) * factor, [1, 2, 0, 3])
        return tf.reshape(d, [-1, num_heads * head_dim])

    per_sequence = attends[None, :, None, None]
    d_query, d_key, d_value = rows(d_query, scale * per_sequence), rows(d_key, per_sequence), rows(d_value)
    # query, key, value, then their biases.
    return (*(_cast(d, dtype) for d in (d_query, d_key, d_value)),
            *(_bias_gradient(d) for d in (d_query, d_key, d_value)))


# Softmax cross-entropy over a vocabulary's logits, for integer labels: per row, the log-sum-exp less the label's
# logit. The forward pass writes the gradient, softmax less the label's one-hot, as TensorFlow's kernel does, so
# the backward pass only scales it; one compiled pass each ran 2.2x faster than TensorFlow's kernel and its
# gradient's product (BERT's masked-LM head, 320 rows by 30522: 24 against 53 ms, 2-core AMX Xeon).
def _sparse_softmax_cross_entropy_forward(logits, labels):
    x = tf.reshape(_f32(logits), [-1, tf.shape(logits)[-1]])
    rows = tf.cast(tf.reshape(labels, [-1]), tf.int32)
    largest = tf.reduce_max(x, axis=-1, keepdims=True)
    exps = tf.exp(x - largest)
    # A label outside [0, classes) makes its row's loss and gradient NaN, as TensorFlow's XLA kernel does (a
    # gather would clamp it and read a wrong logit); one value per row, no pass of its own.
    valid = (rows >= 0) & (rows < tf.shape(x)[-1])
    total = tf.where(valid[:, None], tf.reduce_sum(exps, axis=-1, keepdims=True), math.nan)
    losses = largest[:, 0] + tf.math.log(total[:, 0]) - tf.gather(x, tf.where(valid, rows, 0), batch_dims=1)
    gradient = exps / total - tf.one_hot(rows, tf.shape(x)[-1], dtype=tf.float32)
    return tf.reshape(losses, tf.shape(labels)), (_cast(tf.reshape(gradient, tf.shape(logits)), logits.dtype),)


def _sparse_softmax_cross_entropy_backward(upstream, gradient):
    return (_cast(_f32(upstream)[..., None] * _f32(gradient), gradient.dtype),)


def _large_negative_number(dtype):
    """What masked attention scores get: -1e9, or -3e4 in float16 (whose
    range ends at 65504), as in Keras."""
    return -3e4 if tf.as_dtype(dtype) == tf.float16 else -1e9


gelu_erf = _with_gradient(*_gelu_passes("erf"))
gelu_tanh = _with_gradient(*_gelu_passes("tanh"))
bias_gelu_erf = _with_gradient(*_bias_gelu_passes("erf"))
bias_gelu_tanh = _with_gradient(*_bias_gelu_passes("tanh"))
_bias_add_layer_norm = _with_gradient(_bias_add_layer_norm_forward, _bias_add_layer_norm_backward)
_bias_dropout_add_layer_norm = _with_gradient(_bias_dropout_add_layer_norm_forward,
                                              _bias_dropout_add_layer_norm_backward)
_split_heads = _with_gradient(_split_heads_forward, _split_heads_backward)
_sparse_softmax_cross_entropy = _with_gradient(_sparse_softmax_cross_entropy_forward,
                                               _sparse_softmax_cross_entropy_backward)


def bias_add_layer_norm(y, bias, residual, gamma, beta, epsilon, keep=None, rate=0.0):
    """LayerNorm(y + bias + residual); with `keep` (a bool mask of `y`'s
    shape), LayerNorm(dropout(y + bias) + residual): the kept entries scaled
    by 1 / (1 - rate), the others zero."""
    if keep is None:
        return _bias_add_layer_norm(y, bias, residual, gamma, beta, epsilon=epsilon)
    return _bias_dropout_add_layer_norm(y, bias, residual, gamma, beta, keep, epsilon=epsilon, rate=float(rate))


def split_heads(query, key, value, query_bias, key_bias, value_bias, padding_mask, batch, query_length, length,
                num_heads, scale):
    return _split_heads(query, key, value, query_bias, key_bias, value_bias, padding_mask, batch, query_length,
                        length, num_heads=num_heads, scale=scale)


def sparse_softmax_cross_entropy(logits, labels):
    """`tf.nn.sparse_softmax_cross_entropy_with_logits` (integer `labels` of
    `logits`' shape less its last axis) as one pass, computed in float32; a
    label outside `[0, logits.shape[-1])` gives its row NaN."""
    return _sparse_softmax_cross_entropy(logits, labels)
