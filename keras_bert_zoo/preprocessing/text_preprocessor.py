"""What every preprocessing layer shares: a tokenizer and a packed length."""

import keras

from keras_bert_zoo.preprocessing.special_tokens import shortest_sequence_length
from keras_bert_zoo.presets.loader import load_backbone_config
from keras_bert_zoo.presets.loader import load_tokenizer
from keras_bert_zoo.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_zoo.tokenizers.tokenizer_argument import check_tokenizer
from keras_bert_zoo.utils.packed_length import packed_length

# The packed length of a preprocessor built without one (keras-hub's BertPreprocessor's).
DEFAULT_SEQUENCE_LENGTH = 512


class TextPreprocessor(keras.layers.Layer):
    """Base of the in-graph preprocessing layers (no weights).

    Args:
        tokenizer: a `BertTokenizer`.
        sequence_length: the packed length.
        max_sequence_length: the model's number of positions, if known;
            a larger `sequence_length` is refused.
    """

    # What `from_preset` builds the tokenizer as.
    tokenizer_cls = BertTokenizer

    def __init__(self, tokenizer, sequence_length=DEFAULT_SEQUENCE_LENGTH, max_sequence_length=None, **kwargs):
        super().__init__(**kwargs)
        # String (and ragged) inputs must reach `call` untouched.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if max_sequence_length is not None and sequence_length > max_sequence_length:
            raise ValueError(
                f"sequence_length={sequence_length} is longer than the model's "
                f"{max_sequence_length} position embeddings. Use "
                f"sequence_length <= {max_sequence_length} (long texts are "
                "handled by windowing in the task models)."
            )
        if sequence_length < shortest_sequence_length(1):
            raise ValueError(f"sequence_length must be at least {shortest_sequence_length(1)} ([CLS] x [SEP]); "
                             f"got {sequence_length}.")
        self.tokenizer = check_tokenizer(tokenizer, type(self).__name__, cls=self.tokenizer_cls)
        self.sequence_length = int(sequence_length)
        self.max_sequence_length = max_sequence_length
        self.built = True  # no weights

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.layers.serialize(self.tokenizer),
                "sequence_length": self.sequence_length,
                "max_sequence_length": self.max_sequence_length,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["tokenizer"] = keras.layers.deserialize(config["tokenizer"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, sequence_length=None, **kwargs):
        """Create the preprocessor of a preset.

        Args:
            preset: a preset name, a local directory, an `hf://` handle or
                an archive URL.
            sequence_length: the packed length, at most the preset's
                positions (default: 512, cut to the positions; see
                `utils.packed_length`).
            **kwargs: passed to the constructor.

        Returns:
            A `cls` with the preset's tokenizer (`cls.tokenizer_cls`).

        Raises:
            ValueError: a `sequence_length` given beyond the preset's
                positions.

        Examples:
        >>> from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
        >>> BertPreprocessor.from_preset("minilm_l6_h384_en_uncased", sequence_length=16).sequence_length
        16
        """
        tokenizer = load_tokenizer(preset, cls.tokenizer_cls)
        max_sequence_length = load_backbone_config(preset)["max_sequence_length"]
        length = packed_length(sequence_length, DEFAULT_SEQUENCE_LENGTH, max_sequence_length)
        return cls(tokenizer, sequence_length=length, max_sequence_length=max_sequence_length, **kwargs)
