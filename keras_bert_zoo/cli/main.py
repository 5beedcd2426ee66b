"""The `keras-bert-zoo` command line.

Errors a user can fix (bad flags, files, presets, occupied output
directories) are printed as one line naming the subcommand, with exit status
2; those of the command line (argparse's, and a command's `UsageError`) end
with where its flags are listed. Warnings are one line under the command's
name too. Ctrl-C exits with 130. `--verbose` shows the traceback instead,
Python's own warning format, and TensorFlow's start-up logs.

Parsing imports nothing heavy: TensorFlow loads only once a command runs, so
`--help` answers at once. A command's `check` (where it has one) runs before
that: a bad flag, input file or preset name is refused in a second, not after
TensorFlow's start-up. `run` comes only after it and may use what it read
(the texts of stdin, read once).
"""

import argparse
import contextlib
import difflib
import logging
import os
import re
import signal
import sys
import threading
import traceback
import warnings

from keras_bert_zoo import load_tensorflow
from keras_bert_zoo.cli import create_pretraining_data_command
from keras_bert_zoo.cli import encode_command
from keras_bert_zoo.cli import export_command
from keras_bert_zoo.cli import extract_features_command
from keras_bert_zoo.cli import finetune_command
from keras_bert_zoo.cli import presets_command
from keras_bert_zoo.cli import pretrain_command
from keras_bert_zoo.cli import report_command
from keras_bert_zoo.cli import saved_model_cli_command
from keras_bert_zoo.cli.usage_error import UsageError
from keras_bert_zoo.cli.usage_error import usage_line
from keras_bert_zoo.presets.errors import presets_named_by

COMMANDS = (presets_command, encode_command, extract_features_command, finetune_command, report_command,
            export_command, create_pretraining_data_command, pretrain_command, saved_model_cli_command)
# The flag each command takes a preset or model directory with, which preset errors advise (not from_preset()).
PRESET_FLAGS = {"export": "--model", "evaluate": "--model", "predict": "--model"}
VERBOSE_HELP = "Show the full traceback of an error instead of one line, and TensorFlow's start-up logs."
DESCRIPTION = (
    "BERT, BioBERT, SciBERT and ClinicalBERT for Keras 3: presets, encoding, fine-tuning, pretraining, export. "
    "Flags are google-research/bert's snake_case names (--input_file, --output_file, --max_seq_length ...); "
    "each may also be spelled with hyphens (--max-seq-length)."
)


class HelpFormatter(argparse.HelpFormatter):
    """Shows each flag's default (argparse's own defaults; library defaults are in the help text)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "(default" in text or "%(default)" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        if not action.option_strings and action.nargs in ("*", "?"):
            return text
        return f"{text} (default: %(default)s)".lstrip()


def _version():
    from keras_bert_zoo.version import __version__

    return __version__


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, usage_line(self.prog, message) + "\n")

    def choices_of(self, command):
        """The subcommand's parser."""
        action = next(a for a in self._actions if isinstance(a, argparse._SubParsersAction))
        return action.choices[command]


def build_parser():
    parser = ArgumentParser(prog="keras-bert-zoo", description=DESCRIPTION, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    for name, subparser in subparsers.choices.items():
        subparser.formatter_class = HelpFormatter
        for action in subparser._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                if action.metavar is None and action.nargs != 0 and action.choices is None:
                    action.metavar = action.option_strings[0].lstrip("-").upper()  # --train_file TRAIN_FILE
                if action.help is None and action.default not in (None, False, argparse.SUPPRESS):
                    action.help = "(default: %(default)s)"
        if subparser.description is None:
            subparser.description = next(a.help for a in subparsers._choices_actions if a.dest == name)
        if name != "saved-model-cli":  # its arguments all belong to TensorFlow's tool
            # SUPPRESS: `keras-bert-zoo --verbose CMD` is not undone by the subcommand's default.
            subparser.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
    return parser


def _option_strings(parser):
    strings = set(parser._option_string_actions)  # old spellings too (`add_flag`)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                strings.update(_option_strings(subparser))
    return strings


def snake_case_flags(argv, parser):
    """`--max-seq-length` -> `--max_seq_length`: the hyphen spelling of every flag is accepted."""
    known = _option_strings(parser)
    out = []
    for i, token in enumerate(argv):
        if token == "--":
            return out + argv[i:]
        name, sep, value = token.partition("=")
        if name.startswith("--") and name not in known:
            snake = "--" + name[2:].replace("-", "_")
            if snake in known:
                token = snake + sep + value
        out.append(token)
    return out


# argparse reads "-1,-2" as a flag, so `--layers -1,-2` failed with "expected one argument".
NEGATIVE_LIST = re.compile(r"-\d+(,-?\d+)+")


def attach_negative_lists(argv):
    """`--layers -1,-2` -> `--layers=-1,-2`."""
    out = []
    for i, token in enumerate(argv):
        if token == "--":
            return out + argv[i:]
        if out and NEGATIVE_LIST.fullmatch(token) and out[-1].startswith("--") and "=" not in out[-1]:
            out[-1] += "=" + token
        else:
            out.append(token)
    return out


# google-research/bert's flags that have another name or form here (its scripts' users type them first).
_CHECKPOINT_AS_PRESET = ("pass the checkpoint's directory as --preset (bert_config.json, vocab.txt and the "
                         "checkpoint are read from there)")
_TRAINING = ("finetune", "pretrain")
# google-research/bert's flags that have another name or form here (its scripts' users type them first): the
# commands where the hint holds, and the hint.
GOOGLE_FLAGS = {
    "--bert_config_file": (("finetune", "pretrain", "extract-features", "encode"), _CHECKPOINT_AS_PRESET),
    "--init_checkpoint": (("finetune", "pretrain", "extract-features", "encode"), _CHECKPOINT_AS_PRESET),
    "--do_train": (_TRAINING, "the command trains; leave it out"),
    "--do_eval": (("finetune",), "finetune scores --eval_file after training (evaluate scores a model); leave it "
                                 "out"),
    "--do_predict": (_TRAINING, "predict is a command of its own (keras-bert-zoo predict --model OUTPUT_DIR)"),
    "--task_name": (("finetune", "evaluate"), "pass --glue_task"),
    "--data_dir": (("finetune",), "pass --train_file (and --eval_file)"),
    "--use_tpu": (_TRAINING, "pass --strategy tpu"),
    "--tpu_name": (_TRAINING, "pass --tpu"),
    "--train_file": (("pretrain", "create-pretraining-data"), "pass --input_file"),
}


def _google_flag_error(argv, parser):
    """The error of the first google-research/bert flag in `argv` that the command does not take, naming ours; None
    where there is none (argparse's own errors, a missing --preset first, said nothing of it)."""
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    try:
        subparser = parser.choices_of(command)
    except KeyError:
        return None
    taken = _option_strings(subparser)
    for arg in argv[:argv.index("--")] if "--" in argv else argv:
        name = arg.partition("=")[0]
        commands, hint = GOOGLE_FLAGS.get(name, ((), None))
        if command in commands and name not in taken:
            return subparser, f"{name} is google-research/bert's flag: {hint}"
    return None


def parse_arguments(argv, parser):
    """`argv` parsed and checked as `main` runs it (a usage error exits with status 2); nothing runs.

    The parser is passed in so that a caller (the README's test) can parse
    with one whose path checks see placeholder files.
    """
    argv = attach_negative_lists(snake_case_flags(argv, parser))
    google = _google_flag_error(argv, parser)
    if google:
        google[0].error(google[1] + ".")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse names them under the top-level command, whose --help lists commands, not these flags.
        command = parser.choices_of(args.command)
        flags = _option_strings(command) - {"-h", "--help"}
        close = difflib.get_close_matches(unknown[0].partition("=")[0], flags, n=1, cutoff=0.75)
        command.error(f"unrecognized arguments: {' '.join(unknown)}" + (f"; did you mean {close[0]}?" if close else ""))
    args.argv = argv
    return args


def _one_line(error):
    text = " ".join(str(error).split())
    return text or type(error).__name__


# A truncation's fix as a command's flags say it (the library's names the Python argument, sequence_length).
_TRUNCATION_FIXES = {
    **dict.fromkeys(("encode", "extract-features", "finetune"), "Raise --max_seq_length (up to the model's "
                                                                "positions)."),
    **dict.fromkeys(("evaluate", "predict"), "The model packs the length it was fine-tuned with: to read more, "
                                             "fine-tune it with a larger --max_seq_length (up to its positions)."),
}


def _warning_line(command):
    """Warnings as one line under the command's name, as its errors (not Python's file:line: UserWarning)."""

    def show(message, category, filename, lineno, file=None, line=None):
        from keras_bert_zoo.preprocessing.truncation_warning import TruncationWarning
        from keras_bert_zoo.utils.progress_bar import write_line

        if isinstance(message, TruncationWarning) and command in _TRUNCATION_FIXES:
            message = message.with_fix(_TRUNCATION_FIXES[command])
        write_line(f"keras-bert-zoo {command}: warning: {_one_line(message)}", file=file)

    return show


@contextlib.contextmanager
def _library_log_lines(command):
    """The library's INFO log (the strategy a run trains under) as lines under the command's name on stderr."""
    from keras_bert_zoo.utils.progress_bar import write_line

    class Lines(logging.Handler):
        def emit(self, record):
            write_line(f"keras-bert-zoo {command}: {record.getMessage()}")

    logger, handler = logging.getLogger("keras_bert_zoo"), Lines()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _show_tensorflow_logs(verbose):
    """TensorFlow's C++ logs: quiet unless --verbose (set before TensorFlow loads)."""
    if verbose:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt: whatever records an interruption (a job's
    job.json, its backup left in place) records this one too."""


def _raise_terminated(signum, frame):
    # Once: a second SIGTERM while the job records how it ended would cut that record short (SIGKILL still ends
    # the process at once).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM raises `Terminated` while the command runs; the handler before it is put back after.

    Only where SIGTERM would kill the process outright (its default): a caller of `main` in-process that
    handles or ignores the signal keeps its own way, and signals can be handled in the main thread only."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv=None):
    with _sigterm_as_interrupt():
        return _main(argv)


def _main(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    verbose = argv[:1] == ["--verbose"]
    if argv[verbose:verbose + 1] == ["saved-model-cli"]:
        # Everything after the command belongs to saved_model_cli, flags included.
        args = argparse.Namespace(command="saved-model-cli", verbose=verbose, run=saved_model_cli_command.run,
                                  arguments=argv[verbose + 1:])
    else:
        args = parse_arguments(argv, build_parser())
    try:
        _show_tensorflow_logs(args.verbose)
        with presets_named_by(PRESET_FLAGS.get(args.command, "--preset")), warnings.catch_warnings(), \
                _library_log_lines(args.command):
            if not args.verbose:
                warnings.showwarning = _warning_line(args.command)
            if getattr(args, "check", None) is not None:
                args.check(args)
            load_tensorflow()
            return args.run(args) or 0
    except Terminated:
        if args.verbose:
            traceback.print_exc()
        print(f"keras-bert-zoo {args.command}: interrupted by SIGTERM{_resume_hint(args)}", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        if args.verbose:
            raise
        print(f"keras-bert-zoo {args.command}: interrupted{_resume_hint(args)}", file=sys.stderr)
        return 130
    # PresetError and the other errors of bad input are ValueErrors; OSError covers paths.
    except (ValueError, TypeError, OSError, ImportError) as e:
        if args.verbose:
            raise
        prog = f"keras-bert-zoo {args.command}"
        line = usage_line(prog, _one_line(e)) if isinstance(e, UsageError) else f"{prog}: error: {_one_line(e)}"
        print(line, file=sys.stderr)
        return 2
    except Exception as e:
        if args.verbose or not _remote_file_error(e):
            raise
        # A bucket unreachable, or its credentials or name wrong: TensorFlow's error, without its stack.
        message = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", e.message) + f" ({type(e).__name__})"
        print(f"keras-bert-zoo {args.command}: error: {_one_line(message)}", file=sys.stderr)
        return 2


def _resume_hint(args):
    """How an interrupted job goes on, where it had claimed its --output_dir: the same command resumes it."""
    from keras_bert_zoo.utils.job_record import JOB_FILE
    from keras_bert_zoo.utils.job_record import read_job

    output = getattr(args, "output", None)
    if args.command not in ("finetune", "pretrain") or not output or not os.path.isfile(os.path.join(output, JOB_FILE)):
        return ""
    if (read_job(output) or {}).get("status") != "interrupted":
        return ""
    again = "the same command again" if not getattr(args, "overwrite_output_dir", False) else \
        "the same command again without --overwrite_output_dir (which would clear the backup)"
    return (f": run {again} to resume it from its last backup in {os.path.join(output, 'backup')} "
            "(one stopped before its first backup starts over)")


def _remote_file_error(error):
    """Whether `error` is TensorFlow's failure to reach a file named by a URL (gs://...)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(error, tf.errors.OpError) and "://" in str(error)


if __name__ == "__main__":
    sys.exit(main())
