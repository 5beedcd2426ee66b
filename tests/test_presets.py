"""The preset zoo, from_preset's accepted forms, and its error messages."""

import json
import os
import pickle
import re
import shutil
import zipfile

import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.presets.loader import cached_preset_dir
from keras_bert_zoo.presets.registry import get_preset_spec
from keras_bert_zoo.presets.registry import preset_names

EXPECTED = {
    "bert_base_en_uncased", "bert_base_en_cased", "bert_large_en_uncased", "bert_large_en_cased",
    "biobert_v1.1_base_en_cased", "scibert_scivocab_base_en_uncased", "scibert_scivocab_base_en_cased",
    "bio_clinicalbert_base_en_cased", "pubmedbert_base_en_uncased", "minilm_l6_h384_en_uncased",
}
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def _tiny_copy(source, tmp_path):
    target = tmp_path / "tiny"
    shutil.copytree(source, target)
    return target


def test_zoo_has_every_preset_with_its_facts():
    assert set(preset_names()) == EXPECTED
    for name in EXPECTED:
        spec = get_preset_spec(name)
        for key in ("description", "domain", "params", "license", "citation", "config", "tokenizer", "sources"):
            assert spec[key], (name, key)
        assert spec["tokenizer"]["vocabulary_size"] == spec["config"]["vocabulary_size"]
        assert spec["tokenizer"]["lowercase"] == name.endswith("uncased")


@pytest.mark.parametrize("name", ["bert_base_en_uncased", "bert_large_en_cased", "scibert_scivocab_base_en_cased",
                                  "minilm_l6_h384_en_uncased"])
def test_declared_parameter_count_matches_the_architecture(name):
    spec = get_preset_spec(name)
    backbone = kbz.BertBackbone(**spec["config"], dtype="bfloat16")
    assert backbone.count_params() == spec["params"]


def test_list_presets_table():
    table = kbz.list_presets()
    assert {row["name"] for row in table} == EXPECTED
    text = str(table)
    for column in ("name", "params", "domain", "casing", "source", "license"):
        assert column in text.splitlines()[0]
    minilm = next(r for r in table if r["name"] == "minilm_l6_h384_en_uncased")
    assert (minilm["params"], minilm["casing"], minilm["domain"]) == ("22.7M", "uncased", "general")


def test_unknown_preset_lists_close_matches():
    with pytest.raises(kbz.PresetNotFoundError) as info:
        kbz.BertBackbone.from_preset("bert_base_uncased")
    assert "bert_base_en_uncased" in str(info.value)
    assert "list_presets()" in str(info.value)


@pytest.mark.parametrize("path", ["./no/such/dir", "C:/no/such/dir", "v2:x/y"])
def test_missing_directory_is_named(path):
    with pytest.raises(kbz.PresetNotFoundError, match=f"^No such directory: '{path}'.$"):
        kbz.BertBackbone.from_preset(path)


def test_a_file_or_a_checkpoint_prefix_is_told_the_directory_to_pass(tiny_checkpoint, tmp_path):
    """A file that exists (a checkpoint's vocab.txt, a .keras file), or a Google checkpoint's prefix as
    --init_checkpoint names it, was "No such directory"; None was os.fspath's "expected str, bytes or os.PathLike"."""
    for path in (os.path.join(tiny_checkpoint, "vocab.txt"), os.path.join(tiny_checkpoint, "bert_model.ckpt")):
        with pytest.raises(kbz.PresetNotFoundError,
                           match=r"takes the directory .*: " + re.escape(f"from_preset('{tiny_checkpoint}')")):
            kbz.BertBackbone.from_preset(path)
    (tmp_path / "model.keras").write_text("")
    with pytest.raises(kbz.PresetNotFoundError, match=r"is a Keras model file, .* keras.models.load_model\(path\)"):
        kbz.BertClassifier.from_preset(str(tmp_path / "model.keras"), num_classes=2)
    with pytest.raises(TypeError, match=r"^from_preset takes a preset name .*; got NoneType None.$"):
        kbz.BertBackbone.from_preset(None)


FORMS = ("from_preset takes a registered preset name (see keras_bert_zoo.list_presets() or `keras-bert-zoo presets`), "
         "a local directory, an hf://org/name handle or the http(s):// URL of a .zip or .tar.gz archive.")


@pytest.mark.parametrize("preset, why", [
    ("s3://bucket/bert.zip", "has the unsupported scheme 's3:'"),
    ("kaggle://org/bert", "has the unsupported scheme 'kaggle:'"),
    ("gs://bucket/bert.zip", "has the unsupported scheme 'gs:'"),
    ("file:///data/bert", "has the unsupported scheme 'file:'"),
    ("HF://org/name", "has the unsupported scheme 'HF:' (did you mean 'hf://org/name'?)"),
    ("Https://host/bert.zip", "has the unsupported scheme 'Https:' (did you mean 'https://host/bert.zip'?)"),
    ("hf:/org/name", "is not written as hf:// (did you mean 'hf://org/name'?)"),
    ("hf:org/name", "is not written as hf:// (did you mean 'hf://org/name'?)"),
    ("http:/host/bert.zip", "is not written as http:// (did you mean 'http://host/bert.zip'?)"),
])
def test_an_unsupported_scheme_is_named_with_the_forms_from_preset_takes(preset, why):
    # Each was "No such directory: 's3://bucket/bert.zip'.", as if a path were mistyped.
    with pytest.raises(kbz.PresetNotFoundError) as info:
        kbz.BertBackbone.from_preset(preset)
    assert str(info.value) == f"'{preset}' {why}. {FORMS}"


def _no_download(*args, **kwargs):
    raise AssertionError("a malformed handle was requested from the hub")


HANDLE_RULE = ("is not a Hugging Face handle: write hf://org/name (or hf://name), each part of letters, digits, '-', "
               "'_' and '.', without '--' or '..'.")


@pytest.mark.parametrize("handle", ["hf://", "hf:///", "hf://org//name", "hf://org/name/extra", "hf://a--b/c",
                                    "hf://org/../name", "hf://-org/name", "hf://org/name.", "hf://org/n ame",
                                    "hf://\u00f6rg/name"])
def test_a_malformed_hf_handle_is_refused_before_any_request(handle, monkeypatch):
    # "hf://" asked the hub for "//resolve/main/config.json"; "hf://a--b/c" and "hf://a/b--c" shared a cache entry.
    from keras_bert_zoo.presets import download

    monkeypatch.setattr(download, "download", _no_download)
    with pytest.raises(kbz.PresetNotFoundError) as info:
        kbz.BertBackbone.from_preset(handle)
    assert str(info.value) == f"'{handle}' {HANDLE_RULE}"


@pytest.mark.parametrize("handle", ["hf://org/name?rev=", "hf://org/name@v1.0", "hf://org/name#main"])
def test_an_hf_handle_naming_a_revision_is_refused_with_the_way_round(handle, monkeypatch):
    from keras_bert_zoo.presets import download

    monkeypatch.setattr(download, "download", _no_download)
    with pytest.raises(kbz.PresetNotFoundError) as info:
        kbz.BertBackbone.from_preset(handle)
    assert str(info.value) == (f"'{handle}' {HANDLE_RULE} A revision cannot be named: download its files into one "
                               "directory and call from_preset('/path/to/that/dir').")


def test_hub_repository_ids_are_read_as_the_hub_names_them(monkeypatch):
    from keras_bert_zoo.presets.loader import _hf_base

    monkeypatch.setenv("HF_ENDPOINT", "https://hub.example")
    assert _hf_base("hf://bert-base-uncased") == "https://hub.example/bert-base-uncased/resolve/main"
    assert _hf_base("hf://dmis-lab/biobert-v1.1/") == "https://hub.example/dmis-lab/biobert-v1.1/resolve/main"
    assert _hf_base("hf://allenai/scibert_scivocab_uncased") == (
        "https://hub.example/allenai/scibert_scivocab_uncased/resolve/main")
    handles = [source["hf"] for name in preset_names() for source in get_preset_spec(name)["sources"] if "hf" in source]
    assert len(handles) >= 8
    for handle in handles:
        assert _hf_base(handle) == f"https://hub.example/{handle[len('hf://'):]}/resolve/main"


def test_directory_that_is_not_a_checkpoint(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(kbz.PresetNotFoundError, match="bert_config.json"):
        kbz.BertBackbone.from_preset(str(tmp_path))


def test_a_directory_holding_a_preset_one_level_down_names_it(tiny_checkpoint, tmp_path):
    # A finetune --output_dir (its preset in model/) or an unpacked release (its checkpoint in a folder of its own)
    # was refused with the list of formats alone.
    shutil.copytree(tiny_checkpoint, tmp_path / "release" / "uncased_L-2_H-4")
    (tmp_path / "release" / "README").write_text("unpacked")
    with pytest.raises(kbz.PresetNotFoundError, match=re.escape(
            f"It holds one in {tmp_path / 'release' / 'uncased_L-2_H-4'}: pass that directory.")):
        kbz.BertBackbone.from_preset(str(tmp_path / "release"))
    kbz.BertBackbone.from_preset(tiny_checkpoint).save_to_preset(str(tmp_path / "run" / "model"))
    with pytest.raises(kbz.PresetNotFoundError, match=re.escape(f"It holds one in {tmp_path / 'run' / 'model'}")):
        kbz.BertBackbone.from_preset(str(tmp_path / "run"))


def test_offline_default_preset_loads_by_name_and_is_cached():
    backbone = kbz.BertBackbone.from_preset("minilm_l6_h384_en_uncased")
    assert (backbone.num_layers, backbone.hidden_dim, backbone.hidden_activation) == (6, 384, "gelu")
    cached = cached_preset_dir("minilm_l6_h384_en_uncased")
    assert cached.startswith(os.environ["KERAS_BERT_ZOO_CACHE"])
    assert sorted(os.listdir(cached)) == ["assets", "config.json", "metadata.json", "model.weights.h5", "tokenizer.json"]
    again = kbz.BertBackbone.from_preset("minilm_l6_h384_en_uncased")
    for a, b in zip(backbone.weights, again.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with open(os.path.join(cached, "metadata.json")) as f:
        assert json.load(f)["parameter_count"] == get_preset_spec("minilm_l6_h384_en_uncased")["params"]


def test_an_unwritable_preset_cache_is_named_with_its_fix(tmp_path, monkeypatch):
    # A read-only home failed as "[Errno 30] Read-only file system: '/home/...'", naming neither the cache nor the
    # variable that moves it. (A file in the way stands in for a read-only file system: tests may run as root.)
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("KERAS_BERT_ZOO_CACHE", str(tmp_path / "file" / "cache"))
    with pytest.raises(kbz.PresetError, match=r"Cannot write in .*file/cache/tmp \(Not a directory\).* It is the "
                                              r"preset cache, set by \$KERAS_BERT_ZOO_CACHE\."):
        kbz.BertBackbone.from_preset("minilm_l6_h384_en_uncased")


def test_substitute_preset_switch_maps_named_presets_to_one_that_is_here(monkeypatch):
    from keras_bert_zoo.presets.loader import load_backbone_config

    monkeypatch.setenv("KERAS_BERT_ZOO_SUBSTITUTE_PRESET", "minilm_l6_h384_en_uncased")
    with pytest.warns(UserWarning, match="loading preset 'minilm_l6_h384_en_uncased' in place of 'bert_large_en_cased'"):
        config = load_backbone_config("bert_large_en_cased")
    assert (config["num_layers"], config["hidden_dim"]) == (6, 384)  # MiniLM's, not BERT-Large's 24 x 1024
    with pytest.raises(kbz.PresetNotFoundError, match="Unknown preset 'bert_huge'"):
        load_backbone_config("bert_huge")
    monkeypatch.setenv("KERAS_BERT_ZOO_SUBSTITUTE_PRESET", "no_such_preset")
    with pytest.raises(kbz.PresetNotFoundError, match="Unknown preset 'no_such_preset'"):
        load_backbone_config("bert_base_en_uncased")


def test_pretrainer_without_heads_warns(default_preset_dir):
    with pytest.warns(UserWarning, match="freshly initialised"):
        model = kbz.BertPretrainer.from_preset(default_preset_dir)
    assert model.masked_lm_head.token_embedding is model.backbone.token_embedding


def test_google_and_saved_directories_give_identical_weights(tiny_checkpoint, tmp_path):
    directory = tiny_checkpoint
    backbone = kbz.BertBackbone.from_preset(directory)
    backbone.save_to_preset(str(tmp_path / "saved"), tokenizer=kbz.BertTokenizer.from_preset(directory))
    reloaded = kbz.BertBackbone.from_preset(str(tmp_path / "saved"))
    assert reloaded.get_config() == backbone.get_config()
    for a, b in zip(backbone.weights, reloaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert kbz.BertTokenizer.from_preset(str(tmp_path / "saved")).get_vocabulary() == \
        kbz.BertTokenizer.from_preset(directory).get_vocabulary()


def test_save_to_preset_overwrites_atomically(tiny_checkpoint, tmp_path):
    directory = tiny_checkpoint
    backbone = kbz.BertBackbone.from_preset(directory)
    target = tmp_path / "p"
    backbone.save_to_preset(str(target))
    with pytest.raises(kbz.PresetError):
        # A mismatched tokenizer is refused before anything is written.
        backbone.save_to_preset(str(target), tokenizer=kbz.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"]))
    assert sorted(os.listdir(tmp_path)) == ["p"]
    kbz.BertBackbone.from_preset(str(target))


def test_save_to_preset_never_replaces_what_is_not_a_preset(tiny_checkpoint, tmp_path, monkeypatch):
    backbone = kbz.BertBackbone.from_preset(tiny_checkpoint)
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("a week of work")
    (project / "data").mkdir()
    with pytest.raises(kbz.PresetError, match=r"project holds entries that are not a preset's \(data, notes.txt\)"):
        backbone.save_to_preset(str(project))
    assert sorted(os.listdir(project)) == ["data", "notes.txt"]
    assert (project / "notes.txt").read_text() == "a week of work"
    # A preset with a file of the user's beside it (a model card) keeps both.
    backbone.save_to_preset(str(tmp_path / "p"))
    (tmp_path / "p" / "README.md").write_text("model card")
    with pytest.raises(kbz.PresetError, match=r"\(README.md\)"):
        backbone.save_to_preset(str(tmp_path / "p"))
    assert (tmp_path / "p" / "README.md").read_text() == "model card"
    with pytest.raises(kbz.PresetError, match="is a file, not a directory"):
        backbone.save_to_preset(str(project / "notes.txt"))
    # The current directory, even empty, would be moved away under the process.
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    for target in (".", str(tmp_path)):
        with pytest.raises(kbz.PresetError, match="is the current directory or holds it"):
            backbone.save_to_preset(target)
    assert os.listdir(tmp_path / "empty") == []
    # An empty directory, and a saved preset, are written over.
    (tmp_path / "empty2").mkdir()
    backbone.save_to_preset(str(tmp_path / "empty2"))
    backbone.save_to_preset(str(tmp_path / "empty2"))
    kbz.BertBackbone.from_preset(str(tmp_path / "empty2"))


def test_save_to_preset_through_a_symbolic_link_writes_the_links_target(tiny_checkpoint, tmp_path, monkeypatch):
    backbone = kbz.BertBackbone.from_preset(tiny_checkpoint)
    (tmp_path / "v1").mkdir()
    (tmp_path / "current").symlink_to("v1")
    for _ in range(2):  # into the empty target, then over the preset there
        backbone.save_to_preset(str(tmp_path / "current"))
        assert (tmp_path / "current").is_symlink()
        assert sorted(os.listdir(tmp_path / "v1")) == ["config.json", "metadata.json", "model.weights.h5"]
    assert sorted(os.listdir(tmp_path)) == ["current", "v1"]
    kbz.BertBackbone.from_preset(str(tmp_path / "v1"))
    # A link to the current directory is the current directory.
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "here").symlink_to("..")
    monkeypatch.chdir(tmp_path / "work")
    with pytest.raises(kbz.PresetError, match="here is the current directory or holds it"):
        backbone.save_to_preset("here")


def test_save_to_preset_without_a_path_names_what_it_got(tiny_checkpoint):
    # None and 3 met os.path's TypeError; "" was named as " is the current directory".
    backbone = kbz.BertBackbone.from_preset(tiny_checkpoint)
    for target in (None, 3, ""):
        with pytest.raises(kbz.PresetError, match=r"A preset is saved to a directory path; got " + re.escape(
                repr(target)) + r"\. Give one, e.g. save_to_preset\('my_preset'\)\."):
            backbone.save_to_preset(target)


def test_save_to_preset_after_the_current_directory_was_deleted(tiny_checkpoint, tmp_path, monkeypatch):
    backbone = kbz.BertBackbone.from_preset(tiny_checkpoint)
    (tmp_path / "gone").mkdir()
    monkeypatch.chdir(tmp_path / "gone")
    os.rmdir(tmp_path / "gone")
    with pytest.raises(kbz.PresetError, match="my_preset is relative to the current directory, which no longer "
                                              "exists .* give an absolute path"):
        backbone.save_to_preset("my_preset")
    backbone.save_to_preset(str(tmp_path / "p"))
    kbz.BertBackbone.from_preset(str(tmp_path / "p"))


# --- Bad checkpoints -------------------------------------------------------


def test_vocabulary_size_mismatch(tiny_checkpoint, tmp_path):
    tiny = _tiny_copy(tiny_checkpoint, tmp_path)
    with open(tiny / "vocab.txt", "a") as f:
        f.write("\nextra")
    with pytest.raises(kbz.CheckpointError, match="vocab_size=15"):
        kbz.BertBackbone.from_preset(str(tiny))


@pytest.mark.parametrize(
    "key, value, first_mismatch",
    [
        # Layers are counted before the model is built.
        ("num_hidden_layers", 3, "holds weights for 2 encoder layers, but its config says num_hidden_layers=3"),
        ("num_hidden_layers", 1, "holds weights for 2 encoder layers, but its config says num_hidden_layers=1"),
        ("intermediate_size", 32, "'bert/encoder/layer_0/intermediate/dense/kernel'"),  # wrong width
    ],
)
def test_checkpoint_not_matching_its_config_names_the_variable(tiny_checkpoint, tmp_path, key, value, first_mismatch):
    tiny = _tiny_copy(tiny_checkpoint, tmp_path)
    config = json.loads((tiny / "bert_config.json").read_text())
    config[key] = value
    (tiny / "bert_config.json").write_text(json.dumps(config))
    with pytest.raises(kbz.CheckpointError, match=first_mismatch):
        kbz.BertBackbone.from_preset(str(tiny))


def test_truncated_tf_checkpoint(tiny_checkpoint, tmp_path):
    tiny = _tiny_copy(tiny_checkpoint, tmp_path)
    data = tiny / "bert_model.ckpt.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:1000])
    with pytest.raises(kbz.CheckpointError, match="corrupt or truncated"):
        kbz.BertBackbone.from_preset(str(tiny))


def test_truncated_safetensors(tmp_path):
    directory = tmp_path / "hf"
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_bert"), directory)
    from safetensors.numpy import save_file

    from keras_bert_zoo.presets.converters.torch_pickle import load_torch_state_dict

    weights = directory / "model.safetensors"
    save_file(load_torch_state_dict(str(directory / "pytorch_model.bin")), str(weights))
    kbz.BertBackbone.from_preset(str(directory))  # intact: loads
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(kbz.CheckpointError, match="model.safetensors"):
        kbz.BertBackbone.from_preset(str(directory))


def test_corrupt_saved_weights(tiny_checkpoint, tmp_path):
    directory = tiny_checkpoint
    kbz.BertBackbone.from_preset(directory).save_to_preset(str(tmp_path / "p"))
    weights = tmp_path / "p" / "model.weights.h5"
    weights.write_bytes(weights.read_bytes()[:500])
    with pytest.raises(kbz.CheckpointError, match="model.weights.h5"):
        kbz.BertBackbone.from_preset(str(tmp_path / "p"))


def test_pickle_that_runs_code_is_refused(tmp_path):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    directory = tmp_path / "evil"
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_bert"), directory)
    with zipfile.ZipFile(directory / "pytorch_model.bin", "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"x": Exploit()}, protocol=2))
    with pytest.raises(kbz.UnsafeCheckpointError, match="system"):
        kbz.BertBackbone.from_preset(str(directory))
    assert not marker.exists()


def test_truncated_pytorch_bin(tmp_path):
    directory = tmp_path / "hf"
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_bert"), directory)
    weights = directory / "pytorch_model.bin"
    weights.write_bytes(weights.read_bytes()[:3000])
    with pytest.raises(kbz.CheckpointError, match="pytorch_model.bin"):
        kbz.BertBackbone.from_preset(str(directory))


CONVERT_WITHOUT_THE_TASKS = """
import os, sys
from keras_bert_zoo.presets.errors import PresetError
from keras_bert_zoo.presets.loader import convert_checkpoint, read_checkpoint_dir
checkpoint = read_checkpoint_dir(sys.argv[1])
try:
    convert_checkpoint(checkpoint, sys.argv[2])
except PresetError as e:
    print("refused:", e)
import keras_bert_zoo as kbz
kbz.BertBackbone  # the package's names load the library, every class registered
convert_checkpoint(checkpoint, sys.argv[2])
print(sorted(os.listdir(sys.argv[2])))
"""


@pytest.mark.subprocess
def test_conversion_finds_the_pretrainer_in_keras_registry_not_by_import(tiny_checkpoint, tmp_path):
    """presets/ sits below the tasks: the class a checkpoint converts to comes from Keras' registry, which
    the package's names (and the command line) fill before first use."""
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, "-c", CONVERT_WITHOUT_THE_TASKS, tiny_checkpoint, str(tmp_path / "p")],
                            capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    refused, listing = result.stdout.strip().splitlines()
    assert refused == ("refused: Loading a checkpoint builds a keras_bert_zoo>BertPretrainer, which is not "
                       "registered yet: import keras_bert_zoo.tasks first (the names of `import keras_bert_zoo as "
                       "kbz` do).")
    assert "task.json" in listing and "model.weights.h5" in listing


def test_a_saved_presets_metadata_nested_past_pythons_recursion_is_ignored_as_informative(tiny_checkpoint, tmp_path):
    # metadata.json only informs (which checkpoint a preset came from): one of "[" x 100,000 stopped
    # BertBackbone.from_preset of a saved classifier with a bare RecursionError from Python's JSON parser.
    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=16)
    classifier.save_to_preset(str(tmp_path / "p"))
    (tmp_path / "p" / "metadata.json").write_text("[" * 100_000)
    backbone = kbz.BertBackbone.from_preset(str(tmp_path / "p"))  # reads metadata.json: is it a converted task?
    for a, b in zip(classifier.backbone.weights, backbone.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
