"""Per-token features from chosen layers, as google-research/bert's
extract_features.py writes them."""

import json
import warnings

import numpy as np
import tensorflow as tf

from keras_bert_zoo.models.bert_backbone import BertBackbone
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_zoo.tokenizers.text_inputs import check_texts
from keras_bert_zoo.utils.atomic import atomic_file
from keras_bert_zoo.utils.packed_length import packed_length
from keras_bert_zoo.utils.progress_bar import progress_bar

# extract_features.py's --layers (the last four), or every layer of a model of fewer.
DEFAULT_LAYERS = (-1, -2, -3, -4)
# extract_features.py's --max_seq_length, or the model's positions where it has fewer.
DEFAULT_SEQUENCE_LENGTH = 128


def _all_layers_backbone(backbone):
    """The same weights with every layer's output exposed."""
    if backbone.return_all_layers:
        return backbone
    config = dict(backbone.get_config(), return_all_layers=True)
    clone = type(backbone).from_config(config)
    clone.set_weights(backbone.get_weights())
    return clone


def default_layers(num_layers):
    """`DEFAULT_LAYERS` a model of `num_layers` encoder layers has: all four, or all of a smaller model's (a
    default nobody asked for is never the reason it is refused).

    Examples:
    >>> default_layers(12), default_layers(2)
    ((-1, -2, -3, -4), (-1, -2))
    """
    return tuple(layer for layer in DEFAULT_LAYERS if layer >= -num_layers)


def extract_features(texts, preset=None, backbone=None, preprocessor=None, layers=None,
                     sequence_length=None, batch_size=8, progress=False, max_seq_length=None):
    """Yield, per text, its word-pieces and their vectors from `layers`.

    Args:
        texts: strings or `(text_a, text_b)` pairs.
        preset: preset to load when `backbone` / `preprocessor` are not given.
        layers: encoder layer indices; -1 is the last layer (0 is the first
            encoder layer, as `all_encoder_layers` in the original code).
            Default: the last four, or all of a model of fewer
            (`default_layers`).
        sequence_length: the packed length when the preprocessor is loaded
            here (extract_features.py's `--max_seq_length`), at most the
            model's positions (default: 128, cut to the positions; see
            `utils.packed_length`).
        max_seq_length: the old name of `sequence_length` (deprecated).

    Yields:
        Dicts `{"linex_index", "features": [{"token", "layers": [{"index",
        "values"}]}]}`, the JSON records of extract_features.py
        (`linex_index`, the text's line number from 0, is spelled as that
        script spells it, so that readers of its output read these).
    """
    if max_seq_length is not None:
        warnings.warn("extract_features' `max_seq_length` is now `sequence_length` (as in encode_texts and the "
                      "preprocessors); `max_seq_length` will be removed in the next release.", DeprecationWarning,
                      stacklevel=2)
        sequence_length = max_seq_length
    texts = check_texts(texts)
    backbone = _all_layers_backbone(backbone or BertBackbone.from_preset(preset))
    layers = default_layers(backbone.num_layers) if layers is None else layers
    for layer in layers:
        if not -backbone.num_layers <= layer < backbone.num_layers:
            raise ValueError(f"Layer {layer} does not exist: the model has {backbone.num_layers} layers.")
    preprocessor = preprocessor or BertPreprocessor.from_preset(
        preset, sequence_length=packed_length(sequence_length, DEFAULT_SEQUENCE_LENGTH, backbone.max_sequence_length))
    tokenizer = preprocessor.tokenizer

    positive = [layer % backbone.num_layers for layer in layers]

    @tf.function(reduce_retracing=True)
    def forward(inputs):
        return tf.gather(backbone(inputs, training=False)["encoder_outputs"], positive, axis=1)

    index = 0
    for start in progress_bar(range(0, len(texts), batch_size), progress, desc="extract", unit="batch"):
        inputs = preprocessor(texts[start : start + batch_size])
        values = forward(inputs).numpy()
        token_ids, mask = inputs["token_ids"].numpy(), inputs["padding_mask"].numpy()
        for row in range(len(token_ids)):
            features = []
            for position in np.flatnonzero(mask[row]):
                features.append({
                    "token": tokenizer.id_to_token(token_ids[row, position]),
                    "layers": [
                        {"index": layer, "values": [round(float(v), 6) for v in values[row, k, position]]}
                        for k, layer in enumerate(layers)
                    ],
                })
            yield {"linex_index": index, "features": features}  # sic: extract_features.py's key
            index += 1


def write_features(records, path):
    """Write feature records as JSON lines, atomically."""
    with atomic_file(path, "w") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
