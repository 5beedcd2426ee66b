"""Our preset directory format (keras-hub's layout): write and read."""

import collections
import datetime
import json
import math
import os
import re

import keras
import ml_dtypes
import numpy as np
# Public `save_weights` cannot leave the optimizer out; this can.
from keras.src.saving import saving_lib

from keras_bert_zoo.presets.converters.checkpoint import is_float_dtype
from keras_bert_zoo.presets.converters.checkpoint_weights import SHAPED_SIZES
from keras_bert_zoo.presets.converters.checkpoint_weights import sizes_found
from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.presets.errors import PresetError
from keras_bert_zoo.utils.atomic import atomic_directory
from keras_bert_zoo.utils.atomic import current_directory
from keras_bert_zoo.utils.atomic import resolved_path
from keras_bert_zoo.utils.text_files import read_json_object
from keras_bert_zoo.utils.vocabulary_file import vocabulary_lines
from keras_bert_zoo.version import __version__

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
TASK_CONFIG_FILE = "task.json"
TASK_WEIGHTS_FILE = "task.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
VOCABULARY_FILE = os.path.join("assets", "tokenizer", "vocabulary.txt")
METADATA_FILE = "metadata.json"


# Every entry `save_preset` writes: a directory holding anything else is not replaced.
_PRESET_ENTRIES = frozenset(path.split(os.sep)[0] for path in (
    CONFIG_FILE, WEIGHTS_FILE, TASK_CONFIG_FILE, TASK_WEIGHTS_FILE, TOKENIZER_FILE, VOCABULARY_FILE, METADATA_FILE))


def is_saved_preset_dir(directory):
    return os.path.isfile(os.path.join(directory, WEIGHTS_FILE)) and os.path.isfile(
        os.path.join(directory, CONFIG_FILE)
    )


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def stored_policies(config):
    """`config` with every mixed dtype policy replaced by its variable dtype's.

    A preset holds weights: a run under `mixed_bfloat16` saves float32
    weights, and `from_preset` loads them in float32 unless given `dtype`,
    like the preset it started from. A `bfloat16` model's weights are
    bfloat16, and so is its preset.
    """
    if isinstance(config, list):
        return [stored_policies(item) for item in config]
    if not isinstance(config, dict):
        return config
    if config.get("class_name") == "DTypePolicy":
        policy = keras.dtype_policies.deserialize(config)
        return keras.dtype_policies.serialize(keras.DTypePolicy(policy.variable_dtype))
    return {key: stored_policies(value) for key, value in config.items()}


def refuse_quantized(*models, saved_as):
    """Refuse to save a quantized model (`quantize("int8")`): its layers are rebuilt from the backbone's
    arguments, in float, and its integer weights would be refused on loading (a preset's) or not loaded at all
    (a `.keras` file's)."""
    quantized = list(dict.fromkeys(w.path for model in models if model is not None for w in model.weights
                                   if "float" not in keras.backend.standardize_dtype(w.dtype)))
    if quantized:
        raise PresetError(f"The model is quantized: {len(quantized)} of its weights are integers ({quantized[0]}, "
                          f"...), and {saved_as} holds a float model. Save the model before `quantize(...)` and "
                          "quantize it again after loading, or export the quantized model (`export(...)`).")


def save_preset(preset_dir, backbone, tokenizer=None, task=None, metadata=None):
    """Write a preset directory atomically.

    Args:
        preset_dir: target directory: new, empty, or a saved preset (replaced
            as a whole). One holding anything else is refused, as is the
            current directory or one holding it.
        backbone: the `BertBackbone`.
        tokenizer: its `BertTokenizer` (recommended: `from_preset` of the
            preprocessor needs it).
        task: an optional task model (e.g. `BertPretrainer`) whose full
            weights go to `task.weights.h5`.
        metadata: extra entries for `metadata.json`.
    """
    check_preset_target(preset_dir)
    if tokenizer is not None and tokenizer.vocabulary_size() != backbone.vocabulary_size:
        raise PresetError(
            f"The tokenizer has {tokenizer.vocabulary_size()} tokens but the backbone's "
            f"vocabulary_size is {backbone.vocabulary_size}; they do not belong together."
        )
    refuse_quantized(backbone, task, saved_as="a preset")
    with atomic_directory(preset_dir) as tmp:
        _write_json(os.path.join(tmp, CONFIG_FILE), stored_policies(keras.saving.serialize_keras_object(backbone)))
        save_model_weights(backbone, os.path.join(tmp, WEIGHTS_FILE))
        if tokenizer is not None:
            config = keras.saving.serialize_keras_object(tokenizer)
            config["config"].pop("vocabulary")
            _write_json(os.path.join(tmp, TOKENIZER_FILE), config)
            os.makedirs(os.path.dirname(os.path.join(tmp, VOCABULARY_FILE)))
            with open(os.path.join(tmp, VOCABULARY_FILE), "w", encoding="utf-8") as f:
                f.write("\n".join(vocabulary_lines(tokenizer.get_vocabulary())) + "\n")
        if task is not None:
            _write_json(os.path.join(tmp, TASK_CONFIG_FILE), stored_policies(keras.saving.serialize_keras_object(task)))
            save_model_weights(task, os.path.join(tmp, TASK_WEIGHTS_FILE))
        _write_json(
            os.path.join(tmp, METADATA_FILE),
            {
                "keras_bert_zoo_version": __version__,
                "keras_version": keras.__version__,
                "parameter_count": backbone.count_params(),
                "date_saved": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d@%H:%M:%S"),
                **(metadata or {}),
            },
        )


def check_preset_target(preset_dir):
    """Refuse a `preset_dir` that saving would destroy more than a preset in: a file, the current directory
    (or one holding it), or a directory holding entries a preset has not; through a symbolic link, what the
    link names (saving replaces the link's target and keeps the link)."""
    if not isinstance(preset_dir, (str, os.PathLike)) or not os.fspath(preset_dir):
        raise PresetError(f"A preset is saved to a directory path; got {preset_dir!r}. Give one, e.g. "
                          "save_to_preset('my_preset').")
    try:
        path = resolved_path(preset_dir)
    except FileNotFoundError as e:
        raise PresetError(str(e)) from None
    if os.path.lexists(path) and not os.path.isdir(path):
        raise PresetError(f"{preset_dir} is a file, not a directory: a preset is a directory of files. Save to a "
                          "directory path instead (a new one is created).")
    cwd = current_directory()  # gone (deleted while running): no existing directory holds it
    if cwd is not None and os.path.commonpath([path, os.path.realpath(cwd)]) == path:
        raise PresetError(f"{preset_dir} is the current directory or holds it, and saving a preset replaces its "
                          "directory as a whole. Save to a new subdirectory instead, e.g. "
                          f"{os.path.join(preset_dir, 'my_preset')}.")
    foreign = sorted(set(os.listdir(path)) - _PRESET_ENTRIES) if os.path.isdir(path) else []
    if foreign:
        named = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise PresetError(f"{preset_dir} holds entries that are not a preset's ({named}): saving a preset replaces "
                          "its directory as a whole, and they would be deleted. Save to a new or empty directory, "
                          "or move them out first.")


def _optimizer_of(model):
    optimizer = getattr(model, "optimizer", None)
    return [optimizer] if optimizer is not None else []


def save_model_weights(model, path):
    """`model.save_weights` without the optimizer's state: a preset holds
    each weight once (no Adam slots)."""
    saving_lib.save_weights_only(model, path, objects_to_skip=_optimizer_of(model))


def read_json(directory, name, *keys):
    """The JSON object `name` of a preset directory, or the object at `keys` inside it (see `json_object_at`)."""
    path = os.path.join(directory, name)
    if not os.path.isfile(path):
        raise PresetError(f"{directory} is missing {name}: it is not a complete preset directory.")
    return json_object_at(read_json_object(path, PresetError), path, *keys)


def json_object_at(document, path, *keys):
    """The object at `keys` (`"config"`: a saved object's constructor arguments) in `document`, read from
    `path`; a field that is missing or no object is a PresetError naming the file and the field."""
    value = document
    for depth, key in enumerate(keys):
        value = value.get(key)
        if not isinstance(value, dict):
            field = ".".join(keys[: depth + 1])
            found = "missing" if value is None else f"a {type(value).__name__}"
            raise PresetError(f"{path}: '{field}' is {found}, not an object. The file is damaged: save the preset "
                              "again.")
    return value


_ENCODER_LAYER = re.compile(r"(^|/)bert_encoder_layer(_\d+)?$")
_CRAFTED = "The file is corrupt or crafted; it is refused."


def _stored_arrays(path):
    """`({dataset name: (shape, numpy dtype)}, number of encoder layers)` of a weights file, without reading
    arrays; an array without a shape, not floating point, claiming more bytes than the file has, or not all
    written (see `_unwritten`), and arrays storing more bytes together than the file has, are refused."""
    import h5py

    datasets, encoder_layers = {}, set()

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            datasets[name] = item
        elif _ENCODER_LAYER.search(name):
            encoder_layers.add(name)

    if not os.path.isfile(path):
        raise CheckpointError(f"The weights file {path} is missing: the preset directory is incomplete (copied in part, "
                              "or its writer was stopped). Save the preset again.")
    size = os.path.getsize(path)
    try:
        with h5py.File(path, "r") as f:
            f.visititems(visit)
            arrays = {name: _checked_array(path, name, dataset, size) for name, dataset in datasets.items()}
            stored = sum(dataset.id.get_storage_size() for dataset in datasets.values())
    except OSError as e:
        raise CheckpointError(f"Cannot read the weights file {path} ({e}): it is corrupt or truncated. "
                              "Save the preset again.") from e
    # Each array's header says where its bytes lie: arrays pointing at the same bytes each look whole.
    if stored > size:
        raise CheckpointError(f"{path}: its arrays store {stored} bytes, more than the file's {size}: some share "
                              f"their bytes, which Keras never writes. {_CRAFTED}")
    return arrays, len(encoder_layers)


def _checked_array(path, name, dataset, file_size):
    """`(shape, numpy dtype)` of the weights file's `dataset`, read from its header and refused as
    `_stored_arrays` says."""
    dtype = dataset.dtype
    # Keras writes bfloat16 as opaque 2-byte values marked with a `dtype` attribute (h5py has no bfloat16).
    if dtype == "V2" and dataset.attrs.get("dtype") == "bfloat16":
        dtype = np.dtype(ml_dtypes.bfloat16)
    where = f"{path}: the array '{name}'"
    if dataset.shape is None:  # an h5py.Empty dataset
        raise CheckpointError(f"{where} is an empty dataset, with no shape: Keras never writes one. {_CRAFTED}")
    if not is_float_dtype(dtype):  # every saved weight is floating point; Keras would cast integers silently
        raise CheckpointError(f"{where} holds {dtype} values, not floating-point weights (a quantized model's, "
                              f"which a preset does not hold: quantize after loading). {_CRAFTED}")
    nbytes = math.prod(dataset.shape) * dtype.itemsize
    if nbytes > file_size:
        raise CheckpointError(f"{where} claims {nbytes} bytes but the file has only {file_size}. {_CRAFTED}")
    unwritten = _unwritten(dataset, nbytes)
    if unwritten:
        raise CheckpointError(f"{where} {unwritten}. {_CRAFTED}")
    return dataset.shape, dtype


def _unwritten(dataset, nbytes):
    """What of its `nbytes` values `dataset` does not hold in the weights file itself (None where it holds all):
    HDF5 reads a value never written as the fill value, zeros, without a word."""
    import h5py

    plist = dataset.id.get_create_plist()
    if plist.get_external_count():
        return (f"keeps its values in another file ({plist.get_external(0)[0].decode('utf-8', 'replace')}), which "
                "Keras never writes")
    if plist.get_layout() == h5py.h5d.VIRTUAL:
        return "maps its values from other datasets (a virtual dataset), which Keras never writes"
    if dataset.chunks:  # chunks overhang the array's edges and may be compressed: their bytes say little, count them
        needed = math.prod(-(-n // c) for n, c in zip(dataset.shape, dataset.chunks))
        stored = dataset.id.get_num_chunks()
        missing = f"stores {stored} of its {needed} chunks" if stored < needed else None
    else:
        stored = dataset.id.get_storage_size()
        missing = f"stores {stored} of its {nbytes} bytes" if stored < nbytes else None
    return missing and f"{missing}: HDF5 would read the rest as zeros"


def stored_sizes(path):
    """The backbone config sizes that the weights file `path` holds (read from its header), for
    `check_sizes`."""
    arrays, encoder_layers = _stored_arrays(path)
    shapes = {key: (name, shape, axis) for key, _, end, axis in SHAPED_SIZES
              for name, (shape, _) in arrays.items() if name == end or name.endswith("/" + end)}
    return sizes_found(path, shapes, encoder_layers, {key: end for key, _, end, _ in SHAPED_SIZES})


def _check_weights_file(model, path):
    """Refuse a weights file that describes more memory than it holds, or
    other weights than the model built from config.json (Keras would skip
    the surplus silently: a config with fewer layers would drop them)."""
    arrays, encoder_layers = _stored_arrays(path)
    expected = len(model.weights)
    if len(arrays) != expected:
        backbone = getattr(model, "backbone", model)
        layers = getattr(backbone, "num_layers", None)
        why = (f"weights for {encoder_layers} encoder layers, but config.json says num_layers={layers}"
               if layers is not None and encoder_layers != layers else
               f"{len(arrays)} weight arrays, but the model built from config.json has {expected}")
        raise CheckpointError(f"{path} holds {why}. The weights do not belong to this config: fix config.json "
                              "or save the preset again.")
    stored = collections.Counter(shape for shape, _ in arrays.values())
    needed = collections.Counter(tuple(w.shape) for w in model.weights)
    if stored != needed:
        missing, surplus = next(iter(needed - stored)), next(iter(stored - needed))
        raise CheckpointError(f"{path} holds no array of shape {missing}, which the model built from config.json "
                              f"needs, and one of shape {surplus} that it has no place for. The weights do not "
                              "belong to this config: fix config.json or save the preset again.")


def load_weights_file(model, path):
    """`model.load_weights` with a clear error for a corrupt, truncated or
    mismatched file (checked against its header before any array is read)."""
    _check_weights_file(model, path)
    try:
        saving_lib.load_weights_only(model, path, objects_to_skip=_optimizer_of(model))
    except (OSError, ValueError, KeyError) as e:
        raise CheckpointError(
            f"Cannot load the weights file {path} ({type(e).__name__}: {e}). It is "
            "corrupt, truncated, or does not match config.json: save the preset again."
        ) from e
