"""A served model never dies on a request (issue 8's general rule for exports).

Every signature of a real export of each task gets a seeded battery of
hostile requests in a child process (tests/serving_fuzz_runner.py), twice:
through the loaded concrete functions, and through the MetaGraph's tensors
fed by the session's C API, as TF Serving runs them, so the graph's own
checks are proven to hold with no client-side validation in front. A crash
shows as a negative exit code naming the last case, not as a dead pytest.
"""

import json
import os
import re
import string
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.export.question_answerer_signatures import _n_best
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor

pytestmark = pytest.mark.subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_POSITIONS = 64
_CHARACTERS = string.ascii_lowercase + string.digits
# Word pieces of single characters: every word tokenizes, long texts give many pieces.
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *".,!?'()-", *_CHARACTERS,
              *("##" + c for c in _CHARACTERS), "the", "cat", "sat", "ann", "ran"]
SIGNATURES = {
    "classifier": {"classify", "classify_pairs", "embed", "predict_ids", "serving_default"},
    "tagger": {"entities", "embed", "predict_ids", "serving_default"},
    "qa": {"answer", "embed", "predict_ids", "serving_default"},
    "mlm": {"fill_mask", "fill_mask_pairs", "embed", "predict_ids", "serving_default"},
}


def _backbone():
    return kbz.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
                            intermediate_dim=16, max_sequence_length=MAX_POSITIONS)


@pytest.fixture(scope="module")
def fuzz_log(tmp_path_factory):
    """Export one tiny random model per task, fuzz them all in one child process; the log's entries."""
    base = tmp_path_factory.mktemp("fuzz")
    keras.utils.set_random_seed(3)
    tokenizer = kbz.BertTokenizer(VOCABULARY)
    classifier = kbz.BertClassifier(_backbone(), kbz.BertPreprocessor(tokenizer, MAX_POSITIONS), num_classes=3,
                                    label_names=["neg", "neu", "pos"])
    tagger = kbz.BertTokenClassifier(_backbone(), TokenClassificationPreprocessor(tokenizer, MAX_POSITIONS),
                                     label_names=["O", "B-Gene", "I-Gene", "B-Drug", "I-Drug"])
    qa = kbz.BertQuestionAnswerer(_backbone(), kbz.BertPreprocessor(tokenizer, MAX_POSITIONS), doc_stride=16,
                                  max_query_length=16, version_2_with_negative=True)
    exports = {name: task.export(str(base), model_name=name)
               for name, task in {"classifier": classifier, "tagger": tagger, "qa": qa}.items()}
    exports["mlm"] = kbz.export.export_for_serving(kbz.BertPretrainer(_backbone()), str(base), model_name="mlm",
                                                   preprocessor=kbz.BertPreprocessor(tokenizer, MAX_POSITIONS))
    request, log = base / "exports.json", base / "log.jsonl"
    request.write_text(json.dumps({"exports": exports, "max_sequence_length": MAX_POSITIONS}))
    process = subprocess.run([sys.executable, "-m", "tests.serving_fuzz_runner", str(request), str(log)], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return process, entries


# --- The process survives every request ---------------------------------------

def test_no_request_kills_the_process(fuzz_log):
    process, entries = fuzz_log
    last = entries[-1]["case"] if entries else "(none)"
    assert process.returncode == 0, f"exit {process.returncode} during {last}: {process.stderr[-2000:]}"
    assert last == "done"


def test_every_signature_of_every_export_is_fuzzed_both_ways(fuzz_log):
    _, entries = fuzz_log
    fuzzed = {tuple(e["case"].split("/")[:3]) for e in entries if "outcome" in e}
    expected = {(way, export, signature) for export, signatures in SIGNATURES.items() for signature in signatures
                for way in ("eager", "graph")}
    assert fuzzed == expected
    assert len([e for e in entries if "outcome" in e]) > 350


# --- Requests a model can read get well-formed answers --------------------------

def test_every_readable_request_gets_a_well_formed_answer(fuzz_log):
    _, entries = fuzz_log
    answered = [e for e in entries if e.get("expected") == "ok"]
    wrong = [f"{e['case']}: {e['outcome']} {e['detail']}{e['problems'][:3]}" for e in answered
             if e["outcome"] != "ok" or e["problems"]]
    assert not wrong, "\n".join(wrong)
    cases = {e["case"].rsplit("/", 1)[1] for e in answered}
    assert {"batch_0", "batch_1000", "empty", "text_100k_chars", "invalid_utf8", "random_bytes",
            "masks_beyond_the_window", "empty_context", "both_empty", "context_50k_chars",
            "batch_300_one_long", "question_longer_than_the_window", "windows_with_nothing_to_read",
            "only_windows_with_nothing_to_read"} <= cases


# --- Requests a model cannot read get InvalidArgumentError naming the input ------

def test_unreadable_requests_get_an_error_that_names_the_input(fuzz_log):
    _, entries = fuzz_log
    refused = [e for e in entries if e.get("expected") not in (None, "ok")]
    wrong = [f"{e['case']}: {e['outcome']} {e['detail'] or e['problems']}" for e in refused
             if e["outcome"] != e["expected"] or not re.search(e["words"], e["detail"])]
    assert not wrong, "\n".join(wrong)
    assert {e["case"].rsplit("/", 1)[1] for e in refused} >= {
        "rank_0", "rank_2", "int_values", "batch_mismatch", "batch_mismatch_empty", "token_id_too_large",
        "token_id_negative", "mask_position_outside_the_text", "mask_positions_batch_differs"}


def test_the_graph_refuses_bad_shapes_without_the_servers_validation(fuzz_log):
    """Fed below any client check, a scalar, a matrix or unequal pairs still
    stop at the graph's own checks (a scalar used to crash the tokenizer)."""
    _, entries = fuzz_log
    graph = {e["case"]: e for e in entries if e["case"].startswith("graph/") and "outcome" in e}
    for export, signatures in SIGNATURES.items():
        for signature in signatures - {"predict_ids"}:
            for case in ("rank_0", "rank_2"):
                entry = graph[f"graph/{export}/{signature}/{case}"]
                assert entry["outcome"] == "InvalidArgumentError"
                assert re.search(r"_must_be_a_vector", entry["detail"]), entry
    assert "text_b must hold one string per string of text" in graph[
        "graph/classifier/classify_pairs/batch_mismatch"]["detail"]
    assert "token_ids must be < the vocabulary size" in graph["graph/qa/predict_ids/token_id_too_large"]["detail"]


# --- QA's n-best search stays linear in the candidates ----------------------------

def test_n_best_per_example_matches_a_sort_per_example():
    rng = np.random.default_rng(0)
    example = np.repeat([0, 1, 2, 3], [7, 1, 30, 4]).astype(np.int32)
    scores = rng.integers(-3, 4, size=example.size).astype(np.float32)  # many ties
    scores[8:12] = -np.inf
    top, best = _n_best(tf.constant(scores), tf.constant(example), 4, 5)
    for row in range(4):
        members = np.flatnonzero(example == row)
        ranked = members[np.argsort(-scores[members], kind="stable")]  # ties: earlier index first
        expected = np.full(5, -np.inf, np.float32)
        expected[: min(5, ranked.size)] = scores[ranked[:5]]
        np.testing.assert_array_equal(top.numpy()[row], expected)
        assert best.numpy()[row] == ranked[0]
    top, best = _n_best(tf.zeros([0]), tf.zeros([0], tf.int32), 0, 5)
    assert top.shape == (0, 5) and best.shape == (0,)
