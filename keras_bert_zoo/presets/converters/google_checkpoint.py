"""Read google-research/bert's original TF1 checkpoints (bert_model.ckpt.*)."""

import glob
import os
import re
import warnings

import tensorflow as tf

from keras_bert_zoo.presets.converters.checkpoint import Checkpoint
from keras_bert_zoo.presets.converters.checkpoint import TaskHead
from keras_bert_zoo.presets.converters.checkpoint import backbone_config
from keras_bert_zoo.presets.converters.checkpoint import infer_lowercase
from keras_bert_zoo.presets.converters.checkpoint import read_vocabulary
from keras_bert_zoo.presets.converters.checkpoint import task_head_weights
from keras_bert_zoo.presets.converters.tf_checkpoint_index import check_checkpoint_index
from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.utils.text_files import read_json_object
from keras_bert_zoo.utils.text_files import untrusted_repr

# The output layers google-research/bert's fine-tuning scripts add beside `bert/*`, by the prefix of their
# `weights` ([labels, hidden]) and `bias`, and the task whose output layer each is. run_classifier.py's
# (dropout 0.1 on the pooled output) is a classifier's: taggers written after it may use its names, but its
# checkpoint does not say so.
_TASK_HEADS = (
    ("cls/squad/output_", TaskHead("run_squad.py SQuAD model", "keras_bert_zoo>BertQuestionAnswerer")),
    ("output_", TaskHead("run_classifier.py classifier", "keras_bert_zoo>BertClassifier", dropout=0.1)),
)

# The original modeling.py calls its tanh approximation "gelu".
_GOOGLE_ACTIVATIONS = {"gelu": "gelu_tanh", "relu": "relu", "tanh": "tanh"}


def is_google_checkpoint_dir(directory):
    return os.path.isfile(os.path.join(directory, "bert_config.json")) and bool(_checkpoint_prefix(directory))


# The index files of a directory's TF checkpoints (bert_model.ckpt.index, model.ckpt-1000.index).
CHECKPOINT_INDEX_GLOB = "*.ckpt*.index"


def _checkpoint_prefixes(directory):
    return sorted(path[: -len(".index")] for path in glob.glob(os.path.join(directory, CHECKPOINT_INDEX_GLOB)))


def _step(prefix):
    """The global step a run_pretraining.py / run_classifier.py checkpoint is named by (`model.ckpt-1000`), -1 for
    a name without one."""
    match = re.search(r"-(\d+)$", prefix)
    return int(match.group(1)) if match else -1


def _checkpoint_prefix(directory):
    """`bert_model.ckpt` (a release's name), else the last a run saved: the highest step. By name,
    `model.ckpt-1000` came before `model.ckpt-2000`, and a run's earliest checkpoint was read in silence."""
    prefixes = _checkpoint_prefixes(directory)
    if any(os.path.basename(p) == "bert_model.ckpt" for p in prefixes):
        return os.path.join(directory, "bert_model.ckpt")
    return max(prefixes, key=_step) if prefixes else None


def google_config_to_backbone(config):
    """Map a `bert_config.json` dict to `BertBackbone` arguments."""
    act = config.get("hidden_act", "gelu")
    if not isinstance(act, str) or act not in _GOOGLE_ACTIVATIONS:  # a list is unhashable
        raise ValueError(f"Unsupported hidden_act {untrusted_repr(act)}. Supported: {sorted(_GOOGLE_ACTIVATIONS)}.")
    # modeling.py hard-codes LayerNorm epsilon 1e-12.
    return backbone_config(config, layer_norm_epsilon=1e-12, hidden_activation=_GOOGLE_ACTIVATIONS[act])


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
    document = read_json_object(config_path, CheckpointError)
    try:
        config = google_config_to_backbone(document)
    except ValueError as e:
        raise CheckpointError(f"{config_path} is not a valid bert_config.json: {e}") from e
    vocabulary = read_vocabulary(vocab_path, config["vocabulary_size"], directory)
    others = [os.path.basename(p) for p in _checkpoint_prefixes(directory) if p != prefix]
    found = _task_head(prefix)
    head = found[1] if found else None

    def read_weights(source):
        # Named by `source`: a download's name, not the scratch directory it is converted from.
        if others:
            warnings.warn(f"{source} holds {len(others) + 1} checkpoints: reading {os.path.basename(prefix)}, not "
                          f"{', '.join(others)}. Keep the one you mean alone in the directory to read another.",
                          stacklevel=3)
        weights = _read_tf_variables(prefix)
        if found:
            names = (f"{found[0]}weights", f"{found[0]}bias")
            missing = [name for name in names if name not in weights]
            if missing:
                raise CheckpointError(f"{prefix} holds '{(set(names) - set(missing)).pop()}' but not "
                                      f"'{missing[0]}': the {head.architecture}'s head is incomplete. The "
                                      "checkpoint is truncated or corrupt.")
            weights.update(task_head_weights(weights.pop(names[0]), weights.pop(names[1]), names, prefix))
        return weights

    return Checkpoint(config, vocabulary, infer_lowercase(vocabulary), directory, read_weights, head=head,
                      checkpoint_format="google")


def _reader(prefix):
    """TensorFlow's reader of the checkpoint `prefix`, its index checked first."""
    check_checkpoint_index(prefix)
    try:
        return tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError, IndexError) as e:
        raise _unreadable(prefix, e) from e


def _unreadable(prefix, error):
    return CheckpointError(f"Cannot read the TF checkpoint {prefix}.* ({type(error).__name__}: {error}). The file "
                           "is corrupt or truncated: download it again.")


def _task_head(prefix):
    """`(prefix of its names, TaskHead)` of the fine-tuning script's head the checkpoint holds; None without."""
    names = _reader(prefix).get_variable_to_shape_map()
    return next(((start, head) for start, head in _TASK_HEADS
                 if f"{start}weights" in names or f"{start}bias" in names), None)


def _read_tf_variables(prefix):
    reader = _reader(prefix)
    try:
        names = [
            n for n in reader.get_variable_to_shape_map()
            if not n.endswith(("/adam_m", "/adam_v")) and n != "global_step"
        ]
        return {n: reader.get_tensor(n) for n in names}
    except (tf.errors.OpError, ValueError, IndexError) as e:
        raise _unreadable(prefix, e) from e
