"""Check a TF checkpoint's `.index` in Python before TensorFlow opens it.

The `.index` is a TF table (LevelDB's block format) of `BundleEntryProto`s.
TensorFlow trusts it; this reads it with bounds checks and refuses entries
that would crash or exhaust the process.
"""

import glob
import math
import os

import tensorflow as tf

from keras_bert_zoo.presets.errors import CheckpointError

# The last 8 bytes of a TF table (the .index format), little-endian.
_TABLE_MAGIC = (0xDB4775248B80FB57).to_bytes(8, "little")
_UNTRUSTED = "The checkpoint is corrupt or truncated (or crafted): download it again."
# The dtypes a checkpoint's variables may have: what TF's own savers write for weights and counters.
_PLAIN_NUMBER_DTYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64,
                        tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8, tf.uint16, tf.uint32, tf.uint64)


def _varint(data, pos):
    value = shift = 0
    while shift < 64:
        byte = data[pos]  # IndexError when the data ends mid-varint
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7
    raise ValueError("a varint runs past 64 bits")


def _table_block(data, offset, size):
    """The `(key, value)` entries of one table block: prefix-compressed keys,
    then the restart array and its length.

    TensorFlow reads a block from its restart points, not from byte 0: its
    first entry is at restart[0], and a key lookup jumps to any restart. Each
    restart must therefore be the start of an entry parsed here, with no
    shared key prefix, so that TensorFlow sees exactly the entries checked
    here (a restart pointing into a value would hide other entries there).
    """
    block = data[offset : offset + size]
    count = int.from_bytes(block[-4:], "little")
    end = size - 4 - 4 * count
    # The writer always records restart 0; without restarts TensorFlow sees an empty block. TensorBundle
    # writes its blocks uncompressed (trailer type 0): a compressed block would be read here as other bytes.
    if len(block) != size or size < 4 or end < 0 or count == 0 or data[offset + size : offset + size + 1] != b"\0":
        raise ValueError(f"the block at {offset} of {size} bytes lies outside the file or is malformed")
    restarts = [int.from_bytes(block[end + 4 * i : end + 4 * i + 4], "little") for i in range(count)]
    pos, key, starts = 0, b"", set()
    while pos < end:
        start = pos
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        length, pos = _varint(block, pos)
        if shared > len(key) or pos + unshared + length > end:
            raise ValueError(f"an entry of the block at {offset} runs past it")
        if shared == 0:
            starts.add(start)
        key = key[:shared] + block[pos : pos + unshared]
        yield key, block[pos + unshared : pos + unshared + length]
        pos += unshared + length
    if restarts[0] != 0:
        raise ValueError(f"the block at {offset} starts reading at {restarts[0]}, not at its first entry")
    bad = [r for r in restarts if r not in starts | {end}]
    if bad:
        raise ValueError(f"the block at {offset} has a restart point at {bad[0]}, which is not the start of an entry")


def _table_entries(path):
    """Every `(key, value)` of a TF table file (the .index format)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 48 or data[-8:] != _TABLE_MAGIC:
        raise ValueError("it does not end with a TF table footer")
    _, pos = _varint(data, len(data) - 48)  # skip the metaindex handle
    _, pos = _varint(data, pos)
    index_offset, pos = _varint(data, pos)
    index_size, _ = _varint(data, pos)
    for _, handle in _table_block(data, index_offset, index_size):
        offset, pos = _varint(handle, 0)
        size, _ = _varint(handle, pos)
        yield from _table_block(data, offset, size)


def _read_index(index):
    """`(num_shards, [(name, BundleEntryProto)])` from a .index file."""
    from google.protobuf.message import DecodeError
    from tensorflow.core.protobuf import tensor_bundle_pb2

    num_shards, entries = None, []
    try:
        for key, value in _table_entries(index):
            if key:
                name = key.decode("utf-8", "backslashreplace")  # slice keys are binary
                entries.append((name, tensor_bundle_pb2.BundleEntryProto.FromString(value)))
            else:  # the empty key holds the header
                num_shards = tensor_bundle_pb2.BundleHeaderProto.FromString(value).num_shards
    except (OSError, ValueError, IndexError, DecodeError) as e:
        raise CheckpointError(f"The TF checkpoint index {index} is malformed ({e}). {_UNTRUSTED}") from e
    if num_shards is None:
        raise CheckpointError(f"The TF checkpoint index {index} has no header. {_UNTRUSTED}")
    return num_shards, entries


def check_checkpoint_index(prefix):
    """TF trusts the .index: it aborts the interpreter on an impossible shape
    and allocates any shape before reading its bytes, so a crafted entry could
    crash us or ask for terabytes. Check every entry first: its shape must be
    non-negative and need no more bytes than the entry stores, and those
    bytes must lie inside its .data shard."""
    num_shards, entries = _read_index(prefix + ".index")
    total = sum(os.path.getsize(p) for p in glob.glob(glob.escape(prefix) + ".data-*"))
    for name, entry in entries:
        where = f"The TF checkpoint {prefix}.* has variable '{name}'"
        dims = [d.size for d in entry.shape.dim]
        # TF aborts on each of these: it allows 254 dimensions and multiplies them in int64.
        if len(dims) > 254 or any(d < 0 for d in dims) or math.prod(d for d in dims if d) >= 1 << 63:
            raise CheckpointError(f"{where} with shape {dims}. {_UNTRUSTED}")
        try:
            dtype = tf.dtypes.as_dtype(entry.dtype)
        except TypeError as e:
            raise CheckpointError(f"{where} with unknown dtype {entry.dtype}. {_UNTRUSTED}") from e
        # A BERT checkpoint holds plain numbers (weights, Adam slots, global_step). TF reads a string by
        # lengths stored in the shard, unchecked; a variant or resource is no value at all; and it aborts the
        # interpreter reading a reference dtype (float32_ref, enum 101), which passes is_floating.
        if dtype not in _PLAIN_NUMBER_DTYPES:
            raise CheckpointError(f"{where} of dtype {dtype.name}, not one of the plain numbers a BERT checkpoint "
                                  f"holds ({', '.join(d.name for d in _PLAIN_NUMBER_DTYPES)}). {_UNTRUSTED}")
        needed = math.prod(dims) * dtype.size
        stored = total if entry.slices else entry.size  # a partitioned variable is assembled from its slices
        if needed > stored:
            raise CheckpointError(
                f"{where} (shape {dims}, {dtype.name}) needing {needed} bytes, but it stores only {stored}. "
                f"{_UNTRUSTED}"
            )
        shard = f"{prefix}.data-{entry.shard_id:05d}-of-{num_shards:05d}"
        size = os.path.getsize(shard) if os.path.isfile(shard) else 0
        if entry.offset + entry.size > size:
            raise CheckpointError(
                f"{where} at bytes {entry.offset}..{entry.offset + entry.size} of {shard}, which holds only "
                f"{size}. {_UNTRUSTED}"
            )
