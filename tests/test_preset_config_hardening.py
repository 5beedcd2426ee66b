"""A saved preset's config.json, task.json and model.weights.h5 are untrusted: each is checked against the
others before a model is built or a weight is read (issue 8, problems 4 and 5)."""

import json
import os
import shutil

import h5py
import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.presets.errors import PresetError
from keras_bert_zoo.presets.loader import read_checkpoint_dir

# The tiny checkpoint: vocabulary 15, 2 layers, 4 heads, hidden 4.
TINY = dict(vocabulary_size=15, num_layers=2, num_heads=4, hidden_dim=4, intermediate_dim=16, max_sequence_length=16)


@pytest.fixture(scope="module")
def saved_tiny(tmp_path_factory, tiny_checkpoint):
    directory = str(tmp_path_factory.mktemp("tiny") / "preset")
    kbz.convert_checkpoint(read_checkpoint_dir(tiny_checkpoint), directory)
    return directory


@pytest.fixture
def preset(saved_tiny, tmp_path):
    """A private copy of the saved tiny preset, to corrupt."""
    target = str(tmp_path / "preset")
    shutil.copytree(saved_tiny, target)
    return target


def _edit_json(path, edit):
    with open(path) as f:
        document = json.load(f)
    edit(document)
    with open(path, "w") as f:
        json.dump(document, f)


def _set_config(preset, **values):
    _edit_json(os.path.join(preset, "config.json"), lambda d: d["config"].update(values))


# === The backbone's own check: every path to a model passes it ===

@pytest.mark.parametrize("key, value, words", [
    ("num_layers", 0, "num_layers must be a positive integer; got 0"),
    ("num_layers", -1, "num_layers must be a positive integer; got -1"),
    ("num_layers", 2.0, "num_layers must be a positive integer; got 2.0"),
    ("vocabulary_size", True, "vocabulary_size must be a positive integer; got True"),
    ("vocabulary_size", "15", "vocabulary_size must be a positive integer; got '15'"),
    ("max_sequence_length", 0, "max_sequence_length must be a positive integer"),
    ("num_segments", -2, "num_segments must be a positive integer"),
    ("intermediate_dim", None, "intermediate_dim must be a positive integer; got None"),
    ("num_heads", 3, "hidden_dim=4 is not divisible by num_heads=3"),
    ("dropout", 1.0, "dropout must be a rate in [0, 1); got 1.0"),
    ("dropout", -0.1, "dropout must be a rate in [0, 1)"),
    ("layer_norm_epsilon", float("nan"), "layer_norm_epsilon must be a positive number; got nan"),
    ("initializer_range", 0, "initializer_range must be a positive number; got 0"),
    ("hidden_activation", "gelu_fancy", "hidden_activation 'gelu_fancy' is unknown"),
])
def test_backbone_refuses_a_config_that_cannot_describe_bert(key, value, words):
    with pytest.raises(ValueError) as error:
        kbz.BertBackbone(**{**TINY, key: value})
    assert words in str(error.value)


def test_backbone_accepts_any_keras_activation_name():
    backbone = kbz.BertBackbone(**TINY, hidden_activation="silu")
    assert backbone.get_config()["hidden_activation"] == "silu"


# === config.json of a saved preset ===

@pytest.mark.parametrize("values, words", [
    ({"num_layers": 0}, "num_layers must be a positive integer; got 0"),
    ({"num_layers": -1}, "num_layers must be a positive integer; got -1"),
    ({"num_heads": 3}, "hidden_dim=4 is not divisible by num_heads=3"),
    ({"dropout": 7}, "dropout must be a rate in [0, 1)"),
    ({"num_layer": 1}, "unknown config key 'num_layer'; the keys are: dropout, dtype"),  # named, not ignored
])
def test_invalid_saved_config_is_named_with_its_file(preset, values, words):
    _set_config(preset, **values)
    with pytest.raises(PresetError) as error:
        kbz.BertBackbone.from_preset(preset)
    message = str(error.value)
    assert os.path.join(preset, "config.json") in message and "is not a valid BERT config" in message
    assert words in message


@pytest.mark.parametrize("num_layers", [1, 3])
def test_weights_of_another_depth_are_refused_not_dropped(preset, num_layers):
    _set_config(preset, num_layers=num_layers)
    with pytest.raises(CheckpointError) as error:
        kbz.BertBackbone.from_preset(preset)
    assert f"holds weights for 2 encoder layers, but config.json says num_layers={num_layers}" in str(error.value)
    assert "model.weights.h5" in str(error.value)


def test_task_weights_of_another_depth_are_refused(preset):
    # The pretrainer, as every saved task, is built from task.json and reads task.weights.h5.
    _edit_json(os.path.join(preset, "task.json"), lambda d: d["config"]["backbone"]["config"].update(num_layers=1))
    with pytest.raises(CheckpointError, match="task.weights.h5 holds weights for 2 encoder layers"):
        kbz.BertPretrainer.from_preset(preset)


def test_absurd_vocabulary_size_is_compared_with_the_vocabulary_before_building(preset, monkeypatch):
    _set_config(preset, vocabulary_size=2**33)
    built = []
    monkeypatch.setattr(kbz.BertBackbone, "__init__", lambda self, **kw: built.append(kw))
    with pytest.raises(PresetError) as error:
        kbz.BertBackbone.from_preset(preset)
    assert "says vocabulary_size=8589934592 but" in str(error.value)
    assert "vocabulary.txt has 15 tokens" in str(error.value)
    assert built == []  # refused before a 2**33-row embedding was asked for


def test_saved_task_config_is_checked_against_the_vocabulary(preset, tmp_path):
    classifier = kbz.BertClassifier.from_preset(preset, num_classes=2, sequence_length=8)
    task_dir = str(tmp_path / "task")
    classifier.save_to_preset(task_dir)
    _edit_json(os.path.join(task_dir, "task.json"),
               lambda d: d["config"]["backbone"]["config"].update(vocabulary_size=2**33))
    with pytest.raises(PresetError, match="says vocabulary_size=8589934592 but .* has 15 tokens"):
        kbz.BertClassifier.from_preset(task_dir)


def test_saved_task_config_with_a_bad_backbone_is_named(preset, tmp_path):
    classifier = kbz.BertClassifier.from_preset(preset, num_classes=2, sequence_length=8)
    task_dir = str(tmp_path / "task")
    classifier.save_to_preset(task_dir)
    _edit_json(os.path.join(task_dir, "task.json"), lambda d: d["config"]["backbone"]["config"].update(num_heads=3))
    with pytest.raises(PresetError) as error:
        kbz.BertClassifier.from_preset(task_dir)
    assert "task.json is not a valid BertClassifier config" in str(error.value)
    assert "hidden_dim=4 is not divisible by num_heads=3" in str(error.value)


# === model.weights.h5: bounds before reading ===

def test_weights_array_claiming_more_bytes_than_the_file_is_refused(preset):
    path = os.path.join(preset, "model.weights.h5")
    with h5py.File(path, "r+") as f:
        name = "layers/dense/vars/0"
        del f[name]
        # Chunked and never written: HDF5 would hand back 4 TiB of fill value on read.
        f.create_dataset(name, shape=(1 << 20, 1 << 20), dtype="float32", chunks=(1, 1024))
    with pytest.raises(CheckpointError) as error:
        kbz.BertBackbone.from_preset(preset)
    assert "the array 'layers/dense/vars/0' claims 4398046511104 bytes" in str(error.value)
    assert "corrupt or crafted" in str(error.value)


def _rewritten(path, name, write, **layout):
    """Replace the dataset `name` of the weights file `path` by one of its shape and dtype laid out as `layout`
    says (h5py's create_dataset arguments), into which `write(dataset)` writes what it writes."""
    with h5py.File(path, "r+") as f:
        shape, dtype = f[name].shape, f[name].dtype
        del f[name]
        write(f.create_dataset(name, shape=shape, dtype=dtype, **layout))


def _first_half(dataset):
    dataset[: len(dataset) // 2] = 1.0


def _first_row(dataset):
    dataset[:1] = 1.0


# The pooler's kernel, [4, 4] float32 (64 bytes), and its bias.
@pytest.mark.parametrize("name, write, layout, words", [
    ("layers/dense/vars/1", lambda dataset: None, {}, "stores 0 of its 16 bytes"),
    ("layers/dense/vars/1", _first_half, {"chunks": (2,)}, "stores 1 of its 2 chunks"),
    # 4 chunks of 3 x 3 values: the first row writes two, whose 72 bytes are more than the kernel's 64.
    ("layers/dense/vars/0", _first_row, {"chunks": (3, 3)}, "stores 2 of its 4 chunks"),
    ("layers/dense/vars/1", _first_half, {"chunks": (2,), "compression": "gzip"}, "stores 1 of its 2 chunks"),
], ids=["contiguous-unwritten", "chunks-half-written", "chunks-over-the-edges", "compressed-chunks-half-written"])
def test_weights_array_not_all_written_is_refused_not_read_as_zeros(preset, name, write, layout, words):
    # HDF5 reads what was never written as the fill value: the model loaded with a bias of zeros, silently.
    path = os.path.join(preset, "model.weights.h5")
    _rewritten(path, name, write, **layout)
    with pytest.raises(CheckpointError) as error:
        kbz.BertBackbone.from_preset(preset)
    assert f"{path}: the array '{name}' {words}: HDF5 would read the rest as zeros" in str(error.value)
    assert "corrupt or crafted" in str(error.value)


def test_weights_array_kept_in_another_file_is_refused(preset, tmp_path):
    # HDF5 read the bias from any file the weights file names (here 16 bytes of one beside it).
    other = tmp_path / "elsewhere.bin"
    other.write_bytes(np.ones(4, np.float32).tobytes())
    path = os.path.join(preset, "model.weights.h5")
    _rewritten(path, "layers/dense/vars/1", lambda dataset: None, external=[(str(other), 0, 16)])
    with pytest.raises(CheckpointError) as error:
        kbz.BertBackbone.from_preset(preset)
    assert (f"{path}: the array 'layers/dense/vars/1' keeps its values in another file ({other}), which Keras never "
            "writes") in str(error.value)


def test_weights_arrays_sharing_their_bytes_are_refused(tmp_path):
    # 'b' is created but never written, then its header pointed at the bytes of 'a': each array looks whole,
    # and 'b' read as a copy of 'a'.
    from keras_bert_zoo.presets.preset_io import _stored_arrays

    path = tmp_path / "model.weights.h5"
    with h5py.File(path, "w") as f:
        offset = f.create_dataset("a", data=np.arange(16384, dtype=np.float32)).id.get_offset()
        f.create_dataset("b", shape=(16384,), dtype=np.float32)
    data = path.read_bytes()
    unallocated = b"\xff" * 8 + (65536).to_bytes(8, "little")  # 'b''s contiguous layout: no address, 64 KiB
    assert data.count(unallocated) == 1
    path.write_bytes(data.replace(unallocated, offset.to_bytes(8, "little") + unallocated[8:]))
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["b"][:3], [0, 1, 2])
    with pytest.raises(CheckpointError) as error:
        _stored_arrays(str(path))
    assert (f"{path}: its arrays store 131072 bytes, more than the file's {len(data)}: some share their bytes"
            in str(error.value))


def test_weights_file_that_is_not_hdf5_is_refused(preset):
    with open(os.path.join(preset, "model.weights.h5"), "wb") as f:
        f.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 50)
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        kbz.BertBackbone.from_preset(preset)


def test_a_valid_saved_preset_still_loads_exactly(tiny_checkpoint, preset):
    backbone = kbz.BertBackbone.from_preset(preset)
    reference = kbz.BertBackbone.from_preset(tiny_checkpoint)
    for mine, theirs in zip(backbone.weights, reference.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_a_bad_override_is_named_as_the_callers_argument(preset):
    with pytest.raises(PresetError) as error:
        kbz.BertBackbone.from_preset(preset, dropout=2)
    assert "from_preset(dropout=...) is not a valid BERT config: dropout must be a rate in [0, 1); got 2" in str(
        error.value)


def test_a_missing_weights_file_is_named_missing_not_corrupt(preset):
    os.remove(os.path.join(preset, "task.weights.h5"))
    with pytest.raises(CheckpointError, match=r"task.weights.h5 is missing: the preset directory is incomplete"):
        kbz.BertPretrainer.from_preset(preset)
    os.remove(os.path.join(preset, "model.weights.h5"))
    with pytest.raises(PresetError, match=r"is a directory but not a preset: expected a saved preset \(config.json "
                                          r"\+ model.weights.h5\)"):
        kbz.BertBackbone.from_preset(preset)


# === Config sizes against the weights' shapes, before a model is built ===

# The HF fixture: vocabulary 16, hidden 8, 2 layers, intermediate 16, 16 positions, 3 segments.
HF_TINY = os.path.join(os.path.dirname(__file__), "fixtures", "tiny_hf_bert")


@pytest.fixture
def hf_tiny(tmp_path):
    target = str(tmp_path / "hf")
    shutil.copytree(HF_TINY, target)
    return target


@pytest.fixture
def nothing_built(monkeypatch):
    """Records every backbone built: a refused config must build none (2e9 positions would not fit in memory,
    3000 layers take minutes and end in a RecursionError)."""
    built = []
    monkeypatch.setattr(kbz.BertBackbone, "__init__", lambda self, **kw: built.append(kw))
    yield
    assert built == []


LOADERS = {
    "backbone": lambda preset: kbz.BertBackbone.from_preset(preset),
    "pretrainer": lambda preset: kbz.BertPretrainer.from_preset(preset),
    "convert": lambda preset: kbz.convert_checkpoint(read_checkpoint_dir(preset), preset + "-converted"),
}


@pytest.mark.parametrize("load", LOADERS)
@pytest.mark.parametrize("key, value, words", [
    ("max_position_embeddings", 2_000_000_000,
     "holds 'bert/embeddings/position_embeddings' of shape (16, 8), but its config says "
     "max_position_embeddings=2000000000"),
    ("num_hidden_layers", 3000, "holds weights for 2 encoder layers, but its config says num_hidden_layers=3000"),
    ("hidden_size", 16, "holds 'bert/embeddings/word_embeddings' of shape (16, 8), but its config says hidden_size=16"),
    ("intermediate_size", 2_000_000_000, "holds 'bert/encoder/layer_0/intermediate/dense/kernel' of shape (8, 16), "
                                         "but its config says intermediate_size=2000000000"),
    ("type_vocab_size", 4, "holds 'bert/embeddings/token_type_embeddings' of shape (3, 8), but its config says "
                           "type_vocab_size=4"),
])
def test_checkpoint_config_sizes_are_compared_with_its_weights_before_building(hf_tiny, nothing_built, load, key,
                                                                                value, words):
    _edit_json(os.path.join(hf_tiny, "config.json"), lambda d: d.update({key: value}))
    with pytest.raises(CheckpointError) as error:
        LOADERS[load](hf_tiny)
    assert f"{hf_tiny} {words}. The config does not belong to these weights" in str(error.value)


def test_google_checkpoint_config_sizes_are_compared_with_its_weights(tiny_checkpoint, tmp_path, nothing_built):
    directory = str(tmp_path / "google")
    shutil.copytree(tiny_checkpoint, directory)
    _edit_json(os.path.join(directory, "bert_config.json"), lambda d: d.update(max_position_embeddings=2**31))
    with pytest.raises(CheckpointError, match=r"holds 'bert/embeddings/position_embeddings' of shape \(16, 4\), but "
                                              r"its config says max_position_embeddings=2147483648"):
        kbz.BertBackbone.from_preset(directory)


@pytest.mark.parametrize("values, words", [
    ({"max_sequence_length": 2_000_000_000},
     "model.weights.h5 holds 'layers/bert_embedding/position_embedding/vars/0' of shape (16, 4), but {config} says "
     "max_sequence_length=2000000000"),
    ({"num_layers": 3000}, "model.weights.h5 holds weights for 2 encoder layers, but {config} says num_layers=3000"),
    ({"intermediate_dim": 2**31},
     "model.weights.h5 holds 'layers/bert_encoder_layer/_feedforward_intermediate_dense/vars/0' of shape (4, 16), but "
     "{config} says intermediate_dim=2147483648"),
])
def test_saved_config_sizes_are_compared_with_its_weights_before_building(preset, nothing_built, values, words):
    _set_config(preset, **values)
    with pytest.raises(CheckpointError) as error:
        kbz.BertBackbone.from_preset(preset)
    assert os.path.join(preset, words.format(config="config.json")) in str(error.value)


def test_saved_task_config_sizes_are_compared_with_its_weights_before_building(preset, nothing_built):
    _edit_json(os.path.join(preset, "task.json"),
               lambda d: d["config"]["backbone"]["config"].update(max_sequence_length=2**31))
    with pytest.raises(CheckpointError) as error:
        kbz.BertPretrainer.from_preset(preset)
    assert (f"{os.path.join(preset, 'task.weights.h5')} holds 'layers/bert_backbone/layers/bert_embedding/"
            "position_embedding/vars/0' of shape (16, 4), but task.json says max_sequence_length=2147483648"
            ) in str(error.value)


def test_a_size_given_to_from_preset_is_named_as_the_callers_argument(hf_tiny, nothing_built):
    with pytest.raises(CheckpointError, match=r"of shape \(16, 8\), but from_preset was given max_sequence_length=8"):
        kbz.BertBackbone.from_preset(hf_tiny, max_sequence_length=8)


# === Every JSON file is an object of named fields, checked where it is read ===

def _json_with(**values):
    """A rewrite of a JSON object with `values` set."""
    return lambda document: json.dumps({**document, **values}).encode()


def _raw(content):
    return lambda document: content


def _rewrite(path, content):
    with open(path) as f:
        document = json.load(f)
    with open(path, "wb") as f:
        f.write(content(document))


HF_CONFIGS = {  # each raised a bare TypeError, UnicodeDecodeError, AttributeError or KeyError, or named no file
    "list": (_raw(b"[1, 2]"), CheckpointError, "config.json holds a JSON list, not an object of named fields"),
    "not-utf8": (_raw(b'{"vocab_size": 16, "x": "\xff"}'), CheckpointError,
                 "config.json, line 1: byte 0xff (byte 26 of the line) is not UTF-8 text"),
    "hidden_act-list": (_json_with(hidden_act=["gelu"]), CheckpointError,
                        "config.json is not a valid BERT config.json: Unsupported hidden_act ['gelu']"),
    "hidden_act-unknown": (_json_with(hidden_act="bogus"), CheckpointError,
                           "config.json is not a valid BERT config.json: Unsupported hidden_act 'bogus'"),
    "no-hidden_size": (lambda d: json.dumps({k: v for k, v in d.items() if k != "hidden_size"}).encode(),
                       CheckpointError, "config.json is not a valid BERT config.json: it has no 'hidden_size'"),
    # A bare RecursionError; int's ValueError, naming no file.
    "deep-json": (_raw(b"[" * 100_000), CheckpointError,
                  "config.json nests JSON arrays or objects deeper than Python reads"),
    "long-integer": (_raw(b'{"vocab_size": ' + b"1" * 5000 + b"}"), CheckpointError,
                     "config.json holds an integer of 5000 digits, more than any field holds"),
}


@pytest.mark.parametrize("case", HF_CONFIGS)
def test_hf_config_that_is_no_bert_config_object_is_named(hf_tiny, case):
    content, error, words = HF_CONFIGS[case]
    _rewrite(os.path.join(hf_tiny, "config.json"), content)
    with pytest.raises(error) as info:
        kbz.BertBackbone.from_preset(hf_tiny)
    assert os.path.join(hf_tiny, words) in str(info.value)


@pytest.mark.parametrize("content, words", [
    (_raw(b"[]"), "bert_config.json holds a JSON list, not an object of named fields"),
    (_raw(b'{"a": "\xff"}'), "bert_config.json, line 1: byte 0xff"),
    (_json_with(hidden_act=["gelu"]),
     "bert_config.json is not a valid bert_config.json: Unsupported hidden_act ['gelu']"),
    (_json_with(hidden_act="gelu_new"), "bert_config.json is not a valid bert_config.json: Unsupported hidden_act "
                                        "'gelu_new'"),
    # Its whole repr, as long as the file, was the message.
    (_json_with(hidden_act=json.loads("[" * 500 + "]" * 500)),
     "bert_config.json is not a valid bert_config.json: Unsupported hidden_act [[[[...]]]]."),
], ids=["list", "not-utf8", "hidden_act-list", "hidden_act-hf-name", "hidden_act-nested"])
def test_google_config_that_is_no_bert_config_object_is_named(tiny_checkpoint, tmp_path, content, words):
    directory = str(tmp_path / "google")
    shutil.copytree(tiny_checkpoint, directory)
    _rewrite(os.path.join(directory, "bert_config.json"), content)
    with pytest.raises(CheckpointError) as info:
        kbz.BertBackbone.from_preset(directory)
    assert os.path.join(directory, words) in str(info.value)


@pytest.mark.parametrize("content, words", [
    (b"{bad json", "tokenizer_config.json is not valid JSON (Expecting property name"),
    (b"[1]", "tokenizer_config.json holds a JSON list, not an object of named fields"),
    (b'{"a":' * 100_000, "tokenizer_config.json nests JSON arrays or objects deeper than Python reads"),
], ids=["not-json", "list", "deep-json"])
def test_hf_tokenizer_config_that_is_no_object_is_named(hf_tiny, content, words):
    with open(os.path.join(hf_tiny, "tokenizer_config.json"), "wb") as f:
        f.write(content)
    with pytest.raises(CheckpointError) as info:
        kbz.BertTokenizer.from_preset(hf_tiny)
    assert os.path.join(hf_tiny, words) in str(info.value)


SAVED_FILES = {  # each raised a bare KeyError, TypeError, AttributeError or UnicodeDecodeError
    "config-without-config": ("config.json",
                              lambda d: json.dumps({k: v for k, v in d.items() if k != "config"}).encode(),
                              kbz.BertBackbone, "config.json: 'config' is missing, not an object"),
    "config-list": ("config.json", _raw(b"[1]"), kbz.BertBackbone, "config.json holds a JSON list"),
    "config-not-utf8": ("config.json", _raw(b"\xff\xfe"), kbz.BertBackbone,
                        "config.json, line 1: byte 0xff (byte 1 of the line) is not UTF-8 text: it is UTF-16"),
    "tokenizer-without-config": ("tokenizer.json", lambda d: b"{}", kbz.BertTokenizer,
                                 "tokenizer.json: 'config' is missing, not an object"),
    "tokenizer-list": ("tokenizer.json", _raw(b"[]"), kbz.BertTokenizer, "tokenizer.json holds a JSON list"),
    "task-list": ("task.json", _raw(b"[]"), kbz.BertPretrainer, "task.json holds a JSON list"),
    "config-deep-json": ("config.json", _raw(b"[" * 100_000), kbz.BertBackbone,
                         "config.json nests JSON arrays or objects deeper than Python reads"),
    "tokenizer-long-integer": ("tokenizer.json", _raw(b'{"config": {"vocabulary_size": ' + b"9" * 5000 + b"}}"),
                               kbz.BertTokenizer, "tokenizer.json holds an integer of 5000 digits"),
    "task-backbone-config-list": (
        "task.json", lambda d: json.dumps({**d, "config": {**d["config"], "backbone": {
            **d["config"]["backbone"], "config": []}}}).encode(),
        kbz.BertPretrainer, "task.json: 'config.backbone.config' is a list, not an object"),
}


@pytest.mark.parametrize("case", SAVED_FILES)
def test_saved_preset_json_that_is_no_object_is_named(preset, case):
    name, content, cls, words = SAVED_FILES[case]
    _rewrite(os.path.join(preset, name), content)
    with pytest.raises(PresetError) as info:
        cls.from_preset(preset)
    assert os.path.join(preset, words) in str(info.value)


# === vocab.txt ===

@pytest.mark.parametrize("edit, words", [
    # tensorflow-text raised a RuntimeError naming neither the file nor the line.
    (lambda lines: lines[:5] + ["a\0b"] + lines[6:], "vocab.txt: line 6: the token 'a\\x00b' holds a NUL character"),
    (lambda lines: [], "vocab.txt: it holds no token"),  # named no file
], ids=["nul-token", "empty"])
def test_unusable_vocabulary_is_named_by_file_and_line(hf_tiny, edit, words):
    path = os.path.join(hf_tiny, "vocab.txt")
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in edit(lines)))
    with pytest.raises(ValueError) as error:
        kbz.BertTokenizer.from_preset(hf_tiny)
    assert os.path.join(hf_tiny, words) in str(error.value)


# === Casing flags are true or false ===

@pytest.mark.parametrize("value", ["no", 0, None], ids=["string", "zero", "null"])
def test_hf_do_lower_case_that_is_no_bool_is_refused(hf_tiny, value):
    # "no" lower-cased (a non-empty string is true); 0 and null did not, silently.
    path = os.path.join(hf_tiny, "tokenizer_config.json")
    with open(path, "w") as f:
        json.dump({"do_lower_case": value}, f)
    with pytest.raises(CheckpointError) as error:
        kbz.BertTokenizer.from_preset(hf_tiny)
    assert f"{path}: 'do_lower_case' is {value!r}, not true or false." in str(error.value)


@pytest.mark.parametrize("key", ["lowercase", "strip_accents"])
def test_saved_tokenizer_casing_that_is_no_bool_is_refused(preset, key):
    path = os.path.join(preset, "tokenizer.json")
    _edit_json(path, lambda d: d["config"].update({key: "no"}))
    with pytest.raises(PresetError) as error:
        kbz.BertTokenizer.from_preset(preset)
    assert f"{path}: '{key}' is 'no', not true or false." in str(error.value)


# === Sizes are whole numbers, refused by type before any comparison ===

@pytest.mark.parametrize("key, value", [("vocab_size", "16"), ("num_hidden_layers", 2.0), ("hidden_size", True)])
def test_checkpoint_size_that_is_no_whole_number_is_refused_by_type(hf_tiny, key, value):
    # vocab_size "16" was reported as "has 16 tokens but the config says vocab_size=16".
    _edit_json(os.path.join(hf_tiny, "config.json"), lambda d: d.update({key: value}))
    with pytest.raises(CheckpointError) as error:
        kbz.BertBackbone.from_preset(hf_tiny)
    assert (f"{os.path.join(hf_tiny, 'config.json')} is not a valid BERT config.json: {key} is {value!r}, not a "
            "whole number") in str(error.value)


@pytest.mark.parametrize("load", [kbz.BertBackbone.from_preset, kbz.BertTokenizer.from_preset],
                         ids=["backbone", "tokenizer"])
def test_saved_vocabulary_size_that_is_no_whole_number_is_refused_by_type(preset, load):
    _set_config(preset, vocabulary_size="15")
    with pytest.raises(PresetError) as error:
        load(preset)
    assert (f"{os.path.join(preset, 'config.json')} says vocabulary_size='15', which is not a whole number"
            in str(error.value))


@pytest.mark.parametrize("key, value", [("is_decoder", True), ("add_cross_attention", True), ("is_decoder", "yes")])
def test_hf_config_of_another_architecture_is_refused(hf_tiny, key, value):
    # A causal decoder's weights loaded into the encoder, which attends both ways.
    _edit_json(os.path.join(hf_tiny, "config.json"), lambda d: d.update({key: value}))
    with pytest.raises(CheckpointError) as error:
        kbz.BertBackbone.from_preset(hf_tiny)
    assert (f"{os.path.join(hf_tiny, 'config.json')} is not a valid BERT config.json: {key} is {value!r}; only "
            f"BERT's encoder ({key}: false) is supported") in str(error.value)


@pytest.mark.parametrize("names, words", [
    ({"class_name": "Bogus", "registered_name": "evil>Bogus", "module": "os"},
     "holds a 'evil>Bogus', which is not a registered Keras class"),
    ({"class_name": "Dense", "registered_name": None, "module": "keras.layers"}, "holds a 'Dense', which is not"),
    ({"class_name": "BertClassifier", "registered_name": "keras_bert_zoo>BertClassifier"},
     "holds a BertClassifier, not a BertBackbone"),
    ({"class_name": None, "registered_name": None}, "names no class (it has no 'registered_name' or 'class_name')"),
])
def test_saved_config_of_another_class_is_refused(preset, names, words):
    # config.json's class was ignored: any saved object's config was built as a BertBackbone.
    _edit_json(os.path.join(preset, "config.json"), lambda d: d.update(names))
    with pytest.raises(PresetError) as error:
        kbz.BertBackbone.from_preset(preset)
    assert f"{os.path.join(preset, 'config.json')} {words}" in str(error.value)


def _tokenizer_config(task):
    return task["config"]["preprocessor"]["config"]["tokenizer"]["config"]


@pytest.mark.parametrize("edit, words", [
    (lambda vocabulary: vocabulary.extend(f"x{i}" for i in range(20)), "has 35 tokens, but {} has 15"),
    (lambda vocabulary: vocabulary.pop(), "has 14 tokens, but {} has 15"),
], ids=["longer", "shorter"])
def test_saved_task_vocabulary_must_be_the_presets(preset, tmp_path, edit, words):
    # The size check read vocabulary.txt while the tokenizer was built from task.json's own copy: ids past the
    # embedding.
    task_dir = str(tmp_path / "task")
    kbz.BertClassifier.from_preset(preset, num_classes=2, sequence_length=8).save_to_preset(task_dir)
    _edit_json(os.path.join(task_dir, "task.json"), lambda d: edit(_tokenizer_config(d)["vocabulary"]))
    with pytest.raises(PresetError) as error:
        kbz.BertClassifier.from_preset(task_dir)
    vocabulary = os.path.join(task_dir, "assets", "tokenizer", "vocabulary.txt")
    assert (f"{os.path.join(task_dir, 'task.json')}: 'config.preprocessor.config.tokenizer.config.vocabulary' "
            f"{words.format(vocabulary)}. A saved task holds one vocabulary") in str(error.value)


def test_saved_task_tokenizer_casing_that_is_no_bool_is_refused(preset, tmp_path):
    task_dir = str(tmp_path / "task")
    kbz.BertClassifier.from_preset(preset, num_classes=2, sequence_length=8).save_to_preset(task_dir)
    _edit_json(os.path.join(task_dir, "task.json"), lambda d: _tokenizer_config(d).update(lowercase="no"))
    with pytest.raises(PresetError) as error:
        kbz.BertClassifier.from_preset(task_dir)
    assert (f"{os.path.join(task_dir, 'task.json')} (config.preprocessor.config.tokenizer.config): 'lowercase' is "
            "'no', not true or false.") in str(error.value)


@pytest.mark.parametrize("token", ["\ufeff[PAD]", "boy\r"])
def test_a_task_saved_with_tokens_vocabulary_txt_cannot_hold_loads_back(tmp_path, token):
    """A vocabulary read with a BOM, or with CRLF line ends, holds tokens vocabulary.txt does not write back
    as they are: the task, saved by this library, loads with its own vocabulary."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "boy", "girl"]
    tokens[0 if token.endswith("[PAD]") else 5] = token
    backbone = kbz.BertBackbone(vocabulary_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=8,
                                intermediate_dim=16, max_sequence_length=16)
    classifier = kbz.BertClassifier(backbone, kbz.BertPreprocessor(kbz.BertTokenizer(tokens), 8), num_classes=2)
    classifier.save_to_preset(str(tmp_path / "task"))
    restored = kbz.Task.from_preset(str(tmp_path / "task"))
    assert restored.preprocessor.tokenizer.get_vocabulary() == tokens
