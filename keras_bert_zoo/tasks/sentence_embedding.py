"""Sentence vectors from any backbone: [CLS], pooled, or masked mean."""

import numpy as np
import tensorflow as tf

from keras_bert_zoo.layers.pooling import POOLINGS
from keras_bert_zoo.layers.pooling import pool
from keras_bert_zoo.models.bert_backbone import BertBackbone
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_zoo.presets.registry import DEFAULT_PRESET
from keras_bert_zoo.tokenizers.text_inputs import check_texts
from keras_bert_zoo.tokenizers.text_inputs import text_columns
from keras_bert_zoo.utils.progress_bar import progress_bar
from keras_bert_zoo.utils.traced_method import traced_method


def encode_texts(
    texts,
    preset=DEFAULT_PRESET,
    backbone=None,
    preprocessor=None,
    pooling="mean",
    sequence_length=128,
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
        sequence_length: the packed length when the preprocessor is loaded here.
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
    backbone = backbone or BertBackbone.from_preset(preset)
    if not texts:
        return np.zeros((0, backbone.hidden_dim), "float32")
    preprocessor = preprocessor or BertPreprocessor.from_preset(preset, sequence_length=sequence_length)

    # Traced once per backbone and preprocessor, not per call (a new trace cost every call ~1.2 s with MiniLM).
    pack, forward = traced_method(preprocessor, "__call__"), traced_method(backbone, "__call__")
    # The [CLS] poolings read one row of the last layer, which then runs on [CLS] alone ("cls" asks for its
    # row of sequence_output; "pooled" gets it from the pooler).
    rows = {"mean": None, "cls": 1, "pooled": 0}[pooling]
    vectors = []
    for start in progress_bar(range(0, len(texts), batch_size), progress, desc="encode", unit="batch"):
        inputs = pack(text_columns(texts[start : start + batch_size]))
        positions = None if rows is None else tf.zeros([inputs["token_ids"].shape[0], rows], "int32")
        vectors.append(pool(forward(inputs, training=False, positions=positions), inputs["padding_mask"],
                            pooling).numpy())
    vectors = np.concatenate(vectors).astype("float32")
    if normalize:
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors
