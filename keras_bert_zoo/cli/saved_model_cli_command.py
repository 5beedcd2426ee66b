"""`keras-bert-zoo saved-model-cli`: TensorFlow's saved_model_cli with the TF-Text ops loaded.

The exports tokenize inside the graph with TF-Text ops, which TensorFlow's own
`saved_model_cli` does not register, so its `run` (and the function listing of
`show --all`) fail on them. This runs the same tool after registering them,
quietly: TensorFlow's INFO logs ("Restoring parameters from ...") and notices
of its own deprecated calls are hidden unless `keras-bert-zoo --verbose
saved-model-cli ...`; the tool's warnings about your arguments stay.
"""

import logging
import os
import re
import sys

from keras_bert_zoo.cli.usage_error import UsageError


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "saved-model-cli",
        help="TensorFlow's saved_model_cli (show, run, ...) with TF-Text ops registered.",
        description="Arguments are passed to saved_model_cli, e.g. "
                    "`keras-bert-zoo saved-model-cli run --dir EXPORT/1 --tag_set serve "
                    "--signature_def classify --input_exprs 'text=[\"Great film.\"]'`. "
                    "TensorFlow's logs show with `keras-bert-zoo --verbose saved-model-cli ...`.",
        add_help=False,
    )
    parser.add_argument("arguments", nargs="*")
    parser.set_defaults(run=run)


class _QuietLogs(logging.Filter):
    """TensorFlow's logs a user of the tool needs: its warnings (about the arguments) and errors."""

    def filter(self, record):
        return record.levelno >= logging.WARNING and "is deprecated and will be removed" not in record.getMessage()


def _flag_values(arguments, flag):
    """The values given to the tool's `--flag` (absl also reads `-flag` and `--flag=value`)."""
    for token, following in zip(arguments, arguments[1:] + [None]):
        name, equals, value = token.partition("=")
        if name in (f"--{flag}", f"-{flag}"):
            yield value if equals else following


def _check_dir(arguments):
    """Refuse a model directory as --dir (`load_export` takes one; TensorFlow's tool said only "SavedModel file
    does not exist"), naming a version directory to pass instead."""
    from keras_bert_zoo.export.export_for_serving import version_numbers

    for directory in _flag_values(arguments, "dir"):
        if not directory or os.path.exists(os.path.join(directory, "saved_model.pb")):
            continue
        versions = sorted(version_numbers(directory))
        if versions:
            raise UsageError(f"--dir {directory} is a model directory, holding versions "
                             f"{', '.join(map(str, versions))}: pass one of them, e.g. --dir "
                             f"{os.path.join(directory, str(versions[-1]))}.")


def run(args):
    _check_dir(args.arguments)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops the exported graphs use)
    from tensorflow.python.tools import saved_model_cli

    commands = saved_model_cli.command_required_flags
    if args.arguments and not args.arguments[0].startswith("-") and args.arguments[0] not in commands:
        # saved_model_cli itself fails with a KeyError here.
        raise UsageError(f"unknown saved_model_cli command {args.arguments[0]!r}; choose from {', '.join(commands)}.")
    logger = tf.get_logger()
    if logger.handlers:
        # TensorFlow's own handler prints each line; absl's, on the root logger, would print it again.
        logger.propagate = False
    if not args.verbose:
        logger.addFilter(_QuietLogs())
    sys.argv = ["saved_model_cli", *args.arguments]
    if {"-h", "--help"} & set(args.arguments):
        # The tool's absl start-up would print the __main__ module's docstring (this command line's) as help.
        saved_model_cli.create_parser().parse_args(args.arguments)
    try:
        return saved_model_cli.main()
    except RuntimeError as e:  # how the tool reports a malformed --inputs / --input_exprs
        raise ValueError(str(e)) from e
    except tf.errors.OpError as e:
        if _while_loading(e):  # damaged variables (a truncated copy): not the request's fault
            directory = next(_flag_values(args.arguments, "dir"), "DIR")
            raise ValueError(f"the SavedModel in {directory} cannot be loaded: {_what_failed(e.message)} (a damaged "
                             "or partly copied export: export it again).") from e
        # A request the session cannot feed (an input left out, a number for a string): the tool let the
        # session's error through, a page of graph trace ending in exit status 1.
        raise ValueError(_unfed(e.message, args.arguments)) from e


def _while_loading(error):
    """Whether TensorFlow's `error` came from loading the SavedModel (restoring its variables), not running it."""
    import traceback

    return any(frame.filename.endswith(os.path.join("saved_model", "loader_impl.py"))
               for frame in traceback.extract_tb(error.__traceback__))


def _what_failed(message):
    """The lines of TensorFlow's error `message` that say what failed, joined: without its wrapping ("Graph
    execution error", the node named twice) and the graph's stack trace after them."""
    lines = []
    for line in message.splitlines():
        if line.startswith("Original stack trace"):
            break
        if line.strip() and not line.startswith(("Graph execution error", "Detected at node", "Node:")) and \
                not line.strip().startswith("[["):
            lines.append(line.strip())
    return " ".join(lines) or message.strip()


def _unfed(message, arguments):
    """One line for TensorFlow's error `message` on the request of `arguments` (the tool's)."""
    show = f"keras-bert-zoo saved-model-cli show --dir {next(_flag_values(arguments, 'dir'), 'DIR')} --all"
    missing = re.search(r"You must feed a value for placeholder tensor '([^']+)'", message)
    if missing:
        signature = next(_flag_values(arguments, "signature_def"), None) or "serving_default"
        placeholder = missing.group(1)
        name = placeholder[len(signature) + 1:] if placeholder.startswith(signature + "_") else placeholder
        return (f"the signature {signature}'s input {name!r} is not given: give every input of the signature in "
                f"--inputs / --input_exprs / --input_examples ({show} lists them).")
    return f"the request cannot be run: {_what_failed(message)} ({show} lists each input's dtype and shape)."
