"""Read Hugging Face-format BERT directories (config.json + weights + vocab.txt)."""

import math
import os
import re
import warnings

import numpy as np

from keras_bert_zoo.layers.activations import hf_activation
from keras_bert_zoo.presets.converters.checkpoint import TASK_HEAD_BIAS
from keras_bert_zoo.presets.converters.checkpoint import Checkpoint
from keras_bert_zoo.presets.converters.checkpoint import TaskHead
from keras_bert_zoo.presets.converters.checkpoint import task_head_weights
from keras_bert_zoo.presets.converters.checkpoint import backbone_config
from keras_bert_zoo.presets.converters.checkpoint import infer_lowercase
from keras_bert_zoo.presets.converters.checkpoint import is_float_dtype
from keras_bert_zoo.presets.converters.checkpoint import read_vocabulary
from keras_bert_zoo.presets.converters.checkpoint_weights import UNTIED_DECODER
from keras_bert_zoo.presets.converters.torch_pickle import load_torch_state_dict
from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.utils.placeholder_labels import UNNAMED_LABELS
from keras_bert_zoo.utils.text_files import check_bool_fields
from keras_bert_zoo.utils.text_files import loads_json
from keras_bert_zoo.utils.text_files import read_json_object
from keras_bert_zoo.utils.text_files import untrusted_repr

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

# Bytes per element of each safetensors dtype.
_SAFETENSORS_ITEMSIZE = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}
# Format dtypes that numpy (so safetensors.numpy) cannot hold: refused by name before the library fails on them.
_NOT_NUMPY = ("F8_E5M2", "F8_E4M3")
# The safetensors format caps its JSON header at 100 MB.
_MAX_SAFETENSORS_HEADER = 100_000_000
_CRAFTED = "The file is corrupt or crafted; it is refused."


def is_hf_checkpoint_dir(directory):
    return os.path.isfile(os.path.join(directory, "config.json")) and any(
        os.path.isfile(os.path.join(directory, f)) for f in WEIGHT_FILES
    )


def hf_config_to_backbone(config):
    """Map a `config.json` dict to `BertBackbone` arguments.

    Raises:
        ValueError: the config is not BERT's or is invalid.
    """
    model_type = config.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(f"it holds a {untrusted_repr(model_type)} model, not BERT")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError("only absolute position embeddings are supported")
    # A decoder attends causally, and cross-attention adds a sublayer: neither is BERT's encoder.
    for key in _ENCODER_ONLY_KEYS:
        if config.get(key, False) is not False:
            raise ValueError(f"{key} is {untrusted_repr(config[key])}; only BERT's encoder ({key}: false) is supported")
    return backbone_config(config, layer_norm_epsilon=config.get("layer_norm_eps", 1e-12),
                           hidden_activation=hf_activation(config.get("hidden_act", "gelu")))


# HF config keys that turn BERT's encoder into something else when not false.
_ENCODER_ONLY_KEYS = ("is_decoder", "add_cross_attention")
_LAYER = re.compile(r"encoder\.layer\.(\d+)\.")
# HF's LayerNorm leaves (older files use TF's names) -> Google's.
_LAYER_NORM_LEAVES = {"weight": "gamma", "gamma": "gamma", "bias": "beta", "beta": "beta"}


# The heads transformers' fine-tuned BERT tasks add beside `bert.*` (sequence, token and multiple-choice
# classification: `classifier`; question answering: `qa_outputs`), as (kernel, bias).
HF_TASK_HEADS = {"classifier": ("classifier.weight", "classifier.bias"),
                 "qa_outputs": ("qa_outputs.weight", "qa_outputs.bias")}
# transformers' fine-tuned BERT classes -> (their head, the registered task whose output layer it is). Others
# (BertForMultipleChoice: one logit per choice) have no task here: their head is left out.
HF_TASKS = {
    "BertForSequenceClassification": ("classifier", "keras_bert_zoo>BertClassifier"),
    "BertForTokenClassification": ("classifier", "keras_bert_zoo>BertTokenClassifier"),
    "BertForQuestionAnswering": ("qa_outputs", "keras_bert_zoo>BertQuestionAnswerer"),
}
# transformers' `problem_type` -> BertClassifier's (unset: by the number of labels, as transformers decides).
_PROBLEM_TYPES = {"single_label_classification": "multi_class", "multi_label_classification": "multi_label",
                  "regression": "regression"}


def _architecture(document, path):
    """The model class `config.json` names (None where it names none)."""
    architectures = document.get("architectures")
    if architectures is None or architectures == []:
        return None
    if not (isinstance(architectures, list) and all(isinstance(a, str) for a in architectures)):
        raise CheckpointError(f"{path}: 'architectures' is {untrusted_repr(architectures)}, not a list of class "
                              "names. Fix it (e.g. [\"BertForSequenceClassification\"]) or remove it.")
    return architectures[0]


def _label_names(document, path):
    """`id2label`'s names in id order (None where the config has none): the ids must be 0..n-1."""
    id2label = document.get("id2label")
    if id2label is None:
        return None
    if not isinstance(id2label, dict) or not id2label:
        raise CheckpointError(f"{path}: 'id2label' is {untrusted_repr(id2label)}, not an object of label ids to "
                              "names. Fix it (e.g. {\"0\": \"O\", \"1\": \"B-Gene\"}) or remove it.")
    try:
        ids = [int(key) for key in id2label]  # JSON's keys are strings ("0"), as transformers writes them
    except ValueError:
        raise CheckpointError(f"{path}: 'id2label' has keys {sorted(id2label)[:5]}; label ids are whole numbers "
                              "0, 1, ...") from None
    if sorted(ids) != list(range(len(ids))):  # "1" and "01" are one id twice
        raise CheckpointError(f"{path}: 'id2label' has ids {sorted(ids)[:8]}, not 0..{len(ids) - 1} once each. "
                              "Fix id2label.")
    names = [name for _, name in sorted(zip(ids, id2label.values()))]
    bad = [name for name in names if not isinstance(name, str) or not name]
    if bad:
        raise CheckpointError(f"{path}: 'id2label' names a label {untrusted_repr(bad[0])}; label names are "
                              "non-empty strings.")
    return names


def _task_head(document, path):
    """The `TaskHead` of a fine-tuned task's `config.json` (None where it names no task of ours)."""
    architecture = _architecture(document, path)
    if architecture not in HF_TASKS:
        return None
    problem_type = document.get("problem_type")
    if problem_type is not None and problem_type not in _PROBLEM_TYPES:
        raise CheckpointError(f"{path}: 'problem_type' is {untrusted_repr(problem_type)}; transformers' are "
                              f"{', '.join(_PROBLEM_TYPES)}. Fix it or remove it.")
    dropout = document.get("classifier_dropout")
    dropout = document.get("hidden_dropout_prob", 0.1) if dropout is None else dropout
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise CheckpointError(f"{path}: the classifier's dropout rate is {untrusted_repr(dropout)} "
                              "(classifier_dropout, else hidden_dropout_prob); a rate is a number in [0, 1).")
    return TaskHead(architecture, HF_TASKS[architecture][1], label_names=_label_names(document, path),
                    unnamed_labels=UNNAMED_LABELS, problem_type=_PROBLEM_TYPES.get(problem_type), dropout=float(dropout))


def hf_name_to_google(key, value, source):
    """Map one HF state-dict entry of `source` to `(google_name, array)`, or None to skip it.

    Raises:
        CheckpointError: `key` names no BERT weight: a leaf BERT has no weight for (`LayerNorm.zzz`,
            `weight_orig`) must not land on a real one.
    """
    if key.endswith(("position_ids", "embeddings.token_type_ids")):  # transformers' index buffers, no weights
        return None
    name = key
    for prefix in ("bert.", "model."):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name in ("cls.predictions.bias", "cls.predictions.decoder.bias"):
        return "cls/predictions/output_bias", value
    if name == "cls.predictions.decoder.weight":  # HF's copy of the tied word embeddings, [vocab, hidden]
        return UNTIED_DECODER, value
    if name in ("cls.seq_relationship.weight", "cls.seq_relationship.bias"):
        # HF Linear weight [2, hidden] is already Google's output_weights layout.
        return "cls/seq_relationship/output_" + ("weights" if name.endswith("weight") else "bias"), value
    name = _LAYER.sub(lambda m: f"encoder.layer_{m.group(1)}.", name)
    parts = name.split(".")
    leaf, path = parts[-1], "/".join(parts[:-1])
    if not name.startswith("cls."):
        path = "bert/" + path
    owner = parts[-2] if len(parts) > 1 and "" not in parts else ""
    if owner == "LayerNorm":
        google = f"{path}/{_LAYER_NORM_LEAVES[leaf]}" if leaf in _LAYER_NORM_LEAVES else None
    elif owner.endswith("embeddings"):
        google = path if leaf == "weight" else None
    else:
        google = {"weight": f"{path}/kernel", "bias": f"{path}/bias"}.get(leaf) if owner else None
    if google is not None:
        return google, value.T if google.endswith("/kernel") else value  # torch Linear stores [out, in]
    raise CheckpointError(f"{source} holds '{key}', which names no BERT weight (a LayerNorm holds weight and "
                          "bias, an embedding a weight, a dense layer weight and bias). The file is not a BERT "
                          "checkpoint, or is corrupt.")


def _read_safetensors_header(path):
    """The JSON header, read without trusting its length: only the first
    8 + header bytes are read, and never more than the file holds."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        prefix = f.read(8)
        length = int.from_bytes(prefix, "little")
        if len(prefix) < 8 or length > size - 8:
            raise CheckpointError(
                f"{path} holds {size} bytes, less than its header needs. The file is truncated "
                "or corrupt: download it again."
            )
        if length > _MAX_SAFETENSORS_HEADER:
            raise CheckpointError(f"{path} claims a {length}-byte header, beyond the format's 100 MB. {_CRAFTED}")
        try:
            header = loads_json(f.read(length), f"{path}: the header")
        except ValueError as e:
            raise CheckpointError(f"{e} {_CRAFTED}") from e
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: the header is not a JSON object. {_CRAFTED}")
    return header, size - 8 - length


def _check_safetensors(path):
    """Every tensor's byte span must lie inside the data buffer, match its
    shape and dtype, and not overlap another, before the library maps it."""
    header, buffer = _read_safetensors_header(path)
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        where = f"{path}: tensor '{name}'"
        if not isinstance(entry, dict):
            raise CheckpointError(f"{where} is described by {untrusted_repr(entry)}, not an object. {_CRAFTED}")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if dtype not in _SAFETENSORS_ITEMSIZE:
            raise CheckpointError(f"{where} has unknown dtype {untrusted_repr(dtype)}. {_CRAFTED}")
        if dtype in _NOT_NUMPY:
            raise CheckpointError(f"{where} has dtype {dtype}, which this reader does not support: convert the "
                                  "checkpoint to F32, F16 or BF16.")
        if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
            raise CheckpointError(f"{where} has shape {untrusted_repr(shape)}, not a list of non-negative integers. "
                                  f"{_CRAFTED}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= buffer):
            raise CheckpointError(
                f"{where} has data_offsets {untrusted_repr(offsets)} outside the {buffer}-byte data buffer. {_CRAFTED}"
            )
        needed = math.prod(shape) * _SAFETENSORS_ITEMSIZE[dtype]
        if offsets[1] - offsets[0] != needed:
            raise CheckpointError(
                f"{where} has shape {shape} of {dtype} ({needed} bytes) but data_offsets {offsets} "
                f"span {offsets[1] - offsets[0]} bytes. {_CRAFTED}"
            )
        spans.append((offsets[0], offsets[1], name))
    spans.sort()
    for (_, end, first), (begin, _, second) in zip(spans, spans[1:]):
        if begin < end:
            raise CheckpointError(f"{path}: tensors '{first}' and '{second}' overlap. {_CRAFTED}")


def load_safetensors(path):
    """`{name: numpy array}` from a `.safetensors` file, checked before it is read."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        _check_safetensors(path)
        return load_file(path)
    except CheckpointError:
        raise
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(
            f"Cannot read {path}: {e}. The file is corrupt or truncated: download it again."
        ) from e


def _task_head_weights(state, head, path, config_path):
    """`task_head_weights` of the task `head` names, from the state dict; its id2label must fit them."""
    names = HF_TASK_HEADS[HF_TASKS[head.architecture][0]]
    missing = [name for name in names if name not in state]
    if missing:
        raise CheckpointError(f"{config_path} says the model is a {head.architecture}, but {path} has no "
                              f"'{missing[0]}', its head. The file is truncated or not that model's: download it "
                              "again, or fix 'architectures'.")
    weights = task_head_weights(state[names[0]], state[names[1]], names, path)
    units = len(weights[TASK_HEAD_BIAS])
    if head.label_names is not None and len(head.label_names) != units:
        raise CheckpointError(f"{config_path}: 'id2label' names {len(head.label_names)} labels, but {path}'s "
                              f"'{names[0]}' has {units}: the config is not this model's. Use the one saved with it.")
    return weights


def load_hf_weights(directory, source=None, head=None):
    """Read the weights, safetensors first, as Google-named float32 arrays (`source` names them in warnings).

    Args:
        directory: the checkpoint directory.
        source: how messages name it (default: the weights file).
        head: the `TaskHead` its config names: the head's weights are kept, as `TASK_HEAD_KERNEL` and
            `TASK_HEAD_BIAS`. Without it, a head found is left out, with a warning.
    """
    path = os.path.join(directory, "model.safetensors")
    if os.path.isfile(path):
        state = load_safetensors(path)
    else:
        path = os.path.join(directory, "pytorch_model.bin")
        state = load_torch_state_dict(path)
    heads = sorted(key for names in HF_TASK_HEADS.values() for key in names if key in state)
    weights, origin = {}, {}
    if head is not None:
        weights.update(_task_head_weights(state, head, path, os.path.join(directory, "config.json")))
    elif heads:
        warnings.warn(f"{source or path} is a fine-tuned task's checkpoint: its head ({', '.join(heads)}) is not "
                      "loaded, as its config.json names no task here that has it (BertForSequenceClassification, "
                      "BertForTokenClassification or BertForQuestionAnswering in 'architectures'). The BERT model "
                      "under it is; a task made from it starts its own head (fine-tune it).", stacklevel=3)
    for key, value in state.items():
        if key in heads:
            continue
        mapped = hf_name_to_google(key, value, path)
        if mapped is None:
            continue
        if not is_float_dtype(value.dtype):  # an integer or bool weight is not a trained weight: no silent cast
            raise CheckpointError(f"{path} holds '{key}' as {value.dtype} values; BERT's weights are floats. The "
                                  "file is not a BERT checkpoint, or is corrupt.")
        name, array = mapped[0], np.asarray(mapped[1], dtype=np.float32)
        # HF may store a weight under two names (the MLM bias as `cls.predictions.bias` and `.decoder.bias`, a
        # name with and without `bert.`); BERT has one, so they must agree, or the second would silently win.
        if name in weights and not np.array_equal(weights[name], array):
            raise CheckpointError(
                f"{path} holds '{origin[name]}' and '{key}', both BERT's '{name}' (one weight, tied), but their "
                "values differ. BERT cannot load them apart: the checkpoint is not BERT's, or is corrupt."
            )
        weights[name] = array
        origin.setdefault(name, key)
    # Tied (BERT's rule), the decoder's copy is the word embeddings; untied (tie_word_embeddings: false), it stays
    # apart, unused by a backbone or task, and a pretrainer, whose decoder is tied, refuses it.
    if np.array_equal(weights.get(UNTIED_DECODER), weights.get("bert/embeddings/word_embeddings")):
        weights.pop(UNTIED_DECODER, None)
    return weights


def read_hf_checkpoint(directory):
    """Read an HF-format directory into a `Checkpoint`.

    The directory needs `config.json`, `vocab.txt` and `model.safetensors`
    or `pytorch_model.bin` (read without torch). `do_lower_case` comes from
    `tokenizer_config.json` when present, else from the vocabulary.
    """
    config_path = os.path.join(directory, "config.json")
    vocab_path = os.path.join(directory, "vocab.txt")
    if not os.path.isfile(vocab_path):
        raise CheckpointError(f"{directory} has no vocab.txt: a BERT checkpoint needs its WordPiece vocabulary.")
    document = read_json_object(config_path, CheckpointError)
    try:
        config = hf_config_to_backbone(document)
    except ValueError as e:
        raise CheckpointError(f"{config_path} is not a valid BERT config.json: {e}") from e
    head = _task_head(document, config_path)
    vocabulary = read_vocabulary(vocab_path, config["vocabulary_size"], directory)
    lowercase = infer_lowercase(vocabulary)
    tokenizer_config = os.path.join(directory, "tokenizer_config.json")
    if os.path.isfile(tokenizer_config):
        document = read_json_object(tokenizer_config, CheckpointError)
        check_bool_fields(document, tokenizer_config, ("do_lower_case",), CheckpointError)
        lowercase = document.get("do_lower_case", lowercase)
    return Checkpoint(config, vocabulary, lowercase, directory, lambda source: load_hf_weights(directory, source, head),
                      head=head, checkpoint_format="hf")
