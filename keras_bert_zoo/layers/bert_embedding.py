"""BERT's input embedding: word + position + segment, then LayerNorm."""

import keras
from keras_hub.layers import TokenAndPositionEmbedding


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertEmbedding(keras.layers.Layer):
    """Sum of token, position and segment embeddings, layer-normalised.

    Token and position embeddings come from keras-hub's
    `TokenAndPositionEmbedding` (its token embedding is reversible, so a
    masked-LM head can tie its decoder to it); the segment ("token type")
    embedding has `num_segments` rows as the checkpoint defines.

    Args:
        vocabulary_size: number of word-pieces.
        max_sequence_length: number of position embeddings.
        num_segments: number of segment (token type) embeddings.
        hidden_dim: embedding width.
        dropout: dropout rate after the LayerNorm.
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.

    Call args:
        token_ids: int tensor `[batch, seq]`.
        segment_ids: int tensor `[batch, seq]`.

    Examples:
    >>> layer = BertEmbedding(10, 8, 2, 4, dropout=0.0)
    >>> tuple(layer(keras.ops.zeros((1, 3), "int32"),
    ...             keras.ops.zeros((1, 3), "int32")).shape)
    (1, 3, 4)
    """

    def __init__(
        self,
        vocabulary_size,
        max_sequence_length,
        num_segments,
        hidden_dim,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.hidden_dim = hidden_dim
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.token_and_position_embedding = TokenAndPositionEmbedding(
            vocabulary_size=vocabulary_size,
            sequence_length=max_sequence_length,
            embedding_dim=hidden_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="token_and_position_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            input_dim=num_segments,
            output_dim=hidden_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="segment_embedding",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="embeddings_layer_norm"
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="embeddings_dropout")

    @property
    def token_embedding(self):
        return self.token_and_position_embedding.token_embedding

    @property
    def position_embedding(self):
        return self.token_and_position_embedding.position_embedding

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_and_position_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        if self.token_embedding.quantization_mode is None:
            x = self.token_and_position_embedding(token_ids)
        else:
            # Keras' int8 embedding returns float32 under a mixed policy, which keras-hub's sum with the
            # 16-bit position embedding refuses: the same sum, in the compute dtype.
            tokens = keras.ops.cast(self.token_embedding(token_ids), self.compute_dtype)
            x = tokens + self.position_embedding(tokens)
        x = x + keras.ops.cast(self.segment_embedding(segment_ids), self.compute_dtype)
        x = self.layer_norm(x)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "hidden_dim": self.hidden_dim,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
