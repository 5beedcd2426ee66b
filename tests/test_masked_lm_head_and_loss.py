"""The pretrainer's masked-LM head and its loss, against keras-hub's head and TensorFlow's cross-entropy."""

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.layers import bert_encoder_layer
from keras_bert_zoo.layers.fused_ops import sparse_softmax_cross_entropy
from keras_bert_zoo.layers.fused_ops import xla_fusion
from keras_bert_zoo.layers.masked_lm_head import MaskedLMHead
from keras_bert_zoo.tasks.fused_sparse_categorical_crossentropy import FusedSparseCategoricalCrossentropy
from tests.round_trip import keras_file_round_trip

SMALL = dict(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16)


def _graph_ops(function, *args):
    """Every op type of a traced function and of the functions it calls."""
    graph_def = tf.function(function).get_concrete_function(*args).graph.as_graph_def()
    ops = {node.op for node in graph_def.node}
    for library_function in graph_def.library.function:
        ops |= {node.op for node in library_function.node_def}
    return ops


# === The head ===

def _heads(policy, **head_kwargs):
    """Our pretrainer's head and keras-hub's, with the same weights and the same tied embedding."""
    backbone = kbz.BertBackbone(**SMALL, dtype=policy)
    kwargs = dict(token_embedding=backbone.token_embedding, intermediate_activation="gelu",
                  layer_norm_epsilon=backbone.layer_norm_epsilon, dtype=policy, **head_kwargs)
    ours, reference = MaskedLMHead(**kwargs), keras_hub.layers.MaskedLMHead(**kwargs)
    rng = np.random.default_rng(0)
    encoded = tf.constant(rng.normal(size=(3, 7, 8)), "float32")
    positions = tf.constant(rng.integers(0, 7, (3, 4)), "int32")
    reference(encoded, mask_positions=positions)
    ours(encoded, mask_positions=positions)
    for variable, value in zip(ours.weights, reference.weights):
        variable.assign(value + rng.normal(size=value.shape) * 0.5)  # not the initial zeros and ones
    for variable in reference.weights:
        variable.assign(next(v for v in ours.weights if v.path.split("/")[-1] == variable.path.split("/")[-1]))
    return backbone, ours, reference, encoded, positions


def _logits_and_gradients(head, backbone, encoded, **kwargs):
    with tf.GradientTape() as tape:
        logits = head(encoded, **kwargs)
        loss = tf.reduce_sum(tf.cast(logits, "float32") ** 2)
    variables = [backbone.token_embedding.embeddings, *head.trainable_weights]
    return tf.cast(logits, "float32").numpy(), [tf.convert_to_tensor(g).numpy() for g in
                                                 tape.gradient(loss, variables)]


@pytest.mark.parametrize("policy, rtol", [("float32", 1e-6), ("mixed_bfloat16", 2e-2)])
@pytest.mark.parametrize("activation", [None, "softmax"])
@pytest.mark.parametrize("soft_cap", [None, 3.0], ids=["one_matmul", "keras_hubs_call"])
def test_the_head_computes_keras_hubs_head_in_outputs_and_gradients(policy, rtol, activation, soft_cap):
    """Same outputs and the same gradients (tied embedding, dense, LayerNorm, output bias, activation) as
    keras-hub's head, given gathered rows or positions to gather; a decoder it does not multiply itself (here
    soft-capped) runs keras-hub's own call."""
    backbone, ours, reference, encoded, positions = _heads(policy, activation=activation)
    backbone.token_embedding.logit_soft_cap = soft_cap
    expected, expected_gradients = _logits_and_gradients(reference, backbone, encoded, mask_positions=positions)
    gathered = tf.gather(encoded, positions, batch_dims=1)
    for logits, gradients in (_logits_and_gradients(ours, backbone, gathered),
                              _logits_and_gradients(ours, backbone, encoded, mask_positions=positions)):
        assert logits.shape == (3, 4, SMALL["vocabulary_size"])
        scale = np.abs(expected).max()
        np.testing.assert_allclose(logits, expected, atol=rtol * scale)
        for got, want in zip(gradients, expected_gradients):
            np.testing.assert_allclose(got, want, atol=rtol * np.abs(want).max())
    assert ours(gathered).dtype == reference(encoded, mask_positions=positions).dtype


@pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize` method")
def test_a_quantized_mixed_precision_pretrainer_computes_its_float32_twins_logits():
    """After quantize("int8") the head decodes with the int8 embedding, as keras-hub's head does. Under a mixed
    policy keras-hub's call added the float32 bias with a tensor's `+`, and a quantized mixed pretrainer failed on
    every call (its fill_mask, in-process)."""
    inputs = {"token_ids": np.array([[2, 5, 6, 7, 3, 0]]), "segment_ids": np.zeros((1, 6), "int32"),
              "padding_mask": np.array([[1, 1, 1, 1, 1, 0]]), "mask_positions": np.array([[1, 3]])}
    logits = {}
    for policy in ("float32", "mixed_bfloat16"):
        pretrainer = kbz.BertPretrainer(kbz.BertBackbone(**SMALL, dtype=policy))
        pretrainer(inputs)
        if policy == "float32":
            weights = [weight + 0.1 for weight in pretrainer.get_weights()]  # not the initial zeros
        pretrainer.set_weights(weights)
        pretrainer.quantize("int8")
        logits[policy] = tf.cast(pretrainer(inputs)["masked_lm_logits"], "float32").numpy()
    scale = np.abs(logits["float32"]).max()
    np.testing.assert_allclose(logits["mixed_bfloat16"], logits["float32"], atol=5e-2 * scale)


def test_the_embedding_matrix_gets_its_gradient_without_a_transpose():
    """keras-hub's head multiplies by the transposed embedding matrix, so TensorFlow transposes its gradient
    back, a pass over the whole [vocabulary, hidden] matrix; ours transposes no tensor of that size."""
    backbone, ours, reference, encoded, positions = _heads("float32")
    embeddings = backbone.token_embedding.embeddings

    def transposed_sizes(head, x, *args):
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(head(x, *args) ** 2)
            return tape.gradient(loss, embeddings)
        graph = tf.function(step).get_concrete_function(x).graph
        return [op.outputs[0].shape.num_elements() for op in graph.get_operations() if op.type == "Transpose"]

    matrix = SMALL["vocabulary_size"] * SMALL["hidden_dim"]
    assert matrix in transposed_sizes(reference, encoded, positions)  # the check sees it
    assert matrix not in transposed_sizes(ours, tf.gather(encoded, positions, batch_dims=1))


def test_the_head_config_round_trips():
    model = kbz.BertPretrainer(kbz.BertBackbone(**SMALL))
    assert isinstance(model.masked_lm_head, MaskedLMHead)
    config = model.masked_lm_head.get_config()
    restored = keras.layers.deserialize(keras.layers.serialize(model.masked_lm_head))
    assert type(restored) is MaskedLMHead and restored.get_config() == config


def test_the_pretrainers_keras_file_round_trip_keeps_its_logits(tmp_path):
    model = kbz.BertPretrainer(kbz.BertBackbone(**SMALL))
    rng = np.random.default_rng(1)
    inputs = {"token_ids": rng.integers(5, 50, (2, 6)).astype("int32"), "segment_ids": np.zeros((2, 6), "int32"),
              "padding_mask": np.ones((2, 6), "int32"), "mask_positions": np.array([[1, 4], [2, 2]], "int32")}
    restored = keras_file_round_trip(model, tmp_path)
    np.testing.assert_allclose(restored(inputs)["masked_lm_logits"], model(inputs)["masked_lm_logits"], atol=1e-6)


# === The loss ===

def _cases(dtype, rank):
    rng = np.random.default_rng(2)
    shape = (4, 5, 300) if rank == 3 else (6, 300)
    logits = tf.cast(rng.normal(size=shape) * 4, dtype)
    labels = rng.integers(0, shape[-1], shape[:-1])
    weights = rng.integers(0, 3, shape[:-1]).astype("float32")
    return logits, labels, weights


def _value_and_gradient(loss, logits, labels, weights, asked_by):
    def by_tape(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = loss(labels, x, sample_weight=weights)
        return value, tape.gradient(value, x)

    def by_tf_gradients(x):
        value = loss(labels, x, sample_weight=weights)
        return value, tf.gradients(value, x)[0]

    compute = {"eager": by_tape, "graph": tf.function(by_tape), "tf.gradients": tf.function(by_tf_gradients)}
    value, gradient = compute[asked_by](tf.convert_to_tensor(logits))
    return float(value), tf.cast(gradient, "float32").numpy()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("reduction", ["mean_with_sample_weight", "sum_over_batch_size", "sum"])
@pytest.mark.parametrize("asked_by", ["eager", "graph", "tf.gradients"])
def test_the_fused_loss_is_tensorflows_sparse_cross_entropy_in_value_and_gradient(dtype, rank, reduction, asked_by):
    """Against Keras' loss, whose softmax is TensorFlow's kernel: values and gradients, sample weights, every
    reduction, int64 labels and a trailing label axis of 1."""
    logits, labels, weights = _cases(dtype, rank)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=reduction)
    expected, expected_gradient = _value_and_gradient(keras_loss, logits, labels, weights, asked_by)
    fused = FusedSparseCategoricalCrossentropy(from_logits=True, reduction=reduction)
    for given in (labels, labels[..., None]):
        value, gradient = _value_and_gradient(fused, logits, given, weights, asked_by)
        assert value == pytest.approx(expected, rel=1e-5)
        np.testing.assert_allclose(gradient, expected_gradient, atol=1e-6 + 1e-5 * np.abs(expected_gradient).max())


@pytest.mark.parametrize("dtype, rtol", [("float32", 1e-5), ("bfloat16", 1e-2), ("float16", 1e-3)])
def test_the_fused_op_takes_half_precision_logits_and_computes_in_float32(dtype, rtol):
    """Keras' loss hands it float32; called on bfloat16 / float16 logits it computes TensorFlow's cross-entropy of
    those logits in float32 and returns their gradient in their dtype."""
    logits, labels, _ = _cases(dtype, 3)
    upstream = tf.constant(np.random.default_rng(3).normal(size=labels.shape), "float32")

    def value_and_gradient(function, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = function(x)
        return value, tape.gradient(value, x, output_gradients=upstream)

    value, gradient = value_and_gradient(lambda x: sparse_softmax_cross_entropy(x, labels), logits)
    expected, expected_gradient = value_and_gradient(
        lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels, x), tf.cast(logits, "float32"))
    assert value.dtype == tf.float32 and gradient.dtype == logits.dtype
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    np.testing.assert_allclose(tf.cast(gradient, "float32"), expected_gradient,
                               atol=rtol * np.abs(expected_gradient).max())


def test_the_fused_loss_runs_one_compiled_pass_each_way_and_is_keras_loss_elsewhere(monkeypatch):
    """On a CPU with the fused ops on: XLA-compiled forward and backward functions, no TensorFlow softmax
    kernel. With them off (exports), on a GPU, or for options it does not fuse: Keras' loss and its kernel."""
    logits, labels, weights = _cases("float32", 3)

    def step(loss):
        def compute(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                value = loss(labels, x, sample_weight=weights)
            return tape.gradient(value, x)
        return compute

    x = tf.convert_to_tensor(logits)
    fused = FusedSparseCategoricalCrossentropy(from_logits=True)
    graph_def = tf.function(step(fused)).get_concrete_function(x).graph.as_graph_def()
    compiled = [f for f in graph_def.library.function if f.attr["_XlaMustCompile"].b]
    assert len(compiled) == 2  # forward and backward
    assert "SparseSoftmaxCrossEntropyWithLogits" not in _graph_ops(step(fused), x)
    with xla_fusion(False):
        assert "SparseSoftmaxCrossEntropyWithLogits" in _graph_ops(step(fused), x)
    for other in (FusedSparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
                  FusedSparseCategoricalCrossentropy(from_logits=False)):
        assert "SparseSoftmaxCrossEntropyWithLogits" in _graph_ops(step(other), x)
    monkeypatch.setattr(bert_encoder_layer, "runs_on_gpu", lambda: True)
    assert "SparseSoftmaxCrossEntropyWithLogits" in _graph_ops(step(fused), x)


@pytest.mark.parametrize("bad", [300, -1])
def test_a_label_outside_the_classes_is_refused_or_nan_under_xla_as_in_keras(bad):
    """Outside XLA TensorFlow's kernel refuses it, and so does the fused loss, naming the labels; in an
    XLA-compiled step, where no check runs, that row's loss is NaN in both (a clamped gather would read a wrong
    logit silently)."""
    logits, labels, _ = _cases("float32", 2)
    labels[3] = bad
    fused = FusedSparseCategoricalCrossentropy(from_logits=True, reduction=None)
    for run in (fused, tf.function(fused)):
        with pytest.raises(tf.errors.InvalidArgumentError, match="labels of a sparse categorical cross-entropy"):
            run(labels, logits)
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)
    expected, got = (tf.function(loss, jit_compile=True)(labels, logits).numpy() for loss in (keras_loss, fused))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    assert np.isnan(got).tolist() == [i == 3 for i in range(len(labels))]
    np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)], rtol=1e-5)


def test_labels_of_another_shape_than_the_logits_rows_are_refused():
    """Flattened, they would pair with the wrong rows; Keras' error names both shapes (static), the fused
    loss's check does where they are only known when it runs."""
    logits = tf.zeros([2, 3, 5])
    fused = FusedSparseCategoricalCrossentropy(from_logits=True)
    with pytest.raises(ValueError, match="same shape up until the last dimension"):
        fused(tf.zeros([3, 2], "int32"), logits)
    dynamic = tf.function(fused, input_signature=[tf.TensorSpec([None, None], tf.int32),
                                                  tf.TensorSpec([None, None, 5], tf.float32)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape less its last axis"):
        dynamic(tf.zeros([3, 2], "int32"), logits)


@pytest.mark.parametrize("case", ["empty_batch", "rank_1_logits", "float_labels", "nested_lists"])
def test_edge_inputs_give_keras_losss_result(case):
    """What a Keras user may pass besides a batch of int labels: the fused loss answers as Keras' does (Keras'
    own loss wants arrays, not nested lists: it gets them as arrays)."""
    rng = np.random.default_rng(3)
    logits = rng.normal(size=[4, 7]).astype("float32")
    labels = np.array([0, 6, 3, 3])
    if case == "empty_batch":
        logits, labels = logits[:0], labels[:0]
    elif case == "rank_1_logits":
        logits, labels = logits[1], np.array(6)
    elif case == "float_labels":
        labels = labels.astype("float32")
    given = (labels.tolist(), logits.tolist()) if case == "nested_lists" else (labels, logits)
    for reduction in (None, "sum_over_batch_size"):
        expected = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=reduction)(labels, logits)
        got = FusedSparseCategoricalCrossentropy(from_logits=True, reduction=reduction)(*given)
        assert got.shape == expected.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6, atol=1e-7)


def test_missing_labels_are_refused_with_keras_error():
    logits = np.zeros([2, 5], "float32")
    with pytest.raises(ValueError) as keras_error:
        keras.losses.SparseCategoricalCrossentropy(from_logits=True)(None, logits)
    with pytest.raises(ValueError) as fused_error:
        FusedSparseCategoricalCrossentropy(from_logits=True)(None, logits)
    assert str(fused_error.value) == str(keras_error.value)


def test_the_fused_loss_keeps_keras_config_and_the_pretrainer_uses_it():
    loss = FusedSparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight", name="mlm")
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert type(restored) is FusedSparseCategoricalCrossentropy
    assert restored.get_config() == loss.get_config()
    model = kbz.BertPretrainer(kbz.BertBackbone(**SMALL))
    assert isinstance(model.default_loss()["masked_lm_logits"], FusedSparseCategoricalCrossentropy)


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_a_mixed_precision_pretrainer_runs_eagerly_as_in_a_graph(policy):
    """The head's output bias stays float32 under a mixed policy: a tensor's own `+` with it failed eagerly
    (AddV2 of bfloat16 and float32), so `fill_mask` and a direct call failed where `predict` worked."""
    tokenizer = kbz.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    backbone = kbz.BertBackbone(vocabulary_size=7, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
                                max_sequence_length=16, dtype=policy)
    pretrainer = kbz.BertPretrainer(backbone, preprocessor=kbz.BertPreprocessor(tokenizer, 8), dtype=policy)
    inputs = {"token_ids": tf.constant([[2, 5, 4, 3]]), "segment_ids": tf.zeros([1, 4], tf.int32),
              "padding_mask": tf.ones([1, 4], tf.int32), "mask_positions": tf.constant([[2]])}
    eager = pretrainer(inputs, training=False)
    graph = tf.function(lambda x: pretrainer(x, training=False))(inputs)
    for name in graph:
        assert eager[name].dtype == graph[name].dtype
        want = tf.cast(graph[name], "float32").numpy()  # eager and graph kernels round 16-bit values apart
        np.testing.assert_allclose(tf.cast(eager[name], "float32"), want, atol=2e-2 * np.abs(want).max())
    assert len(pretrainer.fill_mask(["a [MASK] b"], top_k=2)[0][0]) == 2
