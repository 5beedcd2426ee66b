"""Parity with Hugging Face transformers (fixtures made by fixtures/make_hf_reference.py)."""

import os

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from tests.fixtures.make_hf_reference import MAX_LENGTH
from tests.fixtures.make_hf_reference import TEXTS

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def minilm_reference():
    return np.load(os.path.join(FIXTURES, "minilm_hf_reference.npz"))


@pytest.fixture(scope="module")
def minilm(default_preset_dir):
    return kbz.BertBackbone.from_preset(default_preset_dir)


def _inputs(ids, segments, length):
    pad = length - len(ids)
    return {
        "token_ids": np.pad(ids, (0, pad))[None],
        "segment_ids": np.pad(segments, (0, pad))[None],
        "padding_mask": np.pad(np.ones_like(ids), (0, pad))[None],
    }


@pytest.mark.parametrize("index", range(len(TEXTS)))
def test_minilm_matches_hf_bert_model(minilm, minilm_reference, index):
    ids = minilm_reference[f"token_ids_{index}"]
    segments = minilm_reference[f"segment_ids_{index}"]
    # Pad to a longer window so padding must be masked out to match HF.
    length = min(len(ids) + 7, MAX_LENGTH) if len(ids) < MAX_LENGTH else MAX_LENGTH
    out = minilm(_inputs(ids, segments, length))
    real = len(ids)
    sequence = out["sequence_output"].numpy()[0, :real]
    np.testing.assert_allclose(sequence, minilm_reference[f"sequence_output_{index}"], atol=TOLERANCE)
    np.testing.assert_allclose(out["pooled_output"].numpy()[0], minilm_reference[f"pooled_output_{index}"], atol=TOLERANCE)


@pytest.mark.filterwarnings("ignore:.*were truncated")
def test_minilm_preprocessor_matches_hf_tokenizer(default_preset_dir, minilm_reference):
    """Our in-graph tokenizer + packer give HF's ids, truncation included."""
    pre = kbz.BertPreprocessor.from_preset(default_preset_dir, sequence_length=MAX_LENGTH)
    for index, text in enumerate(TEXTS):
        packed = pre([text] if isinstance(text, str) else [tuple(text)])
        n = int(packed["padding_mask"].numpy().sum())
        np.testing.assert_array_equal(packed["token_ids"].numpy()[0, :n], minilm_reference[f"token_ids_{index}"])
        np.testing.assert_array_equal(packed["segment_ids"].numpy()[0, :n], minilm_reference[f"segment_ids_{index}"])


def test_tanh_gelu_would_break_parity(default_preset_dir, minilm_reference):
    """The exact GELU matters: keras-hub's tanh form misses HF by ~1e-3."""
    backbone = kbz.BertBackbone.from_preset(default_preset_dir, hidden_activation="gelu_tanh")
    ids, segments = minilm_reference["token_ids_3"], minilm_reference["segment_ids_3"]
    out = backbone(_inputs(ids, segments, len(ids)))
    diff = np.abs(out["sequence_output"].numpy()[0] - minilm_reference["sequence_output_3"]).max()
    assert diff > 100 * TOLERANCE


def test_pytorch_bin_read_without_torch_matches_hf():
    """A torch-written pytorch_model.bin (with both heads, gelu_new, 3 segment
    types) loads without torch and reproduces HF's BertForPreTraining."""
    ref = np.load(os.path.join(FIXTURES, "tiny_hf_reference.npz"))
    directory = os.path.join(FIXTURES, "tiny_hf_bert")
    model = kbz.BertPretrainer.from_preset(directory)
    assert model.backbone.hidden_activation == "gelu_tanh"
    assert model.backbone.num_segments == 3
    assert model.backbone.layer_norm_epsilon == 1e-7
    seq_len = ref["token_ids"].shape[1]
    positions = np.tile(np.arange(seq_len, dtype="int32"), (2, 1))
    out = model(
        {
            "token_ids": ref["token_ids"],
            "segment_ids": ref["segment_ids"],
            "padding_mask": ref["padding_mask"],
            "mask_positions": positions,
        }
    )
    backbone_out = model.backbone({k: ref[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    real = ref["padding_mask"].astype(bool)
    np.testing.assert_allclose(backbone_out["sequence_output"].numpy()[real], ref["sequence_output"][real], atol=TOLERANCE)
    np.testing.assert_allclose(backbone_out["pooled_output"], ref["pooled_output"], atol=TOLERANCE)
    np.testing.assert_allclose(out["masked_lm_logits"].numpy()[real], ref["prediction_logits"][real], atol=TOLERANCE)
    np.testing.assert_allclose(out["next_sentence_logits"], ref["seq_relationship_logits"], atol=TOLERANCE)
    assert not tf.reduce_any(tf.math.is_nan(out["masked_lm_logits"]))


def test_a_legacy_format_pytorch_bin_loads_the_same_model_as_its_zip_twin(tmp_path):
    """tiny_hf_bert's pytorch_model.bin re-saved by torch in its legacy format (what torch < 1.6 wrote, and
    Hub checkpoints of 2019-2020 such as BioBERT's hold; fixtures/make_torch_legacy.py) loads without torch,
    its tied decoder included, and gives exactly the outputs of the zip-format file."""
    import shutil

    ref = np.load(os.path.join(FIXTURES, "tiny_hf_reference.npz"))
    directory = tmp_path / "hf"
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_bert"), directory)
    shutil.copyfile(os.path.join(FIXTURES, "torch_legacy", "tiny_hf_bert_legacy.bin"), directory / "pytorch_model.bin")
    legacy = kbz.BertPretrainer.from_preset(str(directory))
    zipped = kbz.BertPretrainer.from_preset(os.path.join(FIXTURES, "tiny_hf_bert"))
    backbone = kbz.BertBackbone.from_preset(str(directory))
    for a, b in zip(legacy.weights, zipped.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    inputs = {k: ref[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    positions = np.tile(np.arange(ref["token_ids"].shape[1], dtype="int32"), (2, 1))
    for model_a, model_b, model_inputs in ((legacy, zipped, {**inputs, "mask_positions": positions}),
                                           (backbone, zipped.backbone, inputs)):
        out_a, out_b = model_a(model_inputs), model_b(model_inputs)
        for name in out_b:
            np.testing.assert_array_equal(out_a[name].numpy(), out_b[name].numpy(), err_msg=name)


@pytest.mark.parametrize("kind", ["sequence", "token", "question_answering"])
def test_a_fine_tuned_hf_task_checkpoint_loads_its_bert_and_names_what_it_leaves(kind):
    """transformers' BertFor{Sequence,Token}Classification / BertForQuestionAnswering as `save_pretrained` writes
    them: a head beside `bert.*`, and no pooler for the token and QA tasks. They were refused (a head "the
    architecture has no place for", a missing pooler "check num_layers"). As a backbone, the head is named as left
    out, with the task that loads it (test_hf_task_heads.py)."""
    directory = os.path.join(FIXTURES, "tiny_hf_tasks", kind)
    ref = np.load(os.path.join(directory, "reference.npz"))
    task = {"sequence": "SequenceClassification", "token": "TokenClassification",
            "question_answering": "QuestionAnswering"}[kind]
    loader = {"sequence": "BertClassifier", "token": "BertTokenClassifier",
              "question_answering": "BertQuestionAnswerer"}[kind]
    with pytest.warns(UserWarning, match=rf"is a fine-tuned BertFor{task}: its head is not loaded into a BertBackbone "
                                         rf"\({loader}.from_preset loads it\)") as caught:
        backbone = kbz.BertBackbone.from_preset(directory)
    fresh = [str(w.message) for w in caught if "no pooler weights" in str(w.message)]
    assert len(fresh) == (0 if kind == "sequence" else 1)
    out = backbone({name: ref[name] for name in ("token_ids", "segment_ids", "padding_mask")})
    real = ref["padding_mask"].astype(bool)
    np.testing.assert_allclose(out["sequence_output"].numpy()[real], ref["sequence_output"][real], atol=TOLERANCE)
    if kind == "sequence":  # its pooler is the checkpoint's
        np.testing.assert_allclose(out["pooled_output"], ref["pooled_output"], atol=TOLERANCE)


def test_a_checkpoint_missing_half_the_pooler_is_still_refused():
    from keras_bert_zoo.presets.converters.checkpoint_weights import assign_weights
    from keras_bert_zoo.presets.converters.hf_checkpoint import load_hf_weights
    from keras_bert_zoo.presets.errors import CheckpointError

    directory = os.path.join(FIXTURES, "tiny_hf_tasks", "sequence")
    with pytest.warns(UserWarning, match="fine-tuned task's checkpoint"):
        weights = load_hf_weights(directory)
    backbone = kbz.BertBackbone.from_preset(directory, load_weights=False)
    del weights["bert/pooler/dense/bias"]  # only a whole missing pooler is a task's saving, not corruption
    with pytest.raises(CheckpointError, match="has no variable 'bert/pooler/dense/bias'"):
        assign_weights(backbone, weights, source=directory)


def test_a_checkpoint_with_a_next_sentence_head_but_no_pooler_is_refused():
    # Only models that do not use the pooler save none; the next-sentence head reads it, so a checkpoint holding
    # the head without it is corrupt. It loaded the head as trained on a fresh pooler, "as HF saves BertForMaskedLM".
    from keras_bert_zoo.presets.converters.checkpoint_weights import assign_weights
    from keras_bert_zoo.presets.converters.hf_checkpoint import load_hf_weights
    from keras_bert_zoo.presets.errors import CheckpointError

    directory = os.path.join(FIXTURES, "tiny_hf_bert")
    weights = {k: v for k, v in load_hf_weights(directory).items() if not k.startswith("bert/pooler/")}
    model = kbz.BertPretrainer.from_preset(directory, load_weights=False)
    for pretrainer in (model, None):
        with pytest.raises(CheckpointError, match=r"holds the next-sentence head \(cls/seq_relationship/\*\) but no "
                                                  r"pooler weights \(bert/pooler/dense/\*\)"):
            assign_weights(model.backbone, weights, pretrainer, source=directory)


def test_a_masked_lm_checkpoint_hf_saved_without_a_pooler_loads_its_encoder_and_head(tmp_path):
    """BertForMaskedLM, what transformers' run_mlm.py (domain pretraining) saves, has no pooler and no
    next-sentence head."""
    import shutil

    from safetensors.numpy import save_file

    from keras_bert_zoo.presets.converters.torch_pickle import load_torch_state_dict

    ref = np.load(os.path.join(FIXTURES, "tiny_hf_reference.npz"))
    directory = tmp_path / "hf"
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_bert"), directory)
    state = load_torch_state_dict(str(directory / "pytorch_model.bin"))
    (directory / "pytorch_model.bin").unlink()
    save_file({k: v for k, v in state.items() if not k.startswith(("bert.pooler.", "cls.seq_relationship."))},
              str(directory / "model.safetensors"))
    with pytest.warns(UserWarning, match=r"has no pooler weights .*BertForMaskedLM.*the pooler is freshly initialised"):
        model = kbz.BertPretrainer.from_preset(str(directory))
    inputs = {k: ref[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    positions = np.tile(np.arange(ref["token_ids"].shape[1], dtype="int32"), (2, 1))
    out = model({**inputs, "mask_positions": positions})
    real = ref["padding_mask"].astype(bool)
    np.testing.assert_allclose(model.backbone(inputs)["sequence_output"].numpy()[real], ref["sequence_output"][real],
                               atol=TOLERANCE)
    np.testing.assert_allclose(out["masked_lm_logits"].numpy()[real], ref["prediction_logits"][real], atol=TOLERANCE)
