"""`keras-bert-zoo encode`: texts to sentence vectors."""

import json
import os
import sys

from keras_bert_zoo.cli.flag_types import add_flag
from keras_bert_zoo.cli.flag_types import file_or_stdin
from keras_bert_zoo.cli.flag_types import output_file
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.library_defaults import default_help
from keras_bert_zoo.cli.library_defaults import given
from keras_bert_zoo.cli.library_defaults import library_constant
from keras_bert_zoo.cli.library_defaults import library_default
from keras_bert_zoo.cli.text_lines import read_text_lines
from keras_bert_zoo.cli.usage_error import UsageError


ENCODE = ("tasks.sentence_embedding", "encode_texts")
ENCODE_LENGTH = ("tasks.sentence_embedding", "DEFAULT_SEQUENCE_LENGTH")


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "encode",
        help="Encode texts into sentence vectors.",
        description="Encode texts (arguments, or one per line from --input_file) into vectors.",
    )
    parser.add_argument("texts", nargs="*", help="Texts to encode (or use --input_file).")
    add_flag(parser, "--input_file", "--input", dest="input", type=file_or_stdin,
             help="A text file with one text per line ('-' for stdin).")
    add_flag(parser, "--output_file", "--output", dest="output", type=output_file,
             help="Write .npy (float32 matrix) or .jsonl; default: JSON lines on stdout.")
    parser.add_argument("--preset", help=default_help("Preset name, directory, hf:// handle or URL.", *ENCODE, "preset"))
    parser.add_argument("--pooling", choices=("mean", "cls", "pooled"),
                        help=default_help("mean: average of token vectors (sentence-transformers); cls: [CLS] "
                                          "vector; pooled: BERT's tanh pooler output.", *ENCODE, "pooling"))
    parser.add_argument("--max_seq_length", type=positive_int,
                        help=f"Packed length, at most the model's positions (default: "
                             f"{library_constant(*ENCODE_LENGTH)}, cut to the positions).")
    parser.add_argument("--batch_size", type=positive_int, help=default_help("", *ENCODE, "batch_size"))
    parser.add_argument("--normalize", action="store_true", default=None, help="L2-normalise the vectors.")
    parser.set_defaults(check=check, run=run)


def _read_texts(args):
    empty = [i + 1 for i, t in enumerate(args.texts) if not t.strip()]
    if empty:
        raise ValueError(f"Text {empty[0]} is empty ({len(empty)} empty texts in all).")
    texts = list(args.texts) + (read_text_lines(args.input, "--input_file") if args.input else [])
    if not texts:
        raise UsageError("No texts to encode: pass texts as arguments, a file with --input_file, or --input_file - "
                         "to read them from standard input (a pipe: ... | keras-bert-zoo encode --input_file -).")
    return texts


def check(args):
    """Read the texts (kept for `run`: stdin reads once) and check the length against the preset, before
    TensorFlow loads."""
    from keras_bert_zoo.cli.preset_limits import check_sequence_length

    # Any other name got JSON lines in silence: vectors.npz or vectors.NPY held text np.load cannot read.
    if args.output and _output_format(args.output) not in (".npy", ".jsonl"):
        raise UsageError(f"--output_file {args.output}: encode writes a .npy file (a float32 matrix) or a .jsonl file "
                         "(JSON lines): end the name with one of them.")
    args.text_list = _read_texts(args)
    # Without the flag, encode_texts packs its default cut to the preset's positions, as checked here.
    check_sequence_length(args.max_seq_length, library_constant(*ENCODE_LENGTH), _preset(args))


def _output_format(path):
    return os.path.splitext(path)[1].lower()


def _preset(args):
    return args.preset or library_default(*ENCODE, "preset")


def run(args):
    import numpy as np

    from keras_bert_zoo.tasks.sentence_embedding import encode_texts

    texts = args.text_list
    vectors = encode_texts(texts, preset=_preset(args), progress=True,
                           **given(args, "pooling", "batch_size", "normalize", max_seq_length="sequence_length"))
    if args.output and _output_format(args.output) == ".npy":
        from keras_bert_zoo.utils.atomic import atomic_file

        with atomic_file(args.output) as f:
            np.save(f, vectors)
        print(f"Wrote {vectors.shape[0]} vectors of size {vectors.shape[1]} to {args.output}", file=sys.stderr)
        return
    lines = (json.dumps({"text": t, "embedding": [round(float(x), 6) for x in v]}) for t, v in zip(texts, vectors))
    if args.output:
        from keras_bert_zoo.utils.atomic import atomic_file

        with atomic_file(args.output, "w") as f:
            f.writelines(line + "\n" for line in lines)
        print(f"Wrote {len(texts)} vectors to {os.path.abspath(args.output)}", file=sys.stderr)
    else:
        for line in lines:
            print(line)
