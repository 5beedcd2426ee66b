"""`keras-bert-zoo create-pretraining-data`: corpus text to masked-LM + NSP TFRecords.

Flag names and semantics are google-research/bert's `create_pretraining_data.py`.
"""

import glob
import os
import warnings

from keras_bert_zoo.cli.flag_types import add_boolean_flag
from keras_bert_zoo.cli.flag_types import existing_file
from keras_bert_zoo.cli.flag_types import file_patterns
from keras_bert_zoo.cli.flag_types import fraction
from keras_bert_zoo.cli.flag_types import non_negative_int
from keras_bert_zoo.cli.flag_types import output_files
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.flag_types import probability
from keras_bert_zoo.cli.library_defaults import default_help
from keras_bert_zoo.cli.usage_error import UsageError
from keras_bert_zoo.cli.library_defaults import given
from keras_bert_zoo.cli.library_defaults import library_default


INSTANCE_FLAGS = ("max_seq_length", "max_predictions_per_seq", "masked_lm_prob", "dupe_factor", "short_seq_prob",
                  "do_whole_word_mask", "random_seed")
DATA_CONFIG = ("preprocessing.pretraining_instances", "PretrainingDataConfig")


def add_instance_arguments(parser, note=""):
    """create_pretraining_data.py's flags for making instances (shared with `pretrain`).

    No argparse defaults: `PretrainingDataConfig` holds them, and `--help` shows its values.
    """
    def helped(text, name):
        return default_help(note + (text[0].lower() + text[1:] if note else text), *DATA_CONFIG, name)

    parser.add_argument("--max_seq_length", type=positive_int,
                        help=helped("Pieces per instance; without the flag, at most --preset's positions.",
                                    "max_seq_length"))
    parser.add_argument("--max_predictions_per_seq", type=positive_int,
                        help=helped("Masked pieces per instance at most; without the flag, about --max_seq_length x "
                                    "--masked_lm_prob where those are not 128 and 0.15.", "max_predictions_per_seq"))
    parser.add_argument("--masked_lm_prob", type=fraction, help=helped("Fraction of pieces masked.", "masked_lm_prob"))
    parser.add_argument("--dupe_factor", type=positive_int,
                        help=helped("Times each document is used, with different masks.", "dupe_factor"))
    parser.add_argument("--short_seq_prob", type=probability,
                        help=helped("Chance of a shorter instance.", "short_seq_prob"))
    add_boolean_flag(parser, "--do_whole_word_mask",
                     help=helped("Mask whole words, not single word-pieces.", "do_whole_word_mask"))
    parser.add_argument("--random_seed", type=non_negative_int, help=helped("Seed of the instances.", "random_seed"))


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "create-pretraining-data",
        help="Write masked-LM + next-sentence pretraining instances as TFRecords.",
        description="Corpus files (one sentence per line, blank line between documents) to tf.train.Example "
                    "records with int64 features token_ids, segment_ids, padding_mask, mask_positions, "
                    "mask_ids, mask_weights, next_sentence_label (0 = IsNext). One run holds its input in "
                    "memory, as the original script does: for a larger corpus, run once per slice of the input "
                    "files (each with its own --output_file and --random_seed) and train on all the records "
                    "with a glob; reading streams.",
    )
    # Several values as well as commas, as pretrain's --input_file: an unquoted glob expands to several.
    parser.add_argument("--input_file", required=True, type=file_patterns, nargs="+", action="extend",
                        help="Corpus file(s) or globs, comma-separated or several.")
    parser.add_argument("--output_file", required=True, type=output_files,
                        help="Output TFRecord file, or comma-separated files (shards), written atomically. With "
                             "--num_shards, files named as its shards of another count (perhaps an earlier run's) "
                             "are named in a warning, not removed.")
    parser.add_argument("--num_shards", type=positive_int, default=1,
                        help="Split --output_file into N shards named OUT-0000i-of-0000N.tfrecord.")
    vocabulary = parser.add_mutually_exclusive_group(required=True)
    vocabulary.add_argument("--vocab_file", type=existing_file, help="WordPiece vocabulary (one token per line).")
    vocabulary.add_argument("--preset", help="Take the vocabulary and casing from a preset instead of --vocab_file.")
    add_boolean_flag(parser, "--do_lower_case",
                     help=default_help("With --vocab_file: lower-case and strip accents (uncased vocabularies; "
                                       "--nodo_lower_case for cased ones). A preset's tokenizer has its own casing.",
                                       "tokenizers.bert_tokenizer", "BertTokenizer.__init__", "lowercase"))
    parser.add_argument("--corpus_format", choices=("sentences", "documents", "wikitext"),
                        help=default_help("sentences: one per line, blank line between documents (the original "
                                          "format); documents: one document per line; wikitext: WikiText articles.",
                                          "data.pretraining_corpus", "read_documents", "corpus_format"))
    add_instance_arguments(parser)
    parser.set_defaults(check=check, run=run)


def _tokenizer(args):
    from keras_bert_zoo.tokenizers.bert_tokenizer import BertTokenizer

    if args.preset:
        return BertTokenizer.from_preset(args.preset)
    tokenizer = BertTokenizer(args.vocab_file, **given(args, do_lower_case="lowercase"))
    _check_casing(args.vocab_file, tokenizer)
    return tokenizer


def _check_casing(path, tokenizer):
    """Warn where --do_lower_case does not match the vocabulary: google-research/bert's script defaults it to true
    and says nothing when it turns a cased vocabulary's words (BioBERT's, ClinicalBERT's) into lower-case ones,
    nor when false leaves capitals that an uncased vocabulary holds as [UNK]."""
    from keras_bert_zoo.utils.vocabulary_file import tokens_with_capitals

    tokens = tokenizer.get_vocabulary()
    capitals = tokens_with_capitals(tokens)
    if tokenizer.lowercase and capitals > 0.01 * len(tokens):
        warnings.warn(f"--vocab_file {path} is cased ({capitals} of its {len(tokens)} tokens hold capitals) but "
                      "--do_lower_case is true (the default): the instances are lower-cased and never use those "
                      "tokens. Pass --do_lower_case=false for a cased model (BioBERT, ClinicalBERT, BERT cased).")
    elif not tokenizer.lowercase and capitals <= 0.01 * len(tokens):
        warnings.warn(f"--vocab_file {path} is uncased ({capitals} of its {len(tokens)} tokens hold capitals) but "
                      "--do_lower_case is false: words with capitals become [UNK]. Leave the flag out (true) for an "
                      "uncased model.")


def check(args):
    """The flags against each other and the preset, before TensorFlow loads (--output_file's place is checked as
    it is parsed)."""
    from keras_bert_zoo.cli.preset_limits import check_sequence_length

    inputs = {os.path.realpath(path) for pattern in ",".join(args.input_file).split(",") for path in glob.glob(pattern)}
    for output in args.output_file.split(","):
        if os.path.realpath(output) in inputs:
            raise UsageError(f"--output_file {output} is also an --input_file: the records would replace the "
                             "corpus. Pass another --output_file.")
    if args.preset and args.do_lower_case is not None:
        raise UsageError("--do_lower_case goes with --vocab_file: with --preset, the preset's tokenizer sets the "
                         "casing (an uncased preset lower-cases). Leave the flag out.")
    # Without the flag, the default is cut to the preset's positions (PretrainingDataConfig.for_positions).
    check_sequence_length(args.max_seq_length, library_default(*DATA_CONFIG, "max_seq_length"), args.preset,
                          segments=2)


def _positions(args):
    """The positions of --preset's model (None without: instances for a model not named)."""
    from keras_bert_zoo.presets.loader import load_backbone_config

    return load_backbone_config(args.preset)["max_sequence_length"] if args.preset else None


def run(args):
    from keras_bert_zoo.data.pretraining_corpus import read_documents
    from keras_bert_zoo.data.pretraining_records import record_files
    from keras_bert_zoo.data.pretraining_records import other_shard_counts
    from keras_bert_zoo.data.pretraining_records import shard_paths
    from keras_bert_zoo.data.pretraining_records import write_pretraining_records
    from keras_bert_zoo.preprocessing.pretraining_instances import PretrainingDataConfig
    from keras_bert_zoo.preprocessing.pretraining_instances import create_pretraining_instances

    config = PretrainingDataConfig.for_positions(_positions(args), **given(args, *INSTANCE_FLAGS))
    inputs = record_files(",".join(args.input_file))
    single = "," not in args.output_file
    outputs = shard_paths(args.output_file, args.num_shards) if single else args.output_file.split(",")
    taken = {os.path.realpath(path) for path in inputs} & {os.path.realpath(path) for path in outputs}
    if taken:
        raise UsageError(f"--output_file {args.output_file} would write {sorted(taken)[0]}, an --input_file: the "
                         "records would replace the corpus. Pass another --output_file.")
    tokenizer = _tokenizer(args)
    documents = read_documents(inputs, tokenizer, progress=True, **given(args, "corpus_format"))
    instances = create_pretraining_instances(documents, tokenizer, config, progress=True)
    count = write_pretraining_records(instances, outputs, progress=True, tokenizer=tokenizer)
    if single:
        # An earlier run's shards of another count are read with the new ones by a glob of OUT-*, mixing two
        # runs' instances; named, not removed (another tool, or the corpus itself, may have written them).
        others = [path for path in other_shard_counts(args.output_file, args.num_shards)
                  if os.path.realpath(path) not in {os.path.realpath(i) for i in inputs}]
        if others:
            warnings.warn(f"{len(others)} file{'s' * (len(others) > 1)} beside the new shards {'are' if len(others) > 1 else 'is'} "
                          f"named as --output_file {args.output_file}'s with another --num_shards: "
                          f"{', '.join(others[:3])}{' ...' if len(others) > 3 else ''}. A glob of them all reads both "
                          "runs' instances: remove them if an earlier run wrote them.")
    print(f"{count} instances from {len(documents)} documents -> {', '.join(outputs)}")
