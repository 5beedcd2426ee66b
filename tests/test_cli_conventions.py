"""Issue "[2/4] The user's path", items 5-8: one CLI, one set of conventions, quiet by default.

Runs the CLI in-process where it can, and in a subprocess where start-up
(imports, TensorFlow's logs) is what is tested.
"""

import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys

import pytest

from keras_bert_zoo.cli import finetune_command
from keras_bert_zoo.cli.main import build_parser
from keras_bert_zoo.cli.main import main
from keras_bert_zoo.cli.main import snake_case_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = ("presets", "encode", "extract-features", "finetune", "evaluate", "predict", "export",
            "create-pretraining-data", "pretrain")
ABSL_LOG_LINE = re.compile(r"^[IWEF]\d{4} ", re.M)  # I0000 00:00:... port.cc:153] oneDNN custom operations ...


def _python(code, env=None, timeout=300):
    environment = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    environment.pop("TF_CPP_MIN_LOG_LEVEL", None)  # as a user's shell has it
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          env=environment, cwd=ROOT)


def _cli(*argv, timeout=600):
    return _python(f"import sys; from keras_bert_zoo.cli.main import main; sys.exit(main({list(argv)!r}))",
                   timeout=timeout)


def _run(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr()


def _subparser(name):
    return build_parser().choices_of(name)


# --- --help answers at once: parsing imports no TensorFlow ---

def test_building_the_parser_imports_no_tensorflow():
    result = _python("import sys; from keras_bert_zoo.cli.main import build_parser; build_parser(); "
                     "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    assert result.stdout.split() == ["False", "False"], result.stderr


@pytest.mark.subprocess
def test_importing_the_package_imports_no_tensorflow_until_a_name_is_used():
    result = _python("import sys, keras_bert_zoo as kbz; print('tensorflow' in sys.modules); "
                     "kbz.BertTokenizer; print('tensorflow' in sys.modules); print(kbz.data.read_glue.__name__)")
    assert result.stdout.split() == ["False", "True", "read_glue"], result.stderr


def test_help_of_every_command_in_a_subprocess_imports_no_tensorflow():
    result = _python("import sys\nfrom keras_bert_zoo.cli.main import main\n"
                     f"for command in {list(COMMANDS)!r}:\n"
                     "    try:\n        main([command, '--help'])\n    except SystemExit:\n        pass\n"
                     "print('tensorflow' in sys.modules, file=sys.stderr)")
    assert result.stderr.strip().splitlines()[-1] == "False", result.stderr


def test_bad_flags_inputs_and_preset_names_are_refused_before_tensorflow_loads(tmp_path):
    """A typo in a preset's name, a length beyond its positions, a flag of another task, an empty input line,
    a layer the model lacks or a --model that is no model: each is one error line, and TensorFlow (seconds of
    start-up) was never imported."""
    train = tmp_path / "train.tsv"
    train.write_text("sentence\tlabel\ngood\t1\n")
    lines = tmp_path / "lines.txt"
    lines.write_text("one\n\ntwo\n")
    unlabelled = tmp_path / "unlabelled.csv"
    unlabelled.write_text("text,label\ngood,pos\nbad,\n")
    mistagged = tmp_path / "ner.conll"
    mistagged.write_text("aspirin\tB-Chemical\nrelieves\tO\n\nfever\tX-Disease\n")
    squad = tmp_path / "squad.json"
    squad.write_text('{"version": "v1.1", "data": [')
    # A `pretrain` model (its task.json, as Keras serializes the class) and a transformers base model: no head.
    pretrained, bare = tmp_path / "pretrain_run" / "model", tmp_path / "bare"
    pretrained.mkdir(parents=True), bare.mkdir()
    (pretrained / "task.json").write_text(json.dumps({"module": "keras_bert_zoo.tasks.bert_pretrainer",
                                                      "class_name": "BertPretrainer", "config": {}}))
    (bare / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "hidden_size": 8}))
    (bare / "model.safetensors").write_bytes(b"")
    cases = [
        (["finetune", "--task", "classify", "--preset", "bert_bse_en_uncased", "--train_file", str(train),
          "--output_dir", str(tmp_path / "a")], "Unknown preset 'bert_bse_en_uncased'. Did you mean: bert_base_en"),
        (["finetune", "--task", "classify", "--max_seq_length", "600", "--train_file", str(train),
          "--output_dir", str(tmp_path / "b")], "--max_seq_length 600 is more than the 512 positions"),
        (["finetune", "--task", "classify", "--doc_stride", "64", "--train_file", str(train),
          "--output_dir", str(tmp_path / "c")], "--doc_stride is for --task qa"),
        (["finetune", "--task", "qa", "--max_seq_length", "64", "--max_query_length", "64", "--train_file",
          str(train), "--output_dir", str(tmp_path / "d")], "leaves no room for the context"),
        # The data files, read once the flags hold: bad rows before TensorFlow's start-up too.
        (["finetune", "--task", "classify", "--train_file", str(unlabelled), "--output_dir", str(tmp_path / "e")],
         f"{unlabelled}, line 3: empty label"),
        (["finetune", "--task", "ner", "--train_file", str(mistagged), "--output_dir", str(tmp_path / "e")],
         f"{mistagged}:4: 'X-Disease' is not an entity tag"),
        (["finetune", "--task", "qa", "--train_file", str(squad), "--output_dir", str(tmp_path / "e")], str(squad)),
        (["encode", "--input_file", str(lines)], "line 2 is empty"),
        (["encode", "a text", "--preset", "nope"], "Unknown preset 'nope'"),
        (["extract-features", "--input_file", str(lines), "--output_file", str(tmp_path / "f.jsonl"),
          "--layers=-7"], "--layers -7 does not exist: the preset minilm_l6_h384_en_uncased has 6 layers"),
        (["predict", "--model", str(tmp_path), "--input_file", str(lines)], "is not a fine-tuned model"),
        (["evaluate", "--model", "minilm_l6_h384_en_uncased", "--eval_file", str(train)],
         "is a preset, not a fine-tuned model"),
        (["evaluate", "--model", str(pretrained.parent), "--eval_file", str(train)],
         f"is a pretrained BERT, not a fine-tuned classifier, NER or QA model: {pretrained} holds a 'BertPretrainer'. "
         f"Fine-tune it first: keras-bert-zoo finetune --preset {pretrained} ..."),
        (["predict", "--model", str(bare), "--input_file", str(lines)],
         f"{bare} holds a transformers BertModel (its config.json's architectures), no task's head. Fine-tune it"),
    ]
    code = ("import sys\nfrom keras_bert_zoo.cli.main import main\n"
            f"for argv in {[argv for argv, _ in cases]!r}:\n"
            "    print(main(argv), file=sys.stderr)\n"
            "print('tensorflow' in sys.modules, 'keras' in sys.modules, file=sys.stderr)")
    result = _python(code)
    errors = result.stderr.strip().splitlines()
    assert errors[-1] == "False False", result.stderr
    assert len(errors) == 2 * len(cases) + 1, result.stderr
    for (argv, expected), line, status in zip(cases, errors[0::2], errors[1::2]):
        assert line.startswith(f"keras-bert-zoo {argv[0]}: error: ") and expected in line, (argv, line)
        assert status == "2", (argv, status)
    assert not (tmp_path / "a").exists() and not (tmp_path / "e").exists()  # no output directory was made


def test_constants_read_from_source_are_the_librarys(tiny_checkpoint, tmp_path):
    from keras_bert_zoo.cli import finetune_command
    from keras_bert_zoo.cli.library_defaults import library_constant
    from keras_bert_zoo.presets import preset_io
    from keras_bert_zoo.presets.registry import is_preset_name
    from keras_bert_zoo.training import finetune

    assert library_constant(*finetune_command.MODEL_DIR) == finetune.MODEL_DIR
    assert library_constant(*finetune_command.TASK_CONFIG_FILE) == preset_io.TASK_CONFIG_FILE
    from keras_bert_zoo.presets.converters import hf_checkpoint
    from keras_bert_zoo.tasks.bert_pretrainer import BertPretrainer

    assert not set(finetune_command.HF_PRETRAINED) & set(hf_checkpoint.HF_TASKS)
    BertPretrainer.from_preset(tiny_checkpoint).save_to_preset(str(tmp_path / "pretrained"))
    saved = json.loads((tmp_path / "pretrained" / preset_io.TASK_CONFIG_FILE).read_text())
    assert (saved["module"], saved["class_name"]) == finetune_command.PRETRAINER_CLASS
    # What from_preset reads as a registered name: not a directory, handle, URL or path.
    assert is_preset_name("bert_base_en_uncased") and is_preset_name("no_such_name")
    assert not any(is_preset_name(p) for p in (ROOT, "hf://org/name", "https://x/y.tar.gz", "a/b", "./x"))


@pytest.mark.parametrize("config, holds", [
    ({"architectures": ["BertModel"]}, "a transformers BertModel (its config.json's architectures), no task's head"),
    ({"architectures": ["BertForPreTraining"], "model_type": "bert"}, "a transformers BertForPreTraining"),
    # Left for the load to judge: another model type, a head with no task here, or none named.
    ({"architectures": ["RobertaForSequenceClassification"], "model_type": "roberta"}, None),
    ({"architectures": ["RobertaModel"], "model_type": "roberta"}, None),
    ({"architectures": ["BertForMultipleChoice"]}, None),
    ({"architectures": ["BertForSequenceClassification"]}, None),
    ({}, None),
])
def test_only_berts_pretrained_classes_are_refused_as_fine_tuned_models_before_loading(tmp_path, config, holds):
    (tmp_path / "config.json").write_text(json.dumps(config))
    found = finetune_command._pretrained_holds(str(tmp_path))
    assert found == holds if holds is None else found.startswith(holds)


def test_version(capsys):
    from keras_bert_zoo.version import __version__

    code, out = _run(capsys, ["--version"])
    assert code == 0 and out.out.strip() == f"keras-bert-zoo {__version__}"


# --- every subcommand has a description and shows defaults ---

@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_a_description(command):
    assert _subparser(command).description


def test_help_shows_the_library_defaults():
    encode = " ".join(_subparser("encode").format_help().split())
    assert "--batch_size BATCH_SIZE (default: 32)" in encode
    assert "(default: minilm_l6_h384_en_uncased)" in encode
    finetune = " ".join(_subparser("finetune").format_help().split())
    assert "(default: the task's: 5e-05 for classify and ner, 3e-05 for qa)" in finetune
    assert "--eval_fraction EVAL_FRACTION (default: 0.1)" in finetune
    for command in ("create-pretraining-data", "pretrain"):
        text = " ".join(_subparser(command).format_help().split())
        assert "different masks. (default: 10)" in text, command  # PretrainingDataConfig's, in both
    pretrain = " ".join(_subparser("pretrain").format_help().split())
    assert "(records: default 100000;" in pretrain and "(records: default 1000;" in pretrain


# --- defaults live in the library once: the CLI passes only what was given ---

def test_finetune_qa_trains_at_the_question_answerers_own_rate(tmp_path, capsys, monkeypatch):
    class Compiled(Exception):
        pass

    class FakeTask:
        def compile(self, **kwargs):
            raise Compiled(f"compiled with {kwargs}")

    monkeypatch.setitem(finetune_command.FINETUNERS, "qa",
                        lambda args: (FakeTask, [1], None, None, 0))
    train = tmp_path / "train.json"
    train.write_text("{}")
    argv = ["finetune", "--task", "qa", "--train_file", str(train), "--output_dir", str(tmp_path / "out")]
    with pytest.raises(Compiled, match=r"compiled with \{\}$"):  # BertQuestionAnswerer's 3e-5 applies
        main(argv)
    with pytest.raises(Compiled, match=r"compiled with \{'learning_rate': 2e-05\}"):
        main(argv + ["--learning_rate", "2e-5", "--overwrite_output_dir"])


def test_instance_flags_are_not_passed_unless_given(tmp_path):
    from keras_bert_zoo.cli.create_pretraining_data_command import INSTANCE_FLAGS
    from keras_bert_zoo.cli.library_defaults import given

    corpus = tmp_path / "c.txt"
    corpus.write_text("a b.\n")
    for argv in (["create-pretraining-data", "--input_file", str(corpus), "--output_file", str(tmp_path / "r"),
                  "--preset", "x"],
                 ["pretrain", "--preset", "x", "--input_file", str(corpus), "--output_dir", str(tmp_path / "o")]):
        args = build_parser().parse_args(argv)
        assert given(args, *INSTANCE_FLAGS) == {}, argv[0]  # dupe_factor: PretrainingDataConfig's 10 in both


# --- one flag family; old spellings still work; hyphens for all ---

def test_snake_case_names_with_old_spellings_hidden():
    parse = build_parser().parse_args
    assert parse(["encode", "--input_file", "-"]).input == parse(["encode", "--input", "-"]).input == "-"
    assert parse(["predict", "--model", "m", "--input_file", __file__]).input == __file__
    assert parse(["finetune", "--task", "ner", "--train", __file__, "--output", "o"]).train == __file__
    for command, hidden in (("encode", "--input "), ("predict", "--input "), ("finetune", "--train "),
                            ("pretrain", "--corpus "), ("pretrain", "--output "), ("export", "--output ")):
        assert hidden not in _subparser(command).format_help(), (command, hidden)


def test_every_flag_may_be_spelled_with_hyphens():
    parser = build_parser()
    assert snake_case_flags(["encode", "--max-seq-length", "16", "--batch-size=4"], parser) == \
        ["encode", "--max_seq_length", "16", "--batch_size=4"]
    assert snake_case_flags(["pretrain", "--no-do_lower_case", "--save-checkpoints-steps", "5"], parser) == \
        ["pretrain", "--no-do_lower_case", "--save_checkpoints_steps", "5"]
    assert snake_case_flags(["extract-features", "--layers=-1,-2", "--", "--not-a-flag"], parser) == \
        ["extract-features", "--layers=-1,-2", "--", "--not-a-flag"]


def test_a_missing_required_flag_names_its_snake_case_name(tmp_path, capsys):
    code, out = _run(capsys, ["pretrain", "--preset", "x", "--output_dir", str(tmp_path)])
    assert code == 2 and "the following arguments are required: --input_file" in out.err
    code, out = _run(capsys, ["finetune", "--task", "ner", "--train", __file__])  # an old spelling meets --train_file
    assert code == 2 and out.err.splitlines() == [
        "keras-bert-zoo finetune: error: the following arguments are required: --output_dir "
        "(flags: keras-bert-zoo finetune --help)"]


def test_an_unknown_flag_is_named_under_its_command_with_the_flag_meant(tmp_path, capsys):
    """argparse named it under keras-bert-zoo, pointing to the top-level --help (a list of commands)."""
    base = ["finetune", "--task", "classify", "--train_file", __file__, "--output_dir", str(tmp_path / "o")]
    for extra, meant in ((["--num_epochs", "2"], "; did you mean --num_train_epochs?"), (["--lr", "1e-4"], "")):
        code, out = _run(capsys, base + extra)
        assert code == 2 and out.err.splitlines() == [
            f"keras-bert-zoo finetune: error: unrecognized arguments: {' '.join(extra)}{meant} "
            "(flags: keras-bert-zoo finetune --help)"], out.err


# Each command's required flags (a group: one of them), as its usage line must show them: outside brackets.
REQUIRED = {
    "finetune": ["--task {classify,ner,qa}", "--train_file TRAIN_FILE", "--output_dir OUTPUT_DIR"],
    "evaluate": ["--model MODEL", "--eval_file EVAL_FILE"],
    "predict": ["--model MODEL", "--input_file INPUT_FILE"],
    "export": ["--model MODEL", "--output_dir OUTPUT_DIR"],
    "extract-features": ["--input_file INPUT_FILE", "--output_file OUTPUT_FILE"],
    "create-pretraining-data": ["--input_file INPUT_FILE", "--output_file OUTPUT_FILE",
                                "(--vocab_file VOCAB_FILE | --preset PRESET)"],
    "pretrain": ["(--preset PRESET | --config CONFIG)", "--input_file INPUT_FILE [INPUT_FILE ...]",
                 "--output_dir OUTPUT_DIR"],
}


@pytest.mark.parametrize("command", REQUIRED)
def test_the_usage_line_shows_required_flags_as_required(command):
    """They were shown in brackets, as if optional, while a check after parsing demanded them."""
    usage = " ".join(_subparser(command).format_usage().split())
    for flag in REQUIRED[command]:
        assert f" {flag} " in f"{usage} ", (flag, usage)
        assert f"[{flag}" not in usage, (flag, usage)
    assert "[--verbose]" in usage  # the others stay optional
    assert not {"--train", "--eval", "--input", "--output", "--corpus"} & set(usage.split()), usage  # old spellings


def test_old_spellings_meet_a_required_flag():
    parse = build_parser().parse_args
    assert parse(["evaluate", "--model", "m", "--eval", __file__]).eval == __file__
    assert parse(["predict", "--model", "m", "--input", __file__]).input == __file__
    assert parse(["export", "--model", "m", "--output", "e"]).output == "e"
    assert parse(["finetune", "--task", "qa", "--train", __file__, "--output", "o"]).output == "o"
    # --corpus took several files; --input_file takes them too (as a shell glob expands), and commas.
    args = parse(["pretrain", "--preset", "p", "--output", "o", "--corpus", __file__, f"{__file__},{__file__}"])
    assert args.input_file == [__file__, f"{__file__},{__file__}"]


# --- --glue_task implies GLUE; column errors name the flags; --model forms ---

def test_glue_task_implies_the_glue_format(tmp_path):
    folder = tmp_path / "mine"  # not named after the task, so the format is not guessed
    folder.mkdir()
    path = folder / "train.tsv"
    path.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tA cat.\tA feline.\n0\t3\t4\tRain.\tSun.\n")
    args = build_parser().parse_args(["evaluate", "--model", "m", "--eval_file", str(path), "--glue_task", "MRPC"])
    data = finetune_command._read(str(path), args)
    assert data.texts[0] == ("A cat.", "A feline.") and len(data) == 2
    args.format = "csv"
    with pytest.raises(ValueError, match="--glue_task MRPC reads a GLUE TSV: drop --format csv"):
        finetune_command._read(str(path), args)


def test_a_column_error_names_the_flags(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("sentence,label\ngood,1\n")
    args = build_parser().parse_args(["evaluate", "--model", "m", "--eval_file", str(path)])
    with pytest.raises(ValueError, match="Name the columns with --text_column / --text_b_column / --label_column"):
        finetune_command._read(str(path), args)


@pytest.mark.parametrize("command", ["evaluate", "predict"])
def test_a_wrong_model_path_says_which_form_was_expected(command, tmp_path, capsys):
    data = tmp_path / "d.txt"
    data.write_text("x\n")
    flag = "--eval_file" if command == "evaluate" else "--input_file"
    for model, problem in ((tmp_path / "nowhere", "does not exist"), (tmp_path, "is not a fine-tuned model")):
        code, out = _run(capsys, [command, "--model", str(model), flag, str(data)])
        assert code == 2
        assert f"--model {model} {problem}: expected a `finetune` --output_dir or its model/" in out.err


@pytest.mark.parametrize("command", ["evaluate", "predict", "export"])
def test_an_unfinished_finetune_output_dir_names_its_job_and_the_fix(command, tmp_path, capsys):
    # A finetune stopped before it wrote model/ leaves job.json, backup/ and logs/: "is not a fine-tuned model"
    # did not say that the same command resumes it.
    out_dir = tmp_path / "run"
    (out_dir / "backup").mkdir(parents=True)
    (out_dir / "job.json").write_text(json.dumps({"command": "finetune", "status": "interrupted"}))
    data = tmp_path / "d.txt"
    data.write_text("x\n")
    flag = {"evaluate": "--eval_file", "predict": "--input_file", "export": "--output_dir"}[command]
    for model, where in ((out_dir, "is the"), (out_dir / "backup", "is inside the")):
        code, out = _run(capsys, [command, "--model", str(model), flag, str(data if command != "export" else
                                                                             tmp_path / "exports")])
        assert code == 2
        assert (f"--model {model} {where} --output_dir of a `finetune` job that has not written its model "
                f"({out_dir / 'job.json'}: interrupted): run the same keras-bert-zoo finetune command again") in out.err
    assert not (tmp_path / "exports").exists()


# --- --config keys ---

def test_a_bad_config_key_is_one_line_listing_the_valid_keys(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"num_layers": 2, "hiden_dim": 64}))
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b.\n")
    code, out = _run(capsys, ["pretrain", "--config", str(config), "--vocab_from_corpus", "100", "--input_file",
                              str(corpus), "--output_dir", str(tmp_path / "o")])
    assert code == 2 and len(out.err.strip().splitlines()) == 1
    assert f"--config {config}: unknown key hiden_dim; valid keys: vocabulary_size, num_layers, num_heads, " \
           "hidden_dim, intermediate_dim, dropout, max_sequence_length" in out.err
    assert not (tmp_path / "o").exists()


# --- presets, vocabulary size, progress bar ---

def test_presets_marks_the_default_and_what_loads_offline(capsys, monkeypatch, tmp_path):
    code, out = _run(capsys, ["presets"])
    lines = out.out.splitlines()
    assert code == 0 and lines[0].split()[-1] == "offline"
    assert any(line.startswith("minilm_l6_h384_en_uncased *") for line in lines)
    assert "* default preset (minilm_l6_h384_en_uncased). offline: cached" in out.out
    # A fresh cache: the default preset still loads offline, from its installed package; the others need a download.
    monkeypatch.setenv("KERAS_BERT_ZOO_CACHE", str(tmp_path))
    code, out = _run(capsys, ["presets"])
    offline = {line.split()[0]: line.split()[-1] for line in out.out.splitlines()[2:] if line.strip()
               and not line.startswith("*")}
    assert offline["minilm_l6_h384_en_uncased"] == "installed" and offline["bert_base_en_uncased"] == "no"


def test_a_small_corpus_says_what_vocabulary_size_it_reached_and_why(tmp_path):
    from keras_bert_zoo.tokenizers.vocabulary_learner import learn_vocabulary

    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat\n" * 20)
    with pytest.warns(UserWarning) as caught:
        vocabulary = learn_vocabulary(str(corpus), 30000)
    message = str(caught[0].message)
    assert message.startswith(f"learned a vocabulary of {len(vocabulary)} tokens, not the 30000 asked for: "
                              "the corpus is too small.")
    assert "pieces seen at least 10 times" in message


def test_the_instances_progress_bar_counts_document_passes(tiny_checkpoint, capsys):
    from keras_bert_zoo.preprocessing.pretraining_instances import PretrainingDataConfig
    from keras_bert_zoo.preprocessing.pretraining_instances import create_pretraining_instances
    from keras_bert_zoo.tokenizers.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer.from_preset(tiny_checkpoint)
    ids = [tokenizer.tokenize(t) for t in ("the cat", "a dog", "the mat")]
    documents = [[list(map(int, i)) for i in ids]] * 3
    create_pretraining_instances(documents, tokenizer, PretrainingDataConfig(max_seq_length=16, dupe_factor=2),
                                 progress=True)
    err = capsys.readouterr().err
    assert "instances (2 passes x 3 documents)" in err and "6/6" in err and "doc-pass" in err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bars_write_plain_lines_to_a_log_and_redraw_only_on_a_terminal(capsys, monkeypatch):
    """In a log file (stderr no terminal) tqdm wrote its `\\r` redraws, ten a second."""
    from keras_bert_zoo.utils.progress_bar import progress_bar

    for _ in progress_bar(range(1000), desc="encode", unit="batch"):
        pass
    lines = capsys.readouterr().err.split("\n")
    # A loop shorter than LOG_EVERY_SECONDS: its first state and its last, then nothing.
    assert len(lines) == 3 and lines[2] == "" and "\r" not in "".join(lines), lines
    assert lines[0].startswith("encode:   0%|") and " 0/1000 " in lines[0]
    assert lines[1].startswith("encode: 100%|##########| 1000/1000 [")
    for _ in progress_bar(range(1000), enabled=False):
        pass
    assert capsys.readouterr().err == ""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    for _ in progress_bar(range(1000), desc="encode"):
        pass
    assert terminal.getvalue().startswith("\rencode:   0%|")


def test_every_progress_bar_is_the_shared_one():
    package = os.path.join(ROOT, "keras_bert_zoo")
    users = sorted(os.path.relpath(os.path.join(folder, name), package) for folder, _, names in os.walk(package)
                   for name in names if name.endswith(".py") and "tqdm" in open(os.path.join(folder, name)).read())
    assert users == [os.path.join("utils", "progress_bar.py")]


# --- quiet by default, --verbose brings TensorFlow's logs back ---

@pytest.mark.subprocess
def test_commands_and_the_package_are_quiet_by_default_and_verbose_on_request(tiny_checkpoint):
    quiet = _cli("encode", "hello", "--preset", tiny_checkpoint, "--max_seq_length", "16")
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout)["text"] == "hello"
    for noise in ("E0000", "I0000", "cuInit", "oneDNN", "absl::InitializeLog"):
        assert noise not in quiet.stderr, quiet.stderr
    table = _cli("presets")
    assert table.returncode == 0 and not ABSL_LOG_LINE.search(table.stderr), table.stderr
    loud = _cli("--verbose", "encode", "hello", "--preset", tiny_checkpoint, "--max_seq_length", "16")
    assert loud.returncode == 0 and ABSL_LOG_LINE.search(loud.stderr), loud.stderr
    library = _python("import keras_bert_zoo as kbz; kbz.BertTokenizer.from_preset(%r)" % tiny_checkpoint)
    assert library.returncode == 0 and not ABSL_LOG_LINE.search(library.stderr), library.stderr
    # The README's snippets import TensorFlow themselves, after keras_bert_zoo.
    snippet = _python("import keras_bert_zoo as kbz\nimport tensorflow as tf\nprint(tf.constant([1]).numpy())")
    assert snippet.returncode == 0 and snippet.stdout == "[1]\n", snippet.stderr
    assert not ABSL_LOG_LINE.search(snippet.stderr) and "absl::InitializeLog" not in snippet.stderr, snippet.stderr
    # A level the user set is theirs: nothing is hidden then.
    kept = subprocess.run([sys.executable, "-c", "import os, keras_bert_zoo; print(os.environ['TF_CPP_MIN_LOG_LEVEL'])"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT,
                                                               "TF_CPP_MIN_LOG_LEVEL": "1"}, cwd=ROOT)
    assert kept.stdout.strip() == "1"


@pytest.mark.subprocess
@pytest.mark.skipif(sys.platform != "linux" or platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the oneDNN default is for TensorFlow's x86 Linux builds")
def test_tensorflow_loads_its_onednn_kernels_unless_the_user_said_otherwise():
    """TensorFlow leaves oneDNN off on x86 CPUs without AVX-512 VNNI/BF16, AVX-VNNI or AMX (Eigen's matmuls:
    batches of BERT ~1.2x slower); importing the package first turns it on, and a value the user set is kept."""
    # IsMklEnabled (private, TF's own answer) is the kernels loaded: on CPUs where TF turns oneDNN on by itself it
    # is on either way, so the variable the package set is checked too.
    probe = ("import os, keras_bert_zoo, tensorflow\n"
             "from tensorflow.python.util import _pywrap_util_port\n"
             "print(os.environ['TF_ENABLE_ONEDNN_OPTS'], _pywrap_util_port.IsMklEnabled())")

    def onednn(setting):
        environment = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
        if setting is not None:
            environment["TF_ENABLE_ONEDNN_OPTS"] = setting
        probed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                env={**environment, "PYTHONPATH": ROOT}, cwd=ROOT)
        assert probed.returncode == 0, probed.stderr
        return probed.stdout.strip()

    assert onednn(None) == "1 True"
    assert onednn("0") == "0 False"


@pytest.mark.subprocess
def test_saved_model_cli_run_is_quiet_by_default_and_verbose_on_request(tiny_checkpoint, tmp_path, capsys):
    """TensorFlow's tool logged a deprecation notice and "Restoring parameters" (each twice); its errors were
    tracebacks."""
    assert main(["export", "--model", tiny_checkpoint, "--output_dir", str(tmp_path), "--model_name", "tiny",
                 "--max_seq_length", "16"]) == 0
    capsys.readouterr()
    run = ["saved-model-cli", "run", "--dir", str(tmp_path / "tiny" / "1"), "--tag_set", "serve", "--signature_def",
           "embed", "--input_exprs", 'text=["He said hi."]']
    quiet = _cli(*run)
    assert quiet.returncode == 0, quiet.stderr
    assert "Result for output key mean_pooled:" in quiet.stdout
    assert quiet.stderr == ""
    loud = _cli("--verbose", *run)
    assert loud.returncode == 0, loud.stderr
    assert loud.stderr.count("Restoring parameters") == 1 and loud.stderr.count("is deprecated") == 1, loud.stderr
    wrong = _cli(*run[:-4], "--signature_def", "nope", "--input_exprs", 'text=["x"]')
    help = _cli("saved-model-cli", "run", "--help")  # was the docstring of keras_bert_zoo.cli.main
    assert help.returncode == 0 and help.stdout.startswith("usage: saved_model_cli run"), help.stdout[:500]
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
    assert wrong.stderr.startswith('keras-bert-zoo saved-model-cli: error: Could not find signature "nope". '
                                   'Please choose from: ') and "embed" in wrong.stderr
    # Requests the session cannot feed were TensorFlow's graph trace, exit status 1.
    show = f"(keras-bert-zoo saved-model-cli show --dir {tmp_path / 'tiny' / '1'} --all lists"
    unfed = _cli(*run[:-4], "--signature_def", "predict_ids", "--input_exprs", "token_ids=[[2, 5, 3]]")
    assert unfed.returncode == 2 and len(unfed.stderr.strip().splitlines()) == 1, unfed.stderr
    assert re.search("error: the signature predict_ids's input '(segment_ids|padding_mask)' is not given: give every "
                     "input of the signature in --inputs / --input_exprs / --input_examples ", unfed.stderr)
    assert show in unfed.stderr, unfed.stderr
    number = _cli(*run[:-1], "text=[1.5]")
    assert number.returncode == 2 and len(number.stderr.strip().splitlines()) == 1, number.stderr
    assert "error: the request cannot be run: Unsupported object type float " + show in number.stderr, number.stderr
    # An export whose variables were cut short (a partial copy) was such a request too.
    damaged = tmp_path / "damaged"
    shutil.copytree(tmp_path / "tiny" / "1", damaged)
    (data,) = (damaged / "variables").glob("variables.data-*")
    os.truncate(data, 100)
    load = _cli(*[str(damaged) if arg == str(tmp_path / "tiny" / "1") else arg for arg in run])
    assert load.returncode == 2 and len(load.stderr.strip().splitlines()) == 1, load.stderr
    assert f"error: the SavedModel in {damaged} cannot be loaded: " in load.stderr, load.stderr
    assert load.stderr.strip().endswith("(a damaged or partly copied export: export it again)."), load.stderr


def test_a_bad_row_is_refused_before_tensorflow_loads_with_a_preset_directory_too(tiny_checkpoint, tmp_path):
    """A directory's config is read by the loader (TensorFlow): the data are read before it, so a bad row is
    refused as fast as with a preset's name; a length beyond the directory's positions is refused after them."""
    unlabelled = tmp_path / "unlabelled.csv"
    unlabelled.write_text("text,label\ngood,pos\nbad,\n")
    cases = [(["finetune", "--task", "classify", "--preset", tiny_checkpoint, "--train_file", str(unlabelled),
               "--output_dir", str(tmp_path / "e")], f"{unlabelled}, line 3: empty label")]
    code = ("import sys\nfrom keras_bert_zoo.cli.main import main\n"
            f"for argv in {[argv for argv, _ in cases]!r}:\n"
            "    print(main(argv), file=sys.stderr)\n"
            "print('tensorflow' in sys.modules, file=sys.stderr)")
    errors = _python(code).stderr.strip().splitlines()
    assert errors[-1] == "False", errors
    assert errors[0].startswith("keras-bert-zoo finetune: error: ") and cases[0][1] in errors[0], errors
    assert errors[1] == "2" and not (tmp_path / "e").exists()



def test_evaluate_reads_a_glue_file_elsewhere_as_the_glue_task_finetune_read_by_its_folder(tmp_path, capsys):
    # finetune --train_file glue/MRPC/train.tsv (no flag: GLUE by the folder's name); evaluate --eval_file
    # mrpc_dev.tsv read the copy as a CSV of columns text / label and refused it.
    (tmp_path / "run" / "model").mkdir(parents=True)
    (tmp_path / "run" / "job.json").write_text(json.dumps({"command": "finetune", "args": {
        "train": str(tmp_path / "glue" / "MRPC" / "train.tsv"), "eval": None, "format": None, "glue_task": None}}))
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    dev = tmp_path / "mrpc_dev.tsv"
    dev.write_text(header + "1\t1\t2\tall work\tno play\n0\t3\t4\ta dull boy\tjack\n")
    args = build_parser().parse_args(["evaluate", "--model", str(tmp_path / "run"), "--eval_file", str(dev)])
    finetune_command._read_as_finetune_did(args, str(tmp_path / "run" / "model"))
    assert args.glue_task == "MRPC"
    assert f"--glue_task MRPC (from {tmp_path / 'run' / 'job.json'})" in capsys.readouterr().err
    assert finetune_command._read(str(dev), args).texts == [("all work", "no play"), ("a dull boy", "jack")]
    # An eval file in a GLUE task's folder is read by its own folder; a flag given is the user's.
    (tmp_path / "SST-2").mkdir()
    (tmp_path / "SST-2" / "dev.tsv").write_text("sentence\tlabel\nall work\t1\n")
    for argv in (["--eval_file", str(tmp_path / "SST-2" / "dev.tsv")], ["--eval_file", str(dev), "--format", "csv"]):
        args = build_parser().parse_args(["evaluate", "--model", str(tmp_path / "run"), *argv])
        finetune_command._read_as_finetune_did(args, str(tmp_path / "run" / "model"))
        assert args.glue_task is None


def test_unfinished_job_names_only_the_jobs_own_folders_and_the_fix_its_status_allows(tmp_path):
    # A preset kept inside an unfinished job's directory was refused by export as "inside the --output_dir"; a
    # finished job whose model/ was removed was told to rerun, which is refused over its finished results; an
    # unfinished pretrain was to be passed to evaluate once done, which refuses a pretrained model.
    job = tmp_path / "run"
    (job / "backup").mkdir(parents=True)
    (job / "my_preset").mkdir()
    (job / "job.json").write_text(json.dumps({"command": "pretrain", "status": "finished"}))
    assert finetune_command.unfinished_job(str(job / "my_preset")) is None
    finished = finetune_command.unfinished_job(str(job / "backup"), fine_tuned=False)
    assert "--overwrite_output_dir" in finished and "resume" not in finished
    (job / "job.json").write_text(json.dumps({"command": "pretrain", "status": "interrupted"}))
    assert "fine-tune its model/" in finetune_command.unfinished_job(str(job))
    assert "fine-tune" not in finetune_command.unfinished_job(str(job), fine_tuned=False)
    (job / "job.json").write_text(json.dumps({"command": "finetune"}))  # no status: said so, not "None"
    assert "(" + str(job / "job.json") + ": no status recorded): run the same" in \
        finetune_command.unfinished_job(str(job))


def test_evaluate_takes_the_glue_task_from_finetune_only_for_a_tsv_by_the_absolute_paths_it_read(tmp_path, capsys,
                                                                                                     monkeypatch):
    # A .csv / JSON-lines eval file of a model trained on glue/SST-2/train.tsv was read with --glue_task SST-2 and
    # refused ("no column 'sentence'"); a --train_file given relative to finetune's cwd was read from evaluate's.
    (tmp_path / "run" / "model").mkdir(parents=True)
    (tmp_path / "SST-2").mkdir()
    (tmp_path / "SST-2" / "x.tsv").write_text("sentence\tlabel\nall work\t1\n")
    (tmp_path / "run" / "job.json").write_text(json.dumps({
        "command": "finetune", "args": {"train": "train.tsv", "eval": None, "format": None, "glue_task": None},
        "fingerprint": {"--train_file": {"path": str(tmp_path / "glue" / "MRPC" / "train.tsv")}}}))
    (tmp_path / "e.jsonl").write_text('{"text": "all work", "label": "1"}\n')
    (tmp_path / "e.csv").write_text("text,label\nall work,1\n")
    (tmp_path / "mrpc_dev.tsv").write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tall\twork\n")
    monkeypatch.chdir(tmp_path / "SST-2")  # a relative "train.tsv" would be SST-2's here
    for name, task in (("e.jsonl", None), ("e.csv", None), ("mrpc_dev.tsv", "MRPC")):
        args = build_parser().parse_args(["evaluate", "--model", str(tmp_path / "run"), "--eval_file",
                                          str(tmp_path / name)])
        finetune_command._read_as_finetune_did(args, str(tmp_path / "run" / "model"))
        assert args.glue_task == task, name
