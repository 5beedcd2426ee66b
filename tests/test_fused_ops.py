"""The fused epilogues' own building blocks, against TensorFlow's ops."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_zoo.layers import fused_ops


def _up(x):
    return fused_ops._f32(x)


def _down(x):
    return fused_ops._cast(x, tf.bfloat16)


def _ops(function, spec):
    """The ops `function` traces into, those of the functions it calls included: (type, SrcT, DstT) triples."""
    graph_def = tf.function(function).get_concrete_function(spec).graph.as_graph_def()
    nodes = list(graph_def.node) + [node for f in graph_def.library.function for node in f.node_def]
    return {(node.op, tf.as_dtype(node.attr["SrcT"].type).name if node.attr["SrcT"].type else None,
             tf.as_dtype(node.attr["DstT"].type).name if node.attr["DstT"].type else None) for node in nodes}


def _types(ops):
    return {op for op, _, _ in ops}


def _float_casts(ops):
    floats = {"bfloat16", "float32"}
    return {(src, dst) for op, src, dst in ops if op == "Cast" and src in floats and dst in floats}


def _bits(x, dtype):
    return tf.bitcast(x, dtype).numpy()


def test_compiled_passes_convert_every_bfloat16_to_float32_as_tensorflows_cast():
    every = tf.bitcast(tf.constant(np.arange(1 << 16, dtype=np.uint16)), tf.bfloat16)
    compiled = fused_ops._compiled(_up)
    ops = _ops(compiled, tf.TensorSpec(None, tf.bfloat16))
    assert "Bitcast" in _types(ops) and not _float_casts(ops)
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
    compiled = fused_ops._compiled(_down)
    ops = _ops(compiled, tf.TensorSpec(None, tf.float32))
    assert "Bitcast" in _types(ops) and not _float_casts(ops)
    ours, reference = compiled(values), tf.cast(values, tf.bfloat16)
    nan = np.isnan(tf.cast(reference, tf.float32).numpy())
    assert nan.sum() > 100 and np.isnan(tf.cast(ours, tf.float32).numpy()[nan]).all()
    np.testing.assert_array_equal(_bits(ours, tf.uint16)[~nan], _bits(reference, tf.uint16)[~nan])


def test_an_epilogues_compiled_passes_convert_by_bits_and_its_plain_ops_cast():
    y, bias = tf.zeros([4, 8], tf.bfloat16), tf.zeros([8], tf.bfloat16)
    spec = tf.TensorSpec([4, 8], tf.bfloat16)

    def step(y):
        with tf.GradientTape() as tape:
            tape.watch(y)
            out = fused_ops.bias_gelu_erf(y, bias)
        return out, tape.gradient(out, y)

    compiled_ops = _ops(step, spec)
    assert "Bitcast" in _types(compiled_ops)
    with fused_ops.xla_fusion(False):
        plain_ops = _ops(step, spec)
    assert "Bitcast" not in _types(plain_ops) and ("bfloat16", "float32") in _float_casts(plain_ops)


def test_plain_ops_and_a_tpus_xla_keep_casts_and_reductions(monkeypatch):
    """Outside a pass compiled for XLA:CPU, each bit operation would be a pass of its own; a TPU converts
    natively, and multiplies float32 at bfloat16's precision, so its row means stay reductions."""
    def layer_norm_statistics(x):
        return fused_ops._row_mean(x), fused_ops._cast(x, tf.bfloat16), fused_ops._f32(tf.cast(x, tf.bfloat16))

    spec = tf.TensorSpec([None, 8], tf.float32)
    on_cpu = _types(_ops(fused_ops._compiled(layer_norm_statistics), spec))
    assert {"Bitcast", "MatMul"} <= on_cpu
    seen = tf.config.list_logical_devices
    monkeypatch.setattr(tf.config, "list_logical_devices",
                        lambda kind=None: ["/device:TPU:0"] if kind == "TPU" else seen(kind))
    for traced in (_ops(fused_ops._compiled(layer_norm_statistics), spec), _ops(layer_norm_statistics, spec)):
        assert not {"Bitcast", "MatMul"} & _types(traced) and "Mean" in _types(traced)


@pytest.mark.parametrize("shape", [(7, 5), (2, 3, 8), (1, 384), (5,), (0, 8), (3, 0, 8)])
@pytest.mark.parametrize("compiled", [False, True], ids=["plain", "xla-cpu"])
def test_row_means_are_numpys_in_any_rank_and_shape(shape, compiled):
    rng = np.random.default_rng(1)
    x = (rng.normal(size=shape) * 3 + 1).astype("float32")
    row_mean = fused_ops._compiled(fused_ops._row_mean) if compiled else fused_ops._row_mean
    # Traced with unknown dimensions, as `reduce_retracing` traces a second shape.
    traced = tf.function(row_mean, input_signature=[tf.TensorSpec([None] * len(shape), tf.float32)])
    np.testing.assert_allclose(traced(tf.constant(x)).numpy(), x.mean(-1, keepdims=True), rtol=1e-6, atol=1e-6)


def test_the_head_split_concatenates_in_bfloat16_with_the_values_of_plain_ops():
    """XLA:CPU wrote the queries' and keys' float32 concat (with the mask's column) out before casting it, a pass
    more; each part is cast first, the same bits as plain ops give."""
    rng = np.random.default_rng(0)
    rows = [tf.constant(rng.normal(size=(6, 8)), tf.bfloat16) for _ in range(3)]
    biases = [tf.constant(rng.normal(size=8), tf.bfloat16) for _ in range(3)]
    mask = tf.constant([[1, 1, 0], [1, 0, 0]])

    def split():
        return fused_ops.split_heads(*rows, *biases, mask, 2, 3, 3, 2, 0.5)

    graph_def = tf.function(split).get_concrete_function().graph.as_graph_def()
    nodes = list(graph_def.node) + [node for f in graph_def.library.function for node in f.node_def]
    concats = {tf.as_dtype(node.attr["T"].type).name for node in nodes if node.op == "ConcatV2"} - {"int32"}
    assert concats == {"bfloat16"}, concats  # int32 ones join shapes
    with fused_ops.xla_fusion(False):
        plain = tf.function(split)()
    for ours, reference in zip(tf.function(split)(), plain):
        np.testing.assert_array_equal(_bits(ours, tf.uint16), _bits(reference, tf.uint16))
