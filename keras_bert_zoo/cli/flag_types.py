"""argparse `type=` functions: a bad flag value is a one-line usage error (exit 2) before anything loads.

argparse names the flag itself ("argument --epochs/--num_train_epochs: ..."),
so each message only says what the value must be.
"""

import argparse
import glob
import math
import os

from keras_bert_zoo.utils.atomic import check_file_can_be_written
from keras_bert_zoo.utils.path_arguments import remote_output_error


def _number(text, kind, what):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}; got '{text}'") from None


def positive_int(text):
    """An integer >= 1 (epochs, batch sizes, lengths, counts)."""
    value = _number(text, int, "a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {value}")
    return value


def whole_epochs(text):
    """A positive whole number of epochs, also as google-research/bert's float flags write it (`3.0`): Keras trains
    whole epochs."""
    value = _number(text, float, "a whole number of epochs (1, 2, 3.0 ...)")
    if not math.isfinite(value) or value != int(value) or value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of epochs (1, 2, 3.0 ...); got {text}")
    return int(value)


def non_negative_int(text):
    """An integer >= 0 (warm-up steps, seeds)."""
    value = _number(text, int, "an integer >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0; got {value}")
    return value


def positive_float(text):
    """A finite number > 0 (learning rates)."""
    value = _number(text, float, "a positive number")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number; got {text}")
    return value


def finite_float(text):
    """Any finite number (thresholds)."""
    value = _number(text, float, "a number")
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number; got {text}")
    return value


def fraction(text):
    """A number strictly between 0 and 1 (held-out or masking fractions)."""
    value = _number(text, float, "a number between 0 and 1")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive); got {text}")
    return value


def held_out_fraction(text):
    """A fraction from 0 (none held out) to below 1."""
    value = _number(text, float, "a fraction from 0 to below 1")
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction from 0 (none held out) to below 1; got {text}")
    return value


def probability(text):
    """A number from 0 to 1 inclusive (chances that may be never or always)."""
    value = _number(text, float, "a probability from 0 to 1")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a probability from 0 to 1; got {text}")
    return value


def existing_file(text):
    """A path to a regular file that exists: not standard input or a pipe (`<(...)`), which were refused as
    "no such file"."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"'{text}' is a directory; pass a file")
    if text == "-" and not os.path.exists(text):
        raise argparse.ArgumentTypeError("'-' (standard input) is not read here; pass a file path")
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"no such file: '{text}'")
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"'{text}' is not a regular file (a pipe or device); pass a file path")
    return text


def file_or_stdin(text):
    """A file read once, as a stream: an existing file, a pipe (`<(...)`), or '-' for standard input."""
    if text == "-" or (os.path.exists(text) and not os.path.isdir(text)):
        return text
    return existing_file(text)  # names what is wrong


def existing_directory(text):
    """A path to a directory that exists (a model or preset directory)."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"no such directory: '{text}'")
    return text


def file_patterns(text):
    """Comma-separated files or globs, each matching at least one file.

    Remote patterns (gs://...) are left for TensorFlow's file system to read.
    """
    for pattern in text.split(","):
        if "://" in pattern:
            continue
        if not any(os.path.isfile(path) for path in glob.glob(pattern)):
            if os.path.isdir(pattern):  # it exists: "no file matches" sent users looking for a typo
                raise argparse.ArgumentTypeError(f"'{pattern}' is a directory; pass its files: "
                                                 f"'{os.path.join(pattern, '*')}'")
            raise argparse.ArgumentTypeError(f"no file matches '{pattern}'")
    return text


def output_directory(text):
    """A directory to write into: absent or a directory, not a file, where files can be made (checked now: a path
    under a file, or on a file system that takes none, failed as the job claimed it, naming no flag)."""
    if not text.strip():  # it was claimed as it stood, failing with "Cannot write in  (No such file or directory)"
        raise argparse.ArgumentTypeError("empty: pass a directory (it gets model/, metrics.json ...)")
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"'{text}' is a file; pass a directory (it gets model/, metrics.json ...)")
    remote = remote_output_error(text)
    if remote:
        raise argparse.ArgumentTypeError(remote)
    try:
        check_file_can_be_written(os.path.join(text, "job.json"))
    except OSError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def local_path(text):
    """A path to write under, not a URL (see `remote_output_error`); what it may hold is checked by its command."""
    remote = remote_output_error(text)
    if remote:
        raise argparse.ArgumentTypeError(remote)
    return text


def output_file(text):
    """A file to write: absent or a file, not a directory, where it can be written (checked now: a path under a
    file, or an unwritable directory, failed only when the work was done)."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"'{text}' is a directory; pass a file name")
    remote = remote_output_error(text)
    if remote:
        raise argparse.ArgumentTypeError(remote)
    try:
        check_file_can_be_written(text)
    except OSError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def output_files(text):
    """Comma-separated files to write (shards), each an `output_file`."""
    for path in text.split(","):
        output_file(path)
    return text


def int_list(text):
    """Comma-separated integers, e.g. `-1,-2`."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated integers such as -1,-2; got '{text}'") from None


def add_flag(parser, flag, *old_spellings, **kwargs):
    """`parser.add_argument(flag, ...)` that also reads the flag's earlier names (`--train`, `--output`, `--epochs`).

    The old spellings are option strings of the same argument, so `required=True` is met by any of them;
    --help, the usage line and argparse's messages show only `flag`.
    """
    action = parser.add_argument(flag, *old_spellings, **kwargs)
    action.option_strings = [flag]  # the parser still maps the old spellings to it
    return action


_TRUE, _FALSE = ("true", "t", "1", "yes", "y"), ("false", "f", "0", "no", "n")


def boolean(text):
    """`true` / `false` (absl's spellings: also 1/0, yes/no, t/f; any case)."""
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"must be true or false; got '{text}'")


def add_boolean_flag(parser, flag, help):
    """A boolean flag as google-research/bert's scripts (absl flags) take it: `--flag`, `--flag=true|false`,
    `--noflag`; `--no-flag` too, argparse's spelling. Not given, it is None: the library's default applies."""
    name = flag.removeprefix("--")
    parser.add_argument(flag, nargs="?", const=True, type=boolean, metavar="true|false", help=help)
    parser.add_argument(f"--no{name}", f"--no-{name}", f"--no_{name}", dest=name, action="store_false", default=None,
                        help=argparse.SUPPRESS)
