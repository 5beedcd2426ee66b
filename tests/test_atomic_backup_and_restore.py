"""The training backup survives a kill while it is written (Keras' own writes it in place)."""

import json
import os

import keras
import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.training.atomic_backup_and_restore import AtomicBackupAndRestore
from keras_bert_zoo.utils.job_record import OutputDirectoryError
from tests.conftest import TINY_CHECKPOINT


@pytest.fixture
def task(tiny_checkpoint):
    task = kbz.BertClassifier.from_preset(TINY_CHECKPOINT, num_classes=2, sequence_length=8)
    task.compile(learning_rate=1e-4)
    task.optimizer.build(task.trainable_variables)
    return task


def _backup(callback, task, epoch):
    callback.set_model(task)
    callback._current_epoch = epoch
    callback._save_model()


def _killed_while_writing(task, monkeypatch):
    """save_weights standing for a process killed halfway through its file."""
    def save_weights(filepath, overwrite=True):
        with open(filepath, "wb") as f:
            f.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
        raise KeyboardInterrupt

    monkeypatch.setattr(task, "save_weights", save_weights)


@pytest.mark.parametrize("callback_cls", [AtomicBackupAndRestore, keras.callbacks.BackupAndRestore])
def test_a_kill_while_the_backup_is_written_leaves_the_one_before(task, tmp_path, monkeypatch, callback_cls):
    backup_dir = str(tmp_path / "backup")
    _backup(callback_cls(backup_dir), task, epoch=1)
    saved = [v.numpy().copy() for v in task.weights]
    for v in task.trainable_weights:
        v.assign(v + 1.0)
    _killed_while_writing(task, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        _backup(callback_cls(backup_dir), task, epoch=2)
    monkeypatch.undo()

    resumed = callback_cls(backup_dir)
    resumed.set_model(task)
    if callback_cls is keras.callbacks.BackupAndRestore:
        # Keras' own callback wrote over its only backup: the reason ours exists.
        with pytest.raises(OSError):
            resumed.on_train_begin()
        return
    resumed.on_train_begin()
    assert task._initial_epoch == 1
    for value, variable in zip(saved, task.weights):
        np.testing.assert_array_equal(variable.numpy(), value)
    assert sorted(os.listdir(backup_dir)) == ["latest.weights.h5", "training_metadata.json"]
    with open(os.path.join(backup_dir, "training_metadata.json")) as f:
        assert json.load(f)["epoch"] == 1


def test_an_unreadable_backup_is_refused_naming_it_and_the_way_out(task, tmp_path):
    backup_dir = tmp_path / "backup"
    backup_dir.mkdir()
    (backup_dir / "latest.weights.h5").write_bytes(b"not an h5 file")
    callback = AtomicBackupAndRestore(str(backup_dir))
    callback.set_model(task)
    with pytest.raises(OutputDirectoryError, match=r"backup in .*backup cannot be read.*Remove .*overwrite_output_dir"):
        callback.on_train_begin()


def test_a_writer_killed_outright_leaves_a_temporary_the_next_backup_removes(task, tmp_path):
    backup_dir = tmp_path / "backup"
    backup_dir.mkdir()
    # The name a writer of pid 999999999 (no such process) on this host gives its temporary.
    from keras_bert_zoo.utils.atomic import _prefix
    stale = backup_dir / (_prefix("tmp", str(backup_dir / "latest.weights.h5")).replace(
        f"-{os.getpid()}@", "-999999999@") + "abc123.weights.h5")
    stale.write_bytes(b"half")
    _backup(AtomicBackupAndRestore(str(backup_dir)), task, epoch=1)
    assert sorted(os.listdir(backup_dir)) == ["latest.weights.h5", "training_metadata.json"]


@pytest.mark.parametrize("metadata, shown", [
    ("[" * 100_000, "nests JSON arrays or objects deeper than Python reads"),  # was a bare RecursionError
    ('{"epoch": ' + "[" * 50 + "]" * 50 + "}", "holds no epoch count ([[[[...]]]])"),  # the value, cut to a line
    ('{"epoch": 1, "step": "7"}', "no step count ('7')"),
])
def test_a_damaged_backup_record_is_refused_naming_it_and_the_way_out(task, tmp_path, metadata, shown):
    backup_dir = tmp_path / "backup"
    backup_dir.mkdir()
    (backup_dir / "training_metadata.json").write_text(metadata)
    callback = AtomicBackupAndRestore(str(backup_dir))
    with pytest.raises(OutputDirectoryError) as raised:
        callback.completed_steps()
    message = str(raised.value)
    assert message.startswith(f"The backup's {backup_dir / 'training_metadata.json'} ") and shown in message
    assert f"Remove {backup_dir} to train this job from its start" in message and len(message) < 600



@pytest.mark.parametrize("damage", [
    lambda states: states[:-1] + [[1, 2, 3]],  # a state of another shape
    lambda states: states + [[1, 2]],  # one state too many
    lambda states: "x",
    lambda states: states[:-1] + [[1, 2.5]],
    lambda states: states[:-1] + [[2**64, 0]],  # beyond the state's dtype
])
def test_seed_states_the_model_cannot_take_are_refused_naming_the_backup(task, tmp_path, damage):
    callback = AtomicBackupAndRestore(str(tmp_path / "backup"))
    _backup(callback, task, 1)
    metadata = tmp_path / "backup" / "training_metadata.json"
    saved = json.loads(metadata.read_text())
    count = len(saved["seed_states"])
    assert count == len(task.variables) - len(task.weights) > 0  # the dropout layers' generators
    metadata.write_text(json.dumps({**saved, "seed_states": damage(saved["seed_states"])}))
    task.output_dense.kernel.assign(task.output_dense.kernel + 1)  # other weights than the backup's
    before = [variable.numpy() for variable in task.variables]
    with pytest.raises(OutputDirectoryError) as raised:
        callback.on_train_begin()
    # Refused before Keras loads the backup's weights: a task trained again from its start is the one given.
    for variable, value in zip(task.variables, before):
        np.testing.assert_array_equal(variable.numpy(), value)
    message = str(raised.value)
    assert f"training_metadata.json holds no seed states of this model ({count} of shapes" in message
    assert f"Remove {tmp_path / 'backup'} to train this job from its start" in message and len(message) < 900
