"""WeightCopies: inference graphs of a mixed-precision model read 16-bit copies of the encoder's kernels."""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.layers import bert_encoder_layer
from keras_bert_zoo.layers.weight_copies import WeightCopies
from tests.test_bert_backbone import SMALL, _inputs


def _forward(backbone, inputs, copies=None):
    """A traced forward pass (traced inside `copies.reading()` when given) and the dtypes its graph reads."""
    function = tf.function(lambda x: backbone(x, training=False)["sequence_output"])
    if copies is None:
        concrete = function.get_concrete_function(inputs)
    else:
        with copies.reading():
            concrete = function.get_concrete_function(inputs)
    reads = [node.attr["dtype"].type for f in concrete.graph.as_graph_def().library.function for node in f.node_def
             if node.op == "ReadVariableOp"]
    reads += [node.attr["dtype"].type for node in concrete.graph.as_graph_def().node if node.op == "ReadVariableOp"]
    return concrete, [tf.as_dtype(t).name for t in reads]


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_a_graph_reading_the_copies_computes_exactly_what_the_casting_graph_computes(policy):
    backbone = kbz.BertBackbone(**SMALL, dtype=policy)
    inputs = {k: tf.constant(v) for k, v in _inputs().items()}
    copies = WeightCopies(backbone)
    per_layer = 12  # query, key, value, output, intermediate, output dense: a kernel and a bias each
    assert len(copies.variables) == per_layer * SMALL["num_layers"]
    reading, reading_dtypes = _forward(backbone, inputs, copies)
    casting, casting_dtypes = _forward(backbone, inputs)
    compute_dtype = policy.removeprefix("mixed_")
    # Each copy is read once, in 16 bits; the casting graph reads only float32 variables.
    assert reading_dtypes.count(compute_dtype) == len(copies.variables)
    assert compute_dtype not in casting_dtypes
    np.testing.assert_array_equal(np.asarray(reading(inputs), "float32"), np.asarray(casting(inputs), "float32"))
    for copy in copies.variables:
        assert copy.dtype == compute_dtype and not copy.trainable


def test_a_traced_graph_keeps_the_copies_it_was_traced_with():
    """The copies are the weights when they were made: an export made before training keeps those."""
    backbone = kbz.BertBackbone(**SMALL, dtype="mixed_bfloat16")
    inputs = {k: tf.constant(v) for k, v in _inputs().items()}
    reading, _ = _forward(backbone, inputs, WeightCopies(backbone))
    before = np.asarray(reading(inputs), "float32")
    # New values for the copied weights (the encoder's kernels and biases) only.
    for variable in (v for layer in backbone._flatten_layers() for v in getattr(layer, "cast_on_read", list)()):
        variable.assign(variable.numpy() * -1.5 + 0.01)
    casting, _ = _forward(backbone, inputs)
    assert not np.allclose(np.asarray(casting(inputs), "float32"), before, atol=1e-2), "the new weights changed nothing"
    np.testing.assert_array_equal(np.asarray(reading(inputs), "float32"), before)
    fresh, _ = _forward(backbone, inputs, WeightCopies(backbone))
    np.testing.assert_array_equal(np.asarray(fresh(inputs), "float32"), np.asarray(casting(inputs), "float32"))


@pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize` method")
def test_nothing_is_copied_in_float32_for_a_gpu_or_after_int8_quantization_or_lora():
    assert WeightCopies(kbz.BertBackbone(**SMALL)).variables == []
    mixed = kbz.BertBackbone(**SMALL, dtype="mixed_bfloat16")
    with bert_encoder_layer.encoder_device("gpu"):  # keras-hub's forward pass reads Keras' variables itself
        assert WeightCopies(mixed).variables == []
    partly = kbz.BertBackbone(**SMALL, dtype="mixed_bfloat16")
    partly.quantize("int8", filters=lambda layer: "intermediate" in layer.name)
    assert WeightCopies(partly).variables == []  # an int8 kernel in 16 bits would lose its scale
    lora = kbz.BertBackbone(**SMALL, dtype="mixed_bfloat16")
    lora.get_layer("transformer_layer_0")._self_attention_layer._query_dense.enable_lora(2)
    assert [v for v in WeightCopies(lora).variables if "transformer_layer_0" in v.name] == []
    mixed.quantize("int8")
    assert WeightCopies(mixed).variables == []
