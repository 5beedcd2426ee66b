"""BertPretrainer training: Google's loss, learning from scratch and continued,
strategies, XLA, and resuming a killed run."""

import functools
import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import keras_bert_zoo as kbz
import keras_bert_zoo.training.pretrain as pretrain_module
from tests.cluster import free_ports
from tests.cluster import run_cluster
from tests.cluster import two_worker_cluster
from tests.conftest import shared_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL_CONFIG = {"num_layers": 2, "num_heads": 2, "hidden_dim": 64, "intermediate_dim": 128, "max_sequence_length": 64}


def test_loss_matches_run_pretraining(tiny_checkpoint, tmp_path):
    """Google's own masked-LM and next-sentence losses on the tiny checkpoint's reference batch."""
    reference = json.load(open(os.path.join(tiny_checkpoint, "reference_outputs.json")))
    inputs = reference["inputs"]
    model = kbz.BertPretrainer.from_preset(tiny_checkpoint)
    x = {"token_ids": np.array(inputs["input_ids"], "int32"), "segment_ids": np.array(inputs["token_type_ids"], "int32"),
         "padding_mask": np.array(inputs["input_mask"], "int32"),
         "mask_positions": np.array(inputs["masked_lm_positions"], "int32")}
    y = {"masked_lm_logits": np.array(inputs["masked_lm_ids"]),
         "next_sentence_logits": np.array(inputs["next_sentence_labels"])}
    weights = {"masked_lm_logits": np.array(inputs["masked_lm_weights"], "float32"),
               "next_sentence_logits": np.ones(2, "float32")}
    scores = model.evaluate(x, y, sample_weight=weights, verbose=0, return_dict=True)
    expected = reference["outputs"]
    # run_pretraining divides by sum(weights) + 1e-5, hence the 1e-4 tolerance.
    assert scores["masked_lm_loss"] == pytest.approx(expected["masked_lm_loss"], abs=1e-4)
    assert scores["next_sentence_loss"] == pytest.approx(expected["next_sentence_loss"], abs=1e-5)
    assert scores["loss"] == pytest.approx(expected["masked_lm_loss"] + expected["next_sentence_loss"], abs=1e-4)
    log_probs = np.array(expected["masked_lm_log_probs"])
    hits = (log_probs.argmax(-1) == np.array(inputs["masked_lm_ids"]).reshape(-1)).mean()
    assert scores["masked_lm_accuracy"] == pytest.approx(hits)
    # Training logs (progress line, history, TensorBoard) carry the same names, each score once.
    history = model.fit(x, y, sample_weight=weights, epochs=1, verbose=0).history
    assert set(history) == {"loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                            "next_sentence_loss"}


def _runner(*args):
    return json.loads(_runner_output(*args))


@functools.lru_cache(maxsize=None)
def _runner_output(*args):
    # One process per set of arguments: several tests compare against the default strategy's run of the same
    # arguments, and one run serves them all (each process starts TensorFlow and traces its step again).
    result = subprocess.run([sys.executable, "-m", "tests.strategy_runner", *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, check=True)
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.subprocess
def test_mirrored_strategy_matches_the_default_strategy():
    default, mirrored = _runner("default"), _runner("mirrored")
    assert mirrored["replicas"] == 2
    np.testing.assert_allclose(mirrored["loss"], default["loss"], rtol=1e-4)
    assert mirrored["checksum"] == pytest.approx(default["checksum"], rel=1e-3)


@pytest.mark.subprocess
def test_xla_train_step_with_steps_per_execution():
    default, compiled = _runner("default"), _runner("default", "jit")
    np.testing.assert_allclose(compiled["loss"], default["loss"], rtol=1e-4)


def _pretrain_command(corpus, output, *extra):
    return [sys.executable, "-m", "keras_bert_zoo.cli.main", "pretrain", "--input_file", corpus,
            "--output_dir", str(output), "--strategy", "cpu", "--max_seq_length", "64", "--max_predictions_per_seq",
            "10", *extra]


@pytest.mark.learning
@pytest.mark.subprocess
def test_pretraining_from_scratch_with_a_learned_vocabulary(tmp_path):
    corpus = tmp_path / "wiki.txt"
    corpus.write_text("".join(open(shared_path("corpus", "wikitext-2", "valid.txt"), encoding="utf-8").readlines()[:800]))
    (tmp_path / "config.json").write_text(json.dumps(SMALL_CONFIG))
    subprocess.run(_pretrain_command(str(corpus), tmp_path / "out", "--config", str(tmp_path / "config.json"),
                                     "--vocab_from_corpus", "2000", "--corpus_format", "wikitext", "--dupe_factor", "3",
                                     "--num_train_epochs", "6", "--learning_rate", "2e-3", "--train_batch_size", "32"),
                   check=True, capture_output=True, timeout=900, cwd=ROOT)
    metrics = json.load(open(tmp_path / "out" / "metrics.json"))
    after = metrics["after"]["masked_lm_accuracy"]
    assert after > metrics["before"]["masked_lm_accuracy"] + 0.05
    assert after > 1.5 * metrics["unigram_baseline_accuracy"]  # always guessing the commonest token
    assert metrics["after"]["masked_lm_loss"] < metrics["before"]["masked_lm_loss"] - 1.0
    # The result is a preset: its vocabulary is the learned one, and tasks build on it.
    tokenizer = kbz.BertTokenizer.from_preset(str(tmp_path / "out" / "model"))
    assert tokenizer.get_vocabulary() == kbz.learn_vocabulary(str(corpus), 2000)
    classifier = kbz.BertClassifier.from_preset(str(tmp_path / "out" / "model"), num_classes=2, sequence_length=32)
    assert classifier.backbone.hidden_dim == 64
    assert classifier.predict_proba(["a lobster"]).shape == (1, 2)


@pytest.mark.learning
def test_continued_pretraining_of_the_default_preset(default_preset_dir, tmp_path):
    """BioBERT's recipe in small: PubMed abstracts lower the held-out masked-LM loss."""
    corpus = tmp_path / "pubmed.txt"
    corpus.write_text("".join(open(shared_path("corpus", "pubmed_abstracts", "PubMedAbstract_1MB.txt"),
                                   encoding="utf-8").readlines()[:60]))
    metrics = kbz.pretrain(
        str(tmp_path / "out"), str(corpus), preset=default_preset_dir, corpus_format="documents", batch_size=8,
        data_config=kbz.PretrainingDataConfig(
            max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1),
        strategy="cpu", learning_rate=1e-4, verbose=0)
    assert metrics["after"]["masked_lm_loss"] < metrics["before"]["masked_lm_loss"] - 0.5
    restored = kbz.BertPretrainer.from_preset(str(tmp_path / "out" / "model"))
    assert restored.backbone.vocabulary_size == 30522


@pytest.mark.subprocess
def test_killed_run_resumes_from_its_last_checkpoint(tmp_path):
    corpus = tmp_path / "wiki.txt"
    corpus.write_text("".join(open(shared_path("corpus", "wikitext-2", "valid.txt"), encoding="utf-8").readlines()[:300]))
    (tmp_path / "config.json").write_text(json.dumps(SMALL_CONFIG))
    command = _pretrain_command(str(corpus), tmp_path / "out", "--config", str(tmp_path / "config.json"),
                                "--vocab_from_corpus", "1000", "--corpus_format", "wikitext", "--dupe_factor", "1",
                                "--num_train_epochs", "2", "--train_batch_size", "8", "--save_checkpoints_steps", "5")
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    metadata = tmp_path / "out" / "backup" / "training_metadata.json"
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
        if metadata.exists() and json.loads(metadata.read_text() or "{}").get("epoch", 0) >= 2:
            break
        time.sleep(0.2)
    assert process.poll() is None, "training ended before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (tmp_path / "out" / "model").exists()
    restart = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert restart.returncode == 0, restart.stderr[-3000:]
    metrics = json.load(open(tmp_path / "out" / "metrics.json"))
    assert metrics["resumed_at_step"] >= 10 and metrics["resumed_at_step"] % 5 == 0
    restored = kbz.BertPretrainer.from_preset(str(tmp_path / "out" / "model"))
    assert restored.backbone.num_layers == 2


@pytest.mark.subprocess
def test_sigterm_is_recorded_as_an_interruption_and_the_same_command_resumes(tiny_checkpoint, tmp_path):
    """A scheduler's preemption (SIGTERM) left job.json "running" and exited -15; it is Ctrl-C's interruption."""
    out = tmp_path / "out"
    command = ["pretrain", "--preset", tiny_checkpoint, "--input_file", _tiny_corpus(tmp_path / "corpus.txt"),
               "--output_dir", str(out), "--max_seq_length", "16", "--max_predictions_per_seq", "3",
               "--num_train_steps", "300", "--save_checkpoints_steps", "10", "--train_batch_size", "2",
               "--strategy", "cpu"]
    process = subprocess.Popen([sys.executable, "-m", "keras_bert_zoo.cli.main", *command], cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": ROOT}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    metadata = out / "backup" / "training_metadata.json"
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None and not metadata.exists():
        time.sleep(0.05)
    assert process.poll() is None, "training ended before it could be stopped"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 143, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        "keras-bert-zoo pretrain: interrupted by SIGTERM: run the same command again to resume it from its last "
        f"backup in {out / 'backup'} (one stopped before its first backup starts over)")
    assert json.load(open(out / "job.json"))["status"] == "interrupted"
    assert not (out / "model").exists()
    resumed = _cli(*command)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "from its backup" in resumed.stderr
    metrics = json.load(open(out / "metrics.json"))
    assert metrics["resumed_at_step"] >= 10 and metrics["resumed_at_step"] % 10 == 0
    assert metrics["global_step"] == 300
    assert json.load(open(out / "job.json"))["status"] == "finished"


def _two_workers(*args, env=lambda index: {}):
    """The JSON each of two `tests.strategy_runner multiworker ARGS` processes, a cluster on 127.0.0.1, prints."""
    outputs, _ = two_worker_cluster("-m", "tests.strategy_runner", "multiworker", *args, env=env)
    return [json.loads(out.strip().splitlines()[-1]) for out in outputs]


@pytest.mark.subprocess
def test_two_workers_train_in_step(tmp_path):
    """MultiWorkerMirroredStrategy, two processes on 127.0.0.1: both end with the same weights."""
    results = _two_workers(env=lambda index: {"WEIGHTS_OUT": str(tmp_path / f"worker{index}.npz")})
    assert [r["replicas"] for r in results] == [2, 2]
    first, second = np.load(tmp_path / "worker0.npz"), np.load(tmp_path / "worker1.npz")
    for name in first.files:
        np.testing.assert_array_equal(first[name], second[name])
    assert np.isfinite(results[0]["loss"]).all()


@pytest.fixture(scope="module")
def numbered_records(tmp_path_factory):
    """One set of numbered records for the resume tests (one path, so their runs of the same arguments are shared)."""
    from tests.strategy_runner import id_records

    directory = tmp_path_factory.mktemp("id_records")
    id_records([str(directory / f"train-{i}.tfrecord") for i in range(4)])
    return str(directory / "train-*.tfrecord")


@pytest.mark.subprocess
def test_two_workers_resume_on_the_records_an_uninterrupted_run_trains_on_next(numbered_records):
    """Resumed at step 3, each worker trains on what it trains on at steps 4-6 of an uninterrupted run, and the
    two together on a one-worker run's batches. Records are sharded by file by default, each worker splitting the
    global batches of its own files over two steps: skipping 3 global batches skipped twice what it had trained on."""
    whole = _two_workers("resume", numbered_records, "0", "6")
    resumed = _two_workers("resume", numbered_records, "3", "3")
    assert [worker["replicas"] for worker in whole] == [2, 2]
    assert [worker["records"][3:] for worker in whole] == [worker["records"] for worker in resumed]
    alone = _runner("default", "resume", numbered_records, "0", "6")["records"]
    assert [sorted(a + b) for a, b in zip(whole[0]["records"], whole[1]["records"])] == [sorted(s) for s in alone]
    assert len({i for step in alone for i in step}) == 6 * 8  # no record twice: the skip is not vacuous


@pytest.mark.subprocess
def test_mirrored_replicas_resume_on_the_records_an_uninterrupted_run_trains_on_next(numbered_records):
    """One worker, two replicas splitting each global batch: resumed at step 3, they train on steps 4-6's."""
    whole = _runner("mirrored", "resume", numbered_records, "0", "6")
    resumed = _runner("mirrored", "resume", numbered_records, "3", "3")
    alone = _runner("default", "resume", numbered_records, "0", "6")["records"]
    assert whole["replicas"] == 2 and whole["records"] == alone
    assert whole["records"][3:] == resumed["records"]


@pytest.mark.subprocess
def test_the_command_line_trains_with_a_multi_worker_strategy(tiny_checkpoint, tmp_path):
    """MultiWorkerMirroredStrategy must configure TensorFlow's collectives before any op runs: the command
    told records from text (TensorFlow ops) first, and died with "Collective ops must be configured at program
    startup". One worker stands for the cluster."""
    corpus = _tiny_corpus(tmp_path / "corpus.txt")
    (port,) = free_ports(1)
    result = subprocess.run(
        [sys.executable, "-m", "keras_bert_zoo.cli.main", "pretrain", "--preset", tiny_checkpoint, "--input_file",
         corpus, "--output_dir", str(tmp_path / "out"), "--max_seq_length", "16", "--max_predictions_per_seq", "3",
         "--num_train_steps", "2", "--train_batch_size", "2", "--strategy", "multiworker"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT, "TF_CONFIG": json.dumps(
            {"cluster": {"worker": [f"127.0.0.1:{port}"]}, "task": {"type": "worker", "index": 0}})})
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.load(open(tmp_path / "out" / "metrics.json"))
    assert metrics["global_step"] == 2 and metrics["replicas"] == 1


@pytest.mark.subprocess
def test_two_workers_write_one_job_into_their_shared_output_directory(tiny_checkpoint, tmp_path):
    """Both workers of a cluster are given one output_dir (shared storage: GCS on a TPU pod). The chief alone
    claims it and writes the backup, the logs, the model and the metrics; the other worker takes part in each save
    (saving may be collective) into a directory of its own that it removes, and restores from the chief's backup."""
    corpus = _tiny_corpus(tmp_path / "corpus.txt")
    out = tmp_path / "out"
    argv = ["-m", "keras_bert_zoo.cli.main", "pretrain", "--preset", tiny_checkpoint, "--input_file", corpus,
            "--output_dir", str(out), "--max_seq_length", "16", "--max_predictions_per_seq", "3",
            "--train_batch_size", "4", "--save_checkpoints_steps", "2", "--strategy", "multiworker"]
    temp = [tmp_path / f"worker{index}_tmp" for index in range(2)]
    for path in temp:
        path.mkdir()

    def run(steps):
        return two_worker_cluster(*argv, "--num_train_steps", str(steps),
                                  env=lambda index: {"TMPDIR": str(temp[index])}, timeout=500)[1]

    chief, _ = run(2)
    job = json.load(open(out / "job.json"))
    assert (job["status"], job["pid"]) == ("finished", chief)
    chief, _ = run(4)  # extended: both workers restore the chief's backup of step 2
    job = json.load(open(out / "job.json"))
    assert (job["status"], job["pid"], job["extends"]["--num_train_steps"]) == ("finished", chief, 2)
    metrics = json.load(open(out / "metrics.json"))
    assert (metrics["resumed_at_step"], metrics["global_step"], metrics["replicas"]) == (2, 4, 2)
    assert metrics["train_loss_steps"] == [2, 4]  # one log of each chunk: the chief's
    assert len(list((out / "logs" / "train").iterdir())) == 2  # one events file a run
    assert sorted(os.listdir(out)) == ["backup", "job.json", "logs", "metrics.json", "model"]
    written = [os.path.relpath(os.path.join(d, f), out) for d, _, files in os.walk(out) for f in files]
    assert sorted(f for f in written if not f.startswith(("logs", "model"))) == [
        "backup/latest.weights.h5", "backup/training_metadata.json", "job.json", "metrics.json"]
    assert [os.listdir(path) for path in temp] == [[], []]  # the other worker's saves removed


@pytest.mark.subprocess
def test_an_output_directory_the_chief_refuses_stops_every_worker_with_its_message(tiny_checkpoint, tmp_path):
    """The chief alone checks the shared output_dir; the other worker went on to train when the chief refused it,
    and waited for ever on it in its first collective op. Both stop with the chief's message, writing nothing."""
    out = tmp_path / "out"
    (out / "model").mkdir(parents=True)
    (out / "model" / "config.json").write_text("{}")  # another job's model, of no job.json
    results = run_cluster(
        "-m", "keras_bert_zoo.cli.main", "pretrain", "--preset", tiny_checkpoint, "--input_file",
        _tiny_corpus(tmp_path / "corpus.txt"), "--output_dir", str(out), "--max_seq_length", "16",
        "--max_predictions_per_seq", "3", "--train_batch_size", "4", "--num_train_steps", "2", "--strategy",
        "multiworker", timeout=300)
    refusal = (f"keras-bert-zoo pretrain: error: {out} holds model from an unknown job (no job.json): pass "
               "--overwrite_output_dir to replace it, or choose another output directory.")
    for code, _, err, _ in results:
        assert (code, err.strip().splitlines()[-1]) == (2, refusal), err[-3000:]
    assert sorted(os.listdir(out)) == ["model"] and os.listdir(out / "model") == ["config.json"]


def test_missing_tpu_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    with pytest.raises(ValueError, match="No TPU could be resolved .*Pass the TPU's name"):
        kbz.distribution.get_strategy("tpu", tpu="no-such-tpu")
    with pytest.raises(ValueError, match="Unknown strategy 'tpus'"):
        kbz.distribution.get_strategy("tpus")


@pytest.mark.slow
def test_mixed_bfloat16_pretraining_of_the_tiny_checkpoint(tiny_checkpoint, tmp_path, monkeypatch):
    import keras

    sentences = ["all work and no play", "makes jack a dull boy", "all play and no work", "jack makes a boy dull"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(sentences[i:] + sentences[:i]) for i in range(4)) + "\n")
    trained = []
    make_model = pretrain_module._model
    monkeypatch.setattr(pretrain_module, "_model", lambda *args: trained.append(make_model(*args)) or trained[-1])
    # A saved preset (as a converted checkpoint is cached, or a run's output continued) names its float32 policy.
    saved = str(tmp_path / "saved")
    kbz.BertPretrainer.from_preset(tiny_checkpoint).save_to_preset(saved)
    metrics = kbz.pretrain(str(tmp_path / "out"), str(corpus), preset=saved, batch_size=4, epochs=2,
                           data_config=kbz.PretrainingDataConfig(max_seq_length=16, max_predictions_per_seq=3,
                                                                 dupe_factor=4),
                           eval_fraction=0.25, strategy="cpu", mixed_precision=True, verbose=0)
    assert keras.mixed_precision.dtype_policy().name == "float32"  # the global policy is left as it was
    # The preset's float32 policy gave way to mixed precision: the encoder computed in bfloat16 (it ran in float32).
    assert {layer.compute_dtype for layer in trained[0].backbone.transformer_layers} == {"bfloat16"}
    assert {layer.variable_dtype for layer in trained[0].backbone.transformer_layers} == {"float32"}
    assert np.isfinite(metrics["train_loss"]).all() and np.isfinite(metrics["after"]["loss"])
    restored = kbz.BertPretrainer.from_preset(str(tmp_path / "out" / "model"))
    # The preset stores float32 weights and loads in float32, as the checkpoint it started from.
    assert restored.dtype_policy.name == restored.backbone.dtype_policy.name == "float32"
    assert {layer.dtype_policy.name for layer in restored.backbone.transformer_layers} == {"float32"}


def _tiny_corpus(path, documents=12):
    sentences = ["all work and no play", "makes jack a dull boy", "all play and no work", "jack makes a boy dull",
                 "the cat sat on the mat", "a dog ate the cat"]
    path.write_text("\n\n".join("\n".join(sentences[i % 6:] + sentences[:i % 6]) for i in range(documents)) + "\n")
    return str(path)


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "keras_bert_zoo.cli.main", *argv], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})


@pytest.mark.slow
def test_pretraining_on_create_pretraining_data_records_stops_after_num_train_steps(tiny_checkpoint, tmp_path):
    """run_pretraining.py's path: records in, --num_train_steps, backups every --save_checkpoints_steps,
    masked-LM / next-sentence accuracy on --eval_input_file."""
    corpus = _tiny_corpus(tmp_path / "corpus.txt")
    common = ["--preset", tiny_checkpoint, "--max_seq_length", "16", "--max_predictions_per_seq", "3"]
    for name, extra in (("train", ["--dupe_factor", "3"]), ("eval", ["--dupe_factor", "1", "--random_seed", "7"])):
        made = _cli("create-pretraining-data", "--input_file", corpus, "--output_file", str(tmp_path / f"{name}.tfrecord"),
                    "--num_shards", "2" if name == "train" else "1", *common, *extra)
        assert made.returncode == 0, made.stderr
    out = tmp_path / "out"
    argv = ["pretrain", "--preset", tiny_checkpoint, "--input_file", str(tmp_path / "train-*.tfrecord"),
            "--eval_input_file", str(tmp_path / "eval.tfrecord"), "--output_dir", str(out), "--num_train_steps", "7",
            "--save_checkpoints_steps", "3", "--train_batch_size", "4", "--strategy", "cpu"]
    result = _cli(*argv)
    assert result.returncode == 0, result.stderr[-3000:]
    # The held-out scores take the batches the records fill, no more (Keras would warn and stop).
    assert "ran out of data" not in result.stderr
    metrics = json.load(open(out / "metrics.json"))
    assert metrics["global_step"] == metrics["steps"] == 7 and metrics["train_files"] == 2
    assert (metrics["max_seq_length"], metrics["max_predictions_per_seq"]) == (16, 3)  # read from the records
    for when in ("before", "after"):
        assert 0 <= metrics[when]["masked_lm_accuracy"] <= 1 and 0 <= metrics[when]["next_sentence_accuracy"] <= 1
    assert len(metrics["train_loss"]) == 3  # backups after steps 3 and 6, then the last step
    assert kbz.BertPretrainer.from_preset(str(out / "model")).backbone.num_layers == 2
    # Flags that make instances belong to create-pretraining-data, and lengths must match the records.
    refused = _cli(*argv[:-8], "--output_dir", str(tmp_path / "o2"), "--dupe_factor", "5", "--strategy", "cpu")
    assert refused.returncode == 2
    assert ("--dupe_factor applies only to a text corpus: the TFRecords of --input_file hold finished instances"
            in refused.stderr)
    refused = _cli(*argv[:-8], "--output_dir", str(tmp_path / "o3"), "--max_predictions_per_seq", "5")
    assert refused.returncode == 2
    assert "max_predictions_per_seq 5 does not match the records" in refused.stderr
    mixed = _cli("pretrain", "--preset", tiny_checkpoint, "--input_file", f"{tmp_path / 'eval.tfrecord'},{corpus}",
                 "--output_dir", str(tmp_path / "o4"))
    assert mixed.returncode == 2 and "--input_file mixes TFRecords" in mixed.stderr
    assert not any((tmp_path / o).exists() for o in ("o2", "o3", "o4"))


@pytest.mark.slow
def test_a_small_model_pretrains_on_instances_of_its_positions_without_a_length_given(tiny_checkpoint, tmp_path,
                                                                                      monkeypatch):
    """PretrainingDataConfig's max_seq_length 128 is more than the tiny checkpoint's 16 positions: pretrain and
    create-pretraining-data refused it though nobody gave it. Not given, it is cut to the positions, and
    max_predictions_per_seq to about 16 x 0.15 with it (as google-research/bert's README sets it)."""
    import tensorflow as tf

    from keras_bert_zoo.cli.main import main

    corpus = _tiny_corpus(tmp_path / "corpus.txt")
    made = []
    create = pretrain_module.create_pretraining_instances
    monkeypatch.setattr(pretrain_module, "create_pretraining_instances",
                        lambda documents, tokenizer, config, **kwargs: made.append(config) or create(
                            documents, tokenizer, config, **kwargs))
    metrics = kbz.pretrain(str(tmp_path / "out"), corpus, preset=tiny_checkpoint, batch_size=4, num_train_steps=2,
                           data_config={"dupe_factor": 1}, strategy="cpu", verbose=0)
    assert np.isfinite(metrics["after"]["loss"])
    assert {(c.max_seq_length, c.max_predictions_per_seq, c.dupe_factor) for c in made} == {(16, 2, 1)}
    # A config given is used as it is.
    assert kbz.PretrainingDataConfig.for_positions(16, max_seq_length=8, max_predictions_per_seq=1).max_seq_length == 8
    records = str(tmp_path / "records.tfrecord")
    assert main(["create-pretraining-data", "--input_file", corpus, "--output_file", records, "--preset",
                 tiny_checkpoint, "--dupe_factor", "1"]) == 0
    # The records read as raw tf.train.Examples, not by the library's reader.
    examples = [tf.train.Example.FromString(raw.numpy()).features.feature
                for raw in tf.data.TFRecordDataset(records)]
    assert examples and all((len(e["token_ids"].int64_list.value), len(e["mask_positions"].int64_list.value)) ==
                            (16, 2) for e in examples)


@pytest.mark.parametrize("data_config", [kbz.PretrainingDataConfig(), {"max_seq_length": 32}])
def test_a_data_config_longer_than_the_models_positions_is_refused_before_any_work(tiny_checkpoint, tmp_path,
                                                                                   data_config):
    """The tiny checkpoint has 16 positions: instances of 128 (32) were made and trained on, and the first step
    failed with TensorFlow's InvalidArgumentError from the position embedding's Slice."""
    with pytest.raises(ValueError, match=r"max_seq_length (128|32) is more than the 16 positions of the preset .*: "
                                         r"pass max_seq_length=16 or less"):
        kbz.pretrain(str(tmp_path / "out"), _tiny_corpus(tmp_path / "corpus.txt"), preset=tiny_checkpoint,
                     data_config=data_config, batch_size=4, num_train_steps=1, strategy="cpu", verbose=0)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("arguments, message", [
    ({"eval_fraction": -0.1}, r"eval_fraction must be a fraction .* got -0.1\."),  # held out 27 of 30 documents
    ({"eval_fraction": 10}, r"eval_fraction must be a fraction .* got 10: 10% is 0.1\."),
    ({"num_train_steps": 0}, r"num_train_steps must be a positive whole number; got 0\."),  # trained an epoch
    ({"num_train_steps": 2.0}, r"num_train_steps must be a positive whole number; got 2.0\."),
    ({"epochs": 0}, r"epochs must be a positive whole number; got 0\."),  # named total_steps
    ({"checkpoint_every": 0}, r"checkpoint_every must be a positive whole number; got 0\."),  # the default's
    ({"data_config": {"max_seq_lenght": 8}}, r"PretrainingDataConfig has no field 'max_seq_lenght'; its fields: "
                                              r"max_seq_length, max_predictions_per_seq, masked_lm_prob"),
])
def test_a_length_of_training_or_held_out_fraction_out_of_range_is_refused_before_any_work(tiny_checkpoint,
                                                                                           tmp_path, arguments,
                                                                                           message):
    with pytest.raises((ValueError, TypeError), match=message):
        kbz.pretrain(str(tmp_path / "out"), _tiny_corpus(tmp_path / "corpus.txt"), preset=tiny_checkpoint,
                     batch_size=4, strategy="cpu", verbose=0, **arguments)
    assert not (tmp_path / "out").exists()
    if "num_train_steps" in arguments or "checkpoint_every" in arguments:
        with pytest.raises(ValueError, match=message):
            kbz.pretrain_from_records(str(tmp_path / "out"), str(tmp_path / "none.tfrecord"), preset=tiny_checkpoint,
                                      strategy="cpu", **arguments)


@pytest.mark.slow
def test_pretraining_a_text_corpus_stops_after_num_train_steps(tiny_checkpoint, tmp_path, capsys):
    """5 steps backed up every 2: the last chunk is shown as the 1 step it runs (Keras showed "2/2"), and
    metrics.json names each score once, as run_pretraining.py does."""
    corpus = _tiny_corpus(tmp_path / "corpus.txt")
    metrics = kbz.pretrain(str(tmp_path / "out"), corpus, preset=tiny_checkpoint, batch_size=4, num_train_steps=5,
                           checkpoint_every=2, data_config=kbz.PretrainingDataConfig(
                               max_seq_length=16, max_predictions_per_seq=3, dupe_factor=1),
                           strategy="cpu", verbose=2)
    assert metrics["global_step"] == metrics["steps"] == 5
    assert re.findall(r"^(\d+/\d+) - ", capsys.readouterr().out, flags=re.M) == ["2/2", "2/2", "1/1"]
    names = {"loss", "masked_lm_loss", "masked_lm_accuracy", "next_sentence_loss", "next_sentence_accuracy"}
    assert set(metrics["before"]) == set(metrics["after"]) == names
    assert json.load(open(tmp_path / "out" / "metrics.json"))["after"] == metrics["after"]
    assert metrics["eval_instances"] % 4 == 0 and metrics["eval_instances"] > 0  # whole batches of 4


def _log_fed_batches(monkeypatch, fed):
    """Append to `fed` each batch `BertPretrainer.fit` itself reads (after any skipping): a tuple of its rows, each
    the bytes of the instance's inputs (token, segment and mask position ids, padding mask)."""
    import tensorflow as tf

    names = ("token_ids", "segment_ids", "padding_mask", "mask_positions")

    def logged(*inputs):
        fed.append(tuple(row.tobytes() for row in np.concatenate([value.numpy() for value in inputs], axis=1)))
        return inputs[0]

    fit = kbz.BertPretrainer.fit

    def logging_fit(self, x, *args, **kwargs):
        return fit(self, x.map(lambda x, y, w: ({**x, "token_ids": tf.ensure_shape(
            tf.py_function(logged, [x[name] for name in names], tf.int32), x["token_ids"].shape)}, y, w)),
            *args, **kwargs)

    monkeypatch.setattr(kbz.BertPretrainer, "fit", logging_fit)


@pytest.mark.slow
def test_a_resumed_run_trains_on_the_batches_after_those_it_trained(tiny_checkpoint, tmp_path, monkeypatch):
    """A run interrupted after step 5 (backed up at step 4) resumes at step 4 on the batches that an uninterrupted
    run trains at steps 5-8. It read the repeated data from their start again: a job interrupted every k steps
    trained on its first k batches alone."""
    corpus = _tiny_corpus(tmp_path / "corpus.txt")
    fed = []

    class StopAfterStepFive(pretrain_module._StopAt):
        def on_train_batch_end(self, batch, logs=None):
            if interrupt and int(self.model.optimizer.iterations.numpy()) == 5:
                raise KeyboardInterrupt
            super().on_train_batch_end(batch, logs)

    _log_fed_batches(monkeypatch, fed)
    monkeypatch.setattr(pretrain_module, "_StopAt", StopAfterStepFive)

    def run(output_dir):
        return kbz.pretrain(str(tmp_path / output_dir), corpus, preset=tiny_checkpoint, batch_size=2,
                            num_train_steps=8, checkpoint_every=2, eval_fraction=0, strategy="cpu", verbose=0,
                            data_config=kbz.PretrainingDataConfig(max_seq_length=16, max_predictions_per_seq=3,
                                                                  dupe_factor=2))

    interrupt = False
    run("whole")
    uninterrupted, fed[:] = fed[:8], []
    assert len(set(uninterrupted)) == 8
    interrupt = True
    with pytest.raises(KeyboardInterrupt):
        run("resumed")
    interrupt, fed[:] = False, []
    assert run("resumed")["resumed_at_step"] == 4
    assert fed[:4] == uninterrupted[4:]


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint_every", [None, 4])
def test_a_resumed_run_of_epochs_trains_on_the_passes_an_uninterrupted_run_trains_on(tiny_checkpoint, tmp_path,
                                                                                     monkeypatch, checkpoint_every):
    """--num_train_epochs 3 on a text corpus, interrupted one step past its last backup inside the second pass
    (backed up each epoch, or every 4 steps: a step inside the pass), resumes on the very inputs an uninterrupted run takes from there.
    Each pass drew its order from a state that a new process started afresh: the resumed run took the first
    pass's order again."""
    corpus = _tiny_corpus(tmp_path / "corpus.txt")
    fed, interrupt_at = [], None

    class InterruptedAt(pretrain_module._StopAt):
        def on_train_batch_end(self, batch, logs=None):
            if int(self.model.optimizer.iterations.numpy()) == interrupt_at:
                raise KeyboardInterrupt
            super().on_train_batch_end(batch, logs)

    _log_fed_batches(monkeypatch, fed)
    monkeypatch.setattr(pretrain_module, "_StopAt", InterruptedAt)

    def run(output_dir):
        return kbz.pretrain(str(tmp_path / output_dir), corpus, preset=tiny_checkpoint, batch_size=2, epochs=3,
                            checkpoint_every=checkpoint_every, eval_fraction=0, strategy="cpu", verbose=0,
                            data_config=kbz.PretrainingDataConfig(max_seq_length=16, max_predictions_per_seq=3,
                                                                  dupe_factor=1))

    instances = run("whole")["train_instances"]
    per_pass = instances // 2
    uninterrupted, fed[:] = fed[:], []
    assert len(uninterrupted) == 3 * per_pass >= 9
    # The passes take the instances (the odd one out of a batch left out) each in an order of its own.
    assert len({row for batch in uninterrupted for row in batch}) <= instances
    assert len({tuple(uninterrupted[i * per_pass:(i + 1) * per_pass]) for i in range(3)}) == 3
    chunk = checkpoint_every or per_pass
    backed_up = -(-per_pass // chunk) * chunk  # the first backup at the second pass's start, or inside it
    assert per_pass <= backed_up < 2 * per_pass and (checkpoint_every is None or backed_up > per_pass)
    interrupt_at = backed_up + 1
    with pytest.raises(KeyboardInterrupt):
        run("resumed")
    interrupt_at, fed[:] = None, []
    assert run("resumed")["resumed_at_step"] == backed_up
    assert fed == uninterrupted[backed_up:]


@pytest.mark.slow
def test_a_finished_pretraining_asked_for_more_steps_trains_on_from_its_final_state(tiny_checkpoint, tmp_path,
                                                                                      monkeypatch):
    """run_pretraining.py pointed at its output_dir with a larger num_train_steps goes on from its last
    checkpoint; ours refused the rerun as another job. Extended from 4 steps to 8 (interrupted once on the way),
    it starts from the finished run's weights, Adam moments and step count, on the batches after those it
    trained, at the learning rates of an 8-step schedule; metrics.json's train_loss is the whole job's (it held
    the last run's alone), each chunk's loss as Keras' history had it, with the step it ended at."""
    corpus = _tiny_corpus(tmp_path / "corpus.txt")
    fed, runs, losses = [], [], []

    class Watched(pretrain_module._ResumedAt):
        def on_train_begin(self, logs=None):  # after the backup's restore (it comes first)
            super().on_train_begin(logs)
            runs.append({"begin": [v.numpy().copy() for v in self.model.optimizer.variables], "rates": []})

        def on_train_batch_begin(self, batch, logs=None):
            runs[-1]["rates"].append(float(self.model.optimizer.learning_rate))
            if interrupt and int(self.model.optimizer.iterations.numpy()) == 7:
                raise KeyboardInterrupt

        def on_epoch_end(self, epoch, logs=None):  # Keras' own loss of each chunk, as its history holds it
            losses.append((int(self.model.optimizer.iterations.numpy()), logs["loss"]))

        def on_train_end(self, logs=None):
            runs[-1]["end"] = [v.numpy().copy() for v in self.model.optimizer.variables]
            runs[-1]["fed"] = fed[:]

    _log_fed_batches(monkeypatch, fed)
    monkeypatch.setattr(pretrain_module, "_ResumedAt", Watched)

    def run(output_dir, steps):
        fed[:] = []
        return kbz.pretrain(str(tmp_path / output_dir), corpus, preset=tiny_checkpoint, batch_size=2,
                            num_train_steps=steps, checkpoint_every=3, eval_fraction=0, strategy="cpu", verbose=0,
                            learning_rate=1e-3, warmup_steps=1, data_config=kbz.PretrainingDataConfig(
                                max_seq_length=16, max_predictions_per_seq=3, dupe_factor=2))

    interrupt = False
    run("whole", 8)
    stream = runs[-1]["fed"][:8]
    losses[:] = []
    run("out", 4)  # chunks of 3 and 1 steps: the step count, not the chunks, says where it ended
    finished = runs[-1]["end"]
    assert os.path.exists(tmp_path / "out" / "backup" / "latest.weights.h5")  # kept for an extension
    interrupt = True
    with pytest.raises(KeyboardInterrupt):  # after the chunk of steps 5-7, backed up
        run("out", 8)
    extension = runs[-1]
    assert json.load(open(tmp_path / "out" / "job.json"))["status"] == "interrupted"
    for restored, saved in zip(extension["begin"], finished):  # iterations, Adam's moments of each weight
        np.testing.assert_array_equal(restored, saved)
    assert int(extension["begin"][0]) == 4
    # run_pretraining.py's polynomial decay (power 1) over the new total, at global steps 4..7.
    np.testing.assert_allclose(extension["rates"], [1e-3 * (1 - step / 8) for step in range(4, 8)], rtol=1e-6)
    assert fed[:3] == stream[4:7]
    interrupt = False
    metrics = run("out", 8)
    assert (metrics["resumed_at_step"], metrics["global_step"], metrics["steps"]) == (7, 8, 8)
    assert runs[-1]["fed"][:1] == stream[7:8]
    assert metrics["train_loss_steps"] == [step for step, _ in losses] == [3, 4, 7, 8]
    np.testing.assert_allclose(metrics["train_loss"], [loss for _, loss in losses], rtol=1e-6)
    record = json.load(open(tmp_path / "out" / "job.json"))
    assert record["status"] == "finished" and record["fingerprint"]["num_train_steps"] == 8
    assert record["extends"]["num_train_steps"] == 4 and record["extends"]["status"] == "finished"


@pytest.mark.slow
def test_only_a_run_that_starts_fresh_warns_of_fresh_heads(tiny_checkpoint, tmp_path):
    """A preset without pretraining heads warns that they start fresh; a resumed or extended run restores them
    from its backup, and warned the same (its loss carried on where the backup's ended)."""
    preset = str(tmp_path / "no_heads")
    kbz.BertBackbone.from_preset(tiny_checkpoint).save_to_preset(preset, tokenizer=kbz.BertTokenizer.from_preset(
        tiny_checkpoint))
    corpus = _tiny_corpus(tmp_path / "corpus.txt")

    def fresh_heads_warnings(steps):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kbz.pretrain(str(tmp_path / "out"), corpus, preset=preset, batch_size=2, num_train_steps=steps,
                         eval_fraction=0, strategy="cpu", verbose=0, data_config=kbz.PretrainingDataConfig(
                             max_seq_length=16, max_predictions_per_seq=3, dupe_factor=1))
        return [str(w.message) for w in caught if "heads are freshly initialised" in str(w.message)]

    assert fresh_heads_warnings(2) == [f"{preset} {kbz.BertPretrainer.fresh_heads_warning}"]
    assert fresh_heads_warnings(4) == []  # extended from its final backup


@pytest.mark.slow
def test_the_command_line_extends_a_finished_pretraining_given_more_steps(tiny_checkpoint, tmp_path, capsys):
    """`pretrain` again with a larger --num_train_steps: it was refused ("--num_train_steps differs"); it trains on.
    Where the training state is gone, the refusal says how to go on from the model."""
    import shutil

    from keras_bert_zoo.cli.main import main

    out = tmp_path / "out"
    argv = ["pretrain", "--preset", tiny_checkpoint, "--input_file", _tiny_corpus(tmp_path / "corpus.txt"),
            "--output_dir", str(out), "--max_seq_length", "16", "--max_predictions_per_seq", "3",
            "--train_batch_size", "2", "--strategy", "cpu", "--num_train_steps"]
    assert main([*argv, "2"]) == 0
    assert main([*argv, "3"]) == 0
    err = capsys.readouterr().err
    assert f"Extending the finished pretrain job in {out} from --num_train_steps 2 to 3: it trains on from its " \
           "backup" in err
    metrics = json.load(open(out / "metrics.json"))
    assert (metrics["resumed_at_step"], metrics["global_step"]) == (2, 3)
    shutil.rmtree(out / "backup")
    assert main([*argv, "4"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"keras-bert-zoo pretrain: error: {out} holds a pretrain job of --num_train_steps 3 whose "
                           "training state (backup: optimizer, step count) was not kept")
    assert f"{out / 'model'} as the preset" in line and "--overwrite_output_dir" in line
    assert json.load(open(out / "job.json"))["status"] == "finished"


def _zero_records(path, length, predictions, count=4):
    zeros = lambda *shape: np.zeros(shape, "int32")  # noqa: E731
    kbz.data.write_pretraining_records({
        "token_ids": zeros(count, length), "segment_ids": zeros(count, length), "padding_mask": zeros(count, length),
        "mask_positions": zeros(count, predictions), "mask_ids": zeros(count, predictions),
        "mask_weights": zeros(count, predictions), "next_sentence_label": zeros(count)}, str(path))
    return str(path)


def test_held_out_records_of_other_lengths_are_refused_naming_both(tiny_checkpoint, tmp_path):
    train, held = _zero_records(tmp_path / "train.tfrecord", 16, 3), _zero_records(tmp_path / "held.tfrecord", 12, 2)
    with pytest.raises(ValueError, match=re.escape(
            f"The evaluation records ({held} ...) were written with max_seq_length 12, max_predictions_per_seq 2, "
            "the training records with 16, 3: write both with the same flags.")):
        kbz.pretrain_from_records(str(tmp_path / "run"), train, preset=tiny_checkpoint, eval_input_file=held,
                                  strategy="cpu")
    assert not (tmp_path / "run").exists()


def test_text_only_flags_on_records_say_what_records_take_instead(tiny_checkpoint, tmp_path, capsys):
    """--num_train_epochs on records said to set it "when running create-pretraining-data", which has no such flag."""
    from keras_bert_zoo.cli.main import main

    records = _zero_records(tmp_path / "train.tfrecord", 16, 3)
    base = ["pretrain", "--preset", tiny_checkpoint, "--input_file", records, "--output_dir", str(tmp_path / "run")]
    for extra, flags, hints in (
            (["--num_train_epochs", "3"], "--num_train_epochs applies", "--num_train_steps sets how long records train"),
            (["--eval_fraction", "0.2", "--dupe_factor", "2"], "--eval_fraction, --dupe_factor apply",
             "held-out records go in --eval_input_file; set it when running create-pretraining-data")):
        assert main(base + extra) == 2
        assert (f"{flags} only to a text corpus: the TFRecords of --input_file hold finished instances ({hints})."
                in capsys.readouterr().err)
    with pytest.raises(SystemExit):
        main(base[:-2] + ["--output_dir", str(tmp_path / "run2"), "--eval_fraction", "1"])
    assert ("argument --eval_fraction: must be a fraction from 0 (none held out) to below 1; got 1"
            in capsys.readouterr().err)
    assert not (tmp_path / "run").exists() and not (tmp_path / "run2").exists()


@pytest.mark.parametrize("batch_size, count, replicas, expected", [
    (8, 100, 1, 8), (8, 5, 1, 5),  # the training batch, or all held-out instances where fewer
    (8, 100, 2, 8), (8, 5, 2, 4), (8, 7, 4, 4),  # in equal parts per replica
])
def test_the_held_out_batch_is_shared_equally_by_the_replicas(batch_size, count, replicas, expected):
    from types import SimpleNamespace

    strategy = SimpleNamespace(num_replicas_in_sync=replicas)
    assert pretrain_module._eval_batch_size(batch_size, count, strategy) == expected
    with pytest.raises(ValueError, match="The 3 held-out instance\\(s\\) are fewer than the 4 replicas"):
        pretrain_module._eval_batch_size(batch_size, 3, SimpleNamespace(num_replicas_in_sync=4))


@pytest.mark.parametrize("count, fraction, held", [
    (30, 0.1, 3), (12, 0.1, 2), (6, 0.1, 2),  # a fraction rounding to one document holds out two
    (5, 0.1, 0), (3, 0.1, 0), (3, 0.5, 0), (1, 0.5, 0),  # two held out would leave fewer than two to train on
    (4, 0.25, 2), (10, 0.5, 5), (10, 0.9, 8), (4, 0.8, 2),  # and two left to train on
])
def test_held_out_documents_are_never_one(count, fraction, held):
    """One held-out document took its random segments B from a training document (scored as held out)."""
    documents = [[[i]] for i in range(count)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train, evaluation = pretrain_module._held_out(documents, fraction, seed=0)
    assert len(evaluation) == held and sorted(train + evaluation) == documents
    assert [str(w.message) for w in caught] == ([] if held else [
        f"eval_fraction={fraction} of the {count} document(s) holds out none (scores need two held-out documents, "
        "and two left to train on): no before/after scores in metrics.json. Give more documents (a blank line ends "
        "one), or another eval_fraction."])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pretrain_module._held_out(documents, 0, seed=0) == (documents, [])


@pytest.mark.parametrize("count, batch_size, steps, scored, left", [
    (95, 8, None, 88, 7), (92, 4, None, 92, 0), (95, 8, 5, 40, 0), (95, 8, 11, 88, 7), (95, 8, 100, 88, 7),
])
def test_the_held_out_instances_scored_are_counted_and_a_remainder_left_out_is_warned_of(count, batch_size, steps,
                                                                                          scored, left):
    """Scored in whole batches, 95 instances gave other scores at batch 8 (88 scored) than at 4 (92), unsaid."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert pretrain_module._scored(count, batch_size, steps) == scored
    assert [str(w.message) for w in caught] == ([f"{left} of the {count} held-out instances are left unscored: the "
                                                 f"scores are of whole batches of {batch_size} (one shape, as a TPU "
                                                 "compiles it)."] if left else [])


def test_the_command_line_steps_as_run_pretraining_py_without_adams_bias_correction(tiny_checkpoint, tmp_path,
                                                                                    monkeypatch):
    """--noadam_bias_correction reaches the optimizer (whose step is checked against AdamWeightDecayOptimizer's
    formula in test_optimization.py), is saved with the model, and makes another job than the default's."""
    from keras_bert_zoo.cli.main import main

    trained = []
    make_model = pretrain_module._model
    monkeypatch.setattr(pretrain_module, "_model", lambda *args: trained.append(make_model(*args)) or trained[-1])
    out = tmp_path / "out"
    argv = ["pretrain", "--preset", tiny_checkpoint, "--input_file", _tiny_corpus(tmp_path / "corpus.txt"),
            "--output_dir", str(out), "--num_train_steps", "2", "--train_batch_size", "4", "--strategy", "cpu"]
    assert main(argv + ["--noadam_bias_correction"]) == 0
    assert trained[-1].optimizer.bias_correction is False
    assert int(trained[-1].optimizer.iterations.numpy()) == 2
    assert kbz.BertPretrainer.from_preset(str(out / "model")).get_compile_config()["auto_optimizer"][
        "bias_correction"] is False
    # The default (corrected) is another job: refused in the same output directory.
    assert main(argv) == 2
    assert main(argv[:-8] + ["--output_dir", str(tmp_path / "default")] + argv[-6:]) == 0
    assert trained[-1].optimizer.bias_correction is True


def _bad_records(tmp_path, kind):
    """A records file of 16-piece instances, bad as `kind` says; `(path, index of its bad record, problem)`."""
    import tensorflow as tf

    good = [r.numpy() for r in tf.data.TFRecordDataset(_zero_records(tmp_path / "source.tfrecord", 16, 3))]
    other_length = [r.numpy() for r in tf.data.TFRecordDataset(_zero_records(tmp_path / "other.tfrecord", 12, 3))]
    lacking = tf.train.Example.FromString(good[0])
    del lacking.features.feature["mask_ids"]
    records, index, problem = {
        "not_an_example_first": ([b"\xff\xfe not an Example"], None, "its first record is not a tf.train.Example"),
        "not_an_example": (good[:2] + [b"\xff\xfe not an Example"], 2, "is not a tf.train.Example"),
        "missing_feature": (good[:3] + [lacking.SerializeToString()], 3, "lacks mask_ids"),
        "other_length": (good + other_length, 4, "holds 12 token_ids values where the first record of the files "
                                                 "holds 16"),
        "truncated": (good, 3, "is cut short or damaged"),
    }[kind]
    path = str(tmp_path / f"{kind}.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    if kind == "truncated":  # the last record's bytes end early, as a copy cut short leaves it
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 10)
    return path, index, problem


def _bad_record_message(path, index, problem):
    where = f"{path}: record {index} (counting from 0) {problem}" if index is not None else f"{path}: {problem}"
    return re.escape(where) + r".*write the records again with `keras-bert-zoo create-pretraining-data`"


@pytest.mark.parametrize("kind", ["not_an_example_first", "not_an_example", "missing_feature", "other_length",
                                  "truncated"])
def test_a_bad_records_file_after_the_first_is_named_with_its_record_before_a_model_loads(tiny_checkpoint, tmp_path,
                                                                                         kind):
    """TensorFlow's DataLossError / InvalidArgumentError / protobuf's DecodeError (or a UnicodeDecodeError of the
    message quoting the bytes) named no file: each is a ValueError naming the file, the record and the fix."""
    good = _zero_records(tmp_path / "a.tfrecord", 16, 3)
    bad, index, problem = _bad_records(tmp_path, kind)
    with pytest.raises(ValueError, match=_bad_record_message(bad, index, problem)):
        kbz.pretrain_from_records(str(tmp_path / "run"), [good, bad], preset=tiny_checkpoint, num_train_steps=1,
                                  batch_size=2, strategy="cpu", verbose=0)
    assert not (tmp_path / "run").exists()


def test_a_bad_record_met_in_training_or_in_the_held_out_count_is_named(tiny_checkpoint, tmp_path, monkeypatch,
                                                                        capsys):
    """Past the first records checked (a corpus of millions), the bad record stops training with the same
    message, and the command line prints it as its one error line (exit 2)."""
    from keras_bert_zoo.cli.main import main

    good = _zero_records(tmp_path / "a.tfrecord", 16, 3)
    bad, index, problem = _bad_records(tmp_path, "truncated")
    monkeypatch.setattr(pretrain_module, "check_first_records", lambda records, files: None)  # as if past them
    with pytest.raises(ValueError, match=_bad_record_message(bad, index, problem)):
        kbz.pretrain_from_records(str(tmp_path / "run"), [good, bad], preset=tiny_checkpoint, num_train_steps=4,
                                  batch_size=2, strategy="cpu", verbose=0)
    with pytest.raises(ValueError, match=_bad_record_message(bad, index, problem)):
        kbz.pretrain_from_records(str(tmp_path / "run2"), good, eval_input_file=bad, preset=tiny_checkpoint,
                                  num_train_steps=1, batch_size=2, strategy="cpu", verbose=0)
    assert main(["pretrain", "--preset", tiny_checkpoint, "--input_file", f"{good},{bad}", "--output_dir",
                 str(tmp_path / "run3"), "--num_train_steps", "4", "--train_batch_size", "2", "--strategy", "cpu"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.fullmatch("keras-bert-zoo pretrain: error: " + _bad_record_message(bad, index, problem) + r".*", line)
    # A TFRecord file of no Examples is named as such (it was taken for text: "--input_file mixes TFRecords").
    bad, _, problem = _bad_records(tmp_path, "not_an_example_first")
    assert main(["pretrain", "--preset", tiny_checkpoint, "--input_file", f"{good},{bad}", "--output_dir",
                 str(tmp_path / "run4"), "--strategy", "cpu"]) == 2
    assert f"error: {bad}: {problem}" in capsys.readouterr().err
