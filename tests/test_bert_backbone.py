"""BertBackbone and BertPretrainer: configs, serialization, masking."""

import os
import warnings

import h5py
import keras
import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.presets.loader import read_checkpoint_dir
from tests.round_trip import keras_file_round_trip

# Written by keras_bert_zoo 0.1.0, whose backbone named the pooler's attribute `pooler_dense`.
OLD_PRESET = os.path.join(os.path.dirname(__file__), "fixtures", "tiny_pretrainer_preset_0.1.0")

SMALL = dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=8, intermediate_dim=16,
             max_sequence_length=32, num_segments=3, dropout=0.0)


def _inputs(batch=2, length=10, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[1, 6:] = 0
    return {
        "token_ids": (rng.integers(5, 50, (batch, length)) * mask).astype("int32"),
        "segment_ids": rng.integers(0, 3, (batch, length)).astype("int32") * mask,
        "padding_mask": mask,
    }


def test_get_config_round_trip():
    backbone = kbz.BertBackbone(**SMALL, hidden_activation="gelu_tanh", layer_norm_epsilon=1e-6)
    clone = kbz.BertBackbone.from_config(backbone.get_config())
    assert clone.get_config() == backbone.get_config()


def test_keras_file_round_trip(tmp_path):
    backbone = kbz.BertBackbone(**SMALL)
    restored = keras_file_round_trip(backbone, tmp_path)
    inputs = _inputs()
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(restored(inputs)[key], backbone(inputs)[key], atol=1e-6)


def test_pretrainer_keras_file_round_trip(tmp_path):
    model = kbz.BertPretrainer(kbz.BertBackbone(**SMALL))
    inputs = dict(_inputs(), mask_positions=np.array([[1, 2], [3, 0]], "int32"))
    restored = keras_file_round_trip(model, tmp_path)
    for key in ("masked_lm_logits", "next_sentence_logits"):
        np.testing.assert_allclose(restored(inputs)[key], model(inputs)[key], atol=1e-6)
    # The MLM decoder is tied: it reuses the word embedding, adding no matrix.
    assert restored.count_params() - restored.backbone.count_params() == 8 * 8 + 8 + 2 * 8 + 50 + 8 * 2 + 2


def test_padding_does_not_change_real_tokens():
    backbone = kbz.BertBackbone(**SMALL)
    inputs = _inputs()
    longer = {k: np.pad(v, ((0, 0), (0, 7))) for k, v in inputs.items()}
    short_out, long_out = backbone(inputs), backbone(longer)
    np.testing.assert_allclose(long_out["sequence_output"][:, :10], short_out["sequence_output"], atol=1e-6)
    np.testing.assert_allclose(long_out["pooled_output"], short_out["pooled_output"], atol=1e-6)


def test_all_layers_output():
    backbone = kbz.BertBackbone(**SMALL, return_all_layers=True)
    out = backbone(_inputs())
    assert tuple(out["encoder_outputs"].shape) == (2, 2, 10, 8)
    assert tuple(out["embedding_output"].shape) == (2, 10, 8)
    np.testing.assert_array_equal(out["encoder_outputs"][:, -1], out["sequence_output"])


def test_segment_embedding_size_comes_from_config():
    backbone = kbz.BertBackbone(**SMALL)
    assert tuple(backbone.embeddings.segment_embedding.embeddings.shape) == (3, 8)


@pytest.mark.parametrize("policy, tolerance", [("mixed_bfloat16", 0.1), ("mixed_float16", 0.01)])
def test_mixed_precision_close_to_float32(policy, tolerance):
    fp32 = kbz.BertBackbone(**SMALL)
    mixed = kbz.BertBackbone(**SMALL, dtype=policy)
    mixed.set_weights(fp32.get_weights())
    inputs = _inputs()
    diff = np.abs(np.asarray(mixed(inputs)["sequence_output"], "float32") - fp32(inputs)["sequence_output"].numpy())
    assert mixed.embeddings.compute_dtype == policy.removeprefix("mixed_")
    assert diff.max() < tolerance


def test_heads_not_divisible_is_refused():
    with pytest.raises(ValueError, match="not divisible"):
        kbz.BertBackbone(**dict(SMALL, num_heads=3))


def test_fused_and_plain_ops_agree_in_outputs_and_gradients():
    """XLA-fused GELU / add+LayerNorm compute what the plain ops compute."""
    import tensorflow as tf

    from keras_bert_zoo.layers.fused_ops import xla_fusion

    backbone = kbz.BertBackbone(**SMALL)
    inputs = _inputs()

    def loss_and_grads():
        with tf.GradientTape() as tape:
            out = backbone(inputs, training=False)
            loss = tf.reduce_sum(out["sequence_output"] ** 2) + tf.reduce_sum(out["pooled_output"])
        return loss, tape.gradient(loss, backbone.trainable_variables)

    fused_loss, fused_grads = loss_and_grads()
    with xla_fusion(False):
        plain_loss, plain_grads = loss_and_grads()
    np.testing.assert_allclose(fused_loss, plain_loss, rtol=1e-5)
    assert len(fused_grads) == len(backbone.trainable_variables)
    for variable, a, b in zip(backbone.trainable_variables, fused_grads, plain_grads):
        assert a is not None, variable.path
        np.testing.assert_allclose(tf.convert_to_tensor(a), tf.convert_to_tensor(b), atol=1e-4, err_msg=variable.path)



@pytest.mark.parametrize("dropout", [0.0, 0.1])
@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
def test_training_fuses_the_epilogues_forward_and_backward_with_xla_and_keeps_no_copies_for_them(dtype, dropout):
    """Inference and training run the epilogues XLA-compiled, their backward passes too. A compiled function
    returns only its outputs and, where a tape records, what its written-out gradient needs: differentiated by
    TensorFlow, it returned its inputs as well (the matmuls' outputs), and the head split its float32 copies of
    them, all kept alive for the backward pass."""
    import tensorflow as tf

    backbone = kbz.BertBackbone(**dict(SMALL, dropout=dropout), dtype=dtype)
    inputs = _inputs()

    def graph(training, persistent=False):
        def step(x):
            with tf.GradientTape(persistent=persistent) as tape:
                loss = tf.reduce_sum(tf.cast(backbone(x, training=training)["sequence_output"], "float32"))
            return tape.gradient(loss, backbone.trainable_variables)

        return tf.function(step).get_concrete_function(inputs).graph

    for op in tf.function(lambda x: backbone(x)["sequence_output"]).get_concrete_function(inputs).graph \
            .get_operations():
        if op.type == "PartitionedCall":  # no tape: each function returns its outputs alone
            assert "outputs_only" in op.get_attr("f").name and len(op.outputs) <= 3, op.get_attr("f").name
    for training in (False, True):
        library = graph(training).as_graph_def().library.function
        compiled = {f.signature.name for f in library if f.attr["_XlaMustCompile"].b}
        for kind in ("split_heads", "add_layer_norm", "forward", "backward"):
            assert any(kind in name for name in compiled), (training, kind, sorted(compiled))
    activations = 2 * 10 * SMALL["hidden_dim"]  # [batch * length, hidden]
    # A persistent tape made TensorFlow differentiate the functions it recorded (as any tape in eager mode).
    for op in graph(True).get_operations() + graph(True, persistent=True).get_operations():
        if op.type == "PartitionedCall" and "forward" in op.get_attr("f").name:
            # Outputs, then what the backward pass reads: the GELU's slope, the LayerNorm's normalized input
            # and per-row scale (and gamma), the dropout's mask as bools; from the head split, one number per
            # sequence (whether it has a real token).
            sizes = [o.shape.num_elements() for o in op.outputs]
            kinds = {"split_heads": 4, "bias_dropout_add_layer_norm": 5, "bias_add_layer_norm": 4}
            kept = kinds.get(next((k for k in kinds if k in op.get_attr("f").name), ""), 2)
            assert len(sizes) == kept, (op.get_attr("f").name, sizes)
            if "split_heads" in op.get_attr("f").name:
                assert sizes[-1] == 2, sizes  # the batch's two sequences
            assert all(o.dtype in (op.outputs[0].dtype, tf.bool) for o in op.outputs
                       if o.shape.num_elements() >= activations)
            assert sum(o.dtype == tf.bool for o in op.outputs) == (kept == 5)
    if dropout:
        assert any("bias_dropout_add_layer_norm" in op.get_attr("f").name for op in graph(True).get_operations()
                   if op.type == "PartitionedCall")


@pytest.mark.parametrize("xla", [False, True], ids=["plain", "xla"])
@pytest.mark.parametrize("dtype, atol", [("float32", 1e-5), ("float16", 5e-3), ("bfloat16", 5e-2)])
def test_epilogue_gradients_are_those_of_tensorflows_gelu_and_keras_layer_norm(xla, dtype, atol):
    """The fused epilogues' written-out gradients against autodiff through TensorFlow's own GELU (erf and tanh
    forms) and Keras' LayerNormalization, inputs and parameters alike."""
    import keras
    import tensorflow as tf

    from keras_bert_zoo.layers import fused_ops

    rng = np.random.default_rng(0)
    y, residual = (tf.constant(rng.normal(size=(2, 3, 8)) * 2, dtype) for _ in range(2))
    bias, beta = (tf.constant(rng.normal(size=8), dtype) for _ in range(2))
    gamma = tf.constant(rng.normal(size=8), "float32")
    upstream = tf.constant(rng.normal(size=(2, 3, 8)), dtype)

    def gradients(function, *args):
        with tf.GradientTape() as tape:
            tape.watch(args)
            out = function(*args)
            loss = tf.reduce_sum(tf.cast(out, "float32") * tf.cast(upstream, "float32"))
        return [out] + tape.gradient(loss, list(args))

    def close(ours, reference):
        for a, b in zip(ours, reference):
            np.testing.assert_allclose(np.asarray(tf.cast(a, "float32")), np.asarray(tf.cast(b, "float32")),
                                       atol=atol * max(1.0, float(tf.reduce_max(tf.abs(tf.cast(b, "float32"))))))

    f32 = lambda *ts: [tf.cast(t, "float32") for t in ts]  # noqa: E731
    with fused_ops.xla_fusion(xla):
        for form, approximate in (("erf", False), ("tanh", True)):
            close(gradients(getattr(fused_ops, f"bias_gelu_{form}"), y, bias),
                  gradients(lambda a, b: tf.nn.gelu(a + b, approximate=approximate), *f32(y, bias)))
            close(gradients(getattr(fused_ops, f"gelu_{form}"), y),
                  gradients(lambda a: tf.nn.gelu(a, approximate=approximate), *f32(y)))
        # Keras' layer, its scale and offset applied outside it so that they are inputs here.
        unit = keras.layers.LayerNormalization(epsilon=1e-3, center=False, scale=False)

        def keras_layer_norm(a, b, r, g, be):
            return unit(a + b + r) * g + be

        close(gradients(lambda a, b, r, g, be: fused_ops.bias_add_layer_norm(a, b, r, g, be, 1e-3),
                        y, bias, residual, gamma, tf.cast(beta, "float32")),
              gradients(keras_layer_norm, *f32(y, bias, residual), gamma, tf.cast(beta, "float32")))
        # With a dropout mask: TensorFlow's dropout on the biased output, drawn from the same seed.
        seed, rate = tf.constant([3, 4]), 0.3
        keep = tf.random.stateless_uniform(y.shape, seed) >= rate
        assert 0 < int(tf.reduce_sum(tf.cast(keep, "int32"))) < keep.shape.num_elements()

        def keras_dropout_layer_norm(a, b, r, g, be):
            return unit(tf.nn.experimental.stateless_dropout(a + b, rate, seed) + r) * g + be

        close(gradients(lambda a, b, r, g, be: fused_ops.bias_add_layer_norm(a, b, r, g, be, 1e-3, keep=keep,
                                                                             rate=rate),
                        y, bias, residual, gamma, tf.cast(beta, "float32")),
              gradients(keras_dropout_layer_norm, *f32(y, bias, residual), gamma, tf.cast(beta, "float32")))


@pytest.mark.parametrize("asked_by", ["tape", "tf.gradients"])
@pytest.mark.parametrize("xla", [False, True], ids=["plain", "xla"])
@pytest.mark.parametrize("dtype, atol", [("float32", 1e-5), ("mixed_bfloat16", 5e-2)])
@pytest.mark.parametrize("mask", [[[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], [[0, 0, 0, 0, 0], [1, 1, 1, 0, 0]]],
                         ids=["ragged", "all_padding_row"])
def test_an_encoder_layers_gradients_are_autodiffs_through_keras_hubs_forward_pass(asked_by, xla, dtype, atol, mask):
    """Every written-out gradient of the layer (head split, bias + GELU, bias + residual + LayerNorm) at once:
    the input's and every weight's, with padding and asked-for positions, against TensorFlow's autodiff of
    keras-hub's own `TransformerEncoder.call` on the same weights (float32). Asked by a GradientTape, or by a
    symbolic `tf.gradients` with no tape recording (the forward pass then kept nothing for it). A sequence of
    padding only attends uniformly whatever its queries and keys, which then get no gradient from it (they got
    the softmax's gradient at the uniform point: the query kernel's was 6.2 where it is 0)."""
    import tensorflow as tf
    from keras_hub.layers import TransformerEncoder

    from keras_bert_zoo.layers import activations, fused_ops
    from keras_bert_zoo.layers.bert_encoder_layer import BertEncoderLayer

    rng = np.random.default_rng(2)
    layer = BertEncoderLayer(intermediate_dim=24, num_heads=3, activation=activations.gelu, dtype=dtype)
    # Keras' own GELU (erf form) in the reference, differentiated by TensorFlow.
    reference = BertEncoderLayer(intermediate_dim=24, num_heads=3, activation="gelu")
    inputs = tf.constant(rng.normal(size=(2, 5, 12)), "float32")
    mask = tf.constant(mask)
    positions = tf.constant([[0, 2], [4, 1]])
    layer.build(inputs.shape)
    reference.build(inputs.shape)
    for variable in layer.weights:  # not 0 and 1 as built: biases and LayerNorm parameters take their part
        variable.assign(rng.normal(size=variable.shape) * (0.3 if len(variable.shape) > 1 else 1.0))
    reference.set_weights(layer.get_weights())
    upstream = tf.constant(rng.normal(size=(2, 2, 12)), "float32")

    def gradients(model, call):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            out = tf.cast(call(model), "float32")
            loss = tf.reduce_sum(out * upstream)
        return [out] + tape.gradient(loss, [inputs] + model.trainable_variables)

    @tf.function
    def symbolic_gradients(model, call):
        out = tf.cast(call(model), "float32")
        return [out] + tf.gradients(tf.reduce_sum(out * upstream), [inputs] + model.trainable_variables)

    with fused_ops.xla_fusion(xla):
        ours = (gradients if asked_by == "tape" else symbolic_gradients)(
            layer, lambda m: m(inputs, padding_mask=mask, query_positions=positions, training=True))
    theirs = gradients(reference, lambda m: tf.gather(
        TransformerEncoder.call(m, inputs, padding_mask=mask, training=True), positions, batch_dims=1))
    names = ["outputs", "inputs"] + [v.path for v in layer.trainable_variables]
    assert len(ours) == len(theirs) == len(names) > 10
    for name, a, b in zip(names, ours, theirs):
        assert a is not None, name
        b = np.asarray(tf.convert_to_tensor(b))
        np.testing.assert_allclose(np.asarray(tf.convert_to_tensor(a)), b, atol=atol * max(1.0, np.abs(b).max()),
                                   err_msg=name)


def test_models_of_different_widths_in_one_process():
    """The fused kernels are traced per shape: a narrow model after a wide one still runs."""
    for hidden in (4, 32, 4):
        backbone = kbz.BertBackbone(**dict(SMALL, hidden_dim=hidden, num_heads=2))
        inputs = _inputs()
        backbone.predict_on_batch(inputs)
        assert tuple(backbone(inputs)["sequence_output"].shape) == (2, 10, hidden)


def _with_keras_hubs_twin(dtype):
    """Ours and keras-hub's BertBackbone on the same weights, inputs, and their real tokens."""
    import keras_hub

    config = dict(SMALL, hidden_dim=32, intermediate_dim=64, num_heads=4)
    ours = kbz.BertBackbone(**config, dtype=dtype)
    hub = keras_hub.models.BertBackbone(**config, dtype=dtype)
    hub.set_weights(ours.get_weights())
    inputs = _inputs(length=12)
    return ours, hub, inputs, inputs["padding_mask"].astype(bool)


# Which layers `quantize(..., filters=)` takes: all it can, or only some of the encoder's projections.
QUANTIZED_LAYERS = {"all": None, "feed-forward only": lambda layer: "intermediate" in layer.name,
                    "attention only": lambda layer: layer.name in ("query", "key", "value", "attention_output")}


@pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize` method")
@pytest.mark.parametrize("dtype, atol, quantized_layers", [("float32", 1e-4, "all"), ("mixed_bfloat16", 5e-2, "all"),
                                                           ("float32", 1e-4, "feed-forward only"),
                                                           ("mixed_bfloat16", 5e-2, "attention only")])
def test_int8_quantized_backbone_computes_what_keras_hub_computes(dtype, atol, quantized_layers):
    """After Keras' quantize("int8") the encoder applies the int8 kernels and
    their scales as keras-hub's quantized BertBackbone does, close to float.
    Under a mixed policy too (Keras' int8 embedding returns float32 there),
    and when a filter quantizes only some projections (the CPU path read
    such int8 kernels without their scales)."""
    ours, hub, inputs, real = _with_keras_hubs_twin(dtype)

    def output(model):
        return np.asarray(model(inputs)["sequence_output"], "float32")[real]

    float_output = output(ours)
    for model in (ours, hub):
        model.quantize("int8", filters=QUANTIZED_LAYERS[quantized_layers])
    quantized = output(ours)
    assert ours(inputs)["sequence_output"].dtype == dtype.removeprefix("mixed_")
    np.testing.assert_allclose(quantized, output(hub), atol=atol)
    cosine = (quantized * float_output).sum(-1) / np.linalg.norm(quantized, axis=-1) / np.linalg.norm(float_output, axis=-1)
    assert cosine.min() > 0.98
    assert not np.allclose(quantized, float_output, atol=1e-4), "quantize() changed nothing"


def test_quantize_collects_garbage_once_for_all_the_kernels_it_replaces(monkeypatch, tiny_checkpoint):
    # Keras' Layer.__delattr__ runs gc.collect() for each variable it drops: 30-odd full collections quantizing
    # MiniLM's classifier, 10 s of 10.6 (18 s in a process holding more objects; this suite's int8 tests 74 s each).
    import gc

    calls = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: calls.append(generation) or 0)
    backbone = kbz.BertBackbone(**SMALL)
    backbone.quantize("int8")
    assert calls == [2] and backbone.embeddings.token_embedding.quantization_mode == "int8"
    calls.clear()
    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=8)
    classifier.quantize("int8")
    assert calls == [2] and classifier.backbone.transformer_layers[0]._feedforward_output_dense.quantization_mode \
        == "int8"


@pytest.mark.parametrize("dtype, atol", [("float32", 1e-5), ("mixed_bfloat16", 5e-2)])
def test_lora_on_the_encoder_computes_what_keras_hub_computes(dtype, atol):
    """Keras' `enable_lora` on the encoder's projections: the low-rank update
    is applied as keras-hub's backbone applies it (the CPU path read the
    kernel as a variable and failed), and trains only the LoRA weights."""
    ours, hub, inputs, real = _with_keras_hubs_twin(dtype)
    float_output = np.asarray(ours(inputs)["sequence_output"], "float32")[real]
    rng = np.random.default_rng(0)
    for model in (ours, hub):
        for layer in model._flatten_layers():
            if isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense)) and "transformer" in layer.path:
                layer.enable_lora(4)
    # LoRA's B starts at zero; the same random updates in both make them count.
    for ours_weight, hub_weight in zip(ours.weights, hub.weights):
        if "lora" in ours_weight.path:
            value = rng.normal(0, 0.1, ours_weight.shape).astype("float32")
            ours_weight.assign(value)
            hub_weight.assign(value)
    outputs = [np.asarray(model(inputs)["sequence_output"], "float32")[real] for model in (ours, hub)]
    np.testing.assert_allclose(outputs[0], outputs[1], atol=atol)
    assert not np.allclose(outputs[0], float_output, atol=1e-2), "the LoRA updates changed nothing"
    trained = {v.path.split("/")[-1] for v in ours.trainable_weights if "transformer" in v.path}
    assert "kernel" not in trained and {"lora_kernel_a", "lora_kernel_b"} <= trained  # Keras' LoRA: kernels frozen


def test_pooler_dense_is_a_deprecated_alias_of_pooled_dense():
    backbone = kbz.BertBackbone(**SMALL)
    with pytest.warns(DeprecationWarning, match="pooler_dense is now .pooled_dense"):
        assert backbone.pooler_dense is backbone.pooled_dense
    with pytest.raises(AttributeError, match="no attribute 'pooler_dens'"):
        backbone.pooler_dens  # noqa: B018


def test_saving_and_loading_do_not_touch_the_deprecated_alias(tmp_path):
    backbone = kbz.BertBackbone(**SMALL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backbone.save_to_preset(str(tmp_path / "preset"))
        kbz.BertBackbone.from_preset(str(tmp_path / "preset"))
        keras_file_round_trip(backbone, tmp_path)
    assert [str(w.message) for w in caught if "pooler_dense" in str(w.message)] == []


def _h5_arrays(path):
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, node: arrays.update({name: node[()]}) if isinstance(node, h5py.Dataset) else None)
    return arrays


def test_weights_saved_before_the_pooled_dense_rename_load_bit_exactly(tiny_checkpoint, tmp_path):
    """Keras keys a Functional model's weights by layer class and position (`layers/dense` is the pooler), not by
    attribute or layer name: the rename leaves the files' layout as it was."""
    google = read_checkpoint_dir(tiny_checkpoint).weights()
    backbone = kbz.BertBackbone.from_preset(OLD_PRESET)
    np.testing.assert_array_equal(backbone.pooled_dense.kernel.numpy(), google["bert/pooler/dense/kernel"])
    np.testing.assert_array_equal(backbone.pooled_dense.bias.numpy(), google["bert/pooler/dense/bias"])
    converted = kbz.BertBackbone.from_preset(tiny_checkpoint)
    for a, b in zip(backbone.weights, converted.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    pretrainer = kbz.BertPretrainer.from_preset(OLD_PRESET)
    np.testing.assert_array_equal(pretrainer.backbone.pooled_dense.kernel.numpy(), google["bert/pooler/dense/kernel"])
    # Saved again, the backbone's file holds the same arrays at the same paths.
    backbone.save_to_preset(str(tmp_path / "again"))
    old, new = (_h5_arrays(os.path.join(d, "model.weights.h5")) for d in (OLD_PRESET, str(tmp_path / "again")))
    assert sorted(new) == sorted(old)
    for path, value in old.items():
        np.testing.assert_array_equal(new[path], value, err_msg=path)


@pytest.mark.parametrize("dtype, atol", [("float32", 1e-5), ("mixed_float16", 5e-3), ("mixed_bfloat16", 5e-2)])
@pytest.mark.parametrize("mask", [[[1]], [[1, 1, 0, 0], [0, 0, 0, 0]], [[1, 1, 1, 0, 0, 0]], np.ones((0, 4))],
                         ids=["one_token", "all_padding_row", "ragged", "empty_batch"])
@pytest.mark.parametrize("max_scores", [0, 1 << 20], ids=["head_by_head", "all_heads"])
@pytest.mark.parametrize("shapes", ["known", "unknown"])
def test_attention_computes_keras_hubs_encoder(monkeypatch, mask, dtype, atol, max_scores, shapes):
    """Edge shapes (a lone token, a row of padding only, no rows) against keras-hub's own forward pass, in
    each compute dtype: the padding mask that rides in the query-key product is Keras' (-3e4 in float16,
    whose -1e9 is -inf: a row of padding only would be NaN). Attention head by head and over all heads at
    once, chosen when traced (shapes known) or in the graph (unknown: both branches are traced)."""
    import tensorflow as tf
    from keras_hub.layers import TransformerEncoder

    from keras_bert_zoo.layers import bert_encoder_layer

    monkeypatch.setattr(bert_encoder_layer, "ALL_HEADS_MAX_SCORES", max_scores)
    layer = bert_encoder_layer.BertEncoderLayer(intermediate_dim=16, num_heads=2, dtype=dtype)
    mask = np.array(mask, "int32")
    inputs = np.random.default_rng(0).normal(size=mask.shape + (8,)).astype(layer.compute_dtype)
    if shapes == "known":
        ours = layer(inputs, padding_mask=mask)
    else:
        ours = tf.function(lambda x, m: layer(x, padding_mask=m), input_signature=[
            tf.TensorSpec([None, None, 8], inputs.dtype), tf.TensorSpec([None, None], "int32")])(inputs, mask)
    reference = TransformerEncoder.call(layer, inputs, padding_mask=mask)
    assert ours.shape == inputs.shape and ours.dtype == layer.compute_dtype
    assert np.isfinite(np.asarray(ours, "float32")).all()
    np.testing.assert_allclose(np.asarray(ours, "float32"), np.asarray(reference, "float32"), atol=atol)


@pytest.mark.parametrize("shape", [(2, 0, 8), (0, 4, 8)], ids=["no_tokens", "no_sequences"])
def test_training_gradients_of_empty_inputs_are_finite(shape):
    import tensorflow as tf

    from keras_bert_zoo.layers.bert_encoder_layer import BertEncoderLayer

    layer = BertEncoderLayer(intermediate_dim=16, num_heads=2)
    inputs = tf.zeros(shape)
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        outputs = layer(inputs, padding_mask=tf.zeros(shape[:2], "int32"), training=True)
    gradients = tape.gradient(tf.reduce_sum(outputs), [inputs] + layer.trainable_variables)
    assert outputs.shape == shape
    for gradient in gradients:  # nothing flows, and nothing is NaN
        assert gradient is None or (np.isfinite(np.asarray(gradient)).all() and not np.asarray(gradient).any())


def test_any_nonzero_padding_mask_value_is_a_real_token_as_in_keras():
    """A mask of 0/2 (or bools) means what 0/1 means; 2 had become a +1e9 bias on that key's scores."""
    from keras_bert_zoo.layers.bert_encoder_layer import BertEncoderLayer

    layer = BertEncoderLayer(intermediate_dim=16, num_heads=2)
    inputs = np.random.default_rng(0).normal(size=(2, 4, 8)).astype("float32")
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 0]], "int32")
    expected = np.asarray(layer(inputs, padding_mask=mask))
    for other in (2 * mask, mask.astype(bool), -mask):
        np.testing.assert_allclose(np.asarray(layer(inputs, padding_mask=other)), expected, atol=1e-6)
    # Mean pooling weighs real tokens alike whatever their mask value.
    from keras_bert_zoo.layers.pooling import pool

    by_hand = np.stack([expected[0, :2].mean(0), expected[1, :3].mean(0)])
    for other in (mask, 2 * mask, mask.astype(bool)):
        np.testing.assert_allclose(np.asarray(pool({"sequence_output": expected}, other)), by_hand, atol=1e-6)


@pytest.mark.parametrize("batch, length, heads_at_once", [(1, 128, True), (5, 128, True), (6, 128, False),
                                                          (1, 512, False)])
def test_inference_runs_all_heads_at_once_up_to_a_million_scores_and_training_head_by_head(batch, length,
                                                                                          heads_at_once):
    """A softmax per layer over all heads for a few sequences (12 heads: up to 5 x 128 tokens), one per head
    for more, whatever the width of a head, and always one per head in training."""
    import tensorflow as tf

    from keras_bert_zoo.layers.bert_encoder_layer import BertEncoderLayer

    heads = 12
    layer = BertEncoderLayer(intermediate_dim=32, num_heads=heads)
    inputs = tf.zeros([batch, length, 24])

    def softmaxes(training):
        graph = tf.function(lambda x: layer(x, training=training)).get_concrete_function(inputs).graph
        return sum(op.type == "Softmax" for op in graph.get_operations())

    assert softmaxes(training=False) == (1 if heads_at_once else heads)
    assert softmaxes(training=True) == heads


@pytest.mark.parametrize("training", [False, True])
def test_on_a_gpu_the_encoder_layers_run_keras_hubs_forward_pass(monkeypatch, training):
    """Where TensorFlow sees a GPU (said here) every encoder layer runs keras-hub's forward pass, with no
    XLA-compiled epilogue, and the backbone computes what the CPU path computes, positions' rows included."""
    import tensorflow as tf
    from keras_hub.layers import TransformerEncoder

    from keras_bert_zoo.layers import bert_encoder_layer

    backbone = kbz.BertBackbone(**SMALL)
    inputs = _inputs()
    positions = np.array([[0, 9, 3], [5, 0, 0]], "int32")
    cpu = backbone(inputs, training=training)
    cpu_rows = backbone(inputs, training=training, positions=positions)["sequence_output"]
    calls = []

    def keras_hubs_call(layer, *args, **kwargs):
        calls.append(layer.name)
        return original(layer, *args, **kwargs)

    original = TransformerEncoder.call
    monkeypatch.setattr(TransformerEncoder, "call", keras_hubs_call)
    monkeypatch.setattr(bert_encoder_layer, "runs_on_gpu", lambda: True)
    gpu = backbone(inputs, training=training)
    assert len(calls) == SMALL["num_layers"]
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(gpu[name], cpu[name], atol=1e-5, err_msg=name)
    np.testing.assert_allclose(backbone(inputs, training=training, positions=positions)["sequence_output"], cpu_rows,
                               atol=1e-5)
    graph = tf.function(lambda x: backbone(x, training=training)["sequence_output"]).get_concrete_function(
        inputs).graph
    assert not [f for f in graph.as_graph_def().library.function if f.attr["_XlaMustCompile"].b]


@pytest.mark.parametrize("rate", [0.4, 1.0])
def test_in_training_an_encoder_layer_drops_what_keras_hubs_forward_pass_drops(rate):
    """The residual dropouts run inside the fused epilogues, with Keras' Dropout's mask drawn from the layers'
    own seed generators: the draws of keras-hub's forward pass, so its outputs and gradients (float32, where
    Keras draws its uniform numbers in float32 too; attention's dropout off, as it runs head by head here and
    over all heads there). At rate 1 everything is dropped, as Keras does."""
    import tensorflow as tf
    from keras_hub.layers import TransformerEncoder

    from keras_bert_zoo.layers.bert_encoder_layer import BertEncoderLayer

    layer = BertEncoderLayer(intermediate_dim=32, num_heads=2, dropout=rate)
    x = tf.constant(np.random.default_rng(0).normal(size=(2, 6, 16)), "float32")
    mask = tf.constant([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    inference = layer(x, padding_mask=mask)
    layer._self_attention_layer._dropout_layer.rate = 0.0
    generators = [layer._self_attention_dropout.seed_generator, layer._feedforward_dropout.seed_generator]
    states = [generator.state.numpy() for generator in generators]

    def run(call):
        for generator, state in zip(generators, states):
            generator.state.assign(state)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = call(x, padding_mask=mask, training=True)
            loss = tf.reduce_sum(out * out)
        sources = [x, *layer.trainable_variables]
        # At rate 1 keras-hub's sub-layers are cut off the output (no gradient), ours multiplied by zero.
        return [out, *(np.zeros(v.shape) if g is None else g for g, v in zip(tape.gradient(loss, sources), sources))]

    ours, hubs = run(layer), run(lambda *args, **kwargs: TransformerEncoder.call(layer, *args, **kwargs))
    for a, b in zip(ours, hubs):
        np.testing.assert_allclose(a, b, atol=1e-4)
    assert not np.allclose(ours[0], inference, atol=1e-2), "nothing was dropped"


@pytest.mark.parametrize("mask", [[[1, 1, 1, 0], [1, 1, 1, 1]], [[1]], np.ones((0, 4))],
                         ids=["padded", "one_token", "empty_batch"])
def test_an_encoder_layer_asked_for_some_positions_returns_those_rows_of_keras_hubs_output(mask):
    """`query_positions` gives keras-hub's full forward pass gathered at them (repeats and padding allowed)."""
    from keras_hub.layers import TransformerEncoder

    from keras_bert_zoo.layers.bert_encoder_layer import BertEncoderLayer

    layer = BertEncoderLayer(intermediate_dim=16, num_heads=2)
    mask = np.array(mask, "int32")
    inputs = np.random.default_rng(1).normal(size=mask.shape + (8,)).astype("float32")
    positions = np.array([[mask.shape[1] - 1, 0, 0]] * mask.shape[0], "int32").reshape(mask.shape[0], 3)
    ours = layer(inputs, padding_mask=mask, query_positions=positions)
    reference = np.take_along_axis(np.asarray(TransformerEncoder.call(layer, inputs, padding_mask=mask)),
                                   positions[..., None], axis=1)
    assert ours.shape == reference.shape
    np.testing.assert_allclose(ours, reference, atol=1e-5)


@pytest.mark.parametrize("training", [False, True])
def test_a_backbone_asked_for_some_positions_gives_those_rows_and_the_same_pooled_vector(training):
    import tensorflow as tf

    backbone = kbz.BertBackbone(**SMALL)
    inputs = _inputs()
    positions = np.array([[3, 1, 3], [5, 0, 9]], "int32")  # 9: a padding token of row 1

    def outputs_and_gradients(**kwargs):
        with tf.GradientTape() as tape:
            out = backbone(inputs, training=training, **kwargs)
            rows = out["sequence_output"] if kwargs else tf.gather(out["sequence_output"], positions, batch_dims=1)
            loss = tf.reduce_sum(rows ** 2) + tf.reduce_sum(out["pooled_output"])
        return rows, out["pooled_output"], tape.gradient(loss, backbone.trainable_variables)

    full_rows, full_pooled, full_grads = outputs_and_gradients()
    rows, pooled, grads = outputs_and_gradients(positions=positions)
    np.testing.assert_allclose(rows, full_rows, atol=1e-5)
    np.testing.assert_allclose(pooled, full_pooled, atol=1e-5)
    for variable, a, b in zip(backbone.trainable_variables, grads, full_grads):
        np.testing.assert_allclose(tf.convert_to_tensor(a), tf.convert_to_tensor(b), atol=1e-5, err_msg=variable.path)
    only_cls = backbone(inputs, positions=np.zeros((2, 0), "int32"))
    assert only_cls["sequence_output"].shape == (2, 0, 8)
    np.testing.assert_allclose(only_cls["pooled_output"], full_pooled, atol=1e-5)


def test_positions_count_from_the_end_when_negative_and_bad_ones_are_named():
    backbone = kbz.BertBackbone(**SMALL)
    inputs = _inputs()
    full = backbone(inputs)["sequence_output"].numpy()
    rows = backbone(inputs, positions=[[-1, 2], [-10, -4]])["sequence_output"]  # a list, as a user passes it
    np.testing.assert_allclose(rows, np.stack([full[0, [9, 2]], full[1, [0, 6]]]), atol=1e-5)
    with pytest.raises(ValueError, match=r"positions must be \[batch, n\].*got shape \(2,\)"):
        backbone(inputs, positions=np.array([1, 2], "int32"))
    with pytest.raises(TypeError, match=r"positions must be integer token positions; got dtype float32"):
        backbone(inputs, positions=np.array([[1.7, 2.0], [0.0, 1.0]], "float32"))  # not truncated to 1 silently
    with pytest.raises(ValueError, match=r"one row per sequence; got 3 rows for 2 sequences"):
        backbone(inputs, positions=[[1, 2], [3, 4], [5, 6]])
    every_layer = kbz.BertBackbone(**SMALL, return_all_layers=True)
    every_layer.set_weights(backbone.get_weights())
    outputs = every_layer(inputs, positions=[[-1, 2], [0, 3]])
    assert sorted(outputs) == ["embedding_output", "encoder_outputs", "pooled_output", "sequence_output"]
    np.testing.assert_allclose(outputs["sequence_output"], np.stack([full[0, [9, 2]], full[1, [0, 3]]]), atol=1e-5)
    np.testing.assert_allclose(outputs["encoder_outputs"][:, -1], full, atol=1e-5)


@pytest.mark.parametrize("bad", [10, -11])
def test_positions_outside_the_sequence_are_refused_by_name_in_eager_calls_and_in_fit(bad):
    """A position outside [-10, 10) for 10 tokens is named, not gathered (TF's own gather error names no
    argument on CPU and reads garbage on a GPU); the edges -10 and 9 are fine."""
    import tensorflow as tf

    backbone = kbz.BertBackbone(**SMALL)
    inputs = _inputs()
    backbone(inputs, positions=[[9, -10], [0, 0]])
    # int64 ids of a length only known when the graph runs (a tf.data pipeline's), checked as well.
    spec = {name: tf.TensorSpec([None, None], tf.int64) for name in inputs}
    traced = tf.function(lambda x, p: backbone(x, positions=p)["sequence_output"],
                         input_signature=[spec, tf.TensorSpec([None, None], tf.int64)])
    int64_inputs = {name: tf.constant(value, tf.int64) for name, value in inputs.items()}
    np.testing.assert_allclose(traced(int64_inputs, tf.constant([[9, -10], [0, 0]], tf.int64)),
                               backbone(inputs, positions=[[9, -10], [0, 0]])["sequence_output"], atol=1e-6)
    named = r"(?s)positions \(the mask_positions of a pretrainer\) must index the sequence.*sequence_length.*10"
    with pytest.raises(Exception, match=named):
        traced(int64_inputs, tf.constant([[1, 2], [bad, 0]], tf.int64))
    with pytest.raises(Exception, match=named):
        backbone(inputs, positions=[[1, 2], [bad, 0]])
    model = kbz.BertPretrainer(backbone)
    model.compile(optimizer="sgd")
    features = dict(_inputs(), mask_positions=np.array([[1, 2], [bad, 0]], "int32"))
    labels = {"masked_lm_logits": np.ones((2, 2), "int32"), "next_sentence_logits": np.zeros(2, "int32")}
    with pytest.raises(Exception, match=r"positions \(the mask_positions of a pretrainer\) must index the sequence"):
        model.fit(features, labels, epochs=1, verbose=0)
