"""Every recipe in examples/ runs in --quick mode and writes what it says, checked independently.

Each runs as a user runs it (`python examples/X.py --quick ...`) in a fresh
interpreter, on the offline preset and the shared data; extra flags shrink
some runs further where the check does not need learning.
"""

import json
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

import keras_bert_zoo as kbz
from tests.conftest import SHARED_DATA
from tests.conftest import shared_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def example_env(tmp_path_factory):
    """One preset cache for all recipes (the offline preset is converted once)."""
    return dict(os.environ, KERAS_BERT_ZOO_SHARED_DATA=os.path.abspath(SHARED_DATA),
                KERAS_BERT_ZOO_CACHE=str(tmp_path_factory.mktemp("examples_cache")), PYTHONPATH=ROOT)


def run_example(name, *flags, env):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *flags], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"examples/{name} failed:\n{result.stderr[-4000:]}"
    return result


def _metrics(output_dir):
    return json.loads((output_dir / "metrics.json").read_text())


def test_glue_recipe_scores_what_its_model_predicts(example_env, tmp_path):
    """MRPC (pairs): the recipe's held-out slice and figures, recomputed from the model it saved."""
    train = kbz.data.read_glue(shared_path("glue", "MRPC", "train.tsv"))
    result = run_example("run_glue.py", "--task_name", "MRPC", "--quick", "--max_train_examples", "32",
                         "--max_eval_examples", "40", "--num_train_epochs", "1", "--max_seq_length", "48",
                         "--output_dir", str(tmp_path), env=example_env)
    # The shared MRPC has no dev.tsv: the recipe says what it holds out, in numbers (not "10% of train").
    assert "training on 32 examples of train.tsv and scoring 40 held out of it." in result.stdout
    metrics = _metrics(tmp_path)
    assert metrics["task"] == "MRPC" and (metrics["train_examples"], metrics["eval_examples"]) == (32, 40)
    classifier = kbz.BertClassifier.from_preset(str(tmp_path / "model"))
    assert classifier.label_names == ["0", "1"] and classifier.preprocessor.sequence_length == 48
    # What the recipe holds out: 10% of train (seed 0), its first 40 examples.
    _, held_out = train.split(0.1, seed=0)
    pairs, labels = held_out.texts[:40], np.array(held_out.labels[:40])
    predicted = classifier.predict_proba(pairs).argmax(-1)
    tp = int(((predicted == 1) & (labels == 1)).sum())
    precision, recall = tp / max(int((predicted == 1).sum()), 1), tp / max(int((labels == 1).sum()), 1)
    assert metrics["accuracy"] == pytest.approx((predicted == labels).mean(), abs=1e-6)
    assert metrics["f1"] == pytest.approx(2 * precision * recall / (precision + recall) if tp else 0.0, abs=1e-6)
    # Both sentences reach the model: another second sentence changes the output.
    probabilities = classifier.predict_proba([("He said hi.", "He greeted them."), ("He said hi.", "Rain fell.")])
    assert not np.allclose(probabilities[0], probabilities[1])


def test_ner_recipe_scores_entities_as_conlleval(example_env, tmp_path):
    train = kbz.data.read_conll(shared_path("ner", "NCBI-disease", "train.tsv"))
    result = run_example("run_ner.py", "--quick", "--max_train_examples", "32", "--max_eval_examples", "40",
                         "--num_train_epochs", "1", "--learning_rate", "1e-3", "--output_dir", str(tmp_path),
                         env=example_env)
    metrics = _metrics(tmp_path)
    assert (metrics["train_sentences"], metrics["eval_sentences"]) == (32, 40)
    # One fast epoch on 32 sentences teaches the tagger only O: the recipe says why its scores are 0.
    assert metrics["entity_predicted_entities"] == 0
    assert "The tagger finds no entities yet (scores 0 of" in result.stderr and "--num_train_epochs" in result.stderr
    tagger = kbz.BertTokenClassifier.from_preset(str(tmp_path / "model"))
    assert tagger.label_names == train.label_names
    _, held_out = train.split(0.1, seed=0)
    expected = kbz.metrics.entity_scores(held_out.tags[:40], tagger.predict_tags(held_out.words[:40]))
    for name in ("precision", "recall", "f1"):
        assert metrics["entity_" + name] == pytest.approx(expected[name], abs=1e-6)


def test_squad_recipe_writes_official_predictions_and_scores(example_env, tmp_path):
    path = shared_path("squad", "dev-v1.1-sample-articles0-2.json")
    run_example("run_squad.py", "--quick", "--max_train_examples", "32", "--max_eval_examples", "20",
                "--num_train_epochs", "1", "--output_dir", str(tmp_path), env=example_env)
    predictions = json.loads((tmp_path / "predictions.json").read_text())
    _, held_out = kbz.data.read_squad(path).split(0.1, seed=0)
    held_out = held_out.head(20)
    assert list(predictions) == list(held_out.ids)
    for question_id, context in zip(held_out.ids, held_out.contexts):
        assert predictions[question_id] in context  # extractive: a span of its own context
    # The scores are the official script's over the written predictions.
    gold = {i: [text for text, _ in answers] for i, answers in zip(held_out.ids, held_out.answers)}
    metrics = _metrics(tmp_path)
    expected = kbz.metrics.squad_scores(predictions, gold)
    assert (metrics["exact_match"], metrics["f1"], metrics["eval_questions"]) == \
        (pytest.approx(expected["exact_match"]), pytest.approx(expected["f1"]), 20)


def _head(path, lines, target):
    with open(path, encoding="utf-8") as f:
        target.write_text("".join(f.readlines()[:lines]), encoding="utf-8")
    return str(target)


def test_pretraining_recipe_continues_the_preset(example_env, tmp_path):
    corpus = _head(shared_path("corpus", "pubmed_abstracts", "PubMedAbstract_1MB.txt"), 40, tmp_path / "pubmed.txt")
    result = run_example("run_pretraining.py", "--quick", "--input_file", corpus, "--num_train_steps", "6",
                         "--strategy", "cpu", "--output_dir", str(tmp_path / "out"), env=example_env)
    assert "Training on 1 replica(s) with" in result.stdout
    metrics = _metrics(tmp_path / "out")
    assert metrics["global_step"] == 6
    # Each score once, under run_pretraining.py's name (not also Keras' masked_lm_logits_accuracy ...).
    assert set(metrics["after"]) == {"loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                                     "next_sentence_loss"}
    # The progress counts the steps run: the last chunk, cut short, is not shown full.
    assert sum(int(done) for done in re.findall(r"^(\d+)/\d+ - ", result.stdout, flags=re.M)) == 6, result.stdout
    assert kbz.BertBackbone.from_preset(str(tmp_path / "out" / "model")).vocabulary_size == 30522


def test_pretraining_recipe_from_scratch_learns_its_vocabulary(example_env, tmp_path):
    corpus = _head(shared_path("corpus", "wikitext-2", "valid.txt"), 300, tmp_path / "wiki.txt")
    run_example("run_pretraining.py", "--quick", "--from_scratch", "--input_file", corpus, "--vocab_size", "600",
                "--num_train_steps", "6", "--output_dir", str(tmp_path / "out"), env=example_env)
    tokenizer = kbz.BertTokenizer.from_preset(str(tmp_path / "out" / "model"))
    assert tokenizer.get_vocabulary() == kbz.learn_vocabulary(corpus, 600)
    backbone = kbz.BertBackbone.from_preset(str(tmp_path / "out" / "model"))
    assert (backbone.hidden_dim, backbone.num_layers, backbone.vocabulary_size) == (64, 2, len(tokenizer.get_vocabulary()))
    assert _metrics(tmp_path / "out")["global_step"] == 6


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_serving_clients_agree_with_the_export(example_env, tiny_checkpoint, tmp_path):
    from keras_bert_zoo.export.export_for_serving import load_export

    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=12,
                                                label_names=["no", "yes"])
    classifier.export(str(tmp_path), model_name="clf")
    grpc_port, rest_port = _free_port(), _free_port()
    server = subprocess.Popen([sys.executable, "-m", "tests.serving_stub_server", str(tmp_path), str(grpc_port),
                               str(rest_port)], cwd=ROOT, env=example_env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "serving", "the stub server did not start"
        result = run_example("serving_clients.py", "--model_name", "clf", "--signature_name", "classify_pairs",
                             "--rest_address", f"localhost:{rest_port}", "--grpc_address", f"localhost:{grpc_port}",
                             "--text", "all work", "--text_b", "no play", "--text", "a dull boy", "--text_b", "jack",
                             env=example_env)
        # No server at an address: the message says how to start one (it said "see above", meaning this
        # script's docstring, which a user running it does not see).
        for down, flag in ((["--rest_address", f"localhost:{_free_port()}"], "--rest_address"),
                           (["--rest_address", f"localhost:{rest_port}", "--grpc_address",
                             f"localhost:{_free_port()}"], "--grpc_address")):
            refused = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "serving_clients.py"),
                                      "--model_name", "clf", "--text", "all work", *down], cwd=ROOT, env=example_env,
                                     capture_output=True, text=True, timeout=300)
            assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr[-2000:]
            assert "No server answers at" in refused.stderr and "see above" not in refused.stderr
            assert 'docker run -p 8500:8500 -p 8501:8501 -v "$PWD/exports/clf:/models/clf"' in refused.stderr
            assert f"point {flag} at your server" in refused.stderr
    finally:
        server.kill()
        server.wait()
    assert "REST and gRPC agree." in result.stdout
    expected = load_export(str(tmp_path / "clf")).signatures["classify_pairs"](
        text=np.array(["all work", "a dull boy"]), text_b=np.array(["no play", "jack"]))
    printed = json.loads(result.stdout.splitlines()[0])
    np.testing.assert_allclose(printed["probabilities"], expected["probabilities"].numpy(), atol=1e-5)
    assert printed["labels"] == [label.decode() for label in expected["labels"].numpy()]


def test_recipes_refuse_bad_flags_before_any_work(example_env, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "train.tsv").write_text("")
    cases = [
        (["run_pretraining.py", "--from_scratch", "--input_file", str(corpus), "--vocab_size", "100"],
         "--from_scratch needs the model's size: --num_hidden_layers --hidden_size --num_attention_heads "
         "--intermediate_size"),
        (["run_pretraining.py", "--input_file", str(corpus), "--vocab_size", "100"],
         "--vocab_size only apply with --from_scratch"),
        (["run_pretraining.py", "--input_file", str(tmp_path / "none*.txt"), "--output_dir", str(tmp_path / "o")],
         "--input_file: nothing matches"),
        (["run_glue.py", "--task_name", "SST-3", "--data_dir", str(tmp_path)], "--task_name SST-3: not a GLUE task"),
        (["run_glue.py", "--task_name", "sst-2", "--data_dir", str(tmp_path), "--num_train_epochs", "2.5"],
         "--num_train_epochs: must be a whole number of epochs (1, 2, 3.0 ...); got 2.5"),
        (["serving_clients.py", "--model_name", "m", "--text", "a", "--text", "b", "--text_b", "c"],
         "every input needs one value per example"),
        (["run_ner.py", "--quick", "--max_train_examples", "0"], "--max_train_examples: must be a positive integer; got 0"),
        (["run_squad.py", "--quick", "--eval_fraction", "1.5"], "1.5 is not between 0 and 1"),
        # Looser than keras-bert-zoo's: a rate of 0 trained at the default 5e-5 in silence, a negative one upwards.
        (["run_glue.py", "--task_name", "MRPC", "--quick", "--learning_rate", "0"],
         "--learning_rate: must be a positive number; got 0"),
        (["run_squad.py", "--quick", "--doc_stride", "0"], "--doc_stride: must be a positive integer; got 0"),
        (["run_pretraining.py", "--quick", "--num_warmup_steps", "-5"],
         "--num_warmup_steps: must be an integer >= 0; got -5"),
        (["run_pretraining.py", "--quick", "--masked_lm_prob", "1.5"],
         "--masked_lm_prob: must be between 0 and 1 (exclusive); got 1.5"),
        # An error the library finds after start-up is one line too (an empty training file).
        (["run_ner.py", "--data_dir", str(empty), "--output_dir", str(tmp_path / "ner")], "error: "),
    ]
    for argv, message in cases:
        result = subprocess.run([sys.executable, os.path.join(ROOT, "examples", argv[0]), *argv[1:]], cwd=ROOT,
                                env=example_env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 2, (argv, result.stderr[-2000:])
        assert message in result.stderr and "Traceback" not in result.stderr, (argv, result.stderr[-2000:])
