"""The `keras-bert-zoo` command line."""

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


def build_parser():
    parser = argparse.ArgumentParser(
        prog="keras-bert-zoo",
        description="BERT, BioBERT, SciBERT and ClinicalBERT for Keras 3: presets, encoding, fine-tuning, export.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["saved-model-cli"]:
        # Everything after the command belongs to saved_model_cli, flags included.
        return saved_model_cli_command.run(argparse.Namespace(arguments=argv[1:])) or 0
    args = build_parser().parse_args(argv)
    from keras_bert_zoo.presets.errors import PresetError

    try:
        return args.run(args) or 0
    except (PresetError, ValueError, FileNotFoundError) as e:
        print(f"keras-bert-zoo {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
