"""`keras-bert-zoo finetune / evaluate / predict`, and resuming a killed run."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings

import pytest

from keras_bert_zoo.cli.main import main
from tests.conftest import shared_path

WORDS = ["all", "work", "and", "no", "play", "makes", "jack", "a", "dull", "boy"]


def _glue_file(tmp_path, rows):
    """An SST-2-style file: label 1 when the sentence mentions 'play'."""
    folder = tmp_path / "SST-2"
    folder.mkdir(exist_ok=True)
    lines = ["sentence\tlabel"]
    for i in range(rows):
        sentence = " ".join(WORDS[(i * 7 + k * 3) % 10] for k in range(1 + i % 5))
        lines.append(f"{sentence}\t{int('play' in sentence.split())}")
    (folder / "train.tsv").write_text("\n".join(lines) + "\n")
    return str(folder / "train.tsv")


@pytest.mark.slow
def test_finetune_evaluate_predict(tiny_checkpoint, tmp_path, capsys):
    train = _glue_file(tmp_path, 200)
    out = tmp_path / "run"
    assert main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", train,
                 "--output_dir", str(out), "--num_train_epochs", "2", "--train_batch_size", "16", "--max_seq_length", "8",
                 "--learning_rate", "1e-3"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["train_examples"], metrics["eval_examples"]) == (180, 20)
    assert set(metrics) >= {"accuracy", "f1", "mcc", "macro_f1"}
    assert not (out / "backup").exists()  # removed once training finished
    capsys.readouterr()

    assert main(["evaluate", "--model", str(out / "model"), "--eval_file", train, "--output_file", str(tmp_path / "m.json")]) == 0
    evaluation = json.loads((tmp_path / "m.json").read_text())
    assert evaluation["eval_examples"] == 200 and 0.0 <= evaluation["accuracy"] <= 1.0

    texts = tmp_path / "texts.txt"
    texts.write_text("all work and no play\njack a dull boy\n")
    capsys.readouterr()
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(texts)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in records] == ["all work and no play", "jack a dull boy"]
    assert all(r["label"] in ("0", "1") and abs(sum(r["probabilities"].values()) - 1) < 1e-4 for r in records)
    # Each probability by its label's name (a list left the order to be guessed), the label the likeliest.
    assert all(list(r["probabilities"]) == ["0", "1"] and r["label"] == max(r["probabilities"],
                                                                          key=r["probabilities"].get) for r in records)
    # An empty line was dropped, shifting the rows after it against their lines.
    texts.write_text("all work and no play\n\njack a dull boy\n")
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(texts),
                 "--output_file", str(tmp_path / "p.jsonl")]) == 2
    assert f"--input_file {texts}: line 2 is empty" in capsys.readouterr().err
    assert not (tmp_path / "p.jsonl").exists()
    # A model fine-tuned on single texts reads a line whole, tabs and all (a tab made it a pair, or "Text 1 is a
    # 3-item tuple"); an SST-2 model is not scored on a file of pairs.
    texts.write_text("all work\tand no play\njack a dull boy\n")
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(texts)]) == 0
    assert [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()] == ["all work\tand no play",
                                                                                          "jack a dull boy"]
    mrpc = tmp_path / "MRPC" / "train.tsv"
    mrpc.parent.mkdir()
    mrpc.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tall work\tno play\n")
    assert main(["evaluate", "--model", str(out / "model"), "--eval_file", str(mrpc)]) == 2
    assert f"--eval_file {mrpc} holds sentence pairs but {out / 'model'} was fine-tuned on single texts" in \
        capsys.readouterr().err


def test_predict_lines_are_read_as_the_model_was_trained(tmp_path):
    """Pairs are text_a<TAB>text_b, named by line before the model loads: a model fine-tuned on pairs needs one tab
    on every line; one that recorded no form (an older preset) takes a file of one kind or the other."""
    from keras_bert_zoo.cli.finetune_command import _classifier_texts
    from keras_bert_zoo.cli.usage_error import UsageError

    assert _classifier_texts("f", ["a\tb", "c\td"], True) == [("a", "b"), ("c", "d")]
    assert _classifier_texts("f", ["a\tb", "c\td"], None) == [("a", "b"), ("c", "d")]
    assert _classifier_texts("f", ["a", "c"], None) == ["a", "c"]
    # A labelled TSV given to a single-text model: read whole (a text may hold a tab), with a warning.
    with pytest.warns(UserWarning, match=r"--input_file f: every line holds a tab, as a TSV's rows do \(line 1: "
                                         r"'sentence\\tlabel'\); the model, fine-tuned on single texts, reads each"):
        assert _classifier_texts("f", ["sentence\tlabel", "a good film\t1"], False) == ["sentence\tlabel",
                                                                                          "a good film\t1"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _classifier_texts("f", ["a\tb", "c"], False) == ["a\tb", "c"]
        assert _classifier_texts("f", [], False) == []
    for lines, pairs, words in ((["a\tb", "c"], True, "line 2: 0 tabs, where the model, fine-tuned on sentence "
                                                      "pairs, needs one per line"),
                                (["a\tb", "c\td\te"], True, "line 2: 2 tabs"),
                                (["a", "b\tc\td"], None, "line 2: 3 tab-separated fields"),
                                (["a", "b\tc"], None, "line 2 is a pair (text_a<TAB>text_b) but line 1 is one text")):
        with pytest.raises(UsageError, match=re.escape(words)):
            _classifier_texts("f", lines, pairs)


@pytest.mark.slow
def test_multi_label_finetune_evaluate_predict(tiny_checkpoint, tmp_path, capsys):
    """--problem_type multi_label: a CSV label field holds names separated by commas (empty: none)."""
    import numpy as np

    import keras_bert_zoo as kbz

    train = tmp_path / "train.csv"
    train.write_text('text,label\nall work and play,"work,play"\njack a dull boy,dull\nno play,play\n'
                     'a boy,\n"work, work",work\n')
    out = tmp_path / "run"
    assert main(["finetune", "--task", "classify", "--problem_type", "multi_label", "--preset", tiny_checkpoint,
                 "--train_file", str(train), "--eval_file", str(train), "--output_dir", str(out),
                 "--max_seq_length", "8"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) >= {"accuracy", "exact_match", "micro_f1", "macro_f1"} and metrics["eval_examples"] == 5
    classifier = kbz.BertClassifier.from_preset(str(out / "model"))
    assert (classifier.problem_type, classifier.label_names) == ("multi_label", ["dull", "play", "work"])
    chosen = classifier.predict_proba(["all work and play", "jack a dull boy", "no play", "a boy", "work, work"]) >= 0.5
    gold = np.array([[0, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1]]) == 1
    assert metrics["exact_match"] == pytest.approx((chosen == gold).all(axis=1).mean())
    capsys.readouterr()

    assert main(["evaluate", "--model", str(out), "--eval_file", str(train)]) == 0
    assert json.loads(capsys.readouterr().out) == {**{k: metrics[k] for k in ("accuracy", "exact_match", "micro_f1",
                                                                              "macro_f1")}, "eval_examples": 5}
    texts = tmp_path / "texts.txt"
    texts.write_text("all work and play\na boy\n")
    assert main(["predict", "--model", str(out), "--input_file", str(texts)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for record, row in zip(records, chosen[[0, 3]]):
        assert record["labels"] == [name for name, hot in zip(classifier.label_names, row) if hot]
        assert list(record["probabilities"]) == classifier.label_names
        assert record["labels"] == [n for n, p in record["probabilities"].items() if p >= classifier.threshold]
    # JSON lines give a list of names; a GLUE TSV (one label per example) is refused, naming the flag.
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text('{"text": "all work", "label": ["work"]}\n{"text": "no play", "label": []}\n')
    assert kbz.data.read_jsonl(str(jsonl), multi_label=True).labels == [[1], [0]]
    assert main(["finetune", "--task", "classify", "--problem_type", "multi_label", "--preset", tiny_checkpoint,
                 "--train_file", _glue_file(tmp_path, 10), "--output_dir", str(tmp_path / "glue"),
                 "--max_seq_length", "8"]) == 2
    assert "--problem_type multi_label reads a CSV/TSV (--format csv) or JSON-lines file" in capsys.readouterr().err


@pytest.mark.slow
def test_evaluate_reads_the_file_with_the_columns_finetune_read(tiny_checkpoint, tmp_path, capsys):
    """A model fine-tuned on --text_column review --label_column sentiment was scored by evaluate on columns
    'text' and 'label' (its defaults): the file was refused unless the flags were given again."""
    reviews = tmp_path / "reviews.csv"
    reviews.write_text("id,review,sentiment\n" + "".join(
        f"{i},{' '.join(WORDS[(i * 7 + k * 3) % 10] for k in range(1 + i % 5))},{'pos' if i % 3 else 'neg'}\n"
        for i in range(12)))
    out = tmp_path / "run"
    assert main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", str(reviews),
                 "--eval_file", str(reviews), "--text_column", "review", "--label_column", "sentiment",
                 "--output_dir", str(out), "--max_seq_length", "8"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    capsys.readouterr()
    assert main(["evaluate", "--model", str(out), "--eval_file", str(reviews)]) == 0
    captured = capsys.readouterr()
    assert "Reading --eval_file as finetune read its files: --text_column review --label_column sentiment (from " \
           f"{out / 'job.json'})." in captured.err
    assert json.loads(captured.out)["accuracy"] == metrics["accuracy"]
    # Flags given are the user's: none is taken from the job then.
    assert main(["evaluate", "--model", str(out / "model"), "--eval_file", str(reviews), "--text_column",
                 "review"]) == 2
    assert "--label_column" in capsys.readouterr().err
    # A damaged job.json: the defaults, and the reason they were used.
    (out / "job.json").write_text('{"command": "finetune", "args": {"text_col')
    assert main(["evaluate", "--model", str(out), "--eval_file", str(reviews)]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'job.json'} cannot be read (damaged?), so --eval_file is read with the default flags: give " \
           "--format, --glue_task, --text_column, --text_b_column, --label_column as finetune was given them." in err
    assert "'text'" in err


@pytest.mark.slow
def test_a_file_labelled_by_numbers_trains_and_scores_its_classes_by_name(tiny_checkpoint, tmp_path, capsys):
    """Ratings 1, 2 and 10: the reader's names sort as text ("1", "10", "2"), and its ids count them, which a
    classifier named by numbers refuses as ambiguous: finetune hands it the labels by name."""
    ratings = tmp_path / "ratings.csv"
    rows = [(" ".join(WORDS[(i * 7 + k * 3) % 10] for k in range(1 + i % 5)), ("1", "2", "10")[i % 3])
            for i in range(24)]
    ratings.write_text("text,label\n" + "".join(f"{text},{label}\n" for text, label in rows))
    out = tmp_path / "run"
    assert main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", str(ratings),
                 "--eval_file", str(ratings), "--output_dir", str(out), "--max_seq_length", "8",
                 "--num_train_epochs", "1"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(text + "\n" for text, _ in rows))
    capsys.readouterr()
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(texts)]) == 0
    predicted = [json.loads(line)["label"] for line in capsys.readouterr().out.splitlines()]
    assert set(predicted) <= {"1", "2", "10"}
    # The accuracy finetune reported is that of the predicted names against the file's labels.
    assert metrics["accuracy"] == pytest.approx(sum(p == label for p, (_, label) in zip(predicted, rows)) / len(rows))


@pytest.mark.subprocess
def test_finetune_trains_with_the_strategy_given(tiny_checkpoint, tmp_path):
    """--strategy, as pretrain takes it: a multi-worker strategy is made before any TensorFlow op runs (one worker
    stands for the cluster), the model built and compiled in its scope; a batch its replicas cannot share is
    refused before the model loads."""
    from tests.cluster import ROOT
    from tests.cluster import free_ports

    train = _glue_file(tmp_path, 24)
    (port,) = free_ports(1)
    env = {**os.environ, "PYTHONPATH": ROOT, "TF_CONFIG": json.dumps(
        {"cluster": {"worker": [f"127.0.0.1:{port}"]}, "task": {"type": "worker", "index": 0}})}
    argv = [sys.executable, "-m", "keras_bert_zoo.cli.main", "finetune", "--task", "classify", "--preset",
            tiny_checkpoint, "--train_file", train, "--output_dir", str(tmp_path / "out"), "--max_seq_length", "8",
            "--num_train_epochs", "1", "--train_batch_size", "4", "--strategy", "multiworker"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "keras-bert-zoo finetune: Strategy multiworker: CollectiveAllReduceStrategy, 1 replica in sync." in \
        result.stderr
    assert "eagerly has significant overhead" not in result.stderr  # the chief's collective ops are traced
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert (metrics["replicas"], metrics["train_examples"] + metrics["eval_examples"]) == (1, 24)
    assert json.loads((tmp_path / "out" / "job.json").read_text())["status"] == "finished"


def test_bad_training_file_is_reported(tiny_checkpoint, tmp_path, capsys):
    folder = tmp_path / "SST-2"
    folder.mkdir()
    (folder / "train.tsv").write_text("sentence\tlabel\ngood\t1\nbad\tmaybe\n")
    # A refused job creates nothing: not its --output_dir, nor the parents it made for it (runs/ was left behind);
    # a parent that was there stays, with what it holds.
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "notes.txt").write_text("mine")
    for output_dir in (tmp_path / "runs" / "sst" / "o", tmp_path / "kept" / "sst" / "o"):
        code = main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file",
                     str(folder / "train.tsv"), "--output_dir", str(output_dir), "--max_seq_length", "16"])
        assert code == 2
        assert "train.tsv, line 3: unknown label 'maybe'" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() and os.listdir(tmp_path / "kept") == ["notes.txt"]


@pytest.mark.slow
def test_a_run_stopped_while_scoring_is_finished_by_scoring_its_model(tiny_checkpoint, tmp_path, capsys,
                                                                       monkeypatch):
    """Its model was saved whole: the same command scores it and writes metrics.json, without training again."""
    from keras_bert_zoo.tasks.bert_classifier import BertClassifier
    from keras_bert_zoo.training import finetune

    train, out = _glue_file(tmp_path, 60), tmp_path / "run"
    command = ["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", train,
               "--output_dir", str(out), "--num_train_epochs", "1", "--max_seq_length", "8"]

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(BertClassifier, "evaluate_glue", stopped)
        assert main(command) == 130
    assert (out / "model").is_dir() and not (out / "metrics.json").exists()
    assert json.loads((out / "job.json").read_text())["status"] == "interrupted"
    capsys.readouterr()

    # Another job is refused as before, naming what differs.
    assert main(command + ["--seed", "1"]) == 2
    assert "--seed differs" in capsys.readouterr().err

    def trained(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr(finetune, "finetune", trained)
    assert main(command) == 0
    err = capsys.readouterr().err
    assert "model written whole before it stopped" in err and f"Scoring {out / 'model'} (not training again)" in err
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["eval_examples"] == 6 and 0.0 <= metrics["accuracy"] <= 1.0
    job = json.loads((out / "job.json").read_text())
    assert job["status"] == "finished" and job["resumed"] is True and "model" in job["written"]
    # Now finished: the same command is refused.
    assert main(command) == 2
    assert f"{out} already holds a finished finetune (model, written {job['finished']})" in capsys.readouterr().err


@pytest.mark.subprocess
def test_killed_run_resumes_from_last_epoch(tiny_checkpoint, tmp_path):
    train = _glue_file(tmp_path, 3000)
    out = tmp_path / "run"
    command = [os.path.join(os.path.dirname(sys.executable), "keras-bert-zoo"), "finetune", "--task", "classify",
               "--preset", tiny_checkpoint, "--train_file", train, "--output_dir", str(out), "--num_train_epochs", "8",
               "--train_batch_size", "32", "--max_seq_length", "8"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    metadata = out / "backup" / "training_metadata.json"
    deadline = time.time() + 300
    while time.time() < deadline and first.poll() is None:
        if metadata.exists() and json.loads(metadata.read_text() or "{}").get("epoch", -1) >= 1:
            break
        time.sleep(0.2)
    assert first.poll() is None, "training finished before it could be killed"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    done_epochs = json.loads(metadata.read_text())["epoch"] + 1
    assert not (out / "model").exists()

    # The same command goes on from the next epoch (another --num_train_epochs would be another job).
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    assert f"Epoch {done_epochs + 1}/8" in second.stdout and "Epoch 8/8" in second.stdout
    assert "Epoch 1/" not in second.stdout
    assert (out / "model" / "task.weights.h5").exists() and (out / "metrics.json").exists()


@pytest.mark.slow
def test_qa_finetune_evaluate_predict(tiny_checkpoint, tmp_path, capsys):
    squad = json.loads(open(shared_path("squad", "dev-v1.1-sample-articles0-2.json")).read())
    article = squad["data"][0]
    paragraphs = article["paragraphs"]
    article["paragraphs"] = paragraphs[:3]
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"data": [article], "version": "1.1"}))
    held_out = tmp_path / "held_out.json"
    held_out.write_text(json.dumps({"data": [{**article, "paragraphs": paragraphs[3:5]}], "version": "1.1"}))
    out = tmp_path / "qa"
    # --eval_file is scored as evaluate scores it (reading it crashed: QA examples have no label_names).
    assert main(["finetune", "--task", "qa", "--preset", tiny_checkpoint, "--train_file", str(small), "--output_dir", str(out),
                 "--eval_file", str(held_out), "--num_train_epochs", "1", "--max_seq_length", "16",
                 "--max_query_length", "4", "--doc_stride", "4", "--train_batch_size", "32"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["task"] == "qa" and metrics["eval_examples"] == sum(len(p["qas"]) for p in paragraphs[3:5])
    capsys.readouterr()
    assert main(["evaluate", "--model", str(out / "model"), "--eval_file", str(held_out)]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert {k: metrics[k] for k in scores} == scores
    assert main(["evaluate", "--model", str(out / "model"), "--eval_file", str(small)]) == 0
    capsys.readouterr()
    questions = tmp_path / "q.jsonl"
    context = article["paragraphs"][0]["context"]
    questions.write_text(json.dumps({"question": "Who won?", "context": context}) + "\n")
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(questions)]) == 0
    record = json.loads(capsys.readouterr().out.strip())
    assert record["answer"] == context[record["start"]:record["end"]]
    # A text file (a classifier's input) for the QA model: named by file and line, before the model loads.
    questions.write_text(json.dumps({"question": "Who won?", "context": context}) + "\n\nWho won?\tthe game\n")
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(questions)]) == 2
    assert f"--input_file {questions}, line 3 is not valid JSON (Expecting value" in capsys.readouterr().err
    questions.write_text(json.dumps({"question": "Who won?", "context": context}) + "\n" + "[" * 100_000 + "\n")
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(questions)]) == 2  # was a traceback
    assert (f"--input_file {questions}, line 2 nests JSON arrays or objects deeper than Python reads"
            in capsys.readouterr().err)
    # Each other mistake is named by its line too, before the model loads (it was an example index, 0-based, after).
    good = json.dumps({"question": "Who won?", "context": context})
    for bad, words in (({"question": "Who won?"}, "line 3: no 'context' (found ['question'])"),
                       ([[[[[[["q"]]]]]]], "line 3: not a JSON object ([[[[...]]]])"),
                       ({"question": 5, "context": "c"}, "line 3: 'question' is 5 (int), not a string"),
                       ({"question": "q", "context": "c", "answer": "x"},
                        "line 3: predict writes its answer to ['answer'], which the line holds: rename it")):
        questions.write_text(good + "\n\n" + json.dumps(bad) + "\n")
        assert main(["predict", "--model", str(out / "model"), "--input_file", str(questions)]) == 2
        assert f"--input_file {questions}, {words}" in capsys.readouterr().err
    # The SQuAD file itself: said so, pretty-printed or not.
    for indent in (None, 1):
        questions.write_text(json.dumps({"data": [article], "version": "1.1"}, indent=indent))
        assert main(["predict", "--model", str(out / "model"), "--input_file", str(questions)]) == 2
        assert f"--input_file {questions} is a SQuAD file" in capsys.readouterr().err
    # A byte-order mark (Windows editors) is not part of the first line; a line separator (U+2028, as
    # ensure_ascii=False writes it) inside a string does not cut the line; a question's own "data" field is not
    # a SQuAD file.
    odd = json.dumps({"question": "Who\u2028won?", "context": context, "data": "pubmed"}, ensure_ascii=False)
    questions.write_text("\ufeff" + good + "\n" + odd + "\n", encoding="utf-8")
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(questions)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["question"] for r in records] == ["Who won?", "Who\u2028won?"] and records[1]["data"] == "pubmed"


@pytest.mark.slow
def test_qa_on_a_small_model_fine_tunes_predicts_and_exports_with_the_default_lengths(tiny_checkpoint, tmp_path,
                                                                                      capsys):
    """In the tiny checkpoint's 16 positions, run_squad.py's --max_query_length 64 and --doc_stride 128 leave no
    room for the context: finetune refused them though nobody gave them. Not given, they are fitted (4 and 4) and
    saved as not given; predict and the export read the windows the model was trained on."""
    import numpy as np

    import keras_bert_zoo as kbz

    squad = json.loads(open(shared_path("squad", "dev-v1.1-sample-articles0-2.json")).read())
    article = squad["data"][0]
    article["paragraphs"] = article["paragraphs"][:2]
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"data": [article], "version": "1.1"}))
    out = tmp_path / "qa"
    # Questions are held out with their context: of two, one.
    assert main(["finetune", "--task", "qa", "--preset", tiny_checkpoint, "--train_file", str(small), "--output_dir",
                 str(out), "--num_train_epochs", "1", "--train_batch_size", "32", "--eval_fraction", "0.5"]) == 0
    saved = json.loads((out / "model" / "task.json").read_text())["config"]
    assert (saved["doc_stride"], saved["max_query_length"]) == (None, None)
    qa = kbz.Task.from_preset(str(out / "model"))
    assert (qa.preprocessor.sequence_length, qa.doc_stride, qa.max_query_length) == (16, 4, 4)
    capsys.readouterr()
    examples = [{"question": "Which NFL team represented the AFC at Super Bowl 50?", "context": p["context"]}
                for p in article["paragraphs"]]
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(e) + "\n" for e in examples))
    assert main(["predict", "--model", str(out / "model"), "--input_file", str(questions)]) == 0
    predicted = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = qa.predict_answers(examples)
    assert [(r["answer"], r["start"], r["end"]) for r in predicted] == [
        (a["answer"], a["start"], a["end"]) for a in expected]
    assert main(["export", "--model", str(out), "--output_dir", str(tmp_path / "exports"), "--model_name",
                 "qa"]) == 0
    requests, outputs = tmp_path / "requests.json", tmp_path / "outputs.npz"
    requests.write_text(json.dumps([{"key": "answer", "path": str(tmp_path / "exports" / "qa" / "1"),
                                     "signature": "serving_default",
                                     "inputs": {"question": [e["question"] for e in examples],
                                                "context": [e["context"] for e in examples]}}]))
    subprocess.run([sys.executable, "-m", "tests.export_runner", str(requests), str(outputs)], check=True,
                   cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), capture_output=True, timeout=600)
    served = dict(np.load(outputs, allow_pickle=True))
    assert served["answer/start"].tolist() == [a["start"] for a in expected]
    assert served["answer/end"].tolist() == [a["end"] for a in expected]


@pytest.mark.slow
def test_seed_makes_finetune_reproducible(tiny_checkpoint, tmp_path):
    """Two runs of one command give the same weights: --seed is set before the task (its head, its dropout
    layers' seed generators) is built, not only before training."""
    import h5py
    import numpy as np

    def weights(run):
        arrays = {}
        with h5py.File(tmp_path / run / "model" / "task.weights.h5") as f:
            f.visititems(lambda name, item: arrays.setdefault(name, item[()]) if isinstance(item, h5py.Dataset)
                         else None)
        return arrays

    train = _glue_file(tmp_path, 40)
    for run in ("a", "b"):
        assert main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", train,
                     "--output_dir", str(tmp_path / run), "--num_train_epochs", "1", "--train_batch_size", "8",
                     "--max_seq_length", "8", "--seed", "3"]) == 0
    first, second = weights("a"), weights("b")
    assert first.keys() == second.keys() and len(first) > 0
    assert all(np.array_equal(first[name], second[name]) for name in first)


@pytest.mark.slow
def test_skipped_rows_are_reported(tiny_checkpoint, tmp_path, capsys):
    """--skip_bad_rows says how many rows of each file it dropped (stderr, metrics.json); a tab-separated .txt
    is read with --format csv."""
    good = [f"{' '.join(WORDS[i:i + 3])}\t{i % 2}" for i in range(8)]
    bad = ["no label", "a\ttab\tinside\t1"]
    train, evaluation = tmp_path / "train.txt", tmp_path / "eval.txt"
    train.write_text("\n".join(["text\tlabel", *good[:3], bad[0], *good[3:]]) + "\n")
    evaluation.write_text("\n".join(["text\tlabel", *bad, *good[:4]]) + "\n")
    out = tmp_path / "run"
    assert main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", str(train),
                 "--eval_file", str(evaluation), "--format", "csv", "--skip_bad_rows", "--output_dir", str(out),
                 "--num_train_epochs", "1", "--max_seq_length", "8"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["train_examples"], metrics["train_skipped_rows"]) == (len(good), 1)
    assert (metrics["eval_examples"], metrics["eval_skipped_rows"]) == (4, len(bad))
    err = capsys.readouterr().err
    assert f"--skip_bad_rows: 1 bad rows of {train} skipped; {len(good)} examples read" in err
    assert f"--skip_bad_rows: {len(bad)} bad rows of {evaluation} skipped; 4 examples read" in err
    assert main(["evaluate", "--model", str(out), "--eval_file", str(evaluation), "--format", "csv",
                 "--skip_bad_rows"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert (scores["eval_examples"], scores["eval_skipped_rows"]) == (4, len(bad))


@pytest.mark.slow
def test_regression_from_glue_sts_b_and_json_lines(tiny_checkpoint, tmp_path, capsys):
    """GLUE STS-B trains as regression without --problem_type (as examples/run_glue.py), as JSON lines do with it:
    the first crashed with "object of type 'NoneType' has no len()", the second trained on class ids."""
    import keras_bert_zoo as kbz

    folder = tmp_path / "STS-B"
    folder.mkdir()
    scores = [5.0, 3.8, 0.5, 2.25, 4.0, 1.0]
    lines = ["genre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"]
    lines += [f"main\tMSRvid\t2012\t{i:04d}\tnone\tnone\t{' '.join(WORDS[i:i + 3])}\t{' '.join(WORDS[i + 1:i + 4])}\t"
              f"{score:.3f}" for i, score in enumerate(scores)]
    (folder / "train.tsv").write_text("\n".join(lines) + "\n")
    jsonl = tmp_path / "sts.jsonl"
    jsonl.write_text("".join(json.dumps({"text": " ".join(WORDS[i:i + 3]), "label": score}) + "\n"
                             for i, score in enumerate(scores)))
    for name, train, flags in (("glue", folder / "train.tsv", []), ("jsonl", jsonl, ["--problem_type", "regression"])):
        out = tmp_path / name
        assert main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", str(train),
                     "--eval_file", str(train), "--output_dir", str(out), "--num_train_epochs", "1",
                     "--max_seq_length", "8", *flags]) == 0
        metrics = json.loads((out / "metrics.json").read_text())
        assert {"pearson", "spearman", "mse"} <= set(metrics) and metrics["eval_examples"] == len(scores)
        model = kbz.BertClassifier.from_preset(str(out / "model"))
        assert (model.problem_type, model.num_classes, model.label_names) == ("regression", 1, None)
        data = kbz.data.read_classification(str(train), regression=True)
        predictions = model.predict_proba(data.texts)[:, 0]
        assert data.labels == scores
        assert metrics["mse"] == pytest.approx(float(((predictions - scores) ** 2).mean()), rel=1e-4)
    capsys.readouterr()
    assert main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file",
                 str(folder / "train.tsv"), "--problem_type", "multi_class", "--output_dir", str(tmp_path / "no"),
                 "--max_seq_length", "8"]) == 2
    assert "holds GLUE STS-B's similarity scores, not classes: leave out --problem_type multi_class" in \
        capsys.readouterr().err


def test_finetune_reads_an_eval_file_elsewhere_as_its_glue_training_file(tmp_path, capsys, monkeypatch):
    """glue/SST-2/train.tsv is read as SST-2 by its folder's name; its rows copied to sst_dev.tsv were read as a CSV
    of columns text / label and refused, where `evaluate` read them as SST-2."""
    from keras_bert_zoo.cli import finetune_command

    train = _glue_file(tmp_path, 30)
    dev = tmp_path / "sst_dev.tsv"
    dev.write_text(open(train).read())

    def read_then_stop(args):  # the data are read (in the command's check) before the strategy is made
        raise ValueError(f"read {len(args.inputs_read[1])} to train on and {args.inputs_read[4]} to score")

    monkeypatch.setattr(finetune_command, "strategy_from_flags", read_then_stop)
    assert main(["finetune", "--task", "classify", "--train_file", train, "--eval_file", str(dev),
                 "--output_dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"Reading --eval_file {dev} as --train_file: --glue_task SST-2." in err
    assert "read 30 to train on and 30 to score" in err, err


def test_evaluate_checks_the_file_before_the_model_loads(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    """evaluate reads --eval_file and checks it against the saved task.json (labels, tags, pairs or single texts)
    before the weights load; it read the file only after."""
    import keras_bert_zoo as kbz
    from keras_bert_zoo.tasks.task import Task

    kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, label_names=["neg", "pos"], text_pairs=False,
                                   sequence_length=8).save_to_preset(str(tmp_path / "clf"))
    kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=["O", "B-Disease", "I-Disease"],
                                        sequence_length=8).save_to_preset(str(tmp_path / "ner"))
    kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16).save_to_preset(str(tmp_path / "qa"))

    def no_loading(*args, **kwargs):
        raise AssertionError("the model loaded before --eval_file was checked")

    monkeypatch.setattr(Task, "from_preset", no_loading)
    labels, pairs, tags, squad = (tmp_path / name for name in ("labels.csv", "pairs.csv", "tags.tsv", "sq.json"))
    labels.write_text("text,label\ngood,pos\nbad,maybe\n")
    pairs.write_text("text,text_b,label\ngood,fine,pos\n")
    tags.write_text("Familial\tB-Disease\nhypercholesterolemia\tB-Gene\n")
    squad.write_text('{"data": [')
    for model, eval_file, flags, words in (
            # The reader's "expected one of ['neg', 'pos', '0', '1']. Fix the row or the label list" listed ids as
            # names, and the model's labels as a list to fix.
            ("clf", labels, [], f"--eval_file {labels}, line 3: the label 'maybe' is not one of the label_names "
                                "['neg', 'pos'] or a class id 0..1: relabel the data with these labels."),
            ("clf", pairs, ["--text_b_column", "text_b"],
             f"--eval_file {pairs} holds sentence pairs but {tmp_path / 'clf'} was fine-tuned on single texts"),
            ("ner", tags, [], f"{tags}:2: unknown tag 'B-Gene'; expected one of ['O', 'B-Disease', 'I-Disease']"),
            ("qa", squad, [], f"{squad} is not a SQuAD-format file")):
        assert main(["evaluate", "--model", str(tmp_path / model), "--eval_file", str(eval_file), *flags]) == 2
        err = capsys.readouterr().err
        assert words in err, err


def test_tags_that_name_no_entity_are_refused_before_a_model_loads(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    """finetune --task ner scores entity F1 after training, evaluate scores it, predict and export find entities:
    with bare types ("PER", an IO file without its I-) none is found, F1 0. Each refuses them, naming them and
    the fix, before a model loads."""
    import keras_bert_zoo as kbz
    from keras_bert_zoo.tasks.task import Task

    model = tmp_path / "bare_tagger"
    kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=["O", "PER", "LOC"],
                                        sequence_length=8).save_to_preset(str(model))

    def no_loading(*args, **kwargs):
        raise AssertionError("a model loaded before its tags were checked")

    monkeypatch.setattr(Task, "from_preset", no_loading)
    bare, texts = tmp_path / "bare.tsv", tmp_path / "texts.txt"
    bare.write_text("Ann\tPER\nSmith\tPER\nran\tO\n\nto\tO\nParis\tLOC\n")
    texts.write_text("Ann Smith ran to Paris\n")
    out = tmp_path / "run"
    assert main(["finetune", "--task", "ner", "--preset", tiny_checkpoint, "--train_file", str(bare),
                 "--output_dir", str(out), "--max_seq_length", "8"]) == 2
    err = capsys.readouterr().err
    # The reader's argument, on the command line its flag (it said "is tag_column=-1 the column").
    assert f"{bare}:1: 'PER' is not an entity tag: is --tag_column -1 the column of the tags" in err, err
    assert "Write an entity type without a prefix ('PER') as 'I-PER' on each of an entity's words" in err, err
    assert not (out / "model").exists()
    refused = ("finds entities by conlleval tags, but 2 of this tagger's tags are not conlleval tags: 'PER', 'LOC'. "
               "conlleval reads O")
    renamed = "tagger.label_names = ['O', 'I-PER', 'I-LOC']"
    for argv, reader in ((["evaluate", "--model", str(model), "--eval_file", str(bare)], "evaluate"),
                         (["predict", "--model", str(model), "--input_file", str(texts)], "predict"),
                         (["export", "--model", str(model), "--output_dir", str(tmp_path / "export")],
                          "The served signature entities")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"error: {reader} {refused}" in err and renamed in err, err
        assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "export").exists()


@pytest.mark.slow
def test_undefined_correlation_is_written_as_null(tiny_checkpoint, tmp_path, capsys):
    """Gold scores that are all one value leave Pearson and Spearman undefined: metrics.json (and evaluate's
    output) hold null, which strict JSON readers take, with a warning; they held NaN."""
    def strict(text):
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the metrics"))

    train = tmp_path / "flat.jsonl"
    train.write_text("".join(json.dumps({"text": " ".join(WORDS[i:i + 3]), "label": 2.0}) + "\n" for i in range(4)))
    out = tmp_path / "run"
    assert main(["finetune", "--task", "classify", "--problem_type", "regression", "--preset", tiny_checkpoint,
                 "--train_file", str(train), "--eval_file", str(train), "--output_dir", str(out),
                 "--num_train_epochs", "1", "--max_seq_length", "8"]) == 0
    metrics = strict((out / "metrics.json").read_text())
    assert (metrics["pearson"], metrics["spearman"]) == (None, None) and metrics["mse"] >= 0
    assert "warning: pearson, spearman undefined on the 4 evaluation examples" in capsys.readouterr().err
    assert main(["evaluate", "--model", str(out), "--eval_file", str(train), "--output_file",
                 str(tmp_path / "m.json")]) == 0
    assert strict((tmp_path / "m.json").read_text()) == {k: metrics[k] for k in ("eval_examples", "pearson",
                                                                                 "spearman", "mse")}


def test_questions_of_one_id_are_refused_before_training(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    """SQuAD scores are keyed by id: a file whose ids repeat (numbered per paragraph) trained a model, then failed
    scoring it, leaving a finished model/ without metrics that a rerun refused to replace."""
    import keras_bert_zoo as kbz
    from keras_bert_zoo.tasks.task import Task

    kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16).save_to_preset(str(tmp_path / "qa"))

    def no_loading(*args, **kwargs):
        raise AssertionError("the model loaded before the question ids were checked")

    monkeypatch.setattr(Task, "from_preset", no_loading)
    context = "The Broncos won Super Bowl 50 in Santa Clara."
    qas = [{"id": "1", "question": "Who won?", "answers": [{"text": "The Broncos", "answer_start": 0}]},
           {"id": "1", "question": "Where?", "answers": [{"text": "Santa Clara", "answer_start": 33}]}]
    squad = tmp_path / "sq.json"
    squad.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": qas}]}]}))
    for command in (["finetune", "--task", "qa", "--train_file", str(squad), "--eval_file", str(squad),
                     "--output_dir", str(tmp_path / "run")],
                    ["evaluate", "--model", str(tmp_path / "qa"), "--eval_file", str(squad)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"{squad}: Examples 0 and 1 have one id, '1': give each question its own 'id'" in err, err
    assert not (tmp_path / "run").exists()


def test_qa_held_out_split_keeps_each_context_on_one_side(tiny_checkpoint, tmp_path, capsys):
    """Without --eval_file, finetune --task qa held out questions whose context it trained on (all of COVID-QA's
    102). Whole contexts are held out now: of a file of two, --eval_fraction 0.1 can hold out none, and says so."""
    paragraphs = [{"context": f"{name} won.", "qas": [
        {"id": f"{name}{q}", "question": "Who won?", "answers": [{"text": name, "answer_start": 0}]}
        for q in range(count)]} for name, count in (("Denver", 6), ("Carolina", 4))]
    small = tmp_path / "two.json"
    small.write_text(json.dumps({"data": [{"paragraphs": paragraphs}]}))
    assert main(["finetune", "--task", "qa", "--preset", tiny_checkpoint, "--train_file", str(small),
                 "--output_dir", str(tmp_path / "qa")]) == 2
    assert ("--eval_fraction 0.1 of the 10 examples of {} leaves 10 to train on and 0 to score (questions are held "
            "out with their context, and it holds 2): pass --eval_file".format(small)) in capsys.readouterr().err
