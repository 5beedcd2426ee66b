"""Fine-tune a task with checkpoints that survive a kill, then save and score it."""

import json
import os
import sys

import keras

from keras_bert_zoo.utils.atomic import atomic_file

MODEL_DIR = "model"
BACKUP_DIR = "backup"
METRICS_FILE = "metrics.json"


def write_json(path, obj):
    """Write a JSON file atomically."""
    with atomic_file(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def finetune(task, x, y, output_dir, epochs=3, batch_size=32, validation_data=None, verbose=None, seed=None):
    """Train `task` on `(x, y)`, resumable, and save it to `output_dir/model`.

    Training state is backed up to `output_dir/backup` after every epoch
    (`keras.callbacks.BackupAndRestore`): running the same command again
    after a crash or kill continues from the last completed epoch. The
    fine-tuned task is written as a preset (`from_preset` loads it).

    Returns:
        The Keras `History`.
    """
    if seed is not None:
        keras.utils.set_random_seed(seed)
    if verbose is None:
        # A live progress bar on a terminal; one line per epoch in a log file.
        verbose = 1 if sys.stdout.isatty() else 2
    os.makedirs(output_dir, exist_ok=True)
    backup = keras.callbacks.BackupAndRestore(os.path.join(output_dir, BACKUP_DIR), delete_checkpoint=True,
                                              double_checkpoint=True)
    history = task.fit(
        x, y, batch_size=batch_size, epochs=epochs, validation_data=validation_data, callbacks=[backup],
        verbose=verbose,
    )
    task.save_to_preset(os.path.join(output_dir, MODEL_DIR))
    return history
