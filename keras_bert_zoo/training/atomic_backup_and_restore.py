"""Keras' `BackupAndRestore`, whose backup a kill never leaves half-written."""

import json
import os
import tempfile

import keras
import numpy as np

from keras_bert_zoo.distribution.chief import is_chief
from keras_bert_zoo.utils.atomic import atomic_file, atomic_path
from keras_bert_zoo.utils.job_record import OutputDirectoryError
from keras_bert_zoo.utils.text_files import read_json_object
from keras_bert_zoo.utils.text_files import untrusted_repr


def _fits(value, state):
    """Whether untrusted JSON `value` is a value of the seed state variable `state`."""
    value = np.asarray(value, dtype=object)  # a ragged list: an array of lists, refused below
    limits = np.iinfo(np.dtype(state.dtype))
    return value.shape == tuple(state.shape) and all(
        isinstance(number, int) and not isinstance(number, bool) and limits.min <= number <= limits.max
        for number in value.ravel())


class AtomicBackupAndRestore(keras.callbacks.BackupAndRestore):
    """`keras.callbacks.BackupAndRestore` with atomic writes.

    Keras writes `latest.weights.h5` in place: a kill while it is written
    (seconds for BERT-Base) leaves a file no later run can load, and its
    `double_checkpoint` fallback exists only from the second backup on. Here
    the weights and the training metadata are each written beside their final
    path and renamed over it, weights first: a kill leaves the backup before
    or the backup after (between the two renames, the new weights with the
    last epoch counted before them: that epoch is trained again).

    Under a multi-worker strategy the chief alone writes (and finally
    removes) the backup, which every worker restores from: `backup_dir`
    must be storage the workers share (GCS on a TPU pod). The others save
    too, as saving may be collective, into a directory of their own that
    they remove at once (TensorFlow's multi-worker checkpointing).

    The training metadata holds the optimizer's step count too (`step`):
    where the last epoch was cut short (`steps_per_epoch` steps, the run's
    last chunk fewer) the epoch count alone does not say it. It holds the
    states of the model's seed generators (`seed_states`), which Keras'
    weights leave out: a resumed run draws the dropout masks an
    uninterrupted one draws, not those of its first epochs again.

    Args:
        backup_dir: where the backup lives.
        keep: keep the backup when training ends (the final state: weights,
            optimizer, step count), for a later run to train on from; else it
            is removed then.

    Examples:
    >>> callback = AtomicBackupAndRestore("/tmp/run/backup")
    >>> callback.delete_checkpoint
    True
    """

    def __init__(self, backup_dir, keep=False):
        super().__init__(backup_dir, delete_checkpoint=not keep)

    def on_train_begin(self, logs=None):
        # Checked before Keras loads the weights: a backup refused leaves the model as it was.
        seed_states = self._saved_seed_states()
        try:
            super().on_train_begin(logs)
        except OSError as e:
            raise self._damaged(f"The backup in {self.backup_dir} cannot be read ({e})") from None
        for state, value in seed_states:
            state.assign(np.asarray(value, dtype=state.dtype))

    def _seed_states(self):
        """The model's random seed generators' states (its dropout layers'): Keras' weights leave them out,
        and a resumed run drew the dropout masks of the first epochs again."""
        weights = {id(weight) for weight in self.model.weights}
        return [variable for variable in self.model.variables if id(variable) not in weights]

    def _saved_seed_states(self):
        """`(state variable, its value in the backup)` pairs; none without a backup, or from a backup of an
        earlier version."""
        if not os.path.exists(self._training_metadata_path):
            return []
        self.completed_epochs()  # refuses a damaged file
        saved = read_json_object(self._training_metadata_path).get("seed_states")
        if saved is None:
            return []
        states = self._seed_states()
        shapes = [tuple(state.shape) for state in states]
        if not isinstance(saved, list) or len(saved) != len(states) \
                or not all(_fits(value, state) for value, state in zip(saved, states)):
            raise self._damaged(f"The backup's {self._training_metadata_path} holds no seed states of this model "
                                f"({len(states)} of shapes {shapes}): {untrusted_repr(saved)}")
        return list(zip(states, saved))

    def _damaged(self, what):
        return OutputDirectoryError(
            f"{what}: it was damaged or written by another program. Remove {self.backup_dir} to train this job "
            "from its start, or run with overwrite_output_dir=True (--overwrite_output_dir on the command line).")

    def completed_epochs(self):
        """The epochs the backup counts as done (0 without a backup): the epoch `fit` resumes at, known before
        `fit` starts, so that data repeated across epochs can resume at the same place."""
        if not os.path.exists(self._training_metadata_path):
            return 0
        try:
            epoch = read_json_object(self._training_metadata_path).get("epoch")
        except OSError as e:
            raise self._damaged(f"The backup's {self._training_metadata_path} cannot be read ({e.strerror})") from None
        except ValueError as e:  # read_json_object's message names the file
            raise self._damaged(f"The backup's {str(e).removesuffix('.')}") from None
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
            raise self._damaged(f"The backup's {self._training_metadata_path} holds no epoch count "
                                f"({untrusted_repr(epoch)})")
        return epoch

    def completed_steps(self):
        """The optimizer steps the backup counts as done, or None where it does not say (no backup, or one
        written before the step was recorded: there, `completed_epochs()` full epochs)."""
        if not os.path.exists(self._training_metadata_path):
            return None
        self.completed_epochs()  # refuses a damaged file
        step = read_json_object(self._training_metadata_path).get("step")
        if step is not None and (not isinstance(step, int) or isinstance(step, bool) or step < 0):
            raise self._damaged(f"The backup's {self._training_metadata_path} holds no step count "
                                f"({untrusted_repr(step)})")
        return step

    def _chief(self):
        return is_chief(self.model.distribute_strategy)

    def on_train_end(self, logs=None):
        if self._chief():
            super().on_train_end(logs)

    def _save_model(self):
        if not self._chief():
            with tempfile.TemporaryDirectory() as scratch:
                self.model.save_weights(os.path.join(scratch, "latest.weights.h5"))
            return
        metadata = {"epoch": self._current_epoch, "batch": self._last_batch_seen,
                    "step": int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)),
                    "seed_states": [keras.ops.convert_to_numpy(state).tolist() for state in self._seed_states()]}
        # Nested so that the weights are renamed into place first (see the class docstring).
        with atomic_file(self._training_metadata_path, "w") as f:
            with atomic_path(self._weights_path, suffix=".weights.h5") as weights:
                self.model.save_weights(weights, overwrite=True)
            f.write(json.dumps(metadata))
