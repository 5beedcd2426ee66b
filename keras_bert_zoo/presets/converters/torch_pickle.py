"""Read a PyTorch `pytorch_model.bin` state dict without torch and without
executing pickled code.

`torch.save` writes a zip archive: `<root>/data.pkl` describes the tensors
and `<root>/data/<key>` holds each storage's raw little-endian bytes. The
pickle is replayed with an unpickler that only knows the handful of
functions a plain state dict uses; any other global is refused.

The file is untrusted: every storage is checked against the bytes its zip
member really holds before it is read, and every tensor view against its
storage before numpy touches it (`as_strided` reads whatever memory
follows, or crashes).
"""

import collections
import math
import pickle
import zipfile
import zlib

import numpy as np

from keras_bert_zoo.presets.download import check_zip_member
from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.presets.errors import UnsafeCheckpointError

_STORAGE_DTYPES = {
    "DoubleStorage": np.float64,
    "FloatStorage": np.float32,
    "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16",
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}

# A BERT state dict's data.pkl is about 10 kB; models with thousands of
# tensors stay below a few MB. Anything bigger is not a state dict.
_MAX_PICKLE_BYTES = 64 << 20
# torch.save stores storages uncompressed and float weights barely deflate,
# so a member inflating far beyond its compressed size is a zip bomb. Small
# members (e.g. a zero bias) may inflate freely up to _SMALL_MEMBER_BYTES.
_MAX_INFLATION = 32
_SMALL_MEMBER_BYTES = 1 << 20
# torch keeps sizes and strides as int64; no real dimension or stride nears
# 2**48 elements, and the bound keeps numpy's byte arithmetic from overflowing.
_MAX_INDEX = 1 << 48
_CRAFTED = "The file is corrupt or crafted; it is refused."


class _Unbuildable:
    """An object the unpickler makes, whose attributes pickle's BUILD opcode must not set (a storage type's
    dtype set to 'S0' or 'U1' would read its bytes as something else)."""

    def __setstate__(self, state):
        raise UnsafeCheckpointError(f"{self.path} sets the attributes of a {type(self).__name__[1:]} (pickle's "
                                    "BUILD), which torch.save never does. It is refused because unpickling it could "
                                    "misread the tensors.")


class _StorageType(_Unbuildable):
    def __init__(self, name, path):
        self.dtype, self.path = _STORAGE_DTYPES[name], path


class _Storage(_Unbuildable):
    """One `data/<key>` member read as a flat array."""

    def __init__(self, key, array, path):
        self.key, self.array, self.path = key, array, path


def _rebuild_parameter(tensor, *unused):
    return tensor


def _to_numpy_dtype(dtype):
    if dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)  # the dtype, not the scalar type: the readers ask its itemsize
    return np.dtype(dtype)


def _check_int(where, what, value, container=None):
    """`value` (an offset, or one entry of a size or stride) must be a plain non-negative int."""
    shown = f"{what} {container!r}: {value!r}" if container is not None else f"{what} {value!r}"
    if type(value) is not int:  # bools and floats are not indices
        raise CheckpointError(f"{where} is invalid: {shown} is not an integer. {_CRAFTED}")
    if value < 0:
        raise CheckpointError(f"{where} is invalid: {shown} is negative. {_CRAFTED}")
    if value >= _MAX_INDEX:
        raise CheckpointError(f"{where} is invalid: {shown} is too large. {_CRAFTED}")


def _check_view(where, storage, offset, size, stride):
    """The view must only touch elements of its storage, and never hold more
    elements than the storage (a zero stride could otherwise make a tiny file
    expand into gigabytes)."""
    if not isinstance(size, tuple) or not isinstance(stride, tuple):
        raise CheckpointError(f"{where} is invalid: size {size!r} and stride {stride!r} are not tuples. {_CRAFTED}")
    if len(size) != len(stride):
        raise CheckpointError(
            f"{where} is invalid: size {size!r} and stride {stride!r} have different lengths. {_CRAFTED}"
        )
    _check_int(where, "offset", offset)
    for what, values in (("size", size), ("stride", stride)):
        for value in values:
            _check_int(where, what, value, values)
    available = storage.array.size
    if 0 in size:
        if offset > available:
            raise CheckpointError(
                f"{where} is invalid: offset {offset} is past the end of its storage ({available} elements). "
                f"{_CRAFTED}"
            )
        return
    count = math.prod(size)
    if count > available:
        raise CheckpointError(f"{where} has {count} elements but its storage holds only {available}. {_CRAFTED}")
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= available:
        raise CheckpointError(f"{where} reaches element {last} but its storage holds only {available}. {_CRAFTED}")


def _check_member(path, name, key, info, count, dtype):
    """The member must hold exactly the declared elements, checked from the
    zip directory before a byte is inflated."""
    check_zip_member(path, info)
    itemsize = dtype.itemsize
    if type(count) is not int or count < 0:
        raise CheckpointError(f"{path}: storage '{key}' declares {count!r} elements, which is not a count. {_CRAFTED}")
    if info.file_size % itemsize:
        raise CheckpointError(
            f"{path}: storage '{key}' is {info.file_size} bytes, not a whole number of "
            f"{itemsize}-byte {dtype.name} values. {_CRAFTED}"
        )
    if info.file_size != count * itemsize:
        raise CheckpointError(
            f"{path}: storage '{key}' declares {count} elements but its member {name} holds "
            f"{info.file_size // itemsize}. {_CRAFTED}"
        )
    if info.file_size > max(_MAX_INFLATION * info.compress_size, _SMALL_MEMBER_BYTES):
        raise CheckpointError(
            f"{path}: storage '{key}' inflates from {info.compress_size} bytes to {info.file_size} "
            f"bytes, like a zip bomb. {_CRAFTED}"
        )


class _SafeUnpickler(pickle.Unpickler):
    def __init__(self, file, archive, root, path):
        super().__init__(file)
        self._archive = archive
        self._root = root
        self._path = path
        self._storages = {}

    def find_class(self, module, name):
        allowed = {
            ("collections", "OrderedDict"): collections.OrderedDict,
            ("torch._utils", "_rebuild_tensor_v2"): self._rebuild_tensor,
            ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        }
        if (module, name) in allowed:
            return allowed[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name, self._path)
        raise UnsafeCheckpointError(
            f"{self._path} refers to '{module}.{name}', which is not part of a plain "
            "tensor state dict. It is refused because unpickling it could run code. "
            "Convert the checkpoint to model.safetensors with a tool you trust."
        )

    def _rebuild_tensor(self, storage, offset, size, stride, *unused):
        if not isinstance(storage, _Storage):
            raise CheckpointError(
                f"{self._path} rebuilds a tensor from {storage!r}, which is not a storage. {_CRAFTED}"
            )
        _check_view(f"{self._path}: the tensor on storage '{storage.key}'", storage, offset, size, stride)
        if 0 in size:
            return np.zeros(size, storage.array.dtype)
        itemsize = storage.array.itemsize
        return np.lib.stride_tricks.as_strided(
            storage.array[offset:], shape=size, strides=tuple(s * itemsize for s in stride)
        ).copy()

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise UnsafeCheckpointError(f"{self._path} has an unknown persistent id {pid!r}.")
        storage_type, key, count = pid[1], str(pid[2]), pid[4]
        if not isinstance(storage_type, _StorageType):
            raise UnsafeCheckpointError(f"{self._path}: unsupported storage type {storage_type!r}.")
        if key not in self._storages:
            dtype = _to_numpy_dtype(storage_type.dtype)
            name = f"{self._root}/data/{key}"
            try:
                info = self._archive.getinfo(name)
            except KeyError:
                raise CheckpointError(
                    f"{self._path} has no member '{name}' for storage '{key}'. The file is "
                    "truncated or corrupt: download it again."
                ) from None
            _check_member(self._path, name, key, info, count, dtype)
            self._storages[key] = _Storage(key, np.frombuffer(self._archive.read(info), dtype=dtype), self._path)
        return self._storages[key]


def load_torch_state_dict(path):
    """Return `{name: numpy array}` from a zip-format `pytorch_model.bin`.

    Raises:
        UnsafeCheckpointError: the pickle references anything beyond plain
            tensors.
        CheckpointError: the file is not a readable zip-format checkpoint,
            or describes tensors outside the bytes it holds.
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise CheckpointError(
            f"{path} is not a zip-format PyTorch checkpoint ({e}). It is corrupt or "
            "truncated, or was written by torch < 1.6: re-save it with a current "
            "torch or convert it to model.safetensors."
        ) from e
    with archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl")]
        if len(pickles) != 1:
            found = ", ".join(pickles) if pickles else "none"
            raise CheckpointError(f"{path} does not look like a PyTorch checkpoint: it needs one <root>/data.pkl "
                                  f"and holds {len(pickles)} ({found}).")
        root = pickles[0][: -len("/data.pkl")]
        check_zip_member(path, archive.getinfo(pickles[0]))
        size = archive.getinfo(pickles[0]).file_size
        if size > _MAX_PICKLE_BYTES:
            raise CheckpointError(f"{path}: {pickles[0]} is {size} bytes, far beyond any state dict. {_CRAFTED}")
        try:
            with archive.open(pickles[0]) as f:
                state = _SafeUnpickler(f, archive, root, path).load()
        except CheckpointError:
            raise
        except (pickle.UnpicklingError, EOFError, KeyError, IndexError, TypeError, ValueError,
                zipfile.BadZipFile, zlib.error) as e:  # zlib: a corrupt deflated member
            raise CheckpointError(f"{path} is corrupt or truncated ({type(e).__name__}: {e}).") from e
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, np.ndarray) for k, v in state.items()
    ):
        raise UnsafeCheckpointError(f"{path} is not a state dict of named tensors.")
    return dict(state)
