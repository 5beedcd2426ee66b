"""Read a PyTorch `pytorch_model.bin` state dict without torch and without
executing pickled code.

`torch.save` has written two formats. Since torch 1.6 it writes a zip archive:
`<root>/data.pkl` describes the tensors and `<root>/data/<key>` holds each
storage's raw little-endian bytes. Before, it wrote the legacy format, which
many checkpoints uploaded in 2019-2020 still are: a run of pickles (a magic
number, a protocol version, the writer's byte order, the tensors'
description, the list of storage keys) followed, for each listed key, by the
storage's element count (8 bytes, little-endian) and its raw bytes. Both
descriptions are replayed with one unpickler that only knows the handful of
functions a plain state dict uses; any other global is refused.

The file is untrusted: every pickle is walked opcode by opcode within a size
limit before it is unpickled, every storage is checked against the bytes the
file really holds before it is read, and every tensor view against its
storage before numpy touches it (`as_strided` reads whatever memory follows,
or crashes).
"""

import collections
import io
import math
import os
import pickle
import pickletools
import zipfile
import zlib

import numpy as np

from keras_bert_zoo.presets.download import check_zip_directory
from keras_bert_zoo.presets.download import check_zip_member
from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.presets.errors import UnsafeCheckpointError
from keras_bert_zoo.utils.text_files import untrusted_repr

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
# A BERT weight has at most 4 dimensions; numpy makes arrays of at most 32 (numpy 1) or 64 (numpy 2).
_MAX_DIMS = 32
# Tensors are views of their storages, and views may overlap: torch's state_dict() gives a tied weight (the
# decoder's and the word embeddings') as two tensors of one storage, so a real checkpoint's tensors hold at most
# twice its storages' bytes. Many views of one storage would make a kilobyte file fill gigabytes when copied out.
_MAX_VIEW_EXPANSION = 4
# The legacy format's first two pickles (torch/serialization.py).
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001
_CRAFTED = "The file is corrupt or crafted; it is refused."
_TRUNCATED = "The file is truncated or corrupt: download it again."


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
    """One storage: `count` values of `dtype`, whose flat `array` is set once its bytes are read."""

    def __init__(self, key, dtype, count, path):
        self.key, self.dtype, self.count, self.path = key, dtype, count, path
        self.array = None


class _Tensor(_Unbuildable):
    """A checked view of a storage, copied out by `to_numpy` once every storage is read (the legacy format
    stores the bytes after the pickle that rebuilds the tensors)."""

    def __init__(self, storage, offset, size, stride, path):
        self.storage, self.offset, self.size, self.stride, self.path = storage, offset, size, stride, path

    def to_numpy(self):
        array = self.storage.array
        if 0 in self.size:
            return np.zeros(self.size, array.dtype)
        return np.lib.stride_tricks.as_strided(
            array[self.offset :], shape=self.size, strides=tuple(s * array.itemsize for s in self.stride)
        ).copy()


def _rebuild_parameter(tensor, *unused):
    return tensor


def _to_numpy_dtype(dtype):
    if dtype == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)  # the dtype, not the scalar type: the readers ask its itemsize
    return np.dtype(dtype)


def _check_int(where, what, value, container=None):
    """`value` (an offset, or one entry of a size or stride) must be a plain non-negative int."""
    if type(value) is not int:  # bools and floats are not indices
        problem = "is not an integer"
    elif value < 0:
        problem = "is negative"
    elif value >= _MAX_INDEX:
        problem = "is too large"
    else:
        return
    shown = f"{untrusted_repr(container)}: " if container is not None else ""
    raise CheckpointError(f"{where} is invalid: {what} {shown}{untrusted_repr(value)} {problem}. {_CRAFTED}")


def _check_view(where, storage, offset, size, stride):
    """The view must only touch elements of its storage, and never hold more
    elements than the storage (a zero stride could otherwise make a tiny file
    expand into gigabytes)."""
    if not isinstance(size, tuple) or not isinstance(stride, tuple):
        raise CheckpointError(f"{where} is invalid: size {untrusted_repr(size)} and stride {untrusted_repr(stride)} "
                              f"are not tuples. {_CRAFTED}")
    if len(size) != len(stride):
        raise CheckpointError(f"{where} is invalid: size {untrusted_repr(size)} and stride {untrusted_repr(stride)} "
                              f"have different lengths. {_CRAFTED}")
    if len(size) > _MAX_DIMS:
        raise CheckpointError(f"{where} is invalid: it has {len(size)} dimensions, more than the {_MAX_DIMS} an "
                              f"array can have. {_CRAFTED}")
    _check_int(where, "offset", offset)
    for what, values in (("size", size), ("stride", stride)):
        for value in values:
            _check_int(where, what, value, values)
    available = storage.count
    if 0 in size:
        # No elements, but numpy still multiplies the other dimensions (in int64) to make the empty array.
        if math.prod(n for n in size if n) >= _MAX_INDEX:
            raise CheckpointError(f"{where} is invalid: size {untrusted_repr(size)} is too large, though empty. "
                                  f"{_CRAFTED}")
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


class _Storages:
    """The storages a checkpoint's pickle names, one per key: a key named twice must be named alike."""

    def __init__(self, path):
        self.path, self.by_key = path, {}

    def get(self, key, dtype, count):
        """Return the storage `key`, made and checked (`_declared`) the first time the pickle names it.

        Args:
            key: the storage's key in the file.
            dtype: the numpy dtype of its values.
            count: how many values it declares, a non-negative int.

        Raises:
            CheckpointError: the key was named before with another dtype or count, or `_declared` refuses it.
        """
        storage = self.by_key.get(key)
        if storage is None:
            storage = self.by_key[key] = _Storage(key, dtype, count, self.path)
            self._declared(storage)
        elif (storage.dtype, storage.count) != (dtype, count):
            raise CheckpointError(
                f"{self.path}: storage '{key}' is named as {storage.count} {storage.dtype.name} values and as "
                f"{count} {dtype.name} values, which torch.save never writes. {_CRAFTED}"
            )
        return storage


class _ZipStorages(_Storages):
    """The zip format's storages: member `<root>/data/<key>`, read when the pickle first names it."""

    fields = 5  # ('storage', storage type, key, location, count)

    def __init__(self, path, archive, root):
        super().__init__(path)
        self._archive, self._root = archive, root
        # Each small member may inflate freely, but not all together: a thousand 1 MiB members of zeros are a
        # 1 MB file that would fill a gigabyte.
        self._file_size = os.path.getsize(path)
        self._inflated = 0

    def _declared(self, storage):
        name = f"{self._root}/data/{storage.key}"
        try:
            info = self._archive.getinfo(name)
        except KeyError:
            raise CheckpointError(
                f"{self.path} has no member '{name}' for storage '{storage.key}'. {_TRUNCATED}"
            ) from None
        _check_member(self.path, name, storage, info)
        self._inflated += info.file_size
        if self._inflated > _MAX_INFLATION * self._file_size + _SMALL_MEMBER_BYTES:
            raise CheckpointError(f"{self.path}: its storages up to '{storage.key}' inflate to {self._inflated} "
                                  f"bytes from a file of {self._file_size}, like a zip bomb. {_CRAFTED}")
        data = self._archive.read(info)
        # A member whose data ends early but matches its CRC reads short, with no error from zipfile; views
        # are checked against the declared count, so a short array would let them read past it.
        if len(data) != info.file_size:
            raise CheckpointError(f"{self.path}: storage '{storage.key}' reads as {len(data)} bytes where its zip "
                                  f"directory says {info.file_size}. {_CRAFTED}")
        storage.array = np.frombuffer(data, dtype=storage.dtype)


class _LegacyStorages(_Storages):
    """The legacy format's storages, whose bytes follow the pickles: while the pickle names them only their
    declared sizes can be checked, against the file's."""

    fields = 6  # ('storage', storage type, key, location, count, view metadata)

    def __init__(self, path, file_size):
        super().__init__(path)
        self._file_size = file_size

    def _declared(self, storage):
        if storage.count * storage.dtype.itemsize > self._file_size:
            raise CheckpointError(
                f"{self.path}: storage '{storage.key}' declares {storage.count} {storage.dtype.name} values, more "
                f"than the whole file's {self._file_size} bytes hold. {_CRAFTED}"
            )

    def read(self, file, keys):
        """Read the storages' bytes, which follow the list of their `keys`, in its order.

        Args:
            file: the checkpoint, positioned just after the list of keys.
            keys: that list, as unpickled.

        Raises:
            CheckpointError: the list does not name each storage of the pickle once, an element count
                differs from the pickle's, or the file ends before the last storage.
        """
        if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
            raise CheckpointError(f"{self.path}: its list of storage keys is {untrusted_repr(keys)}, not a list of "
                                  f"keys. {_CRAFTED}")
        repeated = sorted(key for key, n in collections.Counter(keys).items() if n > 1)
        unlisted = sorted(set(self.by_key) - set(keys))
        unused = sorted(set(keys) - set(self.by_key))
        for problem, found in (("lists storages twice", repeated), ("does not list storages the tensors use", unlisted),
                               ("lists storages no tensor uses", unused)):
            if found:
                raise CheckpointError(f"{self.path} {problem}: {', '.join(map(repr, found[:10]))}. {_CRAFTED}")
        left = self._file_size - file.tell()
        needed = sum(8 + storage.count * storage.dtype.itemsize for storage in self.by_key.values())
        if needed > left:
            raise CheckpointError(f"{self.path}: its {len(keys)} storages need {needed} bytes but {left} follow the "
                                  f"pickles. {_TRUNCATED}")
        for key in keys:
            storage = self.by_key[key]
            count = int.from_bytes(file.read(8), "little", signed=True)
            if count != storage.count:
                raise CheckpointError(f"{self.path}: storage '{key}' holds {count} elements where the pickle "
                                      f"declares {storage.count} {storage.dtype.name} values. {_CRAFTED}")
            data = file.read(count * storage.dtype.itemsize)
            if len(data) != count * storage.dtype.itemsize:  # the file shrank while it was read
                raise CheckpointError(f"{self.path} ends inside storage '{key}'. {_TRUNCATED}")
            storage.array = np.frombuffer(data, dtype=storage.dtype)


def _check_member(path, name, storage, info):
    """The member must hold exactly the declared elements, checked from the
    zip directory before a byte is inflated."""
    check_zip_member(path, info)
    key, count, dtype = storage.key, storage.count, storage.dtype
    itemsize = dtype.itemsize
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


class _CappedReader:
    """Reads at most `limit` bytes of `file` and keeps them."""

    def __init__(self, file, limit):
        self._file, self.left, self.data = file, limit, bytearray()

    def _kept(self, chunk):
        self.left -= len(chunk)
        self.data += chunk
        return chunk

    def read(self, n):
        return self._kept(self._file.read(min(n, self.left)))

    def readline(self):
        return self._kept(self._file.readline(self.left))

    def tell(self):
        return len(self.data)


def _next_pickle(file, path, what):
    """Return the bytes of the one pickle at `file`'s position, leaving `file` just after it.

    The C unpickler allocates what a length field declares before reading it (nine bytes of BINBYTES8 can ask
    for a terabyte) and grows its memo to the largest index it is given, so each pickle is first walked with
    pickletools, which reads every declared length and builds none of its objects, within _MAX_PICKLE_BYTES.

    Args:
        file: the checkpoint or its zip member.
        path: the checkpoint, named in errors.
        what: the pickle, named in errors.

    Returns:
        The pickle's bytes.

    Raises:
        CheckpointError: the pickle is cut short, malformed, too large or stores to an impossible memo index.
    """
    reader = _CappedReader(file, _MAX_PICKLE_BYTES)
    try:
        for opcode, arg, position in pickletools.genops(reader):
            # A pickle memoizes at most one object per opcode, so an index beyond its position is crafted.
            if opcode.name in ("PUT", "BINPUT", "LONG_BINPUT") and arg > position:
                break
        else:
            return bytes(reader.data)
    except ValueError as e:  # pickletools' error for a cut or malformed pickle
        if not reader.left:
            raise CheckpointError(f"{path}: {what} is over {_MAX_PICKLE_BYTES} bytes, far beyond any state dict. "
                                  f"{_CRAFTED}") from e
        raise CheckpointError(f"{path}: {what} is not a whole pickle ({e}). {_TRUNCATED}") from e
    raise CheckpointError(f"{path}: {what} stores to memo index {arg} at byte {position}. {_CRAFTED}")


class _SafeUnpickler(pickle.Unpickler):
    """Replays one pickle of a checkpoint, building nothing but plain tensors.

    Args:
        data: the pickle's bytes, from `_next_pickle`.
        path: the checkpoint, named in errors.
        storages: the `_Storages` the pickle's persistent ids name; None for a pickle that has none.
    """

    def __init__(self, data, path, storages=None):
        super().__init__(io.BytesIO(data))
        self._path = path
        self._storages = storages

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
                f"{self._path} rebuilds a tensor from {untrusted_repr(storage)}, which is not a storage. {_CRAFTED}"
            )
        _check_view(f"{self._path}: the tensor on storage '{storage.key}'", storage, offset, size, stride)
        return _Tensor(storage, offset, size, stride, self._path)

    def persistent_load(self, pid):
        storages = self._storages
        fields = storages.fields if storages is not None else None
        if not (isinstance(pid, tuple) and len(pid) == fields and pid[0] == "storage"):
            raise UnsafeCheckpointError(f"{self._path} has an unknown persistent id {untrusted_repr(pid)}.")
        storage_type, key, count = pid[1], pid[2], pid[4]
        key = key if isinstance(key, str) else untrusted_repr(key)  # torch writes str keys
        if not isinstance(storage_type, _StorageType):
            raise UnsafeCheckpointError(f"{self._path}: unsupported storage type {untrusted_repr(storage_type)}.")
        if type(count) is not int or count < 0:
            raise CheckpointError(
                f"{self._path}: storage '{key}' declares {untrusted_repr(count)} elements, which is not a count. "
                f"{_CRAFTED}"
            )
        if pid[5:] not in ((), (None,)):  # the legacy format's view metadata: torch 1.x's save writes None
            raise CheckpointError(f"{self._path}: storage '{key}' is a view into another storage "
                                  f"({untrusted_repr(pid[5])}), which is not read. Re-save the checkpoint with a "
                                  "current torch or convert it to model.safetensors.")
        return storages.get(key, _to_numpy_dtype(storage_type.dtype), count)


def _unpickle(file, path, what, storages=None):
    """Unpickle the next pickle of `file` with `_SafeUnpickler`.

    Args:
        file: the checkpoint or its zip member, positioned at the pickle.
        path: the checkpoint, named in errors.
        what: the pickle, named in errors.
        storages: as for `_SafeUnpickler`.

    Returns:
        The unpickled object.

    Raises:
        UnsafeCheckpointError: the pickle names anything beyond plain tensors.
        CheckpointError: the pickle or a storage it names is malformed, cut short or crafted.
    """
    try:
        return _SafeUnpickler(_next_pickle(file, path, what), path, storages).load()
    except CheckpointError:
        raise
    except (pickle.UnpicklingError, EOFError, AttributeError, KeyError, IndexError, TypeError, ValueError,
            zipfile.BadZipFile, zlib.error) as e:  # AttributeError: APPEND to a non-list; zlib: a corrupt member
        raise CheckpointError(f"{path} is corrupt or truncated ({type(e).__name__}: {e}).") from e


def _load_zip(path):
    """Read a zip-format checkpoint (torch >= 1.6).

    Args:
        path: the checkpoint.

    Returns:
        What its data.pkl unpickles to, tensors as `_Tensor`s.

    Raises:
        CheckpointError: see `load_torch_state_dict`.
    """
    check_zip_directory(path)  # before zipfile reads the whole directory its end declares
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        raise CheckpointError(f"{path} is a zip archive that cannot be read ({e}). {_TRUNCATED}") from e
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
        with archive.open(pickles[0]) as f:
            return _unpickle(f, path, pickles[0], _ZipStorages(path, archive, root))


def _load_legacy(file, path, start):
    """Read a legacy-format checkpoint (torch < 1.6, or `_use_new_zipfile_serialization=False`).

    Args:
        file: the checkpoint, opened at its start.
        path: the checkpoint, named in errors.
        start: its first bytes, shown when it is in neither format.

    Returns:
        What its tensors' pickle unpickles to, tensors as `_Tensor`s with their storages read.

    Raises:
        CheckpointError: see `load_torch_state_dict`.
    """
    try:
        magic = _unpickle(file, path, "its first pickle")
    except UnsafeCheckpointError:
        raise
    except CheckpointError as e:
        magic = e
    if type(magic) is not int or magic != _LEGACY_MAGIC:
        raise CheckpointError(
            f"{path} is not a PyTorch checkpoint: it is neither a zip archive (torch >= 1.6) nor in torch's legacy "
            f"format, which starts with a pickled magic number (it starts with {start[:16]!r}). Download it again, "
            "or convert it to model.safetensors."
        )
    protocol = _unpickle(file, path, "its protocol version")
    if type(protocol) is not int or protocol != _LEGACY_PROTOCOL:
        raise CheckpointError(f"{path} is in torch's legacy format with protocol version {untrusted_repr(protocol)}, "
                              f"not {_LEGACY_PROTOCOL}. {_CRAFTED}")
    sys_info = _unpickle(file, path, "its sys_info")
    if not isinstance(sys_info, dict):
        raise CheckpointError(f"{path}: its sys_info is {untrusted_repr(sys_info)}, not a dict. {_CRAFTED}")
    if sys_info.get("little_endian") is not True:
        raise CheckpointError(f"{path} was written on a big-endian machine (sys_info {untrusted_repr(sys_info)}): "
                              "its bytes are not read. Re-save it on a little-endian one or convert it to "
                              "model.safetensors.")
    storages = _LegacyStorages(path, os.fstat(file.fileno()).st_size)
    state = _unpickle(file, path, "its tensors' pickle", storages)
    storages.read(file, _unpickle(file, path, "its list of storage keys"))
    return state


def load_torch_state_dict(path):
    """Return `{name: numpy array}` from a `pytorch_model.bin` in either of torch.save's formats.

    Args:
        path: the file, untrusted.

    Returns:
        A dict from each tensor's name to a writable array of its dtype (bfloat16 as ml_dtypes').

    Raises:
        UnsafeCheckpointError: the pickle references anything beyond plain
            tensors.
        CheckpointError: the file cannot be read, is in neither format (torch's
            oldest, tar format included), is truncated, or describes tensors
            outside the bytes it holds.
    """
    try:
        with open(path, "rb") as file:
            start = file.read(512)
            file.seek(0)
            if start.startswith(b"PK\x03\x04"):  # a zip's first local header, how torch tells its formats apart
                state = _load_zip(path)
            elif start[257:262] == b"ustar":  # a tar header's magic
                raise CheckpointError(
                    f"{path} is in torch's original tar format, which is not read: load it with torch and re-save "
                    "it, or convert it to model.safetensors."
                )
            else:
                state = _load_legacy(file, path, start)
    except OSError as e:
        raise CheckpointError(f"{path} cannot be read ({e}).") from e
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, _Tensor) for k, v in state.items()):
        raise UnsafeCheckpointError(f"{path} is not a state dict of named tensors.")
    tensors = {id(tensor): tensor for tensor in state.values()}  # a tensor pickled under two names is copied once
    _check_expansion(path, tensors.values())
    arrays = {key: tensor.to_numpy() for key, tensor in tensors.items()}
    return {name: arrays[id(tensor)] for name, tensor in state.items()}


def _check_expansion(path, tensors):
    """Refuse `tensors` that together hold far more bytes than the storages they view, before any is copied."""
    storages = {id(tensor.storage): tensor.storage for tensor in tensors}.values()
    stored = sum(storage.count * storage.dtype.itemsize for storage in storages)
    viewed = sum(math.prod(tensor.size) * tensor.storage.dtype.itemsize for tensor in tensors)
    if viewed > _MAX_VIEW_EXPANSION * stored:
        raise CheckpointError(
            f"{path}: its {len(tensors)} tensors hold {viewed} bytes, more than {_MAX_VIEW_EXPANSION} times the "
            f"{stored} bytes of the storages they view (overlapping views of the same bytes), which copying them "
            f"out would fill memory with. {_CRAFTED} If the checkpoint is genuine, load it with torch, save a "
            "clone() of each tensor, or convert it to model.safetensors."
        )
