"""What every checkpoint reader returns."""

import dataclasses

import ml_dtypes
import numpy as np

from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.utils.text_files import untrusted_repr
from keras_bert_zoo.utils.vocabulary_file import load_vocabulary


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint read into memory, independent of its file format.

    Attributes:
        config: `BertBackbone` constructor arguments.
        vocabulary: list of tokens.
        lowercase: whether the tokenizer lower-cases.
        source: where it was read from (for messages).
        read_weights: a function of `source` returning {Google variable name:
            numpy array in Google orientation}; weights are read only when
            needed, by `weights()`.
        head: the fine-tuned task's output layer the weights hold beside
            BERT, as `TaskHead`; None for a pretrained BERT.
        checkpoint_format: `"hf"` or `"google"` (messages say why by it).
    """

    config: dict
    vocabulary: list
    lowercase: bool
    source: str
    read_weights: object
    head: "TaskHead" = None
    checkpoint_format: str = None

    def weights(self):
        """The arrays of `read_weights`, whose warnings name `source`: a download's name, not the scratch directory
        it was read from and that is gone once converted."""
        return self.read_weights(self.source)


# The names under which `Checkpoint.weights()` holds a fine-tuned task's output layer (Keras' orientation:
# kernel [hidden, units]).
TASK_HEAD_KERNEL, TASK_HEAD_BIAS = "task_head/kernel", "task_head/bias"


@dataclasses.dataclass
class TaskHead:
    """What a checkpoint says of the fine-tuned task whose output layer it holds (its weights are
    `TASK_HEAD_KERNEL` and `TASK_HEAD_BIAS`).

    Attributes:
        architecture: the model class the checkpoint names (e.g. transformers' `BertForTokenClassification`).
        task: the registered name of our task whose output layer the head is (e.g.
            `"keras_bert_zoo>BertTokenClassifier"`); None where we have no such task.
        label_names: the class or tag names, in id order; None where the checkpoint names none.
        unnamed_labels: how the checkpoint's format names labels it has no names for (transformers':
            `"LABEL_{}"`); None: it does not.
        problem_type: a classifier's `problem_type` (`"multi_class"`, `"multi_label"` or `"regression"`).
        dropout: the dropout rate the head was trained with before its output layer.
    """

    architecture: str
    task: str = None
    label_names: list = None
    unnamed_labels: str = None
    problem_type: str = None
    dropout: float = None

    def names(self, units):
        """The names of the head's `units` labels: the checkpoint's, else its format's (None without)."""
        if self.label_names is not None or self.unnamed_labels is None:
            return self.label_names
        return [self.unnamed_labels.format(i) for i in range(units)]

    def dropout_argument(self):
        """`{"dropout": rate}` where the checkpoint says its rate, else `{}` (the task's default)."""
        return {} if self.dropout is None else {"dropout": self.dropout}


def task_head_weights(kernel, bias, names, path):
    """`{TASK_HEAD_KERNEL: [hidden, units], TASK_HEAD_BIAS: [units]}` from a head stored as both formats store it
    (`kernel` [units, hidden], `bias` [units]), checked: one of another shape would be refused only once a task
    was built, or load wrongly.

    Args:
        kernel, bias: the arrays, named `names` (a pair) in the file `path`.

    Raises:
        CheckpointError: naming the file and the array at fault.
    """
    for name, value in zip(names, (kernel, bias)):
        if not is_float_dtype(value.dtype):
            raise CheckpointError(f"{path} holds '{name}' as {value.dtype} values; BERT's weights are floats. The "
                                  "file is not a BERT checkpoint, or is corrupt.")
    if kernel.ndim != 2 or bias.shape != kernel.shape[:1] or not kernel.shape[0]:
        raise CheckpointError(f"{path}: '{names[0]}' has shape {kernel.shape} and '{names[1]}' {bias.shape}; a "
                              "head is [labels, hidden] and [labels]. The file is corrupt.")
    return {TASK_HEAD_KERNEL: np.asarray(kernel, np.float32).T, TASK_HEAD_BIAS: np.asarray(bias, np.float32)}


# BERT's config keys (google-research/bert's bert_config.json; HF's config.json
# kept the names) -> `BertBackbone` arguments, with modeling.py's defaults
# (None: required).
_BACKBONE_KEYS = (
    ("vocab_size", "vocabulary_size", None),
    ("num_hidden_layers", "num_layers", None),
    ("num_attention_heads", "num_heads", None),
    ("hidden_size", "hidden_dim", None),
    ("intermediate_size", "intermediate_dim", None),
    ("hidden_dropout_prob", "dropout", 0.1),
    ("max_position_embeddings", "max_sequence_length", 512),
    ("type_vocab_size", "num_segments", 2),
    ("initializer_range", "initializer_range", 0.02),
)


# Sizes are read before the backbone checks them (vocab_size against vocab.txt): a string "15" would be
# reported as 15 tokens disagreeing with vocab_size=15.
_SIZE_KEYS = ("vocab_size", "num_hidden_layers", "num_attention_heads", "hidden_size", "intermediate_size",
              "max_position_embeddings", "type_vocab_size")


def config_key(ours):
    """The checkpoint config's name for our `BertBackbone` argument `ours` (`max_sequence_length`:
    `max_position_embeddings`)."""
    return next(theirs for theirs, key, _ in _BACKBONE_KEYS if key == ours)


def backbone_config(config, layer_norm_epsilon, hidden_activation):
    """`BertBackbone` arguments from a checkpoint's config.

    Args:
        config: the `bert_config.json` or `config.json` dict.
        layer_norm_epsilon: the checkpoint's LayerNorm epsilon (Google's
            code hard-codes it; HF's config says it).
        hidden_activation: our name of its `hidden_act` (the two formats
            mean different functions by "gelu").

    Returns:
        A dict of `BertBackbone` keyword arguments.

    Raises:
        ValueError: a required key is missing, or a size is not a whole number.

    Examples:
    >>> config = backbone_config({"vocab_size": 30, "num_hidden_layers": 2, "num_attention_heads": 2,
    ...                           "hidden_size": 8, "intermediate_size": 16}, 1e-12, "gelu")
    >>> config["num_layers"], config["max_sequence_length"]
    (2, 512)
    """
    missing = [theirs for theirs, _, default in _BACKBONE_KEYS if default is None and theirs not in config]
    if missing:
        raise ValueError(f"it has no {missing[0]!r}")
    for key in _SIZE_KEYS:
        value = config.get(key)
        if key in config and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{key} is {untrusted_repr(value)}, not a whole number")
    backbone = {ours: config.get(theirs, default) for theirs, ours, default in _BACKBONE_KEYS}
    backbone.update(layer_norm_epsilon=layer_norm_epsilon, hidden_activation=hidden_activation)
    return backbone


def is_float_dtype(dtype):
    """Whether numpy `dtype` holds floating-point weights (bfloat16, which numpy lacks, too)."""
    return dtype.kind == "f" or dtype == ml_dtypes.bfloat16


def infer_lowercase(vocabulary):
    """An uncased vocabulary has no upper-case letters outside [SPECIAL] tokens."""
    for token in vocabulary:
        if token.startswith("[") and token.endswith("]"):
            continue
        if token != token.lower():
            return False
    return True


def read_vocabulary(path, vocab_size, source):
    vocabulary = load_vocabulary(path)
    if len(vocabulary) != vocab_size:
        raise CheckpointError(
            f"The vocabulary {path} has {len(vocabulary)} tokens but the config of "
            f"{source} says vocab_size={vocab_size}. The vocab.txt does not belong to "
            "this checkpoint: use the vocab.txt released with it."
        )
    return vocabulary
