"""What every preprocessing layer shares: a tokenizer and a packed length."""

import keras


class TextPreprocessor(keras.layers.Layer):
    """Base of the in-graph preprocessing layers (no weights).

    Args:
        tokenizer: a `BertTokenizer`.
        sequence_length: the packed length.
        max_sequence_length: the model's number of positions, if known;
            a larger `sequence_length` is refused.
    """

    def __init__(self, tokenizer, sequence_length=512, max_sequence_length=None, **kwargs):
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
        if sequence_length < 3:
            raise ValueError(f"sequence_length must be at least 3 ([CLS] x [SEP]); got {sequence_length}.")
        self.tokenizer = tokenizer
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
