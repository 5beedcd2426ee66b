"""Parity with google-research/bert's own outputs on the tiny TF1 checkpoint."""

import json
import os
import re
import warnings

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def reference(tiny_checkpoint):
    with open(os.path.join(tiny_checkpoint, "reference_outputs.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def pretrainer(tiny_checkpoint):
    return kbz.BertPretrainer.from_preset(tiny_checkpoint, return_all_layers=True)


def _run(pretrainer, reference):
    inputs = reference["inputs"]
    return pretrainer(
        {
            "token_ids": np.array(inputs["input_ids"], "int32"),
            "segment_ids": np.array(inputs["token_type_ids"], "int32"),
            "padding_mask": np.array(inputs["input_mask"], "int32"),
            "mask_positions": np.array(inputs["masked_lm_positions"], "int32"),
        }
    ), pretrainer.backbone(
        {
            "token_ids": np.array(inputs["input_ids"], "int32"),
            "segment_ids": np.array(inputs["token_type_ids"], "int32"),
            "padding_mask": np.array(inputs["input_mask"], "int32"),
        }
    )


def test_config_from_bert_config_json(pretrainer):
    backbone = pretrainer.backbone
    assert (backbone.num_layers, backbone.hidden_dim, backbone.num_heads) == (2, 4, 4)
    assert backbone.hidden_activation == "gelu_tanh"  # Google's "gelu" is the tanh form
    assert backbone.layer_norm_epsilon == 1e-12
    assert backbone.max_sequence_length == 16


def test_every_layer_matches_google(pretrainer, reference):
    _, outputs = _run(pretrainer, reference)
    ref = reference["outputs"]
    np.testing.assert_allclose(outputs["embedding_output"], ref["embedding_output"], atol=TOLERANCE)
    encoder = np.transpose(outputs["encoder_outputs"].numpy(), (1, 0, 2, 3))
    np.testing.assert_allclose(encoder, ref["all_encoder_layers"], atol=TOLERANCE)
    np.testing.assert_allclose(outputs["sequence_output"], ref["sequence_output"], atol=TOLERANCE)
    np.testing.assert_allclose(outputs["pooled_output"], ref["pooled_output"], atol=TOLERANCE)


def test_pretraining_heads_match_google(pretrainer, reference):
    outputs, _ = _run(pretrainer, reference)
    ref = reference["outputs"]
    mlm = tf.nn.log_softmax(outputs["masked_lm_logits"]).numpy().reshape(-1, 15)
    np.testing.assert_allclose(mlm, ref["masked_lm_log_probs"], atol=TOLERANCE)
    nsp = tf.nn.log_softmax(outputs["next_sentence_logits"]).numpy()
    np.testing.assert_allclose(nsp, ref["next_sentence_log_probs"], atol=TOLERANCE)
    # The losses as run_pretraining.py defines them.
    ids = np.array(reference["inputs"]["masked_lm_ids"]).reshape(-1)
    weights = np.array(reference["inputs"]["masked_lm_weights"], "float64").reshape(-1)
    per_example = -mlm[np.arange(len(ids)), ids]
    loss = (weights * per_example).sum() / (weights.sum() + 1e-5)
    assert loss == pytest.approx(ref["masked_lm_loss"], abs=TOLERANCE)
    labels = np.array(reference["inputs"]["next_sentence_labels"])
    assert -nsp[np.arange(len(labels)), labels].mean() == pytest.approx(ref["next_sentence_loss"], abs=TOLERANCE)


def test_converted_preset_reloads_bit_exactly(pretrainer, reference, tiny_checkpoint, tmp_path):
    directory = tiny_checkpoint
    tokenizer = kbz.BertTokenizer.from_preset(directory)
    pretrainer.save_to_preset(str(tmp_path / "tiny"), tokenizer=tokenizer)
    reloaded = kbz.BertPretrainer.from_preset(str(tmp_path / "tiny"), return_all_layers=True)
    for a, b in zip(pretrainer.weights, reloaded.weights):
        assert a.path == b.path
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    backbone = kbz.BertBackbone.from_preset(str(tmp_path / "tiny"))
    for a, b in zip(pretrainer.backbone.weights, backbone.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    files = sorted(os.listdir(tmp_path / "tiny"))
    assert files == ["assets", "config.json", "metadata.json", "model.weights.h5", "task.json",
                     "task.weights.h5", "tokenizer.json"]


def test_a_run_directory_of_several_checkpoints_reads_the_last_one_saved(tiny_checkpoint, tmp_path):
    """run_pretraining.py keeps its last checkpoints (model.ckpt-1000, model.ckpt-2000 ...): the first by name,
    the run's earliest (1000 before 2000), was read in silence."""
    import shutil
    import warnings

    for name in ("bert_config.json", "vocab.txt"):
        shutil.copy(os.path.join(tiny_checkpoint, name), tmp_path / name)
    for suffix in (".index", ".data-00000-of-00001"):  # the released weights, as the run's last save
        shutil.copy(os.path.join(tiny_checkpoint, "bert_model.ckpt" + suffix), tmp_path / f"model.ckpt-2000{suffix}")
    reader = tf.train.load_checkpoint(os.path.join(tiny_checkpoint, "bert_model.ckpt"))
    names = sorted(reader.get_variable_to_shape_map())
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "model.ckpt-1000"), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[reader.get_tensor(n) + 1 if reader.get_tensor(n).dtype.kind == "f"
                               else reader.get_tensor(n) for n in names])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backbone = kbz.BertBackbone.from_preset(str(tmp_path))
    released = kbz.BertBackbone.from_preset(tiny_checkpoint)
    for a, b in zip(backbone.weights, released.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert f"{tmp_path} holds 2 checkpoints: reading model.ckpt-2000, not model.ckpt-1000." in [
        str(w.message).split(" Keep")[0] for w in caught]


def test_a_checkpoint_of_other_names_is_named_as_not_googles(tiny_checkpoint, tmp_path):
    """A TF2 checkpoint with bert_config.json (object-based names) was refused as "holds weights for 0 encoder
    layers, but its config says num_hidden_layers=2 ... use the config saved with them": advice about a config
    that was right."""
    import shutil

    for name in ("bert_config.json", "vocab.txt"):
        shutil.copy(os.path.join(tiny_checkpoint, name), tmp_path / name)
    reader = tf.train.load_checkpoint(os.path.join(tiny_checkpoint, "bert_model.ckpt"))
    names = sorted(reader.get_variable_to_shape_map())
    renamed = [f"encoder/{n.replace('/', '-')}/.ATTRIBUTES/VARIABLE_VALUE" for n in names]
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "bert_model.ckpt"), tensor_names=renamed,
                      shape_and_slices=[""] * len(names), tensors=[reader.get_tensor(n) for n in names])
    with pytest.raises(kbz.CheckpointError, match=re.escape(
            f"{tmp_path} holds no weight under google-research/bert's names (bert/embeddings/..., "
            f"bert/encoder/layer_0/...; its first is '{min(renamed)}'): it is not a checkpoint of")):
        kbz.BertBackbone.from_preset(str(tmp_path))


def _fine_tuned_checkpoint(tiny_checkpoint, directory, prefix, labels):
    """The tiny checkpoint as a google-research/bert fine-tuning script saves it (`model.ckpt-<step>`): the
    `bert/*` variables with their Adam slots, the script's output layer (`{prefix}weights` [labels, hidden] and
    `{prefix}bias`, random) and global_step; no pretraining heads. Returns the output layer's arrays."""
    import shutil

    for name in ("bert_config.json", "vocab.txt"):
        shutil.copy(os.path.join(tiny_checkpoint, name), directory / name)
    reader = tf.train.load_checkpoint(os.path.join(tiny_checkpoint, "bert_model.ckpt"))
    arrays = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map() if not n.startswith("cls/")}
    rng = np.random.default_rng(0)
    head = {f"{prefix}weights": rng.normal(size=(labels, 4)).astype("float32"),
            f"{prefix}bias": rng.normal(size=labels).astype("float32")}
    arrays.update(head)
    names = sorted(arrays)
    tf.raw_ops.SaveV2(prefix=str(directory / "model.ckpt-300"), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[arrays[n] for n in names])
    return head[f"{prefix}weights"], head[f"{prefix}bias"]


def _packed(reference):
    inputs = reference["inputs"]
    return {"token_ids": np.array(inputs["input_ids"], "int32"), "segment_ids": np.array(inputs["token_type_ids"], "int32"),
            "padding_mask": np.array(inputs["input_mask"], "int32")}


def test_a_run_classifier_checkpoint_loads_as_a_classifier_with_its_head(tiny_checkpoint, reference, tmp_path):
    """run_classifier.py's fine-tuned checkpoint was refused ("holds variable 'output_bias' that the architecture
    in its config has no place for"): not even its BERT could be read. Its logits are run_classifier.py's
    create_model: the pooled output (Google's, from the reference) times output_weights transposed, plus the bias."""
    weights, bias = _fine_tuned_checkpoint(tiny_checkpoint, tmp_path, "output_", labels=3)
    classifier = kbz.BertClassifier.from_preset(str(tmp_path), sequence_length=16)
    assert (classifier.num_classes, classifier.label_names, classifier.dropout) == (3, None, 0.1)
    expected = np.array(reference["outputs"]["pooled_output"]) @ weights.T + bias
    np.testing.assert_allclose(classifier(_packed(reference)), expected, atol=TOLERANCE)
    assert type(kbz.Task.from_preset(str(tmp_path))) is kbz.BertClassifier
    with pytest.warns(UserWarning, match=r"is a fine-tuned run_classifier.py classifier: its head is not loaded into a "
                                         r"BertBackbone \(BertClassifier.from_preset loads it\)"):
        backbone = kbz.BertBackbone.from_preset(str(tmp_path))
    np.testing.assert_allclose(backbone(_packed(reference))["pooled_output"], reference["outputs"]["pooled_output"],
                               atol=TOLERANCE)


def test_a_run_squad_checkpoint_loads_as_a_question_answerer_with_its_head(tiny_checkpoint, reference, tmp_path):
    # run_squad.py's create_model: each token's vector times cls/squad/output_weights transposed, plus the bias,
    # unstacked into start and end logits.
    weights, bias = _fine_tuned_checkpoint(tiny_checkpoint, tmp_path, "cls/squad/output_", labels=2)
    answerer = kbz.BertQuestionAnswerer.from_preset(str(tmp_path), sequence_length=16)
    logits = np.array(reference["outputs"]["sequence_output"]) @ weights.T + bias
    out = answerer(_packed(reference))
    np.testing.assert_allclose(out["start_logits"], logits[..., 0], atol=TOLERANCE)
    np.testing.assert_allclose(out["end_logits"], logits[..., 1], atol=TOLERANCE)


def test_half_a_fine_tuned_head_is_refused(tiny_checkpoint, tmp_path):
    _fine_tuned_checkpoint(tiny_checkpoint, tmp_path, "output_", labels=2)
    reader = tf.train.load_checkpoint(str(tmp_path / "model.ckpt-300"))
    arrays = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map() if n != "output_bias"}
    names = sorted(arrays)
    for path in tmp_path.glob("model.ckpt-300.*"):
        path.unlink()
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "model.ckpt-400"), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[arrays[n] for n in names])
    with pytest.raises(kbz.CheckpointError, match="holds 'output_weights' but not 'output_bias': the run_classifier.py "
                                                  "classifier's head is incomplete"):
        kbz.BertClassifier.from_preset(str(tmp_path))


def test_a_squad_head_of_other_than_two_outputs_is_refused_as_the_checkpoints_fault(tiny_checkpoint, tmp_path):
    # run_squad.py's head is [2, hidden] (start, end). One of 3 rows was started fresh with a warning that
    # "from_preset() asks for a BertQuestionAnswerer of 2 ... Leave those arguments out": no argument was given.
    _fine_tuned_checkpoint(tiny_checkpoint, tmp_path, "cls/squad/output_", labels=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(kbz.CheckpointError, match=re.escape(
                f"The fine-tuned head of {tmp_path} has shape (4, 3) but the task's output layer (4, 2): the head is "
                "not this model's.")):
            kbz.BertQuestionAnswerer.from_preset(str(tmp_path), sequence_length=16)


def test_a_fine_tuned_checkpoint_is_read_once_by_task_from_preset(tiny_checkpoint, reference, tmp_path):
    # Task.from_preset read every weight to find the task (which a fine-tuned checkpoint names by its head), then
    # again to load it: twice the time for a BERT-Large, and each of the read's warnings twice (predict and
    # evaluate --model read it three times). run_classifier.py keeps its last checkpoints, which the read names.
    import shutil

    weights, bias = _fine_tuned_checkpoint(tiny_checkpoint, tmp_path, "output_", labels=3)
    for path in tmp_path.glob("model.ckpt-300.*"):
        shutil.copy(path, str(path).replace("ckpt-300", "ckpt-100"))
    with pytest.warns(UserWarning) as caught:
        classifier = kbz.Task.from_preset(str(tmp_path), sequence_length=16)
    assert [str(w.message) for w in caught] == [
        f"{tmp_path} holds 2 checkpoints: reading model.ckpt-300, not model.ckpt-100. Keep the one you mean alone in "
        "the directory to read another."]
    expected = np.array(reference["outputs"]["pooled_output"]) @ weights.T + bias
    np.testing.assert_allclose(classifier(_packed(reference)), expected, atol=TOLERANCE)
