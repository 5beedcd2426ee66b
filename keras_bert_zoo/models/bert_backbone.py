"""The BERT encoder: embeddings, a stack of post-LN Transformer layers, pooler."""

import inspect
import math
import numbers

import keras
import tensorflow as tf

from keras_bert_zoo.layers.activations import get_activation
from keras_bert_zoo.layers.bert_embedding import BertEmbedding
from keras_bert_zoo.layers.bert_encoder_layer import BertEncoderLayer
from keras_bert_zoo.preprocessing.model_inputs import MODEL_INPUTS
from keras_bert_zoo.presets.loader import load_backbone
from keras_bert_zoo.presets.preset_io import save_preset
from keras_bert_zoo.tokenizers.tokenizer_argument import check_tokenizer
from keras_bert_zoo.utils.garbage_collection import one_garbage_collection
from keras_bert_zoo.utils.model_names import note_name
from keras_bert_zoo.utils.model_names import own_name
from keras_bert_zoo.utils.renamed_attributes import renamed_attribute


_SIZES = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "max_sequence_length",
          "num_segments")


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def check_backbone_config(**config):
    """Refuse a config that cannot describe a BERT, before anything is built.

    Every path to a backbone (a saved preset's `config.json`, a converted
    checkpoint, a user's arguments) passes here, so a bad value is named
    here rather than surfacing as a shape error or an exhausted memory.

    Raises:
        ValueError: naming the first bad entry and what it must be.
    """
    for key in _SIZES:
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{key} must be a positive integer; got {value!r}.")
    if config["hidden_dim"] % config["num_heads"]:
        raise ValueError(f"hidden_dim={config['hidden_dim']} is not divisible by num_heads={config['num_heads']}: "
                         "each head gets hidden_dim / num_heads dimensions.")
    if not _is_number(config["dropout"]) or not 0 <= config["dropout"] < 1:
        raise ValueError(f"dropout must be a rate in [0, 1); got {config['dropout']!r}.")
    for key in ("layer_norm_epsilon", "initializer_range"):
        if not _is_number(config[key]) or config[key] <= 0:
            raise ValueError(f"{key} must be a positive number; got {config[key]!r}.")
    try:
        get_activation(config["hidden_activation"])
    except (ValueError, TypeError):
        raise ValueError(f"hidden_activation {config['hidden_activation']!r} is unknown: use 'gelu' (erf), "
                         "'gelu_tanh' (Google's original), 'relu' or another Keras activation name.") from None


def _check_positions(positions, token_ids):
    if len(positions.shape) != 2:
        raise ValueError(f"positions must be [batch, n] token positions; got shape {tuple(positions.shape)}. "
                         "Pass [batch, 0] for [CLS] alone.")
    dtype = keras.backend.standardize_dtype(positions.dtype)
    if "int" not in dtype:
        # A float position would be truncated to a token silently.
        raise TypeError(f"positions must be integer token positions; got dtype {dtype}. Pass int32 positions "
                        "(np.zeros((batch, 0), 'int32') for [CLS] alone).")
    rows, sequences = positions.shape[0], token_ids.shape[0]
    if rows is not None and sequences is not None and rows != sequences:
        raise ValueError(f"positions must have one row per sequence; got {rows} rows for {sequences} sequences.")


def _check_positions_in_range(positions, length):
    # A gather out of range errs on CPU naming no argument and reads garbage on a GPU (XLA drops this check).
    in_range = (positions >= -length) & (positions < length)
    message = ("positions (the mask_positions of a pretrainer) must index the sequence: each in [-sequence_length, "
               "sequence_length), sequence_length being the second dimension of token_ids; build them with the same "
               "sequence_length as token_ids.")
    if tf.executing_eagerly():
        if not bool(keras.ops.all(in_range)):
            outside = tf.boolean_mask(positions, ~in_range)[:8].numpy().tolist()
            raise ValueError(f"{message} Got {outside} for sequence_length {int(length)}.")
        return positions
    check = tf.debugging.Assert(keras.ops.all(in_range), [message, "Got positions", positions, "for sequence_length",
                                                          length], summarize=8)
    # The positions flow on only through the check: otherwise a gather could run first and fail without it.
    with tf.control_dependencies([check]):
        return tf.identity(positions)


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertBackbone(keras.Model):
    """BERT encoder network (Devlin et al., 2019) with a configurable GELU.

    Takes packed int32 inputs (see `BertPreprocessor`) and returns the last
    layer's token vectors and the tanh-pooled `[CLS]` vector; with
    `return_all_layers=True` also the embedding output and every encoder
    layer's output (for feature extraction from layers -1..-4).

    Args:
        vocabulary_size: number of word-pieces.
        num_layers: number of Transformer layers.
        num_heads: attention heads per layer.
        hidden_dim: width of the token vectors.
        intermediate_dim: width of the feed-forward layer.
        dropout: dropout rate (hidden and attention).
        max_sequence_length: number of position embeddings.
        num_segments: number of segment (token type) embeddings.
        layer_norm_epsilon: LayerNorm epsilon.
        hidden_activation: `"gelu"` (exact erf, HF's `gelu`), `"gelu_tanh"`
            (Google's original and HF's `gelu_new`) or `"relu"`.
        initializer_range: stddev of the truncated-normal initializer.
        return_all_layers: also output `embedding_output` and
            `encoder_outputs` (`[batch, num_layers, seq, hidden]`).
        dtype: dtype policy, e.g. `"mixed_bfloat16"`.

    Inputs:
        A dict of int32 `[batch, seq]` tensors `token_ids`, `segment_ids`,
        `padding_mask` (1 for real tokens).

    Call args:
        inputs: the dict above.
        positions: optional int `[batch, n]` token positions: run the last
            layer only on `[CLS]` and these tokens (keys and values still
            come from every token) and return `sequence_output` `[batch, n,
            hidden]`, the rows of the full output at these positions. A head
            that reads `[CLS]` (a classifier, next-sentence prediction; pass
            `[batch, 0]`) or a few positions (the masked-LM head) needs no
            other row of the last layer: at 128 tokens this skips most of a
            layer's work, in training and inference. Negative positions count
            from the end; each must lie in `[-seq, seq)`: one outside is an
            error naming `positions` (`ValueError` eagerly,
            `InvalidArgumentError` in a graph; not checked under XLA). With
            `return_all_layers=True` the whole last layer runs: its other
            outputs are whole.

    Outputs:
        A dict with `sequence_output` `[batch, seq, hidden]` and
        `pooled_output` `[batch, hidden]`.

    Examples:
    >>> import numpy as np
    >>> backbone = BertBackbone(vocabulary_size=30, num_layers=2, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=16,
    ...                         max_sequence_length=16)
    >>> inputs = {"token_ids": np.array([[2, 7, 3, 0]], "int32"),
    ...           "segment_ids": np.zeros((1, 4), "int32"),
    ...           "padding_mask": np.array([[1, 1, 1, 0]], "int32")}
    >>> tuple(backbone(inputs)["sequence_output"].shape)
    (1, 4, 8)
    >>> at = backbone(inputs, positions=np.array([[2]], "int32"))
    >>> full = backbone(inputs)["sequence_output"]
    >>> bool(np.allclose(at["sequence_output"][0, 0], full[0, 2], atol=1e-6))
    True
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        layer_norm_epsilon=1e-12,
        hidden_activation="gelu",
        initializer_range=0.02,
        return_all_layers=False,
        dtype=None,
        **kwargs,
    ):
        check_backbone_config(
            vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim,
            intermediate_dim=intermediate_dim, dropout=dropout, max_sequence_length=max_sequence_length,
            num_segments=num_segments, layer_norm_epsilon=layer_norm_epsilon, hidden_activation=hidden_activation,
            initializer_range=initializer_range,
        )
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)

        # === Layers ===
        self.embeddings = BertEmbedding(
            vocabulary_size=vocabulary_size,
            max_sequence_length=max_sequence_length,
            num_segments=num_segments,
            hidden_dim=hidden_dim,
            dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range,
            dtype=dtype,
            name="embeddings",
        )
        self.transformer_layers = [
            BertEncoderLayer(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                activation=get_activation(hidden_activation),
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=initializer,
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        self.pooled_dense = keras.layers.Dense(
            hidden_dim,
            activation="tanh",
            kernel_initializer=initializer,
            dtype=dtype,
            name="pooled_dense",
        )

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in MODEL_INPUTS}
        embedded, layer_outputs = self._encode(inputs)
        x = layer_outputs[-1]
        pooled = self.pooled_dense(x[:, 0, :])
        outputs = {"sequence_output": x, "pooled_output": pooled}
        if return_all_layers:
            outputs["embedding_output"] = embedded
            outputs["encoder_outputs"] = keras.ops.stack(layer_outputs, axis=1)
        super().__init__(
            inputs=inputs,
            outputs=outputs,
            dtype=dtype,
            **kwargs,
        )
        note_name(self, kwargs.get("name"))
        # keras.Model drops `dtype` and takes the global policy; the layers above took `dtype`, and so does
        # the model's `dtype_policy` (which get_config saves), as in keras-hub's backbones.
        if dtype is not None:
            self.dtype_policy = keras.dtype_policies.get(dtype)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.layer_norm_epsilon = layer_norm_epsilon
        self.hidden_activation = hidden_activation
        self.initializer_range = initializer_range
        self.return_all_layers = return_all_layers

    def _encode(self, inputs, last_layer_positions=None):
        token_ids, segment_ids, padding_mask = (inputs[name] for name in MODEL_INPUTS)
        embedded = self.embeddings(token_ids, segment_ids)
        x, layer_outputs = embedded, []
        for layer in self.transformer_layers:
            last = layer is self.transformer_layers[-1]
            x = layer(x, padding_mask=padding_mask, query_positions=last_layer_positions if last else None)
            layer_outputs.append(x)
        return embedded, layer_outputs

    def call(self, inputs, training=None, mask=None, positions=None):
        if positions is None:
            return super().call(inputs, training=training, mask=mask)
        token_ids = inputs["token_ids"]
        positions = keras.ops.convert_to_tensor(positions)
        _check_positions(positions, inputs["token_ids"])
        positions = keras.ops.cast(positions, token_ids.dtype)
        length = keras.ops.cast(keras.ops.shape(token_ids)[1], positions.dtype)
        positions = _check_positions_in_range(positions, length)
        # Negative positions count from the end, as the masked-LM head's own gather reads them.
        positions = keras.ops.where(positions < 0, positions + length, positions)
        if self.return_all_layers:
            # Every layer's whole output is asked for: nothing of the last one can be skipped.
            outputs = dict(super().call(inputs, training=training, mask=mask))
            outputs["sequence_output"] = keras.ops.take_along_axis(outputs["sequence_output"],
                                                                   positions[:, :, None], axis=1)
            return outputs
        # [CLS] first, for the pooler; its row is not returned.
        queried = keras.ops.concatenate([keras.ops.zeros_like(token_ids[:, :1]), positions], axis=1)
        x = self._encode({name: inputs[name] for name in MODEL_INPUTS}, last_layer_positions=queried)[1][-1]
        return {"sequence_output": x[:, 1:, :], "pooled_output": self.pooled_dense(x[:, 0, :])}

    def compute_output_spec(self, inputs, training=None, mask=None, positions=None):
        if positions is None:
            return super().compute_output_spec(inputs, training=training, mask=mask)
        _check_positions(positions, inputs["token_ids"])
        batch = inputs["token_ids"].shape[0]
        dtype = self.dtype_policy.compute_dtype
        spec = dict(super().compute_output_spec(inputs, training=training, mask=mask)) if self.return_all_layers \
            else {"pooled_output": keras.KerasTensor((batch, self.hidden_dim), dtype)}
        spec["sequence_output"] = keras.KerasTensor((batch, positions.shape[1], self.hidden_dim), dtype)
        return spec

    def __getattr__(self, name):
        # `pooler_dense`: the old name of `pooled_dense` (the layer's name, and keras-hub's).
        return renamed_attribute(self, name, {"pooler_dense": "pooled_dense"})

    @property
    def token_embedding(self):
        """The (reversible) word-piece embedding, for tied output heads."""
        return self.embeddings.token_embedding

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """Keras' `Model.quantize`, with one garbage collection for all the kernels it replaces (Keras runs one for
        each: see `utils.garbage_collection`)."""
        with one_garbage_collection():
            super().quantize(mode, config=config, filters=filters, **kwargs)

    def get_config(self):
        return {
            "name": own_name(self),
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "hidden_activation": self.hidden_activation,
            "initializer_range": self.initializer_range,
            "return_all_layers": self.return_all_layers,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        # keras.Model swallows unknown keyword arguments: a misspelt key would be ignored silently.
        known = set(inspect.signature(cls.__init__).parameters) | {"name", "trainable"}
        unknown = sorted(set(config) - known)
        if unknown:
            keys = ", ".join(sorted(known - {"self", "kwargs"}))
            raise ValueError(f"unknown config key '{unknown[0]}'; the keys are: {keys}.")
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Create a backbone from a preset name, directory, `hf://` handle or URL.

        Args:
            preset: see `keras_bert_zoo.list_presets()`; or a directory saved
                by `save_to_preset`, an HF-format directory (config.json +
                model.safetensors or pytorch_model.bin + vocab.txt), a
                Google-format directory (bert_config.json + bert_model.ckpt.*
                + vocab.txt), `hf://org/name`, or an http(s) archive URL.
            load_weights: load the pretrained weights (else random init).
            **kwargs: config overrides, e.g. `return_all_layers=True`,
                `dtype="mixed_bfloat16"`, `dropout=0.0`.

        Examples:
        >>> backbone = BertBackbone.from_preset("minilm_l6_h384_en_uncased")
        >>> backbone.hidden_dim
        384
        """
        return load_backbone(preset, cls=cls, load_weights=load_weights, **kwargs)

    def save_to_preset(self, preset_dir, tokenizer=None):
        """Write a preset directory that `from_preset(preset_dir)` loads.

        Layout as keras-hub's: `config.json`, `model.weights.h5`,
        `tokenizer.json`, `assets/tokenizer/vocabulary.txt`, `metadata.json`.
        The directory is written atomically: new, empty, or a saved preset
        (replaced as a whole); one holding anything else is refused, as is
        the current directory or one holding it. Through a symbolic link
        the link's target is written and the link kept.
        """
        check_tokenizer(tokenizer, f"{type(self).__name__}.save_to_preset", required=False)
        save_preset(preset_dir, backbone=self, tokenizer=tokenizer)
