"""Run by tests/test_replica_clipping_warning.py in a fresh process (importing tests.replica_clipping_runner sets
two logical CPUs before TensorFlow starts): per case, the warnings `Task.compile` gives for an optimizer under a
strategy, and whether that optimizer's steps on the strategy's replicas differ from one device's on the summed
gradients. Prints one JSON object: {case: {"warnings": [{"message", "filename"}], "differs": bool or None}}.

Usage: python -m tests.clipping_warning_runner
"""

import functools
import json
import warnings

# First: importing it sets the two logical CPUs, before anything starts TensorFlow's devices.
from tests.replica_clipping_runner import MIRRORED
from tests.replica_clipping_runner import apply_steps
from tests.replica_clipping_runner import replica_gradients

import keras
import numpy as np
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.optimization.fused_adamw import FusedAdamW
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]


def optimizer(cls, clipping, loss_scale=False, **kwargs):
    """`cls` with `apply_steps`' arguments, its clipping replaced by `clipping` (e.g. {"clipnorm": 1.0})."""
    kwargs.pop("global_clipnorm", None)
    made = cls(**kwargs, **clipping)
    return keras.optimizers.LossScaleOptimizer(made) if loss_scale else made


def compile_warnings(task_class, strategy, make_optimizer):
    with strategy.scope():
        backbone = kbz.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
                                    intermediate_dim=16, max_sequence_length=8)
        tokenizer = kbz.BertTokenizer(VOCABULARY)
        if task_class is kbz.BertTokenClassifier:
            task = task_class(backbone, TokenClassificationPreprocessor(tokenizer, 8), label_names=["O", "B-X", "I-X"])
        else:
            task = task_class(backbone, kbz.BertPreprocessor(tokenizer, 8), num_classes=2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            task.compile(optimizer=make_optimizer(learning_rate=0.1, weight_decay=0.1, epsilon=1.0,
                                                  global_clipnorm=1.0))
    return [{"message": str(w.message), "filename": w.filename} for w in caught
            if "clips each of the" in str(w.message)]


def main():
    one_device = tf.distribute.get_strategy()
    strategies = {"two": tf.distribute.MirroredStrategy(MIRRORED), "one": tf.distribute.MirroredStrategy(MIRRORED[:1])}
    steps = replica_gradients()
    cases = {
        "keras_global_clipnorm_two": (keras.optimizers.AdamW, {"global_clipnorm": 1.0}, "two"),
        "keras_clipnorm_two": (keras.optimizers.AdamW, {"clipnorm": 1.0}, "two"),
        "keras_clipvalue_two": (keras.optimizers.AdamW, {"clipvalue": 0.5}, "two"),
        "keras_no_clipping_two": (keras.optimizers.AdamW, {}, "two"),
        "keras_global_clipnorm_one": (keras.optimizers.AdamW, {"global_clipnorm": 1.0}, "one"),
        "fused_global_clipnorm_two": (FusedAdamW, {"global_clipnorm": 1.0}, "two"),
        "fused_clipnorm_two": (FusedAdamW, {"clipnorm": 1.0}, "two"),
    }
    results = {}
    for name, (cls, clipping, replicas) in cases.items():
        make = functools.partial(optimizer, cls, clipping)
        replicated = apply_steps(make, strategies[replicas], steps)
        alone = apply_steps(make, one_device, steps)
        results[name] = {"warnings": compile_warnings(kbz.BertClassifier, strategies[replicas], make),
                         "differs": any(not np.allclose(a, b, rtol=1e-5, atol=1e-6)
                                        for a, b in zip(replicated, alone))}
    # Through a loss-scaling wrapper and a task's own `compile` override: the same warning, at the caller.
    results["keras_loss_scaled_two"] = {"warnings": compile_warnings(
        kbz.BertClassifier, strategies["two"],
        functools.partial(optimizer, keras.optimizers.AdamW, {"global_clipnorm": 1.0}, loss_scale=True)),
        "differs": None}
    results["tagger_keras_global_clipnorm_two"] = {"warnings": compile_warnings(
        kbz.BertTokenClassifier, strategies["two"],
        functools.partial(optimizer, keras.optimizers.AdamW, {"global_clipnorm": 1.0})), "differs": None}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
