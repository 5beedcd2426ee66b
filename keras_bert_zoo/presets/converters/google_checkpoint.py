"""Read google-research/bert's original TF1 checkpoints (bert_model.ckpt.*)."""

import glob
import json
import math
import os

import tensorflow as tf

from keras_bert_zoo.presets.converters.checkpoint import Checkpoint
from keras_bert_zoo.presets.converters.checkpoint import infer_lowercase
from keras_bert_zoo.presets.converters.checkpoint import read_vocabulary
from keras_bert_zoo.presets.errors import CheckpointError

# The original modeling.py calls its tanh approximation "gelu".
_GOOGLE_ACTIVATIONS = {"gelu": "gelu_tanh", "relu": "relu", "tanh": "tanh"}


def is_google_checkpoint_dir(directory):
    return os.path.isfile(os.path.join(directory, "bert_config.json")) and bool(_checkpoint_prefix(directory))


def _checkpoint_prefix(directory):
    indexes = sorted(glob.glob(os.path.join(directory, "*.ckpt*.index")))
    preferred = [p for p in indexes if os.path.basename(p) == "bert_model.ckpt.index"]
    chosen = (preferred or indexes or [None])[0]
    return chosen[: -len(".index")] if chosen else None


def google_config_to_backbone(config):
    """Map a `bert_config.json` dict to `BertBackbone` arguments."""
    act = config.get("hidden_act", "gelu")
    if act not in _GOOGLE_ACTIVATIONS:
        raise CheckpointError(f"Unsupported hidden_act '{act}' in bert_config.json.")
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["num_hidden_layers"],
        "num_heads": config["num_attention_heads"],
        "hidden_dim": config["hidden_size"],
        "intermediate_dim": config["intermediate_size"],
        "dropout": config.get("hidden_dropout_prob", 0.1),
        "max_sequence_length": config.get("max_position_embeddings", 512),
        "num_segments": config.get("type_vocab_size", 2),
        # modeling.py hard-codes LayerNorm epsilon 1e-12.
        "layer_norm_epsilon": 1e-12,
        "hidden_activation": _GOOGLE_ACTIVATIONS[act],
        "initializer_range": config.get("initializer_range", 0.02),
    }


def read_google_checkpoint(directory):
    """Read a Google-format directory: bert_config.json, bert_model.ckpt.*, vocab.txt.

    Returns:
        A `Checkpoint` with every model variable (backbone, pooler,
        `cls/predictions/*`, `cls/seq_relationship/*`); optimizer slots are
        dropped.
    """
    config_path = os.path.join(directory, "bert_config.json")
    vocab_path = os.path.join(directory, "vocab.txt")
    prefix = _checkpoint_prefix(directory)
    for path, what in ((config_path, "bert_config.json"), (vocab_path, "vocab.txt")):
        if not os.path.isfile(path):
            raise CheckpointError(f"{directory} is not a complete Google BERT checkpoint: {what} is missing.")
    if prefix is None:
        raise CheckpointError(f"{directory} has no bert_model.ckpt.index: the TF checkpoint is missing.")
    try:
        with open(config_path, encoding="utf-8") as f:
            config = google_config_to_backbone(json.load(f))
    except (json.JSONDecodeError, KeyError) as e:
        raise CheckpointError(f"{config_path} is not a valid bert_config.json: {e}") from e
    vocabulary = read_vocabulary(vocab_path, config["vocabulary_size"], directory)
    return Checkpoint(config, vocabulary, infer_lowercase(vocabulary), directory, lambda: _read_tf_variables(prefix))


# The last 8 bytes of a TF table (the .index format), little-endian.
_TABLE_MAGIC = (0xDB4775248B80FB57).to_bytes(8, "little")
_UNTRUSTED = "The checkpoint is corrupt or truncated (or crafted): download it again."


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
    then the restart array and its length."""
    block = data[offset : offset + size]
    end = size - 4 - 4 * int.from_bytes(block[-4:], "little")
    if len(block) != size or size < 4 or end < 0:
        raise ValueError(f"the block at {offset} of {size} bytes lies outside the file or is malformed")
    pos, key = 0, b""
    while pos < end:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        length, pos = _varint(block, pos)
        if shared > len(key) or pos + unshared + length > end:
            raise ValueError(f"an entry of the block at {offset} runs past it")
        key = key[:shared] + block[pos : pos + unshared]
        yield key, block[pos + unshared : pos + unshared + length]
        pos += unshared + length


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


def _check_index(prefix):
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
        needed = math.prod(dims) * max(dtype.size, 1)  # a string takes at least a byte
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


def _read_tf_variables(prefix):
    _check_index(prefix)
    try:
        reader = tf.train.load_checkpoint(prefix)
        names = [
            n for n in reader.get_variable_to_shape_map()
            if not n.endswith(("/adam_m", "/adam_v")) and n != "global_step"
        ]
        return {n: reader.get_tensor(n) for n in names}
    except (tf.errors.OpError, ValueError, IndexError) as e:
        raise CheckpointError(
            f"Cannot read the TF checkpoint {prefix}.* ({type(e).__name__}: {e}). The "
            "file is corrupt or truncated: download it again."
        ) from e
