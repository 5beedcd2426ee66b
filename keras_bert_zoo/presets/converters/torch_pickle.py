"""Read a PyTorch `pytorch_model.bin` state dict without torch and without
executing pickled code.

`torch.save` writes a zip archive: `<root>/data.pkl` describes the tensors
and `<root>/data/<key>` holds each storage's raw little-endian bytes. The
pickle is replayed with an unpickler that only knows the handful of
functions a plain state dict uses; any other global is refused.
"""

import collections
import pickle
import zipfile

import numpy as np

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


class _StorageType:
    def __init__(self, name):
        self.dtype = _STORAGE_DTYPES[name]


def _rebuild_tensor(storage, offset, size, stride, *unused):
    array, dtype = storage
    itemsize = array.dtype.itemsize
    if not size:
        return array[offset : offset + 1].reshape(())
    return np.lib.stride_tricks.as_strided(
        array[offset:], shape=tuple(size), strides=tuple(s * itemsize for s in stride)
    ).copy()


def _rebuild_parameter(tensor, *unused):
    return tensor


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
}


def _to_numpy_dtype(dtype):
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return dtype


class _SafeUnpickler(pickle.Unpickler):
    def __init__(self, file, archive, root, path):
        super().__init__(file)
        self._archive = archive
        self._root = root
        self._path = path
        self._storages = {}

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise UnsafeCheckpointError(
            f"{self._path} refers to '{module}.{name}', which is not part of a plain "
            "tensor state dict. It is refused because unpickling it could run code. "
            "Convert the checkpoint to model.safetensors with a tool you trust."
        )

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise UnsafeCheckpointError(f"{self._path} has an unknown persistent id {pid!r}.")
        storage_type, key = pid[1], str(pid[2])
        if not isinstance(storage_type, _StorageType):
            raise UnsafeCheckpointError(f"{self._path}: unsupported storage type {storage_type!r}.")
        if key not in self._storages:
            dtype = _to_numpy_dtype(storage_type.dtype)
            raw = self._archive.read(f"{self._root}/data/{key}")
            self._storages[key] = (np.frombuffer(raw, dtype=dtype), dtype)
        return self._storages[key]


def load_torch_state_dict(path):
    """Return `{name: numpy array}` from a zip-format `pytorch_model.bin`.

    Raises:
        UnsafeCheckpointError: the pickle references anything beyond plain
            tensors.
        CheckpointError: the file is not a readable zip-format checkpoint.
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
            raise CheckpointError(f"{path} does not look like a PyTorch checkpoint (no data.pkl).")
        root = pickles[0][: -len("/data.pkl")]
        try:
            with archive.open(pickles[0]) as f:
                state = _SafeUnpickler(f, archive, root, path).load()
        except UnsafeCheckpointError:
            raise
        except (pickle.UnpicklingError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as e:
            raise CheckpointError(f"{path} is corrupt or truncated ({type(e).__name__}: {e}).") from e
    if not isinstance(state, dict) or not all(isinstance(v, np.ndarray) for v in state.values()):
        raise UnsafeCheckpointError(f"{path} is not a state dict of tensors.")
    return dict(state)
