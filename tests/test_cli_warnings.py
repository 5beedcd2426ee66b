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
    assert not PYTHON_WARNING.search(err), err


def test_verbose_leaves_warnings_to_python(tiny_checkpoint, capsys, recwarn):
    code, err = _encode(capsys, tiny_checkpoint, "--verbose")
    assert code == 0 and "keras-bert-zoo encode: warning" not in err, err
    assert any(issubclass(w.category, UserWarning) and "inputs are longer than sequence_length=8" in str(w.message)
               for w in recwarn)
