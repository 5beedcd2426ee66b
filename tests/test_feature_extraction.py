"""extract-features: the layers and tokens google-research/bert's script writes."""

import json

import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.cli.main import main
from keras_bert_zoo.tasks.feature_extraction import extract_features


def test_layers_and_tokens_match_the_backbone(tiny_checkpoint):
    backbone = kbz.BertBackbone.from_preset(tiny_checkpoint)  # without all layers: cloned inside
    pre = kbz.BertPreprocessor.from_preset(tiny_checkpoint, sequence_length=10)
    texts = ["all work and no play", ("makes jack", "a dull boy")]
    records = list(extract_features(texts, backbone=backbone, preprocessor=pre, layers=(-1, 0)))
    assert [r["linex_index"] for r in records] == [0, 1]
    assert [f["token"] for f in records[1]["features"]] == ["[CLS]", "makes", "jack", "[SEP]", "a", "dull", "boy", "[SEP]"]
    full = kbz.BertBackbone.from_preset(tiny_checkpoint, return_all_layers=True)(pre(texts))
    for row, record in enumerate(records):
        last = np.array([f["layers"][0]["values"] for f in record["features"]])
        first = np.array([f["layers"][1]["values"] for f in record["features"]])
        n = len(record["features"])
        np.testing.assert_allclose(last, full["sequence_output"].numpy()[row, :n], atol=1e-5)
        np.testing.assert_allclose(first, full["encoder_outputs"].numpy()[row, 0, :n], atol=1e-5)
        assert [layer["index"] for layer in record["features"][0]["layers"]] == [-1, 0]


def test_max_seq_length_is_the_deprecated_name_of_sequence_length(tiny_checkpoint):
    with pytest.warns(DeprecationWarning, match="`max_seq_length` is now `sequence_length`"):
        old = list(extract_features(["all work and no play"], preset=tiny_checkpoint, layers=(-1,), max_seq_length=4))
    assert old == list(extract_features(["all work and no play"], preset=tiny_checkpoint, layers=(-1,), sequence_length=4))
    assert [f["token"] for f in old[0]["features"]] == ["[CLS]", "all", "work", "[SEP]"]


def test_without_a_length_a_small_model_packs_its_positions(tiny_checkpoint):
    # The default 128 was refused ("sequence_length=128 is longer than the model's 16 position embeddings").
    text = " ".join(["all work and no play"] * 5)
    records = list(extract_features([text], preset=tiny_checkpoint, layers=(-1,)))
    assert len(records[0]["features"]) == 16  # truncated to the tiny model's 16 positions
    assert records == list(extract_features([text], preset=tiny_checkpoint, layers=(-1,), sequence_length=16))
    with pytest.raises(ValueError, match="sequence_length=17 is longer than the model's 16 position embeddings"):
        list(extract_features([text], preset=tiny_checkpoint, layers=(-1,), sequence_length=17))


def test_unknown_layer_is_refused(tiny_checkpoint):
    with pytest.raises(ValueError, match="Layer -3 does not exist: the model has 2 layers"):
        list(extract_features(["all"], preset=tiny_checkpoint, layers=(-3,)))


def test_without_layers_a_small_model_gives_those_of_the_last_four_it_has(tiny_checkpoint, tmp_path):
    # extract_features.py's -1,-2,-3,-4 was refused on the 2-layer tiny model ("Layer -3 of the default
    # --layers=-1,-2,-3,-4 does not exist") for a flag nobody gave.
    records = list(extract_features(["all work"], preset=tiny_checkpoint))
    assert [layer["index"] for layer in records[0]["features"][0]["layers"]] == [-1, -2]
    assert records == list(extract_features(["all work"], preset=tiny_checkpoint, layers=(-1, -2)))
    source, out = tmp_path / "in.txt", tmp_path / "features.jsonl"
    source.write_text("all work\n")
    assert main(["extract-features", "--input_file", str(source), "--output_file", str(out), "--preset",
                 tiny_checkpoint]) == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == records


def test_cli_writes_json_lines(tiny_checkpoint, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("all work\nmakes jack ||| a dull boy\n")
    out = tmp_path / "features.jsonl"
    assert main(["extract-features", "--input_file", str(source), "--output_file", str(out), "--preset",
                 tiny_checkpoint, "--layers=-1,-2", "--max_seq_length", "12"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 2 and [f["token"] for f in records[0]["features"]] == ["[CLS]", "all", "work", "[SEP]"]
    assert len(records[1]["features"][0]["layers"][1]["values"]) == 4  # hidden size of the tiny model


def test_cli_reads_pairs_and_standard_input_as_extract_features_py(tiny_checkpoint, tmp_path, monkeypatch):
    """A pair is parted by " ||| " (spaces included) at its last, as extract_features.py's regular expression
    parts it; "x|||y" split at its first "|||" without spaces. '-' reads standard input, as encode does."""
    import io
    import re

    lines = ["all work ||| and no ||| play", "makes|||jack", "a dull ||| boy"]
    out = tmp_path / "features.jsonl"
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["extract-features", "--input_file", "-", "--output_file", str(out), "--preset", tiny_checkpoint,
                 "--layers=-1", "--max_seq_length", "16"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    tokenizer = kbz.BertTokenizer.from_preset(tiny_checkpoint)
    for line, record in zip(lines, records, strict=True):
        google = re.match(r"^(.*) \|\|\| (.*)$", line)  # extract_features.py's read_examples
        texts = google.groups() if google else (line,)
        expected = ["[CLS]"] + [t for text in texts for t in (
            *(tokenizer.id_to_token(int(i)) for i in tokenizer(text).numpy()), "[SEP]")]
        assert [f["token"] for f in record["features"]] == expected
    assert [f["token"] for f in records[0]["features"]].count("[SEP]") == 2  # parted at its last " ||| "
