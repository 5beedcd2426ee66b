"""One task hierarchy (issue 11, item 2): every task, the pretrainer included, is a `Task`, and
`from_preset` on a saved task finds its class in Keras' serialization registry."""

import json
import os
import re
import shutil
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.export.export_for_serving import serving_signatures
from keras_bert_zoo.presets.loader import read_checkpoint_dir

# Written by keras_bert_zoo 0.1.0 (commit b06c6d6): `convert_checkpoint` of the shared tiny checkpoint, whose
# task.json is a BertPretrainer's from before it was a Task (no preprocessor, Keras' record of its compile).
OLD_PRETRAINER_PRESET = os.path.join(os.path.dirname(__file__), "fixtures", "tiny_pretrainer_preset_0.1.0")
PACKED = {"token_ids": np.array([[2, 5, 4, 6, 3, 0]], "int32"), "segment_ids": np.zeros((1, 6), "int32"),
          "padding_mask": np.array([[1, 1, 1, 1, 1, 0]], "int32"), "mask_positions": np.array([[2]], "int32")}


@pytest.fixture(scope="module")
def tiny_preset(tmp_path_factory, tiny_checkpoint):
    """The tiny checkpoint converted: a preset holding a pretrainer (its heads)."""
    directory = str(tmp_path_factory.mktemp("tiny") / "preset")
    kbz.convert_checkpoint(read_checkpoint_dir(tiny_checkpoint), directory)
    return directory


@pytest.fixture(scope="module")
def saved_tasks(tiny_preset, tmp_path_factory):
    """A saved classifier and token classifier, fine-tuned (here: fresh) from the tiny preset."""
    base = tmp_path_factory.mktemp("tasks")
    kbz.BertClassifier.from_preset(tiny_preset, num_classes=3, sequence_length=8).save_to_preset(str(base / "clf"))
    kbz.BertTokenClassifier.from_preset(tiny_preset, label_names=["O", "B-X"], sequence_length=8).save_to_preset(
        str(base / "ner"))
    return {"clf": str(base / "clf"), "ner": str(base / "ner")}


def test_every_task_is_a_task():
    for cls in (kbz.BertClassifier, kbz.BertTokenClassifier, kbz.BertQuestionAnswerer, kbz.BertPretrainer):
        assert issubclass(cls, kbz.Task)


# === Task.from_preset finds the saved class ===

def test_task_from_preset_returns_the_saved_class(saved_tasks):
    classifier = kbz.Task.from_preset(saved_tasks["clf"])
    assert type(classifier) is kbz.BertClassifier and classifier.num_classes == 3
    expected = kbz.BertClassifier.from_preset(saved_tasks["clf"])
    for a, b in zip(classifier.weights, expected.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert type(kbz.Task.from_preset(saved_tasks["ner"])) is kbz.BertTokenClassifier


def test_a_saved_task_of_another_class_is_refused_naming_both(saved_tasks):
    with pytest.raises(kbz.PresetError) as error:
        kbz.BertClassifier.from_preset(saved_tasks["ner"], num_classes=2)
    message = str(error.value)
    assert "holds a saved BertTokenClassifier, not a BertClassifier" in message
    assert "BertTokenClassifier.from_preset" in message
    with pytest.raises(kbz.PresetError, match="holds a saved BertClassifier, not a BertPretrainer"):
        kbz.BertPretrainer.from_preset(saved_tasks["clf"])


@keras.saving.register_keras_serializable(package="test_task_hierarchy")
class _ScoredClassifier(kbz.BertClassifier):
    """A user's subclass, registered as keras-hub asks."""


def test_a_saved_subclass_comes_back_as_itself(tiny_preset, tmp_path):
    _ScoredClassifier.from_preset(tiny_preset, num_classes=2, sequence_length=8).save_to_preset(str(tmp_path / "s"))
    assert type(kbz.BertClassifier.from_preset(str(tmp_path / "s"))) is _ScoredClassifier
    assert type(kbz.Task.from_preset(str(tmp_path / "s"))) is _ScoredClassifier


def test_an_unregistered_saved_class_is_named(saved_tasks, tmp_path):
    directory = str(tmp_path / "clf")
    shutil.copytree(saved_tasks["clf"], directory)
    path = os.path.join(directory, "task.json")
    with open(path) as f:
        config = json.load(f)
    config["registered_name"] = "somewhere>UnknownTask"
    with open(path, "w") as f:
        json.dump(config, f)
    with pytest.raises(kbz.PresetError, match="holds a 'somewhere>UnknownTask', which is not a registered Keras class"):
        kbz.BertClassifier.from_preset(directory)


def test_task_from_preset_on_a_backbone_preset_names_the_task_classes(default_preset_dir):
    with pytest.raises(kbz.PresetError) as error:
        kbz.Task.from_preset(default_preset_dir)
    message = str(error.value)
    assert "holds a backbone but no saved task" in message
    for name in ("BertClassifier", "BertPretrainer", "BertQuestionAnswerer", "BertTokenClassifier"):
        assert name in message


def test_a_pretrainer_preset_starts_any_task(tiny_preset, tiny_checkpoint):
    """Converted checkpoints hold their pretraining heads: other tasks get fresh heads on the backbone."""
    classifier = kbz.BertClassifier.from_preset(tiny_preset, num_classes=2, sequence_length=8)
    backbone = kbz.BertBackbone.from_preset(tiny_preset)
    for a, b in zip(classifier.backbone.weights, backbone.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert type(kbz.Task.from_preset(tiny_preset)) is kbz.BertPretrainer
    assert type(kbz.Task.from_preset(tiny_checkpoint)) is kbz.BertPretrainer  # a checkpoint read in place


# === BertPretrainer as a Task ===

def test_pretrainer_from_preset_attaches_the_presets_preprocessor(tiny_preset):
    pretrainer = kbz.BertPretrainer.from_preset(tiny_preset, sequence_length=12)
    assert isinstance(pretrainer.preprocessor, kbz.BertPreprocessor)
    assert pretrainer.preprocessor.sequence_length == 12
    assert pretrainer.preprocessor.tokenizer.get_vocabulary() == \
        kbz.BertTokenizer.from_preset(tiny_preset).get_vocabulary()


def test_fill_mask_with_a_preprocessor_argument_is_deprecated_and_gives_the_same(tiny_preset):
    pretrainer = kbz.BertPretrainer.from_preset(tiny_preset)
    attached = pretrainer.fill_mask(["[MASK] work"], top_k=3)
    given = kbz.BertPreprocessor.from_preset(tiny_preset, sequence_length=16)
    with pytest.warns(DeprecationWarning, match="fill_mask's `preprocessor` argument is deprecated"):
        assert pretrainer.fill_mask(["[MASK] work"], given, top_k=3) == attached
    bare = kbz.BertPretrainer(pretrainer.backbone)
    with pytest.raises(ValueError, match="fill_mask needs a preprocessor"):
        bare.fill_mask(["[MASK] work"])


def test_save_to_preset_with_a_tokenizer_is_deprecated_and_still_saves_it(tiny_preset, tmp_path):
    pretrainer = kbz.BertPretrainer(kbz.BertBackbone.from_preset(tiny_preset))
    tokenizer = kbz.BertTokenizer.from_preset(tiny_preset)
    with pytest.warns(DeprecationWarning, match="save_to_preset's `tokenizer` argument is deprecated"):
        pretrainer.save_to_preset(str(tmp_path / "p"), tokenizer=tokenizer)
    restored = kbz.BertPretrainer.from_preset(str(tmp_path / "p"))
    assert restored.preprocessor.tokenizer.get_vocabulary() == tokenizer.get_vocabulary()


def test_a_pretrainer_saved_with_its_preprocessor_comes_back_whole(tiny_preset, tmp_path):
    pretrainer = kbz.BertPretrainer.from_preset(tiny_preset, sequence_length=10)
    pretrainer.compile(learning_rate=3e-4, total_steps=50)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # not Keras' "compile() was not called" on loading
        pretrainer.save_to_preset(str(tmp_path / "p"))
        restored = kbz.Task.from_preset(str(tmp_path / "p"))
    assert type(restored) is kbz.BertPretrainer and restored.preprocessor.sequence_length == 10
    assert restored.get_compile_config() == pretrainer.get_compile_config()
    for key, value in pretrainer(PACKED).items():
        np.testing.assert_array_equal(restored(PACKED)[key], value)


def test_a_pretrainer_preset_written_before_it_was_a_task_loads(tiny_preset):
    assert "preprocessor" not in json.load(open(os.path.join(OLD_PRETRAINER_PRESET, "task.json")))["config"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # not Keras' "compile() was not called" on loading
        old = kbz.BertPretrainer.from_preset(OLD_PRETRAINER_PRESET, return_all_layers=True)
    assert old.backbone.return_all_layers and isinstance(old.preprocessor, kbz.BertPreprocessor)
    new = kbz.BertPretrainer.from_preset(tiny_preset)
    for a, b in zip(old.weights, new.weights):
        assert a.path == b.path
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_pretrainer_refuses_raw_text_naming_its_inputs(tiny_preset):
    pretrainer = kbz.BertPretrainer.from_preset(tiny_preset)
    with pytest.raises(TypeError, match="kbz.data.pretraining_batches"):
        pretrainer.fit(["some text"], [0])


def test_an_export_preprocessor_given_replaces_the_pretrainers_own(tiny_preset):
    pretrainer = kbz.BertPretrainer.from_preset(tiny_preset, sequence_length=16)
    given = kbz.BertPreprocessor.from_preset(tiny_preset, sequence_length=6)
    signatures, _ = serving_signatures(pretrainer, given)
    fill_mask = next(s for s in signatures if s.name == "fill_mask").function
    text = tf.constant(["[MASK] work and all no play jack"])
    assert fill_mask(text)["truncated"].numpy().tolist() == [True]  # 7 pieces + [CLS] and [SEP] do not fit 6
    signatures, _ = serving_signatures(pretrainer)
    fill_mask = next(s for s in signatures if s.name == "fill_mask").function
    assert fill_mask(text)["truncated"].numpy().tolist() == [False]


# === Heads ===

def test_every_head_gives_float32_logits_under_mixed_precision(tiny_preset):
    tasks = [kbz.BertClassifier.from_preset(tiny_preset, num_classes=2, sequence_length=8, dtype="mixed_bfloat16"),
             kbz.BertTokenClassifier.from_preset(tiny_preset, label_names=["O", "B-X"], sequence_length=8,
                                                 dtype="mixed_bfloat16"),
             kbz.BertQuestionAnswerer.from_preset(tiny_preset, sequence_length=8, dtype="mixed_bfloat16")]
    packed = {key: value for key, value in PACKED.items() if key != "mask_positions"}
    for task in tasks:
        assert task.backbone(packed)["sequence_output"].dtype == tf.bfloat16
        for logits in tf.nest.flatten(task(packed)):
            assert logits.dtype == tf.float32


@pytest.mark.parametrize("dtype", ["bfloat16", "mixed_bfloat16"])
def test_a_task_says_the_dtype_policy_it_was_loaded_in(tiny_preset, dtype):
    """As keras-hub's tasks: the model's `dtype_policy` is its backbone's, not the global float32."""
    for task in (kbz.BertClassifier.from_preset(tiny_preset, num_classes=2, sequence_length=8, dtype=dtype),
                 kbz.BertPretrainer.from_preset(tiny_preset, dtype=dtype)):
        assert task.dtype_policy.name == task.backbone.dtype_policy.name == dtype
        assert task.backbone.token_embedding.embeddings.dtype == ("bfloat16" if dtype == "bfloat16" else "float32")


@pytest.mark.parametrize("dtype, saved", [("bfloat16", "bfloat16"), ("mixed_bfloat16", "float32")])
def test_a_preset_stores_the_dtype_of_its_weights(tiny_preset, tmp_path, dtype, saved):
    """Mixed precision is how a run computes; its preset holds float32 weights and loads in float32."""
    task = kbz.BertClassifier.from_preset(tiny_preset, num_classes=2, sequence_length=8, dtype=dtype)
    task.save_to_preset(str(tmp_path / "saved"))
    for restored in (kbz.BertClassifier.from_preset(str(tmp_path / "saved")),
                     kbz.BertBackbone.from_preset(str(tmp_path / "saved"))):
        assert restored.dtype_policy.name == saved
        layers = restored.backbone.transformer_layers if hasattr(restored, "backbone") else restored.transformer_layers
        assert {layer.dtype_policy.name for layer in layers} == {saved}


# === The command line loads a saved task through Task.from_preset ===

def test_the_cli_loads_any_saved_task_class_and_refuses_a_pretrainer(tiny_preset, tmp_path):
    from keras_bert_zoo.cli.finetune_command import _load_task

    _ScoredClassifier.from_preset(tiny_preset, num_classes=2, sequence_length=8).save_to_preset(str(tmp_path / "s"))
    assert type(_load_task(str(tmp_path / "s"))) is _ScoredClassifier
    with pytest.raises(ValueError, match="is a pretrained BERT, not a fine-tuned classifier, NER or QA model: .* "
                                         "holds a 'BertPretrainer'. Fine-tune it first"):
        _load_task(tiny_preset)
    # A `pretrain` --output_dir: the hint names its model/, which --preset takes (the directory itself it refuses).
    shutil.copytree(tiny_preset, tmp_path / "pt" / "model")
    with pytest.raises(ValueError, match=re.escape(f"Fine-tune it first: keras-bert-zoo finetune --preset "
                                                   f"{tmp_path / 'pt' / 'model'} ...")):
        _load_task(str(tmp_path / "pt"))
