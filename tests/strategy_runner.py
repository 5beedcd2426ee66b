"""Run by the distribution tests in a fresh process (logical devices must be set
before TensorFlow starts): train a small pretrainer the same way under a given
strategy and print its losses and a weight checksum as JSON.

Usage: python -m tests.strategy_runner {default,mirrored,multiworker} [jit]
(multiworker: one worker of the cluster in TF_CONFIG; writes its weights to $WEIGHTS_OUT.)
Or: python -m tests.strategy_runner {mirrored,multiworker} resume GLOB STEP STEPS: which of the records that
`id_records` wrote to GLOB this process's replicas train on at each of STEPS steps, pretrain's record pipeline
(global batch 8) resumed at step STEP and distributed as Keras' fit distributes it.
Or: python -m tests.strategy_runner multiworker finetune CHECKPOINT OUTPUT_DIR: `kbz.finetune` a classifier of the
checkpoint for two steps into OUTPUT_DIR (weights to $WEIGHTS_OUT, the token ids it trained on to $FED_OUT; a
refused OUTPUT_DIR: exit 2 with its message; TensorFlow's random seed set to $SHUFFLE_SEED just before).
$UNRECORDED set: the process fails if it reads a job record (the other worker leaves the chief's alone).
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
from keras_bert_zoo.data.pretraining_records import read_pretraining_records  # noqa: E402
from keras_bert_zoo.data.pretraining_records import write_pretraining_records  # noqa: E402
from keras_bert_zoo.training.pretrain import _from_step  # noqa: E402
from keras_bert_zoo.tasks.task import Task  # noqa: E402
from keras_bert_zoo.utils import job_record  # noqa: E402
from keras_bert_zoo.utils.job_record import OutputDirectoryError  # noqa: E402
from tests.fed_batches import logging_keras_inputs  # noqa: E402


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


def id_records(paths, count=160):
    """Pretraining records of `count` instances round-robin over `paths`; instance i holds token id i at 1."""
    instances = batches(vocabulary_size=count, count=count)
    instances["token_ids"][:, 1] = np.arange(count)
    write_pretraining_records(instances, paths)


def _strategy(kind):
    if kind == "multiworker":
        return kbz.distribution.get_strategy("multiworker")
    if kind == "mirrored":
        return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    return tf.distribute.get_strategy()


def resumed_records(kind, pattern, step, steps):
    strategy = _strategy(kind)
    records = read_pretraining_records(pattern, max_seq_length=16, max_predictions_per_seq=3)
    train = pretraining_batches(records, 8, shuffle_buffer=16, seed=3, repeat=True)  # as pretrain_from_records'
    # What Keras' fit does with the Dataset it is given (TFEpochIterator).
    iterator = iter(strategy.experimental_distribute_dataset(_from_step(train, step)))
    taken = []
    for _ in range(steps):
        inputs, _, _ = next(iterator)
        taken.append([int(row[1]) for part in strategy.experimental_local_results(inputs["token_ids"])
                      for row in part.numpy()])
    print(json.dumps({"replicas": strategy.num_replicas_in_sync, "records": taken}))


def finetune(kind, checkpoint, output_dir):
    if os.environ.get("UNRECORDED"):
        def read_job(path):
            raise AssertionError(f"The other worker read the job record of {path}")

        job_record.read_job = read_job
    strategy = _strategy(kind)
    keras.utils.set_random_seed(1)
    with strategy.scope():
        task = kbz.BertClassifier.from_preset(checkpoint, num_classes=2, sequence_length=8)
        task.compile(learning_rate=1e-3)
    texts = ["all work", "no play", "a dull boy", "so it goes", "all play", "no work", "a dull play", "so dull"]
    fed = []
    Task._keras_inputs = logging_keras_inputs(fed)
    tf.random.set_seed(int(os.environ.get("SHUFFLE_SEED", 0)))  # as unseeded workers' draws, each its own
    try:
        kbz.finetune(task, texts, [0, 1, 1, 0] * 2, output_dir, epochs=1, batch_size=4, verbose=0)
    except OutputDirectoryError as e:
        print(e, file=sys.stderr)
        sys.exit(2)
    np.savez(os.environ["WEIGHTS_OUT"], *task.get_weights())
    if os.environ.get("FED_OUT"):
        np.save(os.environ["FED_OUT"], np.concatenate(fed))


def main(kind, jit=False):
    strategy = _strategy(kind)
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
    if sys.argv[2:3] == ["resume"]:
        resumed_records(sys.argv[1], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[2:3] == ["finetune"]:
        finetune(sys.argv[1], sys.argv[3], sys.argv[4])
    else:
        main(sys.argv[1], jit=sys.argv[2:] == ["jit"])
