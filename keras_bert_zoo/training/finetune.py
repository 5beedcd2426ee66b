"""Fine-tune a task with checkpoints that survive a kill, then save and score it."""

import contextlib
import json
import os
import sys

import keras
import tensorflow as tf

from keras_bert_zoo.distribution.chief import chief_output_dir
from keras_bert_zoo.distribution.chief import claimed_by_chief
from keras_bert_zoo.distribution.chief import is_chief
from keras_bert_zoo.distribution.chief import save_preset_in_chief
from keras_bert_zoo.distribution.get_strategy import check_global_batch_size
from keras_bert_zoo.training.atomic_backup_and_restore import AtomicBackupAndRestore
from keras_bert_zoo.training.training_logs import CURVES_FILE
from keras_bert_zoo.training.training_logs import LOGS_DIR
from keras_bert_zoo.training.training_logs import tensorboard_callback
from keras_bert_zoo.utils.atomic import atomic_file
from keras_bert_zoo.utils.job_record import content_digest
from keras_bert_zoo.utils.job_record import record_written
from keras_bert_zoo.utils.job_record import running_job

MODEL_DIR = "model"
BACKUP_DIR = "backup"
METRICS_FILE = "metrics.json"
# What a training job writes into its output directory: (finished results, work in progress).
# (finished, in progress). `report`'s curves count with the latter: drawn from a running or killed run too, they
# must neither block its resumption nor outlive an --overwrite_output_dir as a picture of the job replaced.
OUTPUTS = ((MODEL_DIR, METRICS_FILE), (BACKUP_DIR, LOGS_DIR, CURVES_FILE))


def write_json(path, obj):
    """Write a JSON file atomically."""
    with atomic_file(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def _without_names(config):
    """A Keras config without layer names, which count up per session (`bert_classifier_1`...)."""
    if isinstance(config, dict):
        return {k: _without_names(v) for k, v in config.items() if k != "name"}
    if isinstance(config, list):
        return [_without_names(v) for v in config]
    return config


def finetune_fingerprint(task, x, y, validation_data, batch_size, seed, epochs):
    """What decides a fine-tuning job's result: the task (class, config, starting backbone
    weights) and its data, each by SHA-256, and the hyper-parameters, epochs too (BERT's
    schedule decays over all of them)."""
    weights = content_digest([w.numpy() for w in task.backbone.weights])
    serialized = keras.saving.serialize_keras_object(task)
    # What fit records of its data (a classifier's text_pairs) is the data's, which the fingerprint holds.
    serialized["config"].pop("text_pairs", None)
    config = content_digest(json.dumps(_without_names(serialized), sort_keys=True, default=str))
    return {"task": type(task).__name__, "task_config": config, "backbone_weights": weights,
            "x": content_digest(x), "y": content_digest(y), "validation_data": content_digest(validation_data),
            "batch_size": batch_size, "seed": seed, "epochs": epochs}


def finetune(task, x, y, output_dir, epochs=3, batch_size=32, validation_data=None, verbose=None, seed=None,
             overwrite_output_dir=False, claim_output_dir=True):
    """Train `task` on `(x, y)`, resumable, and save it to `output_dir/model`.

    Training state is backed up to `output_dir/backup` after every epoch
    (`AtomicBackupAndRestore`, written atomically): running the same job again after a
    crash or kill continues from the last completed epoch. The fine-tuned
    task is written as a preset (`from_preset` loads it).

    `output_dir/job.json` records which job wrote the directory (see
    `finetune_fingerprint`): a different job, or any job over a finished
    model, is refused unless `overwrite_output_dir=True`.

    A task built under a `MultiWorkerMirroredStrategy` scope is trained by
    every worker of the cluster, each calling `finetune` with one
    `output_dir` (storage they share: GCS on a TPU pod). The chief alone
    claims and records it and writes the backup, logs and model; a directory
    it refuses stops every worker with its message.

    Args:
        task: a compiled task (`BertClassifier`, `BertTokenClassifier`...);
            it trains under the strategy it was built in
            (`task.distribute_strategy`).
        x, y: training data, as the task's `fit` takes it.
        output_dir: gets `model/`, `backup/`, `job.json` and TensorBoard
            logs in `logs/` (`keras-bert-zoo report` draws them).
        epochs / batch_size / validation_data / verbose: as `fit`.
        seed: seeds Keras' random generators (`keras.utils.set_random_seed`)
            before training, which fixes the shuffling: each epoch's order
            comes from it and the epoch's number (`EpochOrders`), so a
            resumed run reads the epochs an uninterrupted one reads next (the
            workers of a cluster shuffle with the chief's seed). The task's initial
            head weights and its dropout layers' seed generators are drawn
            when it is built: for a reproducible run, call
            `keras.utils.set_random_seed(seed)` before building it too (the
            command line does).
        overwrite_output_dir: replace another job's work in `output_dir`.
        claim_output_dir: False when the caller has already claimed
            `output_dir` (the CLI does, before it loads the model; in a
            cluster the chief alone, through `claimed_by_chief`).

    Returns:
        The Keras `History`.

    Raises:
        OutputDirectoryError: `output_dir` holds a finished model or
            another job's work.
    """
    strategy = task.distribute_strategy
    if batch_size is not None and not isinstance(x, tf.data.Dataset):  # a Dataset is batched already
        check_global_batch_size(batch_size, strategy)
    chief = is_chief(strategy)
    job = contextlib.nullcontext()
    if claim_output_dir:
        fingerprint = finetune_fingerprint(task, x, y, validation_data, batch_size, seed, epochs)
        # The chief's refusal of the directory stops every worker.
        job = claimed_by_chief(strategy, running_job(
            output_dir, "finetune", fingerprint, owned=OUTPUTS, overwrite=overwrite_output_dir,
            overwrite_flag="overwrite_output_dir=True", added_items=("epochs",), chief=chief))
    with job:
        if seed is not None:
            keras.utils.set_random_seed(seed)
        if verbose is None:
            # A live progress bar on a terminal; one line per epoch in a log file.
            verbose = 1 if sys.stdout.isatty() else 2
        chief_output_dir(strategy, output_dir)
        backup = AtomicBackupAndRestore(os.path.join(output_dir, BACKUP_DIR))
        history = task.fit(
            x, y, batch_size=batch_size, epochs=epochs, validation_data=validation_data,
            callbacks=[backup] + ([tensorboard_callback(output_dir)] if chief else []), verbose=verbose,
        )
        save_preset_in_chief(task, os.path.join(output_dir, MODEL_DIR), chief)
        if chief:
            # The command line scores the model next: a run stopped then is finished by scoring it, not training
            # again.
            record_written(output_dir, MODEL_DIR)
    return history
