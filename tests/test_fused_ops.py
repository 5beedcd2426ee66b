"""The fused epilogues' own building blocks, against TensorFlow's ops."""

import numpy as np
import tensorflow as tf

from keras_bert_zoo.layers import fused_ops


def _compiled_ops(function):
    """`function` as the epilogues compile it, and the ops of its traced graph."""
    compiled = fused_ops._compiled(function)
    return compiled, {op.type for op in compiled.get_concrete_function(
        tf.TensorSpec(None, tf.bfloat16 if function is _up else tf.float32)).graph.get_operations()}


def _up(x):
    return fused_ops._f32(x)


def _down(x):
    return fused_ops._cast(x, tf.bfloat16)


def _bits(x, dtype):
    return tf.bitcast(x, dtype).numpy()


def test_compiled_passes_convert_every_bfloat16_to_float32_as_tensorflows_cast():
    every = tf.bitcast(tf.constant(np.arange(1 << 16, dtype=np.uint16)), tf.bfloat16)
    compiled, ops = _compiled_ops(_up)
    assert "Bitcast" in ops and "Cast" in ops  # by bits (the cast is uint16 -> uint32), not a float conversion
    ours, reference = compiled(every), tf.cast(every, tf.float32)
    nan = np.isnan(reference.numpy())
    assert np.isnan(ours.numpy()[nan]).all()
    np.testing.assert_array_equal(_bits(ours, tf.uint32)[~nan], _bits(reference, tf.uint32)[~nan])


def test_compiled_passes_round_float32_to_bfloat16_as_tensorflows_cast():
    """Round to nearest, ties to even, overflow to infinity, subnormals kept, a NaN stays one whatever its
    payload: TensorFlow's own kernel is the reference, over random bit patterns and the edge cases."""
    rng = np.random.default_rng(0)
    edges = np.array([0x3F808000, 0x3F818000, 0x3F80_7FFF, 0x3F80_8001,  # ties to even (down, up), either side
                      0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000,  # the largest floats round to infinity or stay
                      0x7F800000, 0xFF800000, 0x80000000, 0x00000000,  # infinities, zeros
                      0x00000001, 0x807FFFFF, 0x00018000,  # subnormals
                      0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F807FFF, 0xFF800001], np.uint32)  # NaNs, low payloads
    patterns = np.concatenate([edges, rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)])
    values = tf.bitcast(tf.constant(patterns), tf.float32)
    compiled, ops = _compiled_ops(_down)
    assert "Bitcast" in ops
    ours, reference = compiled(values), tf.cast(values, tf.bfloat16)
    nan = np.isnan(tf.cast(reference, tf.float32).numpy())
    assert nan.sum() > 100 and np.isnan(tf.cast(ours, tf.float32).numpy()[nan]).all()
    np.testing.assert_array_equal(_bits(ours, tf.uint16)[~nan], _bits(reference, tf.uint16)[~nan])


def test_plain_ops_cast_as_they_are():
    """Outside a compiled pass (exports, `xla_fusion(False)`) each bit operation would be a pass of its own."""
    graph = tf.function(_down).get_concrete_function(tf.TensorSpec(None, tf.float32)).graph
    assert "Bitcast" not in {op.type for op in graph.get_operations()}


def test_where_a_tpu_is_seen_compiled_passes_cast_too(monkeypatch):
    """A TPU converts natively; its XLA gets the plain conversion."""
    seen = tf.config.list_logical_devices
    monkeypatch.setattr(tf.config, "list_logical_devices",
                        lambda kind=None: ["/device:TPU:0"] if kind == "TPU" else seen(kind))
    for function in (_up, _down):
        assert "Bitcast" not in _compiled_ops(function)[1]


def test_row_means_are_numpys_in_any_rank():
    rng = np.random.default_rng(1)
    for shape in [(7, 5), (2, 3, 8), (1, 384)]:
        x = rng.normal(size=shape).astype("float32") * 3 + 1
        np.testing.assert_allclose(fused_ops._row_mean(tf.constant(x)).numpy(), x.mean(-1, keepdims=True),
                                   rtol=1e-6, atol=1e-6)
