"""Checkpoints are untrusted input: every reader bounds-checks what it reads
against the bytes it has and never allocates more than the file describes.

The PyTorch files here are written by hand (torch is not a dependency): a
zip with `archive/data.pkl`, pickled with stand-ins that name the same
globals torch.save names, and `archive/data/<key>` raw storage bytes.
"""

import collections
import gzip
import io
import json
import os
import pickle
import re
import shutil
import stat
import tarfile
import warnings
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.presets.converters import torch_pickle
from keras_bert_zoo.presets.converters.hf_checkpoint import load_safetensors
from keras_bert_zoo.presets.converters.torch_pickle import load_torch_state_dict

# --- Hand-written pytorch_model.bin ---------------------------------------


def _torch_global(module, name):
    """A stand-in class that pickles as the global `module.name`."""
    return type(name, (), {"torch_global": (module, name)})


_REBUILD_TENSOR = _torch_global("torch._utils", "_rebuild_tensor_v2")
_STORAGE_TYPES = {name: _torch_global("torch", name)
                  for name in ("FloatStorage", "LongStorage", "HalfStorage", "BFloat16Storage")}


class _Storage:
    def __init__(self, key, storage_type="FloatStorage", numel=None, view=None):
        self.key, self.storage_type, self.numel, self.view = key, storage_type, numel, view


class _Tensor:
    """Pickles as `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return _REBUILD_TENSOR, self.args


class _TorchPickler(pickle._Pickler):
    """The pure-Python pickler, writing stand-ins as the torch globals they name."""

    def save_global(self, obj, name=None):
        if not hasattr(obj, "torch_global"):
            return super().save_global(obj, name)
        module, qualname = obj.torch_global
        self.write(pickle.GLOBAL + f"{module}\n{qualname}\n".encode())
        self.memoize(obj)

    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return ("storage", _STORAGE_TYPES[obj.storage_type], obj.key, "cpu", obj.numel)
        return None


def _write_torch_bin(path, state, members, compression=zipfile.ZIP_STORED):
    """`state`: {name: _Tensor or anything}; `members`: {storage key: raw bytes}."""
    buffer = io.BytesIO()
    _TorchPickler(buffer, protocol=2).dump(collections.OrderedDict(state))
    with zipfile.ZipFile(path, "w", compression) as z:
        z.writestr("archive/data.pkl", buffer.getvalue())
        for key, raw in members.items():
            z.writestr(f"archive/data/{key}", raw)
    return str(path)


def _contiguous(array, key, offset=0, storage_numel=None):
    """A `_Tensor` for `array` laid out C-contiguously in storage `key`."""
    strides = tuple(s // array.itemsize for s in array.strides)
    numel = array.size if storage_numel is None else storage_numel
    return _Tensor(_Storage(key, numel=numel), offset, array.shape, strides)


WEIGHT = np.arange(12, dtype=np.float32).reshape(3, 4)
BIAS = np.array([0.5, -1.5, 2.5], dtype=np.float32)


def _valid_bin(path):
    state = {"dense.weight": _contiguous(WEIGHT, "0"), "dense.bias": _contiguous(BIAS, "1")}
    return _write_torch_bin(path, state, {"0": WEIGHT.tobytes(), "1": BIAS.tobytes()})


def test_hand_written_torch_bin_loads_with_its_values(tmp_path):
    state = load_torch_state_dict(_valid_bin(tmp_path / "pytorch_model.bin"))
    assert sorted(state) == ["dense.bias", "dense.weight"]
    np.testing.assert_array_equal(state["dense.weight"], WEIGHT)
    np.testing.assert_array_equal(state["dense.bias"], BIAS)
    assert state["dense.weight"].dtype == np.float32 and state["dense.weight"].flags.writeable


def _refused(error, path, *words, read=load_torch_state_dict):
    """`read(path)` raises exactly `error`, naming `path` and every one of `words`."""
    with pytest.raises(error) as info:
        read(str(path))
    message = str(info.value)
    assert type(info.value) is error, message
    for word in (str(path), *words):
        assert word in message, (word, message)
    return message


def _bin_with_tensor(path, offset, size, stride, numel=12):
    """One tensor viewing storage '0', which holds `numel` floats 0, 1, 2, ..."""
    storage = np.arange(numel, dtype=np.float32)
    tensor = _Tensor(_Storage("0", numel=numel), offset, size, stride)
    return _write_torch_bin(path, {"t": tensor}, {"0": storage.tobytes()})


STORAGE = np.arange(12, dtype=np.float32)


@pytest.mark.parametrize(
    "offset, size, stride, expected",
    [
        (0, (4, 3), (1, 4), STORAGE.reshape(3, 4).T),  # a transposed view
        (4, (2, 4), (4, 1), STORAGE[4:].reshape(2, 4)),  # a view past the start
        (11, (), (), np.float32(11)),  # 0-dim: the last element
        (12, (0, 4), (4, 1), np.zeros((0, 4), np.float32)),  # empty: no element is read
        (4, (3, 4), (0, 1), np.broadcast_to(STORAGE[4:8], (3, 4))),  # an expanded row
    ],
    ids=["transposed", "offset", "0-dim", "empty", "expanded"],
)
def test_legal_tensor_layouts_read_the_right_values(tmp_path, offset, size, stride, expected):
    state = load_torch_state_dict(_bin_with_tensor(tmp_path / "pytorch_model.bin", offset, size, stride))
    assert state["t"].shape == expected.shape
    np.testing.assert_array_equal(state["t"], expected)


@pytest.mark.parametrize(
    "offset, size, stride, numel, words",
    [
        # From the issue: used to crash the interpreter (SIGSEGV).
        (0, (1 << 28,), (1,), 4, "has 268435456 elements but its storage holds only 4"),
        # From the issue: used to copy 48 floats of whatever memory follows.
        (0, (15, 4), (4, 1), 12, "has 60 elements but its storage holds only 12"),
        (0, (3, 4), (5, 1), 12, "reaches element 13 but its storage holds only 12"),
        (4, (3, 4), (4, 1), 12, "reaches element 15 but its storage holds only 12"),
        (12, (), (), 12, "reaches element 12 but its storage holds only 12"),
        (13, (0, 4), (4, 1), 12, "offset 13 is past the end of its storage (12 elements)"),
        (0, (1 << 20,), (0,), 12, "has 1048576 elements but its storage holds only 12"),
        (-1, (3, 4), (4, 1), 12, "offset -1 is negative"),
        (0, (-1, 4), (4, 1), 12, "size (-1, 4): -1 is negative"),
        (8, (3, 4), (-4, 1), 12, "stride (-4, 1): -4 is negative"),
        (0, (3, 4), (4,), 12, "size (3, 4) and stride (4,) have different lengths"),
        (0, (3.0, 4), (4, 1), 12, "size (3.0, 4): 3.0 is not an integer"),
        (0, (3, 4), (True, 1), 12, "stride (True, 1): True is not an integer"),
        ("0", (3, 4), (4, 1), 12, "offset '0' is not an integer"),
        (0, (1 << 70,), (1,), 12, f"size ({1 << 70},): {1 << 70} is too large"),
        # Too long for repr (over 4,300 digits): the message was int's ValueError, naming no tensor.
        (10 ** 5000, (1,), (1,), 12, "offset <an integer of 16610 bits> is too large"),
        (0, 12, (1,), 12, "size 12 and stride (1,) are not tuples"),
        # numpy raised a bare ValueError making each of these (2**94 empty elements, 70 dimensions).
        (0, (0, 1 << 47, 1 << 47), (1, 1, 1), 12, f"size (0, {1 << 47}, {1 << 47}) is too large, though empty"),
        (0, (1,) * 70, (1,) * 70, 12, "it has 70 dimensions, more than the 32 an array can have"),
    ],
    ids=["issue-huge-size", "issue-heap-read", "stride-past-end", "offset-past-end", "0-dim-past-end",
         "empty-past-end", "expanded-too-big",
         "negative-offset", "negative-size", "negative-stride", "rank-mismatch", "float-size", "bool-stride",
         "str-offset", "huge-int", "int-too-long-for-repr", "size-not-tuple", "empty-but-huge", "70-dims"],
)
def test_tensor_outside_its_storage_is_refused(tmp_path, offset, size, stride, numel, words):
    path = _bin_with_tensor(tmp_path / "pytorch_model.bin", offset, size, stride, numel)
    _refused(kbz.CheckpointError, path, "tensor on storage '0'", words, "corrupt or crafted")


def _zeros_member_bin(path, numel, declared, compression=zipfile.ZIP_STORED):
    tensor = _Tensor(_Storage("0", numel=declared), 0, (min(numel, declared),), (1,))
    return _write_torch_bin(path, {"t": tensor}, {"0": bytes(4 * numel)}, compression)


def test_storage_smaller_than_declared_is_refused_before_reading(tmp_path):
    path = _zeros_member_bin(tmp_path / "pytorch_model.bin", numel=12, declared=1 << 40)
    _refused(kbz.CheckpointError, path,
             "storage '0' declares 1099511627776 elements but its member archive/data/0 holds 12")


def test_storage_larger_than_declared_is_refused(tmp_path):
    path = _zeros_member_bin(tmp_path / "pytorch_model.bin", numel=13, declared=12)
    _refused(kbz.CheckpointError, path, "storage '0' declares 12 elements but its member archive/data/0 holds 13")


def test_storage_of_partial_elements_is_refused(tmp_path):
    tensor = _Tensor(_Storage("0", numel=12), 0, (12,), (1,))
    path = _write_torch_bin(tmp_path / "pytorch_model.bin", {"t": tensor}, {"0": bytes(50)})
    _refused(kbz.CheckpointError, path, "storage '0' is 50 bytes, not a whole number of 4-byte float32 values")


def test_missing_storage_member_names_the_key(tmp_path):
    tensor = _Tensor(_Storage("7", numel=12), 0, (12,), (1,))
    path = _write_torch_bin(tmp_path / "pytorch_model.bin", {"t": tensor}, {"0": bytes(48)})
    _refused(kbz.CheckpointError, path, "has no member 'archive/data/7' for storage '7'", "download it again")


def test_storage_element_count_must_be_an_integer(tmp_path):
    tensor = _Tensor(_Storage("0", numel="12"), 0, (12,), (1,))
    path = _write_torch_bin(tmp_path / "pytorch_model.bin", {"t": tensor}, {"0": bytes(48)})
    _refused(kbz.CheckpointError, path, "storage '0' declares '12' elements, which is not a count")


def test_zip_bomb_storage_is_refused_before_inflating(tmp_path):
    # 8 MiB of zeros deflate to about 8 kB: a small file that would make us allocate 1000x its size.
    numel = 2 << 20
    path = _zeros_member_bin(tmp_path / "pytorch_model.bin", numel, numel, zipfile.ZIP_DEFLATED)
    _refused(kbz.CheckpointError, path, "storage '0' inflates from", "bytes to 8388608 bytes")


def test_many_small_zip_bomb_storages_are_refused_together(tmp_path):
    # Each 1 MiB member of zeros may inflate alone; a thousand of them (a 1 MB file) filled a gigabyte.
    numel = 1 << 18
    state = {f"t{i}": _Tensor(_Storage(str(i), numel=numel), 0, (numel,), (1,)) for i in range(4)}
    path = _write_torch_bin(tmp_path / "pytorch_model.bin", state, {str(i): bytes(4 * numel) for i in range(4)},
                            zipfile.ZIP_DEFLATED)
    size = os.path.getsize(path)
    assert 32 * size + (1 << 20) < 2 << 20
    _refused(kbz.CheckpointError, path, f"its storages up to '1' inflate to {2 << 20} bytes from a file of {size}, "
             "like a zip bomb")


def test_compressed_but_plausible_storage_loads(tmp_path):
    path = _zeros_member_bin(tmp_path / "pytorch_model.bin", 1000, 1000, zipfile.ZIP_DEFLATED)
    np.testing.assert_array_equal(load_torch_state_dict(path)["t"], np.zeros(1000, np.float32))


def _views_of_one_storage(path, count, numel=1 << 18):
    """`count` tensors each viewing all of one storage of `numel` zero floats, deflated."""
    storage = _Storage("0", numel=numel)
    state = {f"t{i}": _Tensor(storage, 0, (numel,), (1,)) for i in range(count)}
    return _write_torch_bin(path, state, {"0": bytes(4 * numel)}, compression=zipfile.ZIP_DEFLATED)


def test_many_views_of_one_storage_are_refused_before_copying(tmp_path):
    # 2,000 such views of 1 MiB, in a 34 kB file, filled 2 GiB when copied out; 16 show it without the memory.
    path = _views_of_one_storage(tmp_path / "pytorch_model.bin", 16)
    assert os.path.getsize(path) < 10_000
    _refused(kbz.CheckpointError, path, f"its 16 tensors hold {16 << 20} bytes, more than 4 times the {1 << 20} "
             "bytes of the storages they view", "convert it to model.safetensors")


def test_tied_weight_saved_as_two_views_of_one_storage_loads(tmp_path):
    # torch's state_dict() detaches each parameter: a tied weight pickles as two tensors of one storage.
    storage = _Storage("0", numel=12)
    state = {"embeddings.weight": _Tensor(storage, 0, (3, 4), (4, 1)),
             "decoder.weight": _Tensor(storage, 0, (3, 4), (4, 1)), "decoder.bias": _Tensor(storage, 8, (4,), (1,))}
    loaded = load_torch_state_dict(_write_torch_bin(tmp_path / "pytorch_model.bin", state, {"0": WEIGHT.tobytes()}))
    np.testing.assert_array_equal(loaded["embeddings.weight"], WEIGHT)
    np.testing.assert_array_equal(loaded["decoder.weight"], WEIGHT)
    np.testing.assert_array_equal(loaded["decoder.bias"], [8, 9, 10, 11])


def test_huge_pickle_is_refused(tmp_path, monkeypatch):
    path = _valid_bin(tmp_path / "pytorch_model.bin")
    size = zipfile.ZipFile(path).getinfo("archive/data.pkl").file_size
    monkeypatch.setattr(torch_pickle, "_MAX_PICKLE_BYTES", size - 1)
    _refused(kbz.CheckpointError, path, f"archive/data.pkl is {size} bytes")


def test_rebuild_of_something_that_is_not_a_storage_is_refused(tmp_path):
    tensor = _Tensor(("0", "FloatStorage"), 0, (12,), (1,))
    path = _write_torch_bin(tmp_path / "pytorch_model.bin", {"t": tensor}, {"0": bytes(48)})
    _refused(kbz.CheckpointError, path, "rebuilds a tensor from ('0', 'FloatStorage'), which is not a storage")


def test_tensor_of_a_nested_object_is_named_in_a_line(tmp_path):
    # A list holding one list twice, 60 levels deep, pickles in 200 bytes; its repr, 2**60 leaves long, in the
    # message never ended.
    nested = [1]
    for _ in range(60):
        nested = [nested, nested]
    path = _write_torch_bin(tmp_path / "pytorch_model.bin", {"t": _Tensor(nested, 0, (1,), (1,))}, {})
    message = _refused(kbz.CheckpointError, path, "rebuilds a tensor from [[[[...], [...]], [[...], [...]]],",
                       "which is not a storage")
    assert len(message) < len(str(path)) + 300


@pytest.mark.parametrize("state", [{"t": 3}, {1: _contiguous(BIAS, "1")}], ids=["int-value", "int-key"])
def test_state_dict_of_non_tensors_is_refused(tmp_path, state):
    path = _write_torch_bin(tmp_path / "pytorch_model.bin", state, {"1": BIAS.tobytes()})
    _refused(kbz.UnsafeCheckpointError, path, "is not a state dict of named tensors")


def _patch_zip_directory(path, member, offset, value):
    """Overwrite bytes at `offset` of `member`'s central directory entry (flags at 8, method at 10)."""
    data = bytearray(path.read_bytes())
    entry = data.index(b"PK\x01\x02")
    while data[entry + 46 : entry + 46 + len(member)] != member.encode():
        entry = data.index(b"PK\x01\x02", entry + 4)
    data[entry + offset : entry + offset + len(value)] = value
    path.write_bytes(bytes(data))


def _corrupt_deflate(path, member):
    """Make the deflated data of `member` start with an invalid block type."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little")
    start += int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little")
    data[start] = 0xFF  # final block of type 3, which deflate does not have
    path.write_bytes(bytes(data))


ZIP_DAMAGE = {  # each raised zipfile's or zlib's own exception: RuntimeError, NotImplementedError, zlib.error
    "encrypted": (lambda path: _patch_zip_directory(path, "archive/data/0", 8, b"\x01"),
                  "its member archive/data/0 is encrypted; no checkpoint is"),
    "unknown-compression": (lambda path: _patch_zip_directory(path, "archive/data/0", 10, (98).to_bytes(2, "little")),
                            "its member archive/data/0 uses zip compression method 98"),
    "pickle-encrypted": (lambda path: _patch_zip_directory(path, "archive/data.pkl", 8, b"\x01"),
                         "its member archive/data.pkl is encrypted"),
    "corrupt-deflate": (lambda path: _corrupt_deflate(path, "archive/data/0"),
                        "is corrupt or truncated (error: Error -3 while decompressing data: invalid block type"),
}


@pytest.mark.parametrize("damage", ZIP_DAMAGE)
def test_unreadable_torch_zip_member_is_a_checkpoint_error(tmp_path, damage):
    path = tmp_path / "pytorch_model.bin"
    _zeros_member_bin(path, 1000, 1000, zipfile.ZIP_DEFLATED)
    damage, words = ZIP_DAMAGE[damage]
    damage(path)
    _refused(kbz.CheckpointError, path, words)


def _unicode(text):
    return b"X" + len(text).to_bytes(4, "little") + text.encode()  # BINUNICODE


def _pickle_building(target):
    """data.pkl of one tensor {'t': 2 floats of storage '0'} where pickle's BUILD opcode sets an attribute of the
    storage type (`target` "type": its dtype to 'S0') or of the storage itself."""
    storage_type = b"ctorch\nFloatStorage\n"  # GLOBAL
    if target == "type":
        storage_type += b"}" + _unicode("dtype") + _unicode("S0") + b"sb"  # EMPTY_DICT, SETITEM, BUILD
    storage = b"(" + _unicode("storage") + storage_type + _unicode("0") + _unicode("cpu") + b"K\x02tQ"  # BINPERSID
    if target == "storage":
        storage += b"}" + _unicode("array") + _unicode("x") + b"sb"
    arguments = b"(" + storage + b"K\x00K\x02\x85K\x01\x85\x89ccollections\nOrderedDict\n)Rt"  # offset, size...
    return b"\x80\x02}" + _unicode("t") + b"ctorch._utils\n_rebuild_tensor_v2\n" + arguments + b"Rs."


@pytest.mark.parametrize("target, words", [("type", "sets the attributes of a StorageType (pickle's BUILD)"),
                                           ("storage", "sets the attributes of a Storage (pickle's BUILD)")])
def test_pickle_build_on_a_storage_is_refused(tmp_path, target, words):
    # BUILD turned FloatStorage's dtype into 'S0': a TypeError (ZeroDivisionError for 'V0').
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", _pickle_building(target))
        z.writestr("archive/data/0", bytes(8))
    _refused(kbz.UnsafeCheckpointError, path, words)


def test_torch_zip_with_two_pickles_says_so(tmp_path):
    path = _valid_bin(tmp_path / "pytorch_model.bin")
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("other/data.pkl", b"x")
    _refused(kbz.CheckpointError, path, "needs one <root>/data.pkl and holds 2 (archive/data.pkl, other/data.pkl)")



# --- Legacy-format pytorch_model.bin (torch < 1.6) ---------------------------

LEGACY = os.path.join(os.path.dirname(__file__), "fixtures", "torch_legacy")  # made by make_torch_legacy.py


def test_torch_written_legacy_bin_reads_as_its_zip_twin_and_torch_values():
    legacy = load_torch_state_dict(os.path.join(LEGACY, "tensors_legacy.bin"))
    zipped = load_torch_state_dict(os.path.join(LEGACY, "tensors_zip.bin"))
    torch_values = np.load(os.path.join(LEGACY, "tensors.npz"))
    assert list(legacy) == list(zipped) == list(torch_values)
    for name, array in legacy.items():
        assert array.dtype == zipped[name].dtype and array.shape == torch_values[name].shape, name
        np.testing.assert_array_equal(array, zipped[name], err_msg=name)
        np.testing.assert_array_equal(array.astype(torch_values[name].dtype), torch_values[name], err_msg=name)
        assert array.flags.writeable, name
    assert [legacy[name].dtype.name for name in ("f32", "f16", "bf16", "i64", "mask")] == [
        "float32", "float16", "bfloat16", "int64", "bool"]
    assert legacy["tied_a"] is legacy["tied_b"]  # one tensor under two names, as in the pickle


class _LegacyTorchPickler(_TorchPickler):
    """Writes storages as the legacy format's persistent ids, which end with the storage's view metadata."""

    def persistent_id(self, obj):
        pid = super().persistent_id(obj)
        return None if pid is None else pid + (obj.view,)


LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
SYS_INFO = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}


def _pickled(value):
    return pickle.dumps(value, protocol=2)


def _write_legacy_bin(path, state, members, keys=None, counts=None, header=None):
    """The legacy layout torch.save wrote before 1.6: pickles of the magic number, protocol version and sys_info
    (`header`: their bytes), of `state` and of the storage `keys` (default: `members`' keys, sorted), then each
    listed storage's element count (`counts`, default its float32 count) and raw bytes (`members`)."""
    buffer = io.BytesIO()
    buffer.write(header if header is not None else _pickled(LEGACY_MAGIC) + _pickled(1001) + _pickled(SYS_INFO))
    _LegacyTorchPickler(buffer, protocol=2).dump(collections.OrderedDict(state))
    keys = sorted(members) if keys is None else keys
    buffer.write(_pickled(keys))
    for key in keys:
        raw = members.get(key, b"")
        count = (counts or {}).get(key, len(raw) // 4)
        buffer.write(count.to_bytes(8, "little", signed=True) + raw)
    path.write_bytes(buffer.getvalue())
    return str(path)


def _valid_legacy_bin(path, **changes):
    state = {"dense.weight": _contiguous(WEIGHT, "0"), "dense.bias": _contiguous(BIAS, "1")}
    return _write_legacy_bin(path, state, {"0": WEIGHT.tobytes(), "1": BIAS.tobytes()}, **changes)


def test_hand_written_legacy_bin_loads_with_its_values(tmp_path):
    state = load_torch_state_dict(_valid_legacy_bin(tmp_path / "pytorch_model.bin"))
    np.testing.assert_array_equal(state["dense.weight"], WEIGHT)
    np.testing.assert_array_equal(state["dense.bias"], BIAS)


NOT_A_CHECKPOINT = "is not a PyTorch checkpoint: it is neither a zip archive (torch >= 1.6) nor in torch's legacy format"


@pytest.mark.parametrize("content, words", [
    (_pickled(1234) + _pickled(1001) + _pickled(SYS_INFO), (NOT_A_CHECKPOINT, r"it starts with b'\x80\x02M\xd2\x04.")),
    (b"<!DOCTYPE html><html>Too many requests</html>", (NOT_A_CHECKPOINT, "it starts with b'<!DOCTYPE html><'")),
    (b"", (NOT_A_CHECKPOINT, "it starts with b''")),
    (_pickled(LEGACY_MAGIC) + _pickled(1000), ("legacy format with protocol version 1000, not 1001",)),
    (_pickled(LEGACY_MAGIC) + _pickled(1001) + _pickled({**SYS_INFO, "little_endian": False}),
     ("was written on a big-endian machine", "'little_endian': False")),
    (_pickled(LEGACY_MAGIC) + _pickled(1001) + _pickled([1001, True]),
     ("its sys_info is [1001, True], not a dict",)),
    (_pickled(LEGACY_MAGIC) + _pickled(1001)[:-1], ("its protocol version is not a whole pickle", "download it again")),
    # LONG_BINPUT to memo index 2**32 - 1: the C unpickler would first grow its memo to 32 GiB.
    (_pickled(LEGACY_MAGIC) + b"\x80\x02M\xe9\x03r\xff\xff\xff\xff.",
     ("its protocol version stores to memo index 4294967295 at byte 5",)),
    # BINBYTES8 of 2**40 bytes: the C unpickler would first allocate them.
    (_pickled(LEGACY_MAGIC) + b"\x80\x02\x8e" + (1 << 40).to_bytes(8, "little") + b"abc.",
     ("its protocol version is not a whole pickle (expected 1099511627776 bytes in a bytes8, but only 4 remain)",)),
], ids=["wrong-magic", "html", "empty", "wrong-protocol", "big-endian", "sys-info-list", "cut-pickle", "huge-memo",
        "huge-bytes"])
def test_crafted_legacy_header_is_refused(tmp_path, content, words):
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(content)
    _refused(kbz.CheckpointError, path, *words)


@pytest.mark.parametrize("where", ["first", "tensors"])
def test_legacy_pickle_naming_any_other_global_is_unsafe(tmp_path, where):
    path = tmp_path / "pytorch_model.bin"
    if where == "first":
        path.write_bytes(b"\x80\x02cos\nsystem\n.")
    else:
        _write_legacy_bin(path, {"t": _torch_global("os", "system")}, {})
    _refused(kbz.UnsafeCheckpointError, path, "refers to 'os.system'")


def test_oversized_legacy_pickle_is_refused_unread(tmp_path, monkeypatch):
    path = _valid_legacy_bin(tmp_path / "pytorch_model.bin")
    monkeypatch.setattr(torch_pickle, "_MAX_PICKLE_BYTES", 200)
    _refused(kbz.CheckpointError, path, "its tensors' pickle is over 200 bytes")


@pytest.mark.parametrize("numel, words", [
    (1 << 40, "storage '0' declares 1099511627776 float32 values, more than the whole file's"),
    (-1, "storage '0' declares -1 elements, which is not a count"),
], ids=["huge", "negative"])
def test_legacy_storage_of_impossible_size_is_refused_before_reading(tmp_path, numel, words):
    tensor = _Tensor(_Storage("0", numel=numel), 0, (12,), (1,))
    path = _write_legacy_bin(tmp_path / "pytorch_model.bin", {"t": tensor}, {"0": bytes(48)})
    _refused(kbz.CheckpointError, path, words, "corrupt or crafted")


@pytest.mark.parametrize("count", [13, 11, -1, 1 << 62])
def test_legacy_element_count_must_match_the_pickle(tmp_path, count):
    path = _valid_legacy_bin(tmp_path / "pytorch_model.bin", counts={"0": count})
    _refused(kbz.CheckpointError, path, f"storage '0' holds {count} elements where the pickle declares 12 float32")


def test_legacy_storage_named_with_two_dtypes_is_refused(tmp_path):
    # Read as float32 and as float16, the same bytes would give two tensors of different values.
    state = {"a": _Tensor(_Storage("0", numel=12), 0, (12,), (1,)),
             "b": _Tensor(_Storage("0", "HalfStorage", numel=24), 0, (24,), (1,))}
    path = _write_legacy_bin(tmp_path / "pytorch_model.bin", state, {"0": bytes(48)})
    _refused(kbz.CheckpointError, path, "storage '0' is named as 12 float32 values and as 24 float16 values")


@pytest.mark.parametrize("keys, words", [
    (["0"], "does not list storages the tensors use: '1'"),
    (["0", "1", "2"], "lists storages no tensor uses: '2'"),
    (["0", "0", "1"], "lists storages twice: '0'"),
    ({"0": 1, "1": 2}, "its list of storage keys is {'0': 1, '1': 2}, not a list of keys"),
], ids=["missing", "extra", "twice", "dict"])
def test_legacy_keys_must_list_each_pickled_storage_once(tmp_path, keys, words):
    path = _valid_legacy_bin(tmp_path / "pytorch_model.bin", keys=keys)
    _refused(kbz.CheckpointError, path, words)


def test_legacy_storage_view_is_refused(tmp_path):
    tensor = _Tensor(_Storage("0", numel=12, view=("1", 4, 8)), 0, (8,), (1,))
    path = _write_legacy_bin(tmp_path / "pytorch_model.bin", {"t": tensor}, {"0": bytes(48)})
    _refused(kbz.CheckpointError, path, "storage '0' is a view into another storage (('1', 4, 8))")


def test_legacy_tensor_outside_its_storage_is_refused(tmp_path):
    tensor = _Tensor(_Storage("0", numel=12), 10, (4,), (1,))
    path = _write_legacy_bin(tmp_path / "pytorch_model.bin", {"t": tensor}, {"0": bytes(48)})
    _refused(kbz.CheckpointError, path, "the tensor on storage '0' reaches element 13 but its storage holds only 12")


# Cut into the last storage, its element count, the storage before it, or every storage.
@pytest.mark.parametrize("cut", [1, 16, 52, 76])
def test_truncated_legacy_bin_is_refused_before_reading_storages(tmp_path, cut):
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(Path(_valid_legacy_bin(path)).read_bytes()[:-cut])
    _refused(kbz.CheckpointError, path, "its 2 storages need 76 bytes but", "download it again")


def test_legacy_bin_cut_inside_its_tensors_pickle_says_truncated(tmp_path):
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(Path(_valid_legacy_bin(path)).read_bytes()[:200])
    _refused(kbz.CheckpointError, path, "its tensors' pickle is not a whole pickle", "download it again")


def test_torch_tar_format_is_refused(tmp_path):
    path = tmp_path / "pytorch_model.bin"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        info = tarfile.TarInfo("sys_info")
        info.size = 3
        t.addfile(info, io.BytesIO(b"abc"))
    _refused(kbz.CheckpointError, path, "is in torch's original tar format, which is not read")


@pytest.mark.parametrize("pickled, words", [
    (b"\x80\x02}r\xff\xff\xff\xff.", "archive/data.pkl stores to memo index 4294967295 at byte 3"),
    (b"\x80\x02\x8e" + (1 << 40).to_bytes(8, "little") + b"abc.", "archive/data.pkl is not a whole pickle"),
], ids=["huge-memo", "huge-bytes"])
def test_zip_pickle_asking_for_huge_memory_is_refused(tmp_path, pickled, words):
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickled)
    _refused(kbz.CheckpointError, path, words)


def test_zip_storage_reading_shorter_than_its_directory_says_is_refused(tmp_path):
    # 12 floats whose directory entry says 52 bytes, as the pickle's 13 floats do: zipfile reads the 48 bytes
    # there are, CRC intact, and a view of 13 elements would read one past them.
    tensor = _Tensor(_Storage("0", numel=13), 0, (13,), (1,))
    path = tmp_path / "pytorch_model.bin"
    _write_torch_bin(path, {"t": tensor}, {"0": np.arange(12, dtype=np.float32).tobytes()})
    _patch_zip_directory(path, "archive/data/0", 24, (52).to_bytes(4, "little"))  # its uncompressed size
    _refused(kbz.CheckpointError, path, "storage '0' reads as 48 bytes where its zip directory says 52")


def test_pickle_appending_to_a_number_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02K\x01K\x02a.")  # BININT1 1, BININT1 2, APPEND
    _refused(kbz.CheckpointError, path, "is corrupt or truncated (AttributeError")


def test_truncated_torch_zip_says_download_again(tmp_path):
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(Path(_valid_bin(path)).read_bytes()[:-30])
    _refused(kbz.CheckpointError, path, "is a zip archive that cannot be read", "download it again")


# --- model.safetensors ------------------------------------------------------


def _safetensors_bytes(header, data=bytes(28)):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + data


def _safetensors_header(**changes):
    """Two F32 tensors, 'a' [2, 2] then 'b' [3], filling a 28-byte buffer; `changes` replace entry fields."""
    header = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
              "b": {"dtype": "F32", "shape": [3], "data_offsets": [16, 28]}}
    for key, value in changes.items():
        name, field = key.split("_", 1)
        header[name][field] = value
    return header


def test_hand_written_safetensors_loads_with_its_values(tmp_path):
    path = tmp_path / "model.safetensors"
    data = np.arange(4, dtype=np.float32).tobytes() + BIAS.tobytes()
    path.write_bytes(_safetensors_bytes(_safetensors_header(), data))
    state = load_safetensors(str(path))
    np.testing.assert_array_equal(state["a"], np.arange(4, dtype=np.float32).reshape(2, 2))
    np.testing.assert_array_equal(state["b"], BIAS)


@pytest.mark.parametrize(
    "content, words",
    [
        (b"\x10\0\0", "holds 3 bytes, less than its header needs"),
        ((1 << 40).to_bytes(8, "little") + b"{}", "holds 10 bytes, less than its header needs"),
        (_safetensors_bytes(b"\xff{"), "the header is not valid JSON"),
        # Each raised a bare RecursionError or int's ValueError.
        (_safetensors_bytes(b"[" * 100_000), "the header nests JSON arrays or objects deeper than Python reads"),
        (_safetensors_bytes(b'{"a": {"data_offsets": [0, 1' + b"0" * 5000 + b"]}}"),
         "the header holds an integer of 5001 digits, more than any field holds"),
        (_safetensors_bytes([1, 2]), "the header is not a JSON object"),
        (_safetensors_bytes({"a": 3}), "tensor 'a' is described by 3, not an object"),
        (_safetensors_bytes(_safetensors_header(a_dtype="F128")), "tensor 'a' has unknown dtype 'F128'"),
        # safetensors.numpy raised an AttributeError: numpy has no float8.
        (_safetensors_bytes(_safetensors_header(a_dtype="F8_E4M3", a_shape=[4, 4])),
         "tensor 'a' has dtype F8_E4M3, which this reader does not support"),
        (_safetensors_bytes(_safetensors_header(a_shape=[-1, 2])), "tensor 'a' has shape [-1, 2], not a list"),
        (_safetensors_bytes(_safetensors_header(a_shape=json.loads("[" * 500 + "]" * 500))),
         "tensor 'a' has shape [[[[...]]]], not a list"),
        (_safetensors_bytes(_safetensors_header(b_data_offsets=[16, 40])),
         "tensor 'b' has data_offsets [16, 40] outside the 28-byte data buffer"),
        (_safetensors_bytes(_safetensors_header(a_data_offsets=[-4, 12])),
         "tensor 'a' has data_offsets [-4, 12] outside"),
        (_safetensors_bytes(_safetensors_header(a_shape=[1 << 20, 1 << 20], a_data_offsets=[0, 1 << 42])),
         "tensor 'a' has data_offsets [0, 4398046511104] outside the 28-byte data buffer"),
        (_safetensors_bytes(_safetensors_header(a_shape=[3, 2])),
         "tensor 'a' has shape [3, 2] of F32 (24 bytes) but data_offsets [0, 16] span 16 bytes"),
        (_safetensors_bytes(_safetensors_header(b_data_offsets=[12, 24])), "tensors 'a' and 'b' overlap"),
    ],
    ids=["short-file", "header-past-end", "not-json", "deep-json", "long-integer", "not-object", "entry-not-object",
         "unknown-dtype", "float8", "negative-shape", "deep-shape", "offsets-past-end", "negative-offset",
         "huge-tensor", "span-mismatch", "overlap"],
)
def test_crafted_safetensors_is_refused(tmp_path, content, words):
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    _refused(kbz.CheckpointError, path, words, read=load_safetensors)


def test_oversized_safetensors_header_is_refused_unread(tmp_path, monkeypatch):
    from keras_bert_zoo.presets.converters import hf_checkpoint

    path = tmp_path / "model.safetensors"
    path.write_bytes(_safetensors_bytes(_safetensors_header()))
    monkeypatch.setattr(hf_checkpoint, "_MAX_SAFETENSORS_HEADER", 10)
    _refused(kbz.CheckpointError, path, "-byte header, beyond the format's 100 MB", read=load_safetensors)


# --- HF state dicts: every tensor where BERT has it ---------------------------

HF_TINY = os.path.join(os.path.dirname(__file__), "fixtures", "tiny_hf_bert")  # hidden 8, 2 heads, 2 layers


def _hf_with(tmp_path, edit):
    """A copy of the tiny HF checkpoint whose state dict `edit(state)` changed, as model.safetensors."""
    from safetensors.numpy import save_file

    directory = tmp_path / "hf"
    shutil.copytree(HF_TINY, directory)
    state = load_torch_state_dict(str(directory / "pytorch_model.bin"))
    edit(state)
    (directory / "pytorch_model.bin").unlink()
    save_file(state, str(directory / "model.safetensors"))
    return directory


def _reshaped(key, shape):
    return lambda state: state.update({key: np.ascontiguousarray(state[key].reshape(shape))})


ATTENTION = "bert.encoder.layer.0.attention."


@pytest.mark.parametrize("edit, words", [
    (_reshaped(ATTENTION + "self.query.weight", (64,)),
     "'bert/encoder/layer_0/attention/self/query/kernel' in {} has shape (64,), but the config implies (8, 8)"),
    (_reshaped(ATTENTION + "self.key.weight", (4, 16)),
     "'bert/encoder/layer_0/attention/self/key/kernel' in {} has shape (16, 4), but the config implies (8, 8)"),
    (_reshaped(ATTENTION + "self.value.bias", (2, 4)),
     "'bert/encoder/layer_0/attention/self/value/bias' in {} has shape (2, 4), but the config implies (8,)"),
    (_reshaped(ATTENTION + "output.dense.weight", (1, 64)),
     "'bert/encoder/layer_0/attention/output/dense/kernel' in {} has shape (64, 1), but the config implies (8, 8)"),
], ids=["query-kernel-flat", "key-kernel-4x16", "value-bias-2x4", "output-kernel-1x64"])
def test_attention_weight_of_another_shape_is_refused_though_its_size_fits(tmp_path, edit, words):
    directory = _hf_with(tmp_path, edit)
    _refused(kbz.CheckpointError, directory, words.format(directory), read=kbz.BertBackbone.from_preset)


def _added(key, make):
    return lambda state: state.update({key: make(state)})


@pytest.mark.parametrize("edit, words", [
    # A leaf BERT has no weight for used to land on a real weight (here the LayerNorm's beta, the embeddings).
    (_added("bert.embeddings.LayerNorm.zzz", lambda state: np.full(8, 9.0, np.float32)),
     "holds 'bert.embeddings.LayerNorm.zzz', which names no BERT weight"),
    (_added("bert.embeddings.word_embeddings.weight_orig", lambda state: np.full((16, 8), 9.0, np.float32)),
     "holds 'bert.embeddings.word_embeddings.weight_orig', which names no BERT weight"),
    # These raised an IndexError.
    (_added("x", lambda state: np.zeros(2, np.float32)), "holds 'x', which names no BERT weight"),
    (_added("", lambda state: np.zeros(2, np.float32)), "holds '', which names no BERT weight"),
])
def test_hf_key_naming_no_bert_weight_is_refused(tmp_path, edit, words):
    directory = _hf_with(tmp_path, edit)
    _refused(kbz.CheckpointError, directory / "model.safetensors", words, read=lambda _: kbz.BertBackbone.from_preset(
        str(directory)))


@pytest.mark.parametrize("load", [kbz.BertBackbone.from_preset, kbz.BertPretrainer.from_preset],
                         ids=["backbone", "pretrainer"])
@pytest.mark.parametrize("edit, words", [
    # The second of two names for one weight silently won.
    (_added("embeddings.word_embeddings.weight", lambda state: np.ones((16, 8), np.float32)),
     "'bert.embeddings.word_embeddings.weight' and 'embeddings.word_embeddings.weight', both BERT's "
     "'bert/embeddings/word_embeddings'"),
    (_added("cls.predictions.decoder.bias", lambda state: state["cls.predictions.bias"] + 100),
     "'cls.predictions.bias' and 'cls.predictions.decoder.bias', both BERT's 'cls/predictions/output_bias'"),
], ids=["word-embeddings-twice", "decoder-bias-differs"])
def test_two_hf_keys_for_one_bert_weight_must_agree(tmp_path, load, edit, words):
    # Copies that agree load: the fixture holds HF's decoder copies of the word embeddings and the MLM bias
    # (tests/test_hf_parity.py).
    directory = _hf_with(tmp_path, edit)
    _refused(kbz.CheckpointError, directory / "model.safetensors", words, "values differ",
             read=lambda _: load(str(directory)))


def test_an_untied_decoder_loads_as_a_backbone_and_is_refused_by_the_tied_pretrainer(tmp_path):
    """transformers saves `cls.predictions.decoder.weight` apart under tie_word_embeddings: false. A backbone
    or task never uses it (it loaded before, and must still); BertPretrainer ties its decoder to the word
    embeddings, so it must not drop the checkpoint's own silently."""
    reference = kbz.BertBackbone.from_preset(str(_hf_with(tmp_path / "tied", lambda state: None)))
    untied = _hf_with(tmp_path / "untied", _added("cls.predictions.decoder.weight",
                                                  lambda state: np.full((16, 8), 7.0, np.float32)))
    backbone = kbz.BertBackbone.from_preset(str(untied))
    for got, want in zip(backbone.weights, reference.weights):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(kbz.CheckpointError, match="holds a masked-LM decoder untied from the word embeddings"):
        kbz.BertPretrainer.from_preset(str(untied))


def test_transformers_index_buffers_are_no_weights(tmp_path):
    # transformers saves `position_ids` and, since 4.x, `token_type_ids` buffers (int64) beside the weights.
    buffers = {"bert.embeddings.position_ids": np.arange(16, dtype=np.int64)[None],
               "bert.embeddings.token_type_ids": np.zeros((1, 16), np.int64)}
    reference = kbz.BertBackbone.from_preset(str(_hf_with(tmp_path / "plain", lambda state: None)))
    backbone = kbz.BertBackbone.from_preset(str(_hf_with(tmp_path / "buffers", lambda state: state.update(buffers))))
    for got, want in zip(backbone.weights, reference.weights):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("value", [np.array([1, 2, 3, 4, 5, 6, 7, 8], np.int64), np.ones(8, np.bool_)],
                         ids=["int64", "bool"])
def test_hf_weight_that_is_no_float_is_refused(tmp_path, value):
    # It was cast to float32 silently.
    directory = _hf_with(tmp_path, lambda state: state.update({"bert.pooler.dense.bias": value}))
    _refused(kbz.CheckpointError, directory / "model.safetensors",
             f"holds 'bert.pooler.dense.bias' as {value.dtype} values; BERT's weights are floats",
             read=lambda _: kbz.BertBackbone.from_preset(str(directory)))


def _without(prefix):
    return lambda state: [state.pop(key) for key in [k for k in state if k.startswith(prefix)]]


@pytest.mark.parametrize("absent, missing_head", [("cls.seq_relationship.", "next-sentence head weights "
                                                   "(cls/seq_relationship/*)"),
                                                  ("cls.predictions.", "masked-LM head weights (cls/predictions/*)")],
                         ids=["no-nsp", "no-mlm"])
def test_checkpoint_with_one_pretraining_head_loads_it_and_names_the_other(tmp_path, absent, missing_head):
    # The head present was dropped, with a warning that there were no head weights at all.
    directory = _hf_with(tmp_path, _without(absent))
    state = load_safetensors(str(directory / "model.safetensors"))
    with pytest.warns(UserWarning) as caught:
        pretrainer = kbz.BertPretrainer.from_preset(str(directory))
    assert [str(w.message) for w in caught] == [
        f"{directory} has no {missing_head}: that head is freshly initialised; the other head is loaded."]
    if "cls.predictions.bias" in state:
        np.testing.assert_array_equal(pretrainer.masked_lm_head._bias.numpy(), state["cls.predictions.bias"])
    else:
        np.testing.assert_array_equal(pretrainer.next_sentence_head.kernel.numpy(),
                                      state["cls.seq_relationship.weight"].T)
    from keras_bert_zoo.presets.loader import read_checkpoint_dir

    # A converted preset (a download's cache) would load a fresh head as trained, silently, every time after:
    # it keeps the backbone alone, and says so.
    with pytest.warns(UserWarning, match="the preset made from it keeps the backbone alone"):
        kbz.convert_checkpoint(read_checkpoint_dir(str(directory)), str(tmp_path / "converted"))
    assert not (tmp_path / "converted" / "task.weights.h5").exists()
    with pytest.warns(UserWarning, match="freshly initialised"):
        kbz.BertPretrainer.from_preset(str(tmp_path / "converted"))


# --- Google TF checkpoints --------------------------------------------------


def _crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def _masked_crc(data):
    crc = _crc32c(data)
    return ((((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF).to_bytes(4, "little")


def _rewrite_index(path, old, new):
    """Replace bytes in the first block of a TF .index table and re-seal it.

    The block ends with a 0 type byte (uncompressed) and the masked CRC32C of
    block + type, which TF verifies: find that trailer, then recompute it.
    """
    data = bytearray(path.read_bytes())
    start = data.index(old)
    end = next(n for n in range(len(data) - 4) if data[n] == 0 and _masked_crc(data[: n + 1]) == data[n + 1 : n + 5])
    assert len(old) == len(new) and start + len(new) <= end
    data[start : start + len(old)] = new
    data[end + 1 : end + 5] = _masked_crc(data[: end + 1])
    path.write_bytes(bytes(data))


def _varint(value):
    value &= (1 << 64) - 1  # an int64, as protobuf writes it
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _dim(size):
    """One `dim { size: ... }` of a TensorShapeProto (an empty message means size 0)."""
    body = b"\x08" + _varint(size) if size else b""
    return b"\x12" + bytes([len(body)]) + body


def _save_tf(directory, **tensors):
    """A TF checkpoint `directory/ckpt/bert_model.ckpt` of `{name: tensor}` (names use '.' for '/')."""
    import tensorflow as tf

    prefix = directory / "ckpt" / "bert_model.ckpt"
    names = [name.replace(".", "/") for name in tensors]
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(t) for t in tensors.values()])
    return prefix


def _small_and_big():
    return {"bert.small": np.array([1.0, 2.0, 3.0], np.float32), "bert.big": np.ones([128] * 3, np.uint8)}


def _rank_254():
    """TF's largest rank: numpy cannot hold it, but its index entry has room to rewrite."""
    import tensorflow as tf

    return {"bert.ones": tf.ones([1] * 254, tf.uint8)}


@pytest.fixture
def small_tf_checkpoint(tmp_path):
    """'bert/small' [3] float32 at bytes 0..12 and 'bert/big' [128, 128, 128] uint8 (2 MiB) after it."""
    return _save_tf(tmp_path, **_small_and_big())


def _read_tf(prefix):
    from keras_bert_zoo.presets.converters.google_checkpoint import _read_tf_variables

    return _read_tf_variables(str(prefix))


def test_small_tf_checkpoint_reads_its_values(small_tf_checkpoint):
    variables = _read_tf(small_tf_checkpoint)
    np.testing.assert_array_equal(variables["bert/small"], [1.0, 2.0, 3.0])
    assert variables["bert/big"].shape == (128, 128, 128) and variables["bert/big"].min() == 1


# Each rewrite keeps the entry's length, so only the block checksum needs resealing.
BIG, ONES = _dim(128) * 3, _dim(1) * 254
INDEX_REWRITES = {
    # Claims 4 TiB that TF would allocate before finding the entry stores 2 MiB.
    "terabytes": (_small_and_big, BIG, _dim(16383) * 3,
                  "has variable 'bert/big' (shape [16383, 16383, 16383], uint8) needing "
                  "4397241253887 bytes, but it stores only 2097152"),
    # Each of these aborted the interpreter inside tf.train.load_checkpoint.
    "negative-dim": (_small_and_big, BIG, _dim(-1) + _dim(0), "has variable 'bert/big' with shape [-1, 0]"),
    "too-many-dims": (_rank_254, ONES, _dim(0) * 508, "has variable 'bert/ones' with shape [0, 0, 0,"),
    "int64-overflow": (_rank_254, ONES[: 4 * 10], _dim(1 << 62) * 3 + _dim(0) * 2,
                       f"has variable 'bert/ones' with shape [{1 << 62}, {1 << 62}, {1 << 62}, 0, 0, 1,"),
    # `dtype: 4` (uint8) then the shape's tag and length, as 'bert/big' starts; 99 is no DataType.
    "unknown-dtype": (_small_and_big, bytes.fromhex("0804120f"), bytes.fromhex("0863120f"),
                      "has variable 'bert/big' with unknown dtype 99"),
}


@pytest.mark.parametrize("case", INDEX_REWRITES)
def test_crafted_tf_index_is_refused_before_tf_reads_it(tmp_path, case):
    tensors, old, new, words = INDEX_REWRITES[case]
    prefix = _save_tf(tmp_path, **tensors())
    _rewrite_index(prefix.with_name("bert_model.ckpt.index"), old, new)
    _refused(kbz.CheckpointError, prefix, words, "corrupt or truncated (or crafted)", read=_read_tf)


def _footer_pointing_at(raw, offset, size, block=b""):
    """`raw` with `block` appended and its footer's index-block handle replaced (the metaindex one 0, 0)."""
    handles = _varint(0) + _varint(0) + _varint(offset) + _varint(size)
    return raw[:-48] + block + handles.ljust(40, b"\0") + raw[-8:]


# A block whose one entry claims a 50-byte key it does not have: shared 0, unshared 50, value 0; restarts [0].
OVERRUNNING_BLOCK = b"\x00\x32\x00" + (0).to_bytes(4, "little") + (1).to_bytes(4, "little")


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda raw: raw[:-1], "it does not end with a TF table footer"),
        (lambda raw: bytes(len(raw)), "it does not end with a TF table footer"),
        (lambda raw: _footer_pointing_at(raw, 1 << 40, 100), "the block at 1099511627776 of 100 bytes lies outside"),
        (lambda raw: _footer_pointing_at(raw, len(raw) - 48, len(OVERRUNNING_BLOCK), OVERRUNNING_BLOCK),
         "an entry of the block at"),
        (lambda raw: raw[:-48] + b"\xff" * 40 + raw[-8:], "a varint runs past 64 bits"),
    ],
    ids=["last-byte-cut", "zeros", "block-outside-file", "entry-past-block", "endless-varint"],
)
def test_malformed_tf_index_is_refused(small_tf_checkpoint, damage, words):
    index = small_tf_checkpoint.with_name("bert_model.ckpt.index")
    index.write_bytes(damage(index.read_bytes()))
    _refused(kbz.CheckpointError, small_tf_checkpoint, f"{index} is malformed ({words}", read=_read_tf)


def _block_body(entries):
    """The entries part of a TF table block: (key, value) pairs written with no shared key prefix."""
    return b"".join(_varint(0) + _varint(len(key)) + _varint(len(value)) + key + value for key, value in entries)


def _table(body, restarts):
    """A TF table (.index) of one data block, `body` then the restart array `restarts`, as TF's writer lays
    it out."""
    def block(body, starts):
        return body + b"".join(s.to_bytes(4, "little") for s in starts) + len(starts).to_bytes(4, "little")

    def sealed(raw):  # type byte 0 (uncompressed) and the masked CRC32C TF verifies
        return raw + b"\0" + _masked_crc(raw + b"\0")

    data = block(body, restarts)
    meta = block(b"", [0])
    index = block(_block_body([(b"\xff", _varint(0) + _varint(len(data)))]), [0])
    table = sealed(data) + sealed(meta) + sealed(index)
    offsets = (len(sealed(data)), len(meta), len(sealed(data)) + len(sealed(meta)), len(index))
    return table + b"".join(_varint(n) for n in offsets).ljust(40, b"\0") + (0xDB4775248B80FB57).to_bytes(8, "little")


def _hiding(entries):
    """A block body of two entries, the header and 'a', whose value ends with `entries` (inside an unknown
    field of a valid BundleEntryProto), and the offset where those start."""
    hidden = _block_body(entries)
    # dtype float, shape [0], then field 15 (unknown, length-delimited) holding the hidden entries.
    value = bytes.fromhex("0801120412020800") + b"\x7a" + _varint(len(hidden)) + hidden
    body = _block_body([(b"", dict(entries)[b""]), (b"a", value)])
    return body, len(body) - len(hidden)


@pytest.mark.parametrize("restarts, words", [
    (lambda hidden: [hidden], "starts reading at {}, not at its first entry"),
    (lambda hidden: [0, hidden], "has a restart point at {}, which is not the start of an entry"),
], ids=["first-restart-inside-a-value", "later-restart-inside-a-value"])
def test_tf_index_entries_hidden_behind_a_restart_point_are_refused(small_tf_checkpoint, restarts, words):
    # TF starts reading a block at its restart points: one inside a value showed TF entries never checked here
    # (a negative dimension, which aborted the interpreter).
    from tensorflow.core.protobuf import tensor_bundle_pb2

    from keras_bert_zoo.presets.converters.tf_checkpoint_index import _table_entries
    from keras_bert_zoo.presets.converters.tf_checkpoint_index import check_checkpoint_index

    index = small_tf_checkpoint.with_name("bert_model.ckpt.index")
    entries = list(_table_entries(str(index)))
    index.write_bytes(_table(_block_body(entries), [0]))  # the same entries written anew: still valid
    assert sorted(_read_tf(small_tf_checkpoint)) == ["bert/big", "bert/small"]
    crafted = []
    for key, value in entries:
        if key == b"bert/big":
            entry = tensor_bundle_pb2.BundleEntryProto.FromString(value)
            entry.shape.dim[0].size = -5
            value = entry.SerializeToString()
        crafted.append((key, value))
    body, hidden = _hiding(crafted)
    index.write_bytes(_table(body, restarts(hidden)))
    _refused(kbz.CheckpointError, small_tf_checkpoint, f"{index} is malformed", words.format(hidden),
             read=lambda prefix: check_checkpoint_index(str(prefix)))


def test_tf_string_variable_is_refused_before_tf_reads_it(tmp_path):
    # TF reads a string by the lengths its shard stores, unchecked: a crafted one crashed the interpreter.
    prefix = _save_tf(tmp_path, **{"bert.small": np.ones(3, np.float32), "bert.words": np.array([b"abc"])})
    _refused(kbz.CheckpointError, prefix, "has variable 'bert/words' of dtype string, not one of the plain numbers",
             read=_read_tf)


# uint8 (4) becomes uint8_ref (104 = 0x68), whose 1-byte values fit the 2 MiB 'bert/big' stores: TF aborted the
# interpreter (tensor.cc "Unexpected type: 104") reading it, so only the check is run here, never TF's reader.
# float8_e5m2 (24) TF reads, but no BERT checkpoint holds it.
@pytest.mark.parametrize("code, name", [(0x68, "uint8_ref"), (24, "float8_e5m2")])
def test_tf_variable_of_no_plain_number_dtype_is_refused_by_the_index_check(small_tf_checkpoint, code, name):
    from keras_bert_zoo.presets.converters.tf_checkpoint_index import check_checkpoint_index

    _rewrite_index(small_tf_checkpoint.with_name("bert_model.ckpt.index"), bytes.fromhex("0804120f"),
                   bytes([0x08, code]) + bytes.fromhex("120f"))
    _refused(kbz.CheckpointError, small_tf_checkpoint, f"has variable 'bert/big' of dtype {name}, not one of the "
             "plain numbers a BERT checkpoint holds (float16, bfloat16, float32,", "corrupt or truncated (or crafted)",
             read=lambda prefix: check_checkpoint_index(str(prefix)))


def test_truncated_tf_data_shard_is_refused(small_tf_checkpoint):
    data = small_tf_checkpoint.with_name("bert_model.ckpt.data-00000-of-00001")
    data.write_bytes(data.read_bytes()[:1000])
    _refused(kbz.CheckpointError, small_tf_checkpoint, "has variable 'bert/big' at bytes 12..2097164 of",
             f"{data}, which holds only 1000", "corrupt or truncated", read=_read_tf)


def test_missing_tf_data_shard_is_refused(small_tf_checkpoint):
    data = small_tf_checkpoint.with_name("bert_model.ckpt.data-00000-of-00001")
    data.unlink()
    _refused(kbz.CheckpointError, small_tf_checkpoint, f"{data}, which holds only 0", read=_read_tf)


# --- Downloaded archives ----------------------------------------------------


def _zip(path, *entries, compression=zipfile.ZIP_STORED):
    """`entries`: (name, content) or a ready ZipInfo with its content."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names we write on purpose
        with zipfile.ZipFile(path, "w", compression) as z:
            for name, content in entries:
                z.writestr(name, content)


def _zip_symlink(path):
    info = zipfile.ZipInfo("vocab.txt")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    _zip(path, (info, "/etc/passwd"))


def _tar(path, *members):
    """`members`: (name, content) for files, or a TarInfo of a link."""
    with tarfile.open(path, "w:gz") as t:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                t.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                t.addfile(info, io.BytesIO(member[1]))


def _tar_link(kind, name, target):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


ARCHIVES = {
    "zip-traversal": (lambda p: _zip(p, ("ckpt/../../outside.txt", "x")), "unsafe path 'ckpt/../../outside.txt'"),
    "zip-absolute": (lambda p: _zip(p, ("/tmp/absolute.txt", "x")), "unsafe path '/tmp/absolute.txt'"),
    "zip-symlink": (_zip_symlink, "a link or device 'vocab.txt'"),
    "zip-duplicate": (lambda p: _zip(p, ("ckpt/vocab.txt", "a"), ("ckpt/vocab.txt", "b")),
                      "contains 'ckpt/vocab.txt' twice"),
    "zip-duplicate-spelled-apart": (lambda p: _zip(p, ("ckpt/vocab.txt", "a"), ("ckpt//./vocab.txt", "b")),
                                    "contains 'ckpt//./vocab.txt' twice"),
    "tar-traversal": (lambda p: _tar(p, ("../outside.txt", b"x")), "unsafe path '../outside.txt'"),
    "tar-absolute": (lambda p: _tar(p, ("/tmp/absolute.txt", b"x")), "unsafe path '/tmp/absolute.txt'"),
    "tar-symlink": (lambda p: _tar(p, _tar_link(tarfile.SYMTYPE, "vocab.txt", "/etc/passwd")),
                    "a link or device 'vocab.txt'"),
    "tar-hardlink": (lambda p: _tar(p, ("a", b"x"), _tar_link(tarfile.LNKTYPE, "vocab.txt", "a")),
                     "a link or device 'vocab.txt'"),
    "tar-duplicate": (lambda p: _tar(p, ("vocab.txt", b"a"), ("./vocab.txt", b"b")), "contains './vocab.txt' twice"),
}


@pytest.mark.parametrize("case", ARCHIVES)
def test_unsafe_archive_is_refused_and_leaves_nothing(tmp_path, case):
    from keras_bert_zoo.presets.download import extract_archive

    build, words = ARCHIVES[case]
    archive = tmp_path / "download" / "archive"
    archive.parent.mkdir()
    build(archive)
    _refused(kbz.CheckpointError, archive, words, read=lambda a: extract_archive(a, str(archive.parent / "out")))
    assert os.listdir(archive.parent) == ["archive"]
    assert not (tmp_path / "outside.txt").exists()


def test_archive_with_too_many_entries_is_refused(tmp_path, monkeypatch):
    from keras_bert_zoo.presets import download

    monkeypatch.setattr(download, "_MAX_MEMBERS", 5)
    archive = tmp_path / "archive.zip"
    _zip(archive, *[(f"f{i}", "x") for i in range(6)])
    _refused(kbz.CheckpointError, archive, "holds more than 5 entries",
             read=lambda a: download.extract_archive(a, str(tmp_path / "out")))
    assert os.listdir(tmp_path) == ["archive.zip"]


@pytest.mark.parametrize("build", [lambda p, data: _zip(p, ("zeros", data), compression=zipfile.ZIP_DEFLATED),
                                   lambda p, data: _tar(p, ("zeros", data))], ids=["zip", "tar.gz"])
def test_archive_bomb_is_refused_before_inflating(tmp_path, monkeypatch, build):
    from keras_bert_zoo.presets import download

    monkeypatch.setattr(download, "_SMALL_ARCHIVE_BYTES", 0)  # judge this small archive by its ratio alone
    archive = tmp_path / "archive"
    build(archive, bytes(1 << 20))  # 1 MiB of zeros compress about 1000x
    budget = 8 * os.path.getsize(archive)
    _refused(kbz.CheckpointError, archive, f"inflates to more than {budget} bytes, over 8x its size",
             read=lambda a: download.extract_archive(a, str(tmp_path / "out")))
    assert os.listdir(tmp_path) == ["archive"]


def _tar_with_bad_second_header(path):
    """An uncompressed tar of two members whose second header's checksum is wrong: tarfile stops there as if
    the archive ended."""
    _tar(path, ("ckpt/bert_config.json", b"{}"), ("ckpt/vocab.txt", b"[PAD]"))
    raw = bytearray(gzip.decompress(path.read_bytes()))
    raw[1024 + 148] ^= 0x01  # the second header's checksum field
    path.write_bytes(bytes(raw))


def _gzip_with_wrong_crc(path):
    _tar(path, ("ckpt/vocab.txt", b"[PAD]"))
    raw = bytearray(path.read_bytes())
    raw[-8] ^= 0xFF  # the gzip trailer's CRC32 of the whole stream
    path.write_bytes(bytes(raw))


def _zip_patched(path, offset, value):
    _zip(path, ("ckpt/vocab.txt", "[PAD]\n"))
    _patch_zip_directory(path, "ckpt/vocab.txt", offset, value)


def _zip_with_corrupt_member(path):
    _zip(path, ("ckpt/vocab.txt", "[PAD]\n" * 100), compression=zipfile.ZIP_DEFLATED)
    _corrupt_deflate(path, "ckpt/vocab.txt")


@pytest.mark.parametrize("build, words", [
    # Extracted in part, it was reported as a checkpoint missing its vocab.txt.
    (_tar_with_bad_second_header, "is a corrupt archive: a member's header at byte 1024 of its tar stream"),
    (_gzip_with_wrong_crc, "is a corrupt or truncated archive (CRC check failed"),
    # zlib.error, RuntimeError and NotImplementedError escaped.
    (_zip_with_corrupt_member, "is a corrupt or truncated archive (Error -3 while decompressing data"),
    (lambda path: _zip_patched(path, 8, b"\x01"), "its member ckpt/vocab.txt is encrypted; no checkpoint is"),
    (lambda path: _zip_patched(path, 10, (98).to_bytes(2, "little")),
     "its member ckpt/vocab.txt uses zip compression method 98, which cannot be read"),
], ids=["tar-bad-header", "gzip-crc", "zip-deflate", "zip-encrypted", "zip-unknown-method"])
def test_corrupt_archive_is_refused_whole_and_leaves_nothing(tmp_path, build, words):
    from keras_bert_zoo.presets.download import extract_archive

    archive = tmp_path / "archive"
    build(archive)
    _refused(kbz.CheckpointError, archive, words, read=lambda a: extract_archive(a, str(tmp_path / "out")))
    assert os.listdir(tmp_path) == ["archive"]


@pytest.mark.parametrize("build", [lambda p: _zip(p, ("ckpt/", ""), ("ckpt/vocab.txt", "[PAD]")),
                                   lambda p: _tar(p, ("./ckpt/vocab.txt", b"[PAD]"))], ids=["zip", "tar.gz"])
def test_safe_archive_extracts_into_place(tmp_path, build):
    from keras_bert_zoo.presets.download import extract_archive

    build(tmp_path / "archive")
    extract_archive(str(tmp_path / "archive"), str(tmp_path / "out"))
    assert (tmp_path / "out" / "ckpt" / "vocab.txt").read_text() == "[PAD]"
    assert sorted(os.listdir(tmp_path)) == ["archive", "out"]


# --- Our own preset: model.weights.h5 ---------------------------------------


@pytest.fixture(scope="module")
def tiny_preset(tmp_path_factory, tiny_checkpoint):
    """The tiny shared checkpoint converted once into a saved preset."""
    from keras_bert_zoo.presets.loader import read_checkpoint_dir

    target = tmp_path_factory.mktemp("preset") / "tiny"
    kbz.convert_checkpoint(read_checkpoint_dir(tiny_checkpoint), str(target))
    return target


def _empty_h5(path):
    import h5py

    with h5py.File(path, "w"):
        pass


def _replace_token_embedding(path, **dataset):
    import h5py

    name = "layers/bert_embedding/token_and_position_embedding/token_embedding/vars/0"  # [15, 4] float32
    with h5py.File(path, "r+") as f:
        del f[name]
        f.create_dataset(name, **dataset)


CORRUPT = "Cannot read the weights file"
H5_DAMAGE = {  # damage: (how, the words naming what is wrong)
    "truncated-half": (lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]), CORRUPT),
    "truncated-to-signature": (lambda path: path.write_bytes(path.read_bytes()[:8]), CORRUPT),
    "empty-file": (lambda path: path.write_bytes(b""), CORRUPT),
    "garbage": (lambda path: path.write_bytes(np.random.default_rng(0).bytes(4096)), CORRUPT),
    "signature-then-garbage": (lambda path: path.write_bytes(path.read_bytes()[:8] + bytes(4096)), CORRUPT),
    "valid-h5-without-weights": (_empty_h5, "holds weights for 0 encoder layers, but config.json says num_layers=2"),
    "wrong-shape": (lambda path: _replace_token_embedding(path, data=np.zeros((16, 4), np.float32)),
                    "token_embedding/vars/0' of shape (16, 4), but config.json says vocabulary_size=15"),
    "string-dtype": (lambda path: _replace_token_embedding(path, data=np.full((15, 4), b"abcd")),
                     "token_embedding/vars/0' holds |S4 values, not floating-point weights"),
    # Keras' bfloat16 is opaque 2-byte values marked dtype=bfloat16; unmarked, they are not numbers.
    # h5py.Empty (no shape) raised a TypeError.
    "empty-dataset": (lambda path: _replace_token_embedding(path, data=h5py.Empty("f4")),
                      "token_embedding/vars/0' is an empty dataset, with no shape"),
    # Keras cast integer arrays into the float weights silently.
    "int-dtype": (lambda path: _replace_token_embedding(path, data=np.zeros((15, 4), np.int32)),
                  "token_embedding/vars/0' holds int32 values, not floating-point weights"),
    "opaque-dtype": (lambda path: _replace_token_embedding(path, data=np.zeros((15, 4), "V2")),
                     "token_embedding/vars/0' holds |V2 values, not floating-point weights"),
    # A 4 TiB dataset that stores nothing: must be refused, not allocated.
    "shape-bomb": (lambda path: _replace_token_embedding(path, shape=(1 << 20, 1 << 20), dtype=np.float32,
                                                         chunks=(256, 256)),
                   "token_embedding/vars/0' claims 4398046511104 bytes but the file has only"),
}


@pytest.mark.filterwarnings("ignore:Skipping nested container")  # Keras, on files missing our groups
@pytest.mark.parametrize("damage", H5_DAMAGE)
def test_damaged_saved_weights_are_a_checkpoint_error(tmp_path, tiny_preset, damage):
    preset = tmp_path / "tiny"
    shutil.copytree(tiny_preset, preset)
    damage, words = H5_DAMAGE[damage]
    damage(preset / "model.weights.h5")
    _refused(kbz.CheckpointError, preset / "model.weights.h5", words,
             read=lambda _: kbz.BertBackbone.from_preset(str(preset)))


@pytest.mark.parametrize("removed, key, value, words", [
    ("bert.embeddings.position_embeddings.weight", "max_position_embeddings", 2_000_000_000,
     "has no 'bert/embeddings/position_embeddings', which its config says max_position_embeddings=2000000000 needs"),
    ("bert.encoder.", "num_hidden_layers", 3000, "holds weights for 0 encoder layers, but"),
])
def test_a_config_size_whose_weight_is_missing_is_refused_before_building(tmp_path, monkeypatch, removed, key,
                                                                           value, words):
    """The size check compared only the weights present: without the position embeddings (or any encoder
    layer) a config's 2e9 positions (3000 layers) were built first, out of memory (minutes, RecursionError)."""
    directory = _hf_with(tmp_path, lambda state: [state.pop(k) for k in list(state) if k.startswith(removed)])
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, key: value}))
    built = []
    monkeypatch.setattr(kbz.BertBackbone, "__init__", lambda self, *a, **k: built.append(k) or 1 / 0)
    with pytest.raises(kbz.CheckpointError, match=re.escape(words)):
        kbz.BertBackbone.from_preset(str(directory))
    assert built == []


def test_a_google_weight_that_is_no_float_is_refused(tiny_checkpoint, tmp_path):
    # An int32 pooler bias in a TF checkpoint was cast to floats silently ([7, 8, 9, 10] -> [7.0, ...]).
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(tiny_checkpoint, "bert_model.ckpt"))
    tensors = {name.replace("/", "."): reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    bias = tensors["bert.pooler.dense.bias"]
    tensors["bert.pooler.dense.bias"] = np.arange(7, 7 + bias.size, dtype=np.int32).reshape(bias.shape)
    prefix = _save_tf(tmp_path, **tensors)
    for name in ("bert_config.json", "vocab.txt"):
        shutil.copy(os.path.join(tiny_checkpoint, name), prefix.parent / name)
    with pytest.raises(kbz.CheckpointError, match="Variable 'bert/pooler/dense/bias' in .* holds int32 values; "
                                                  "BERT's weights are floats"):
        kbz.BertBackbone.from_preset(str(prefix.parent))


def test_a_bfloat16_pytorch_model_bin_loads(tmp_path):
    # transformers saves bfloat16 models' pytorch_model.bin in bfloat16: the reader raised a TypeError (the
    # bfloat16 scalar type has no itemsize), reported as a corrupt file.
    import ml_dtypes

    weight = WEIGHT.astype(ml_dtypes.bfloat16)
    tensor = _Tensor(_Storage("0", "BFloat16Storage", weight.size), 0, weight.shape, (4, 1))
    path = _write_torch_bin(tmp_path / "pytorch_model.bin", {"dense.weight": tensor}, {"0": weight.tobytes()})
    state = load_torch_state_dict(path)
    assert state["dense.weight"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(state["dense.weight"].astype(np.float32), WEIGHT)  # 0..11 are exact in bfloat16


def _google_without_pooler(tiny_checkpoint, tmp_path):
    """The tiny Google checkpoint saved without its pooler (nor the next-sentence head, which reads it)."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(tiny_checkpoint, "bert_model.ckpt"))
    tensors = {name.replace("/", "."): reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
               if not name.startswith(("bert/pooler/", "cls/seq_relationship/"))}
    prefix = _save_tf(tmp_path, **tensors)
    for name in ("bert_config.json", "vocab.txt"):
        shutil.copy(os.path.join(tiny_checkpoint, name), prefix.parent / name)
    return str(prefix.parent)


def test_the_fresh_pooler_warning_says_why_for_the_checkpoints_format(tiny_checkpoint, tmp_path):
    """A TF checkpoint without a pooler was told "as HF saves BertForMaskedLM (run_mlm.py ...)": HF saved no
    bert_model.ckpt. Read in place or converted, it is told why for its format."""
    from keras_bert_zoo.presets.converters.checkpoint_weights import assign_weights
    from keras_bert_zoo.presets.converters.google_checkpoint import read_google_checkpoint

    directory = _google_without_pooler(tiny_checkpoint, tmp_path)
    google_words = r"has no pooler weights \(bert/pooler/dense/\*\), which google-research/bert's modeling.py builds"
    with pytest.warns(UserWarning, match=google_words):
        kbz.BertBackbone.from_preset(directory)
    checkpoint = read_google_checkpoint(directory)
    kbz.convert_checkpoint(checkpoint, str(tmp_path / "converted"))
    with pytest.warns(UserWarning, match=rf"was converted from {re.escape(directory)}, which {google_words}"):
        kbz.BertBackbone.from_preset(str(tmp_path / "converted"))
    weights = checkpoint.weights()

    def warning(checkpoint_format):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assign_weights(kbz.BertBackbone(**checkpoint.config), weights, source=directory,
                           checkpoint_format=checkpoint_format)
        return [str(w.message) for w in caught if "no pooler weights" in str(w.message)]

    [google] = warning("google")
    assert google.startswith(f"{directory} has no pooler weights (bert/pooler/dense/*), which google-research/bert's "
                             "modeling.py builds and saves for every model: this TF checkpoint was written by other "
                             "code (such as HF's convert_bert_pytorch_checkpoint_to_original_tf.py from a "
                             "BertForMaskedLM, token-classification or question-answering model): the pooler is "
                             "freshly initialised.")
    assert "HF saves" not in google
    [hf] = warning("hf")
    assert hf.startswith(f"{directory} has no pooler weights (bert.pooler.dense.*), as HF saves BertForMaskedLM "
                         "(run_mlm.py's domain pretraining) and fine-tuned token-classification or question-answering "
                         "models: the pooler is freshly initialised.")
    with pytest.raises(ValueError, match="checkpoint_format must be 'hf', 'google' or None; got 'tf'"):
        warning("tf")
