"""Run by the distribution tests in a fresh process (logical devices must be set
before TensorFlow starts): train a small pretrainer the same way under a given
strategy and print its losses and a weight checksum as JSON.

Usage: python -m tests.strategy_runner {default,mirrored,multiworker} [jit]
(multiworker: one worker of the cluster in TF_CONFIG; writes its weights to $WEIGHTS_OUT.)
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

if sys.argv[1:2] == ["mirrored"]:  # two replicas on one CPU
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

import keras_bert_zoo as kbz  # noqa: E402
from keras_bert_zoo.data.pretraining_records import pretraining_batches  # noqa: E402


def batches(vocabulary_size=50, count=32, length=16, predictions=3, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, vocabulary_size, (count, length)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 2, 3
    positions = np.sort(rng.choice(np.arange(1, length - 1), (count, predictions)), axis=1).astype("int32")
    return {
        "token_ids": token_ids,
        "segment_ids": (np.arange(length) >= length // 2).astype("int32")[None].repeat(count, 0),
        "padding_mask": np.ones((count, length), "int32"),
        "mask_positions": positions,
        "mask_ids": np.take_along_axis(token_ids, positions, 1),
        "mask_weights": np.ones((count, predictions), "int32"),
        "next_sentence_label": rng.integers(0, 2, count).astype("int32"),
    }


def main(kind, jit=False):
    if kind == "multiworker":
        strategy = kbz.distribution.get_strategy("multiworker")
    elif kind == "mirrored":
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    else:
        strategy = tf.distribute.get_strategy()
    keras.utils.set_random_seed(1)
    with strategy.scope():
        backbone = kbz.BertBackbone(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                                    dropout=0.0, max_sequence_length=16)
        model = kbz.BertPretrainer(backbone)
        model.compile(learning_rate=1e-3, total_steps=8, jit_compile=jit, steps_per_execution=2 if jit else 1)
    history = model.fit(pretraining_batches(batches(), batch_size=8), epochs=2, verbose=0)
    if os.environ.get("WEIGHTS_OUT"):
        np.savez(os.environ["WEIGHTS_OUT"], *model.get_weights())
    print(json.dumps({"loss": history.history["loss"], "replicas": strategy.num_replicas_in_sync,
                      "checksum": float(sum(np.abs(w).sum() for w in model.get_weights()))}))


if __name__ == "__main__":
    main(sys.argv[1], jit=sys.argv[2:] == ["jit"])
