"""The command line's warnings are one line under the command's name, like its errors."""

import re

from keras_bert_zoo.cli.main import main

PYTHON_WARNING = re.compile(r"\.py:\d+: \w*Warning")  # Python's own format: path.py:123: UserWarning: ...


def _encode(capsys, tiny_checkpoint, *flags):
    code = main([*flags, "encode", "one two three four five six seven eight nine ten", "--preset", tiny_checkpoint,
                 "--max_seq_length", "8"])
    return code, capsys.readouterr().err


def test_a_warning_is_one_line_naming_the_command(tiny_checkpoint, capsys):
    code, err = _encode(capsys, tiny_checkpoint)
    # Ten words packed into 8 positions ([CLS] + 6 pieces + [SEP]): the preprocessor warns of the truncation.
    lines = [line for line in err.splitlines() if "warning" in line.lower()]
    assert code == 0 and len(lines) == 1, err
    assert lines[0].startswith("keras-bert-zoo encode: warning: 1 of 1 inputs are longer than sequence_length=8")
    # The fix names the command's flag: there is no sequence_length on the command line.
    assert lines[0].endswith("were truncated. Raise --max_seq_length (up to the model's positions)."), lines[0]
    assert not PYTHON_WARNING.search(err), err


def test_a_truncation_on_a_fine_tuned_model_names_the_flag_that_sets_its_length(capsys):
    import sys

    from keras_bert_zoo.cli.main import _warning_line
    from keras_bert_zoo.preprocessing.truncation_warning import TruncationWarning

    for command in ("predict", "evaluate"):  # no --max_seq_length: the length is the fine-tuned model's
        _warning_line(command)(TruncationWarning(2, 5, 128, 300), TruncationWarning, "x.py", 1, file=sys.stderr)
        assert capsys.readouterr().err == (
            f"keras-bert-zoo {command}: warning: 2 of 5 inputs are longer than sequence_length=128 word-pieces "
            "(longest: 300) and were truncated. The model packs the length it was fine-tuned with: to read more, "
            "fine-tune it with a larger --max_seq_length (up to its positions).\n")
    # Other warnings, and other commands' truncations with no length flag, pass as they are.
    _warning_line("export")(TruncationWarning(1, 1, 8, 9), TruncationWarning, "x.py", 1, file=sys.stderr)
    assert "Raise sequence_length (up to the model's positions)" in capsys.readouterr().err
    _warning_line("predict")(UserWarning("plain"), UserWarning, "x.py", 1, file=sys.stderr)
    assert capsys.readouterr().err == "keras-bert-zoo predict: warning: plain\n"
    assert issubclass(TruncationWarning, UserWarning)  # what filters and pytest.warns(UserWarning) catch


def test_a_truncation_warning_pickles_and_copies_whole():
    """A warning crossing processes (pickled) or copied was rebuilt from its message alone: a TypeError."""
    import copy
    import pickle

    from keras_bert_zoo.preprocessing.truncation_warning import TruncationWarning

    warning = TruncationWarning(1, 2, 8, 11).with_fix("Raise --max_seq_length.")
    for again in (pickle.loads(pickle.dumps(warning)), copy.copy(warning)):
        assert type(again) is TruncationWarning and str(again) == str(warning)
        assert (again.truncated, again.total, again.sequence_length, again.longest) == (1, 2, 8, 11)


def test_verbose_leaves_warnings_to_python(tiny_checkpoint, capsys, recwarn):
    code, err = _encode(capsys, tiny_checkpoint, "--verbose")
    assert code == 0 and "keras-bert-zoo encode: warning" not in err, err
    assert any(w.category.__name__ == "TruncationWarning" and "Raise sequence_length" in str(w.message)
               for w in recwarn)
