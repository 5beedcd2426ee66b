"""`kbz.finetune` and `kbz.pretrain` guard their output directory as the CLI does: one job per
directory, the same job resumes, a finished model is not replaced without `overwrite_output_dir=True`."""

import contextlib
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.utils.job_record import JOB_FILE
from keras_bert_zoo.utils.job_record import OutputDirectoryError
from keras_bert_zoo.utils.job_record import content_digest
from tests.cluster import run_cluster
from tests.cluster import two_worker_cluster
from tests.conftest import TINY_CHECKPOINT
from tests.fed_batches import logging_keras_inputs

TEXTS = ["all work", "no play", "a dull boy", "so it goes"]


def _classifier():
    """What a rerun of the user's script builds: the same task from the same preset."""
    task = kbz.BertClassifier.from_preset(TINY_CHECKPOINT, num_classes=2, sequence_length=8)
    task.compile(learning_rate=1e-4)
    return task


@pytest.fixture
def classifier(tiny_checkpoint):
    return _classifier()


def _killed_after_a_backup(task, monkeypatch):
    """`fit` standing for a run killed after its first epoch's backup."""
    def fit(*args, callbacks=(), **kwargs):
        os.makedirs(callbacks[0].backup_dir)
        raise KeyboardInterrupt

    monkeypatch.setattr(task, "fit", fit)


def test_a_record_without_an_item_matches_only_where_earlier_versions_left_it_out(tmp_path):
    """Epochs joined the fingerprint later: a job recorded without them resumes after an upgrade. num_train_steps
    is recorded only when given: a job recorded without it is not resumed by a run that gives one."""
    from keras_bert_zoo.utils.job_record import claim_output_dir
    from keras_bert_zoo.utils.job_record import finish_job

    owned = (("model",), ("backup",))
    for item, added, resumes in (("epochs", ("epochs",), True), ("num_train_steps", ("epochs",), False)):
        out = str(tmp_path / item)
        recorded = {"corpus": "c.txt", "batch_size": 8}
        claim_output_dir(out, "pretrain", recorded, owned=owned)
        os.makedirs(os.path.join(out, "backup"))
        finish_job(out, "interrupted")
        rerun = {**recorded, item: 100}
        if resumes:
            assert claim_output_dir(out, "pretrain", rerun, owned=owned, added_items=added) is True
        else:
            with pytest.raises(OutputDirectoryError,
                               match=f"{item} differs: .* with {item} not given \\(this one: 100\\)"):
                claim_output_dir(out, "pretrain", rerun, owned=owned, added_items=added)


def test_content_digest_follows_the_data_not_its_container():
    import numpy as np

    assert content_digest(["a", "b"]) == content_digest(["a", "b"])
    assert content_digest(np.array([1, 2])) == content_digest(np.array([1, 2]))
    assert len({content_digest(v) for v in (["a", "b"], ["b", "a"], ("a", "b"), ["ab"], [1, 2], [1.0, 2.0],
                                            np.array([1, 2]), np.array([1, 2], "int32"), None)}) == 9
    # A reader's result counts by its content.
    from keras_bert_zoo.data.classification_examples import ClassificationExamples

    same = [ClassificationExamples(["good", "bad"], [1, 0], ["neg", "pos"]) for _ in range(2)]
    assert content_digest(same[0]) == content_digest(same[1])
    assert content_digest(same[0]) != content_digest(ClassificationExamples(["good", "bad"], [0, 1], ["neg", "pos"]))
    with pytest.raises(TypeError, match="Cannot fingerprint training data of type object"):
        content_digest(object())


@pytest.mark.slow
def test_a_finished_model_is_not_replaced(classifier, tmp_path):
    out = str(tmp_path / "run")
    kbz.finetune(classifier, TEXTS, [0, 1, 0, 1], out, epochs=1, batch_size=2, verbose=0)
    job = json.load(open(os.path.join(out, JOB_FILE)))
    assert job["command"] == "finetune" and job["status"] == "finished"
    assert job["fingerprint"]["task"] == "BertClassifier" and job["fingerprint"]["y"] == content_digest([0, 1, 0, 1])
    assert kbz.BertClassifier.from_preset(os.path.join(out, "model")).num_classes == 2
    with pytest.raises(OutputDirectoryError) as error:
        kbz.finetune(_classifier(), TEXTS, [0, 1, 0, 1], out, epochs=1, batch_size=2, verbose=0)
    assert f"{out} already holds a finished finetune (model" in str(error.value)
    assert "pass overwrite_output_dir=True to replace it" in str(error.value)
    with pytest.raises(OutputDirectoryError, match="backbone_weights differs"):  # a trained task starts elsewhere
        kbz.finetune(classifier, TEXTS, [0, 1, 0, 1], out, epochs=1, batch_size=2, verbose=0)
    # batch_size=None is fit's default batch, as in fit.
    kbz.finetune(classifier, TEXTS, [1, 0, 1, 0], out, epochs=1, batch_size=None, verbose=0,
                 overwrite_output_dir=True)
    assert json.load(open(os.path.join(out, JOB_FILE)))["fingerprint"]["y"] == content_digest([1, 0, 1, 0])


@pytest.mark.slow
def test_another_job_cannot_continue_a_backup_but_the_same_one_does(classifier, tmp_path, monkeypatch, capsys):
    out = str(tmp_path / "run")
    with monkeypatch.context() as patch:
        _killed_after_a_backup(classifier, patch)
        with pytest.raises(KeyboardInterrupt):
            kbz.finetune(classifier, TEXTS, [0, 1, 0, 1], out, epochs=2, batch_size=2)
    assert json.load(open(os.path.join(out, JOB_FILE)))["status"] == "interrupted"
    for y, batch_size, words in (([1, 1, 0, 0], 2, "y differs"), ([0, 1, 0, 1], 4, "batch_size differs")):
        with pytest.raises(OutputDirectoryError) as error:
            kbz.finetune(classifier, TEXTS, y, out, epochs=2, batch_size=batch_size)
        assert words in str(error.value) and "overwrite_output_dir=True" in str(error.value)
        assert os.path.isdir(os.path.join(out, "backup"))  # the other job's work is untouched
    # Another epochs count is another job: BERT's schedule decays over all of them (asked for fewer, the rerun
    # trained nothing and saved the backup's half-decayed model as finished).
    for epochs in (1, 3):
        with pytest.raises(OutputDirectoryError, match=f"epochs differs: .* with epochs 2 \\(this one: {epochs}\\)"):
            kbz.finetune(classifier, TEXTS, [0, 1, 0, 1], out, epochs=epochs, batch_size=2, verbose=0)
    # The same job resumes (and finishes) there.
    kbz.finetune(classifier, TEXTS, [0, 1, 0, 1], out, epochs=2, batch_size=2, verbose=0)
    assert "Resuming the same finetune job" in capsys.readouterr().err
    job = json.load(open(os.path.join(out, JOB_FILE)))
    assert job["resumed"] is True and job["status"] == "finished"


@pytest.mark.slow
def test_pretrain_claims_its_output_before_reading_the_corpus(tiny_checkpoint, tmp_path, classifier):
    out = str(tmp_path / "run")
    kbz.finetune(classifier, TEXTS, [0, 1, 0, 1], out, epochs=1, batch_size=2, verbose=0)
    missing_corpus = str(tmp_path / "not_read.txt")
    with pytest.raises(OutputDirectoryError, match=f"{out} was written by a finetune job, not pretrain"):
        kbz.pretrain(out, [], preset=tiny_checkpoint, vocabulary=[missing_corpus])
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one two three.\nfour five six.\n\nseven eight.\nnine ten.\n")
    out = str(tmp_path / "pre")
    os.makedirs(os.path.join(out, "backup"))
    with pytest.raises(OutputDirectoryError, match="holds backup from an unknown job .no job.json.: pass "
                                                   "overwrite_output_dir=True"):
        kbz.pretrain(out, str(corpus), preset=tiny_checkpoint)


@pytest.mark.slow
def test_training_is_logged_for_tensorboard_and_drawn(classifier, tmp_path, capsys, monkeypatch):
    from keras_bert_zoo.training.training_logs import plot_training_logs
    from keras_bert_zoo.training.training_logs import read_training_logs

    out = str(tmp_path / "run")
    history = kbz.finetune(classifier, TEXTS * 4, [0, 1, 0, 1] * 4, out, epochs=2, batch_size=2, verbose=0)
    logs = read_training_logs(out)["train"]
    assert [step for step, _ in logs["epoch_loss"]] == [0, 1]
    np.testing.assert_allclose([v for _, v in logs["epoch_loss"]], history.history["loss"], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in logs["epoch_accuracy"]], history.history["accuracy"], rtol=1e-6)
    # BERT's schedule over 16 steps (compiled at 1e-4): warm-up, then linear decay to 0 at the last step.
    rates = [v for _, v in logs["epoch_learning_rate"]]
    assert 0 < rates[0] < 1e-4 and rates[1] == pytest.approx(0.0, abs=1e-12)
    import matplotlib.figure

    ticks, save = [], matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda figure, *args, **kwargs: (
        ticks.extend(tick for axis in figure.axes if axis.get_visible() for tick in axis.get_xticks()),
        save(figure, *args, **kwargs))[1])
    final = plot_training_logs(out, str(tmp_path / "curves.png"))
    assert ticks and all(float(tick).is_integer() for tick in ticks), ticks  # whole epochs (were 0.96, 1.02 ...)
    assert final["train_loss"] == pytest.approx(history.history["loss"][-1], rel=1e-6)
    assert open(tmp_path / "curves.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(FileNotFoundError, match="holds no training logs"):
        read_training_logs(str(tmp_path))

    from keras_bert_zoo.cli.main import main

    assert main(["report", out]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["curves"] == os.path.join(out, "curves.png") and os.path.isfile(report["curves"])
    assert report["final_epoch"]["train_loss"] == pytest.approx(history.history["loss"][-1], rel=1e-6)
    assert report["status"] == "finished"
    # A run killed in a later epoch looked finished: job.json still says "running", its process is gone.
    from keras_bert_zoo.utils.job_record import read_job
    from keras_bert_zoo.utils.job_record import write_job

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_job(out, {**read_job(out), "status": "running", "pid": dead.pid})
    assert main(["report", out]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["status"] == "killed"
    assert f"{out} did not finish: job.json says running, but its process is gone (killed)" in captured.err
    write_job(out, {**read_job(out), "status": "running", "pid": os.getpid()})
    assert main(["report", out]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["status"] == "running" and f"{out} is still running" in captured.err
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "RUN " + str(tmp_path / "nowhere") + " is not a directory" in capsys.readouterr().err


def test_reports_curves_go_with_the_run_they_draw(tmp_path):
    """`report` writes RUN/curves.png: an --overwrite_output_dir kept it, a picture of the job replaced; drawn
    from a killed run, it must not keep the run from resuming."""
    from keras_bert_zoo.training.finetune import OUTPUTS
    from keras_bert_zoo.utils.job_record import claim_output_dir
    from keras_bert_zoo.utils.job_record import finish_job

    out = str(tmp_path / "run")
    claim_output_dir(out, "finetune", {"epochs": 1}, owned=OUTPUTS)
    os.makedirs(os.path.join(out, "backup"))
    open(os.path.join(out, "curves.png"), "wb").close()
    finish_job(out, "failed")
    assert claim_output_dir(out, "finetune", {"epochs": 1}, owned=OUTPUTS) is True  # resumes its backup
    os.makedirs(os.path.join(out, "model"))
    finish_job(out)
    claim_output_dir(out, "finetune", {"epochs": 2}, owned=OUTPUTS, overwrite=True)
    assert sorted(os.listdir(out)) == ["job.json"]


def test_a_run_stopped_before_its_first_epoch_is_named_so(tmp_path):
    import tensorflow as tf

    from keras_bert_zoo.training.training_logs import read_training_logs

    # What Keras' TensorBoard callback leaves when a run dies in its first epoch: an event file, no epoch scalars.
    writer = tf.summary.create_file_writer(str(tmp_path / "logs" / "train"))
    with writer.as_default():
        tf.summary.text("keras", "the model's config", step=0)
    writer.close()
    with pytest.raises(FileNotFoundError, match=r"holds TensorBoard logs but no finished epoch in them.*job.json"):
        read_training_logs(str(tmp_path))


def test_an_event_file_cut_short_by_a_kill_is_read_up_to_its_last_whole_record(tmp_path, capsys):
    """A run killed while its TensorBoard writer wrote leaves the last record cut short: report died on
    TensorFlow's DataLossError with a traceback."""
    import tensorflow as tf

    from keras_bert_zoo.cli.main import main
    from keras_bert_zoo.training.training_logs import read_training_logs

    writer = tf.summary.create_file_writer(str(tmp_path / "logs" / "train"))
    with writer.as_default():
        for epoch, loss in enumerate((0.9, 0.5, 0.25)):
            tf.summary.scalar("epoch_loss", loss, step=epoch)
    writer.close()
    (path,) = (tmp_path / "logs" / "train").iterdir()
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 5)  # into the last record: epoch 2's loss
    with pytest.warns(UserWarning, match="ends in a record cut short or damaged"):
        logs = read_training_logs(str(tmp_path))
    assert logs["train"]["epoch_loss"] == [(0, pytest.approx(0.9)), (1, pytest.approx(0.5))]
    assert main(["report", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["final_epoch"] == {"train_loss": pytest.approx(0.5)}
    assert f"keras-bert-zoo report: warning: {path} ends in a record cut short" in captured.err


def test_a_second_run_of_a_running_job_is_refused_in_a_cluster_too(tmp_path, monkeypatch):
    """Two runs of one job in one directory trained at once and broke each other's backup (one died on a missing
    temporary file, and job.json named the dead one finished). A multi-worker cluster's workers were let in, each
    claiming the directory; its chief alone claims it now (`running_job(chief=...)`), so a second run is refused
    there too, and the other workers touch nothing."""
    from keras_bert_zoo.utils.job_record import claim_output_dir
    from keras_bert_zoo.utils.job_record import running_job

    fingerprint, owned = {"--input_file": "a.tfrecord"}, (("model",), ("backup",))
    out = str(tmp_path / "run")
    claim_output_dir(out, "pretrain", fingerprint, owned=owned)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record = json.load(open(os.path.join(out, JOB_FILE)))
        with open(os.path.join(out, JOB_FILE), "w") as f:  # the first run lives in another process
            json.dump(dict(record, pid=sleeper.pid), f)
        monkeypatch.delenv("TF_CONFIG", raising=False)
        with pytest.raises(OutputDirectoryError, match=rf"being written by another run of this pretrain job "
                                                       rf"\(pid {sleeper.pid}, started "):
            claim_output_dir(out, "pretrain", fingerprint, owned=owned)
        monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["h:1", "h:2"]},
                                                    "task": {"type": "worker", "index": 0}}))
        with pytest.raises(OutputDirectoryError, match="being written by another run of this pretrain job"):
            claim_output_dir(out, "pretrain", fingerprint, owned=owned)
        before = open(os.path.join(out, JOB_FILE)).read()
        with running_job(out, "pretrain", {"--input_file": "b.tfrecord"}, owned=owned, overwrite=True,
                         chief=False) as resume:
            assert resume is False
        assert open(os.path.join(out, JOB_FILE)).read() == before  # neither refused nor recorded nor replaced
    finally:
        sleeper.kill()
        sleeper.wait()
    monkeypatch.delenv("TF_CONFIG")
    claim_output_dir(out, "pretrain", fingerprint, owned=owned)  # its process is gone: the job may run again


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="process states and start times come from /proc")
def test_a_dead_runs_reused_id_or_unreaped_process_is_no_running_job(tmp_path):
    """A killed run's id given to a later process, or its process not yet reaped (a zombie), is no running job:
    the job was refused until --overwrite_output_dir deleted the backup it would resume from."""
    from keras_bert_zoo.utils.job_record import claim_output_dir

    fingerprint, owned = {"--input_file": "a.tfrecord"}, (("model",), ("backup",))
    out = str(tmp_path / "run")
    claim_output_dir(out, "pretrain", fingerprint, owned=owned)
    record = json.load(open(os.path.join(out, JOB_FILE)))
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        while open(f"/proc/{zombie.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
            pass  # it exits; unreaped (no wait), it stays a zombie
        for pid, started in ((later.pid, "2000-01-01T00:00:00+00:00"), (zombie.pid, record["started"])):
            with open(os.path.join(out, JOB_FILE), "w") as f:
                json.dump(dict(record, pid=pid, started=started), f)
            assert claim_output_dir(out, "pretrain", fingerprint, owned=owned) is False
    finally:
        for process in (later, zombie):
            process.kill()
            process.wait()


def test_an_output_directory_given_as_a_url_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """gs://bucket/run was claimed as a local folder 'gs:' (job.json, backup and model there; logs in the bucket)."""
    from keras_bert_zoo.utils.job_record import OutputDirectoryError
    from keras_bert_zoo.utils.job_record import running_job

    monkeypatch.chdir(tmp_path)
    for chief in (True, False):
        with pytest.raises(OutputDirectoryError, match=r"^gs://bucket/run is a URL: outputs are written through the "
                                                       r"local file system \(atomically\), which would make a local "
                                                       r"folder 'gs:'\. Mount the bucket"):
            with running_job("gs://bucket/run", "pretrain", {"steps": 4}, owned=(("model",), ("backup",)),
                             chief=chief):
                pass
    assert os.listdir(tmp_path) == []


def test_a_rerun_says_whether_it_resumes_a_backup_or_starts_over(tmp_path, capsys):
    from keras_bert_zoo.utils.job_record import running_job

    out, owned = str(tmp_path / "run"), (("model",), ("backup", "logs"))

    def run(backup_files):
        with pytest.raises(KeyboardInterrupt), running_job(out, "pretrain", {"steps": 40}, owned=owned):
            os.makedirs(os.path.join(out, "backup"), exist_ok=True)  # as fit's backup callback does at its start
            # TensorBoard's logs are written from the first step: they are no backup (it said "from its backup").
            os.makedirs(os.path.join(out, "logs", "train"), exist_ok=True)
            for name in backup_files:
                open(os.path.join(out, "backup", name), "w").close()
            raise KeyboardInterrupt  # Ctrl-C

    run([])  # stopped before the first backup was written
    run([])
    assert "it stopped before its first backup, so training starts from the beginning" in capsys.readouterr().err
    run(["training_metadata.json"])
    run([])
    assert "Resuming the same pretrain job in " + out + ": from its backup." in capsys.readouterr().err


def test_a_finished_job_asked_for_more_steps_goes_on_from_its_kept_state_or_says_how(tmp_path):
    """A rerun of a finished pretraining with a larger num_train_steps was refused as another job; now it extends
    the job where its final backup is kept, and says how to go on where it is not."""
    from keras_bert_zoo.utils.job_record import claim_output_dir
    from keras_bert_zoo.utils.job_record import finish_job

    owned, extend = (("model", "metrics.json"), ("backup", "logs")), {"extendable": ("steps",),
                                                                       "training_state": "backup"}
    out = str(tmp_path / "run")
    claim_output_dir(out, "pretrain", {"corpus": "c.txt", "steps": 40}, owned=owned, **extend)
    for name in ("model", "backup"):
        os.makedirs(os.path.join(out, name))
    open(os.path.join(out, "backup", "training_metadata.json"), "w").close()
    finish_job(out)
    finished = json.load(open(os.path.join(out, JOB_FILE)))

    def claim(fingerprint):
        return claim_output_dir(out, "pretrain", fingerprint, owned=owned, **extend)

    with pytest.raises(OutputDirectoryError, match="already holds a finished pretrain .*a larger steps to train it on"):
        claim({"corpus": "c.txt", "steps": 40})
    for fewer_or_other in ({"corpus": "c.txt", "steps": 30}, {"corpus": "d.txt", "steps": 80}):
        with pytest.raises(OutputDirectoryError, match="differs"):
            claim(fewer_or_other)
    with pytest.raises(OutputDirectoryError, match="written by a pretrain job, not finetune"):
        claim_output_dir(out, "finetune", {"corpus": "c.txt", "steps": 80}, owned=owned, **extend)
    assert claim({"corpus": "c.txt", "steps": 80}) is True
    record = json.load(open(os.path.join(out, JOB_FILE)))
    assert record["extends"] == {"status": "finished", "finished": finished["finished"], "steps": 40}
    assert record["fingerprint"]["steps"] == 80 and "written" not in record
    # Interrupted, the extension resumes (the model there is the extended job's until it finishes) ...
    finish_job(out, "interrupted")
    assert claim({"corpus": "c.txt", "steps": 80}) is True
    assert json.load(open(os.path.join(out, JOB_FILE)))["extends"]["steps"] == 40
    # ... and once finished it is a finished job again.
    finish_job(out)
    with pytest.raises(OutputDirectoryError, match="already holds a finished pretrain"):
        claim({"corpus": "c.txt", "steps": 80})
    # Without its training state (removed, or a version that did not keep it) it cannot go on: the message says how.
    import shutil

    shutil.rmtree(os.path.join(out, "backup"))
    with pytest.raises(OutputDirectoryError, match=rf"training state \(backup: optimizer, step count\) was not kept.*"
                                                   rf"{os.path.join(out, 'model')} as the preset.*start afresh"):
        claim({"corpus": "c.txt", "steps": 160})
    assert json.load(open(os.path.join(out, JOB_FILE)))["fingerprint"]["steps"] == 80  # refused: nothing written


def test_report_names_a_damaged_metrics_file_and_reads_past_a_damaged_job_record(tmp_path, capsys):
    # Each nested past Python's recursion limit stopped report with a bare RecursionError.
    from keras_bert_zoo.cli.main import main
    from keras_bert_zoo.training.training_logs import CURVES_FILE

    pytest.importorskip("matplotlib")
    tf = pytest.importorskip("tensorflow")
    writer = tf.summary.create_file_writer(str(tmp_path / "logs" / "train"))
    with writer.as_default():
        tf.summary.scalar("epoch_loss", 0.5, step=0)
    writer.close()
    (tmp_path / "job.json").write_text("[" * 100_000)
    assert main(["report", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "status" not in report and report["final_epoch"]["train_loss"] == pytest.approx(0.5)
    assert os.path.isfile(tmp_path / CURVES_FILE)
    (tmp_path / "metrics.json").write_text("[" * 100_000)
    assert main(["report", str(tmp_path)]) == 2
    assert (f"{tmp_path / 'metrics.json'} nests JSON arrays or objects deeper than Python reads"
            in capsys.readouterr().err)


def _finetuning_cluster(run, checkpoint, out, env=lambda index: {}):
    """`run` (`run_cluster` or `two_worker_cluster`) two workers on 127.0.0.1, each calling `kbz.finetune` into
    `out` (tests.strategy_runner); the other worker fails if it reads a job record."""
    return run("-m", "tests.strategy_runner", "multiworker", "finetune", checkpoint, str(out),
               env=lambda index: {**({"UNRECORDED": "1"} if index else {}), **env(index)})


@pytest.mark.subprocess
def test_two_workers_finetune_one_job_into_their_shared_output_directory(tiny_checkpoint, tmp_path):
    """Both workers of a cluster call `kbz.finetune` with one output_dir. Each claimed it: the second was refused
    by the first's live claim, and the first failed in its next collective op. The chief alone claims and records
    it and writes the logs and the model; the other saves into a directory of its own that it removes. The workers
    shuffle the examples in one order."""
    out = tmp_path / "out"
    temp = [tmp_path / f"worker{index}_tmp" for index in range(2)]
    for path in temp:
        path.mkdir()
    _, (chief, _) = _finetuning_cluster(two_worker_cluster, tiny_checkpoint, out, env=lambda index: {
        "WEIGHTS_OUT": str(tmp_path / f"worker{index}.npz"), "TMPDIR": str(temp[index]),
        "FED_OUT": str(tmp_path / f"fed{index}.npy"), "SHUFFLE_SEED": str(index)})
    first, second = np.load(tmp_path / "worker0.npz"), np.load(tmp_path / "worker1.npz")
    for name in first.files:
        np.testing.assert_array_equal(first[name], second[name])
    # Each worker reads the global batches, then trains on its share of each: shares of one order, the chief's,
    # though each worker's TensorFlow drew its own (each had shuffled in its own order: examples trained twice in an
    # epoch, others never). (Each read them twice: the distributed input drops its first iterator.)
    fed = [np.load(tmp_path / f"fed{index}.npy") for index in range(2)]
    np.testing.assert_array_equal(fed[0], fed[1])
    assert len({row.tobytes() for row in fed[0][-8:]}) == 8
    job = json.load(open(out / JOB_FILE))
    assert (job["status"], job["pid"], list(job["written"])) == ("finished", chief, ["model"])
    assert sorted(os.listdir(out)) == ["job.json", "logs", "model"]
    assert len(os.listdir(out / "logs" / "train")) == 1  # the chief's events file alone
    assert [os.listdir(path) for path in temp] == [[], []]  # the other worker's save removed
    saved = kbz.BertClassifier.from_preset(str(out / "model")).get_weights()
    assert all(np.array_equal(w, first[name]) for w, name in zip(saved, first.files))


@pytest.mark.subprocess
def test_a_directory_holding_another_job_stops_both_finetuning_workers_with_the_chiefs_message(tiny_checkpoint,
                                                                                               tmp_path):
    """The chief alone checks the shared output_dir (the other worker fails if it reads the job record), and its
    refusal stops the other worker too, with its message, before either writes anything."""
    from keras_bert_zoo.training.finetune import OUTPUTS
    from keras_bert_zoo.utils.job_record import claim_output_dir
    from keras_bert_zoo.utils.job_record import finish_job

    out = tmp_path / "out"
    claim_output_dir(str(out), "finetune", {"epochs": 1}, owned=OUTPUTS)
    (out / "backup").mkdir()
    (out / "backup" / "training_metadata.json").write_text('{"epoch": 1}')
    finish_job(str(out), "interrupted")
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    results = _finetuning_cluster(run_cluster, tiny_checkpoint, out)
    refusal = results[0][2].strip().splitlines()[-1]
    assert f"differs: {out} was written by a job with" in refusal, results[0][2][-3000:]
    for code, _, err, _ in results:
        assert (code, err.strip().splitlines()[-1]) == (2, refusal), err[-3000:]
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before



@pytest.mark.slow
def test_a_resumed_finetune_trains_to_the_weights_of_an_uninterrupted_one(tiny_checkpoint, tmp_path, monkeypatch):
    """Killed after its second epoch's backup and run again (here under a one-device MirroredStrategy), a finetune
    reads the batches an uninterrupted run reads in epochs 3-4 and ends with its very weights. Its epochs drew
    their orders from a shuffle that a new process started afresh (epoch 3 read epoch 1's order), and its dropout
    layers' seed states were not in the backup (their masks of epochs 1-2 were drawn again)."""
    import tensorflow as tf

    from keras_bert_zoo.tasks.task import Task
    from keras_bert_zoo.training.atomic_backup_and_restore import AtomicBackupAndRestore

    words = "all work and no play makes jack a dull boy".split()
    texts = [f"{a} {b}" for a in words[:4] for b in words[4:7]]  # 12 texts of distinct ids
    labels = [i % 2 for i in range(len(texts))]
    fed = []
    monkeypatch.setattr(Task, "_keras_inputs", logging_keras_inputs(fed))

    def run(output_dir, strategy=None):
        keras.utils.set_random_seed(3)
        with strategy.scope() if strategy else contextlib.nullcontext():
            task = kbz.BertClassifier.from_preset(TINY_CHECKPOINT, num_classes=2, sequence_length=8, dropout=0.5)
            task.compile(learning_rate=1e-3)
        kbz.finetune(task, texts, labels, str(tmp_path / output_dir), epochs=4, batch_size=4, verbose=0, seed=5)
        return [weight.numpy() for weight in task.weights]

    uninterrupted = run("whole")
    whole, fed[:] = [batch.tobytes() for batch in fed], []
    assert len(whole) == 4 * 3
    assert len({tuple(whole[i:i + 3]) for i in range(0, 12, 3)}) == 4  # an order of its own each epoch
    on_epoch_end = AtomicBackupAndRestore.on_epoch_end

    def killed_after_epoch_two(self, epoch, logs=None):
        on_epoch_end(self, epoch, logs)
        if epoch == 1:
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(AtomicBackupAndRestore, "on_epoch_end", killed_after_epoch_two)
        with pytest.raises(KeyboardInterrupt):
            run("resumed")
    assert [batch.tobytes() for batch in fed[:6]] == whole[:6]
    fed[:] = []
    resumed = run("resumed", tf.distribute.MirroredStrategy(["/cpu:0"]))
    # (The distributed input's first iterator, which it reads ahead of, is dropped: the batches trained come last.)
    assert [batch.tobytes() for batch in fed[-6:]] == whole[6:]
    for after_resume, after_one_run in zip(resumed, uninterrupted):
        np.testing.assert_array_equal(after_resume, after_one_run)


def test_an_output_directory_that_cannot_be_made_is_named_with_the_fix(tmp_path):
    """A library run given a directory under a file failed with "[Errno 20] Not a directory" as it claimed it."""
    from keras_bert_zoo.utils.job_record import running_job

    (tmp_path / "file").write_text("")
    out = str(tmp_path / "file" / "run")
    with pytest.raises(PermissionError, match=rf"^Cannot write in {out} \(Not a directory\): choose a writable "
                                              r"directory\.$"):
        with running_job(out, "pretrain", {"steps": 40}, owned=(("model",), ("backup",))):
            pass
