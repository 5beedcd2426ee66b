"""`keras-bert-zoo extract-features`: extract_features.py's JSON lines."""

import sys

from keras_bert_zoo.cli.flag_types import file_or_stdin
from keras_bert_zoo.cli.flag_types import int_list
from keras_bert_zoo.cli.flag_types import output_file
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.library_defaults import default_help
from keras_bert_zoo.cli.library_defaults import given
from keras_bert_zoo.cli.library_defaults import library_constant
from keras_bert_zoo.cli.text_lines import read_text_lines


EXTRACT = ("tasks.feature_extraction", "extract_features")
EXTRACT_LENGTH = ("tasks.feature_extraction", "DEFAULT_SEQUENCE_LENGTH")
EXTRACT_LAYERS = ("tasks.feature_extraction", "DEFAULT_LAYERS")


def add_parser(subparsers):
    from keras_bert_zoo import DEFAULT_PRESET

    parser = subparsers.add_parser(
        "extract-features",
        help="Write per-token vectors from chosen layers (google-research/bert's extract_features.py format).",
    )
    parser.add_argument("--input_file", required=True, type=file_or_stdin,
                        help="One text per line ('-': standard input); 'text_a ||| text_b' for pairs.")
    parser.add_argument("--output_file", required=True, type=output_file, help="JSON lines output.")
    parser.add_argument("--preset", default=DEFAULT_PRESET, help="Preset name, directory, hf:// handle or URL.")
    parser.add_argument("--layers", type=int_list,
                        help=f"Comma-separated encoder layers, -1 the last; write --layers=-1,-2 (default: "
                             f"{','.join(map(str, library_constant(*EXTRACT_LAYERS)))}, those the model has).")
    parser.add_argument("--max_seq_length", type=positive_int,
                        help=f"Packed length, at most the model's positions (default: "
                             f"{library_constant(*EXTRACT_LENGTH)}, cut to the positions).")
    parser.add_argument("--batch_size", type=positive_int, help=default_help("", *EXTRACT, "batch_size"))
    parser.set_defaults(check=check, run=run)


def check(args):
    """The flags against the preset and the input's lines (kept for `run`), before TensorFlow loads."""
    from keras_bert_zoo.cli.preset_limits import check_layers
    from keras_bert_zoo.cli.preset_limits import check_sequence_length

    # Without the flag, extract_features packs its default cut to the preset's positions, as checked here.
    check_sequence_length(args.max_seq_length, library_constant(*EXTRACT_LENGTH), args.preset)
    # Without the flag, extract_features takes those of its default layers the model has: nothing to check.
    if args.layers is not None:
        check_layers(args.layers, args.preset)
    args.lines = [line.strip() for line in read_text_lines(args.input_file, "--input_file")]


def _text_or_pair(line):
    """extract_features.py's reading of a line: a pair where " ||| " (spaces included) parts it, at its last."""
    text_a, separator, text_b = line.rpartition(" ||| ")
    return (text_a, text_b) if separator else line


def run(args):
    from keras_bert_zoo.tasks.feature_extraction import extract_features
    from keras_bert_zoo.tasks.feature_extraction import write_features

    lines = args.lines
    texts = [_text_or_pair(line) for line in lines]
    records = extract_features(texts, preset=args.preset, progress=True,
                               **given(args, "layers", "batch_size", max_seq_length="sequence_length"))
    write_features(records, args.output_file)
    print(f"Wrote features of {len(texts)} texts to {args.output_file}", file=sys.stderr)
