"""One round trip for every model test: save, load back, the same weights bit for bit.

Each test then compares its own model's answers (probabilities, tags, spans),
which is what a user gets back.
"""

import os

import keras
import numpy as np

import keras_bert_zoo as kbz


def _same_weights(restored, model):
    assert len(restored.weights) == len(model.weights), (len(restored.weights), len(model.weights))
    for a, b in zip(restored.weights, model.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=b.path)


def keras_file_round_trip(model, directory, name="model"):
    """`model.save` to a `.keras` file and `keras.saving.load_model` it back."""
    path = os.path.join(str(directory), f"{name}.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is type(model)
    _same_weights(restored, model)
    return restored


def preset_round_trip(model, directory, name="preset"):
    """`save_to_preset` and `Task.from_preset` back: the saved class, whole."""
    path = os.path.join(str(directory), name)
    model.save_to_preset(path)
    restored = kbz.Task.from_preset(path)
    assert type(restored) is type(model)
    _same_weights(restored, model)
    return restored
