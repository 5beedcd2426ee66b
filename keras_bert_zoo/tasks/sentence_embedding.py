"""Sentence vectors from any backbone: [CLS], pooled, or masked mean."""

import numpy as np

from keras_bert_zoo.layers.pooling import POOLINGS
from keras_bert_zoo.layers.pooling import pool
from keras_bert_zoo.models.bert_backbone import BertBackbone
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_zoo.presets.registry import DEFAULT_PRESET
from keras_bert_zoo.tasks.task import checked_batch_size
from keras_bert_zoo.tokenizers.text_inputs import check_texts
from keras_bert_zoo.utils.packed_length import packed_length
from keras_bert_zoo.utils.progress_bar import progress_bar

# The packed length without one, or the model's positions where it has fewer.
DEFAULT_SEQUENCE_LENGTH = 128


def encode_texts(
    texts,
    preset=DEFAULT_PRESET,
    backbone=None,
    preprocessor=None,
    pooling="mean",
    sequence_length=None,
    batch_size=32,
    normalize=False,
    progress=False,
):
    """Encode texts (or text pairs) into a float32 matrix of sentence vectors.

    Args:
        texts: a list of strings or `(text_a, text_b)` pairs.
        preset: the preset to load when `backbone`/`preprocessor` are not given
            (seconds each call: to encode batch after batch, load them once
            and pass them).
        backbone: a `BertBackbone` (optional).
        preprocessor: a `BertPreprocessor` (optional).
        pooling: `"mean"`, `"cls"` or `"pooled"` (see `pool`).
        sequence_length: the packed length when the preprocessor is loaded
            here, at most the model's positions (default: 128, cut to the
            positions; see `utils.packed_length`).
        batch_size: texts per forward pass.
        normalize: L2-normalise each vector.
        progress: show a progress bar.

    Returns:
        A numpy array `[len(texts), hidden_dim]` (`[0, hidden_dim]` for no texts).

    Raises:
        TypeError / ValueError: a text that is not a string (or a pair of
            strings), named by its index, before any model is loaded.

    Examples:
    >>> vectors = encode_texts(["A cat sat.", "A dog ran."])
    >>> vectors.shape
    (2, 384)
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}; got '{pooling}'.")
    texts = check_texts(texts)
    batch_size = checked_batch_size(batch_size)
    backbone = backbone or BertBackbone.from_preset(preset)
    if not texts:
        return np.zeros((0, backbone.hidden_dim), "float32")
    preprocessor = preprocessor or BertPreprocessor.from_preset(
        preset, sequence_length=packed_length(sequence_length, DEFAULT_SEQUENCE_LENGTH, backbone.max_sequence_length))

    vectors = []
    for start in progress_bar(range(0, len(texts), batch_size), progress, desc="encode", unit="batch"):
        # Packed eagerly: it warns of truncated texts and takes batches mixing single texts and pairs.
        inputs = preprocessor(texts[start : start + batch_size])
        # Keras' predict function, traced once per backbone (and again after `quantize`): a tf.function
        # made for each call traced the backbone every time (~1.2 s with MiniLM on 2 cores).
        outputs = backbone.predict_on_batch(inputs)
        vectors.append(np.asarray(pool(outputs, inputs["padding_mask"], pooling)))
    vectors = np.concatenate(vectors).astype("float32")
    if normalize:
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors
