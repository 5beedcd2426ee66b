"""The `keras-bert-zoo` command line.

Errors a user can fix (bad flags, files, presets, occupied output
directories) are printed as one line naming the subcommand, with exit status
2; Ctrl-C exits with 130. `--verbose` shows the traceback instead.
"""

import argparse
import sys

from keras_bert_zoo.cli import create_pretraining_data_command
from keras_bert_zoo.cli import encode_command
from keras_bert_zoo.cli import export_command
from keras_bert_zoo.cli import extract_features_command
from keras_bert_zoo.cli import finetune_command
from keras_bert_zoo.cli import presets_command
from keras_bert_zoo.cli import pretrain_command
from keras_bert_zoo.cli import saved_model_cli_command

COMMANDS = (presets_command, encode_command, extract_features_command, finetune_command, export_command,
            create_pretraining_data_command, pretrain_command, saved_model_cli_command)
VERBOSE_HELP = "Show the full traceback of an error instead of one line."


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-bert-zoo",
        description="BERT, BioBERT, SciBERT and ClinicalBERT for Keras 3: presets, encoding, fine-tuning, export.",
    )
    parser.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    for name, subparser in subparsers.choices.items():
        if name != "saved-model-cli":  # its arguments all belong to TensorFlow's tool
            # SUPPRESS: `keras-bert-zoo --verbose CMD` is not undone by the subcommand's default.
            subparser.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
    return parser


def _one_line(error):
    text = " ".join(str(error).split())
    return text or type(error).__name__


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["saved-model-cli"]:
        # Everything after the command belongs to saved_model_cli, flags included.
        return saved_model_cli_command.run(argparse.Namespace(arguments=argv[1:])) or 0
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return args.run(args) or 0
    except KeyboardInterrupt:
        if args.verbose:
            raise
        print(f"keras-bert-zoo {args.command}: interrupted", file=sys.stderr)
        return 130
    # PresetError and the other errors of bad input are ValueErrors; OSError covers paths.
    except (ValueError, TypeError, OSError) as e:
        if args.verbose:
            raise
        print(f"keras-bert-zoo {args.command}: error: {_one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
