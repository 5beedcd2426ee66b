"""What every checkpoint reader returns."""

import dataclasses

from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.utils.vocabulary_file import load_vocabulary


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint read into memory, independent of its file format.

    Attributes:
        config: `BertBackbone` constructor arguments.
        vocabulary: list of tokens.
        lowercase: whether the tokenizer lower-cases.
        source: where it was read from (for messages).
        read_weights: a function returning {Google variable name: numpy
            array in Google orientation}; weights are read only when needed.
    """

    config: dict
    vocabulary: list
    lowercase: bool
    source: str
    read_weights: object


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
