"""`keras-bert-zoo pretrain`: continued or from-scratch masked-LM + NSP pretraining.

Flag names are google-research/bert's `run_pretraining.py` (--input_file,
--num_train_steps, --save_checkpoints_steps ...). The defaults are the
library's (`pretrain`, `pretrain_from_records`, `PretrainingDataConfig`): only
the flags given are passed on.
"""

import json

from keras_bert_zoo.cli.create_pretraining_data_command import DATA_CONFIG
from keras_bert_zoo.cli.create_pretraining_data_command import INSTANCE_FLAGS
from keras_bert_zoo.cli.create_pretraining_data_command import add_instance_arguments
from keras_bert_zoo.cli.flag_types import add_boolean_flag
from keras_bert_zoo.cli.flag_types import add_flag
from keras_bert_zoo.cli.flag_types import existing_file
from keras_bert_zoo.cli.flag_types import file_patterns
from keras_bert_zoo.cli.flag_types import held_out_fraction
from keras_bert_zoo.cli.flag_types import non_negative_int
from keras_bert_zoo.cli.flag_types import positive_float
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.flag_types import whole_epochs
from keras_bert_zoo.cli.library_defaults import default_help
from keras_bert_zoo.cli.library_defaults import library_constant
from keras_bert_zoo.cli.library_defaults import library_default
from keras_bert_zoo.cli.output_job import add_output_arguments
from keras_bert_zoo.cli.output_job import flag_names
from keras_bert_zoo.cli.output_job import output_job
from keras_bert_zoo.cli.strategy_flags import add_strategy_arguments
from keras_bert_zoo.cli.strategy_flags import strategy_from_flags
from keras_bert_zoo.cli.usage_error import UsageError
from keras_bert_zoo.utils.text_files import loads_json
from keras_bert_zoo.utils.text_files import utf8_errors_named

PRETRAIN = ("training.pretrain", "pretrain")
FROM_RECORDS = ("training.pretrain", "pretrain_from_records")
# Flags that make instances from text: they do not apply to records, which hold finished instances.
TEXT_ONLY = ("corpus_format", "vocab_from_corpus", "dynamic_masking", "epochs", "eval_fraction", *INSTANCE_FLAGS)
RECORDS_ONLY = ("eval_input_file", "max_eval_steps", "vocab_file")
# Where the records' run takes what a text-only flag gives (the others: create-pretraining-data's flags).
RECORDS_INSTEAD = {"epochs": "--num_train_steps sets how long records train",
                   "eval_fraction": "held-out records go in --eval_input_file",
                   "vocab_from_corpus": "records hold the ids of the vocabulary they were written with (--vocab_file)",
                   "dynamic_masking": "records hold their masks"}


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "pretrain",
        help="Pretrain (masked-LM + next sentence) on create-pretraining-data's records or a text corpus; "
             "writes a preset.",
        description="Continue pretraining a preset (BioBERT-style) or pretrain a fresh --config (SciBERT-style). "
                    "--input_file takes either the TFRecords `create-pretraining-data` (or google-research/bert's "
                    "create_pretraining_data.py) writes (as run_pretraining.py does; streamed, any size) or text "
                    "corpus files (instances made in "
                    "memory); which one is read from the files' content, and all files of a run must be the same "
                    "kind. Writes OUTPUT_DIR/model (a preset every task loads), OUTPUT_DIR/metrics.json "
                    "(masked-LM and next-sentence accuracy before and after, on --eval_input_file records or on "
                    "held-out documents of a text corpus) and OUTPUT_DIR/backup (rerun the command to resume).",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="Continue from this preset.")
    source.add_argument("--config", type=existing_file, help="JSON file of BertBackbone arguments for a fresh model.")
    # Several values (as a shell glob expands) as well as commas: the old --corpus took a list.
    add_flag(parser, "--input_file", "--corpus", type=file_patterns, nargs="+", action="extend", required=True,
             help="Files or globs, comma-separated or several: TFRecords from create-pretraining-data (or "
                  "google-research/bert's create_pretraining_data.py), or text corpus files (see --corpus_format).")
    parser.add_argument("--eval_input_file", type=file_patterns,
                        help="Records only: held-out TFRecords scored before and after training (masked-LM and "
                             "next-sentence accuracy in metrics.json).")
    parser.add_argument("--eval_fraction", type=held_out_fraction,
                        help=default_help("Text corpus: documents held out for the before/after scores (0: none; "
                                          "two at least, where any).", *PRETRAIN, "eval_fraction"))
    parser.add_argument("--max_eval_steps", type=positive_int,
                        help=default_help("Records only: evaluation batches at most.", *FROM_RECORDS, "max_eval_steps"))
    add_output_arguments(parser, help="Output directory (model/, metrics.json, backup/, job.json).")
    add_strategy_arguments(parser)
    parser.add_argument("--vocab_file", type=existing_file,
                        help="Records with --config: the vocabulary the records were written with.")
    parser.add_argument("--vocab_from_corpus", type=positive_int, metavar="SIZE",
                        help="Text corpus with --config: learn a WordPiece vocabulary of at most SIZE tokens.")
    add_boolean_flag(parser, "--do_lower_case",
                     help=default_help("Casing of a new vocabulary (--vocab_file, --vocab_from_corpus).",
                                       *PRETRAIN, "lowercase"))
    parser.add_argument("--corpus_format", choices=("sentences", "documents", "wikitext"),
                        help=default_help("Text corpus: see create-pretraining-data.", *PRETRAIN, "corpus_format"))
    add_instance_arguments(parser, note="Text corpus: ")
    lengths = {"max_seq_length": "Pieces per instance", "max_predictions_per_seq": "Masked pieces per instance at most"}
    for action in parser._actions:
        if action.dest in lengths:  # records hold their lengths: read there, and a given value must match
            action.help = (f"{lengths[action.dest]}. Records: read from them (a value given must match). Text corpus: "
                           f"default {library_default(*DATA_CONFIG, action.dest)} (" +
                           ("less for a model of fewer positions)." if action.dest == "max_seq_length" else
                            "about --max_seq_length x --masked_lm_prob where those are not 128 and 0.15: given, or "
                            "the length cut to a model of fewer positions)."))
    add_boolean_flag(parser, "--dynamic_masking", help="Text corpus: fresh masks every epoch (piece by piece: not with --do_whole_word_mask).")
    add_flag(parser, "--train_batch_size", "--batch_size", dest="batch_size", type=positive_int,
             help=default_help("Global batch size.", *PRETRAIN, "batch_size"))
    parser.add_argument("--num_train_steps", type=positive_int,
                        help="Stop after N steps (records: default "
                             f"{library_default(*FROM_RECORDS, 'num_train_steps')}; "
                             "text corpus: default --num_train_epochs passes over the instances). The final "
                             "backup is kept: the same command with a larger N trains on from it, at the larger "
                             "schedule's learning rates.")
    add_flag(parser, "--num_train_epochs", "--epochs", dest="epochs", type=whole_epochs,
             help=default_help("Text corpus: passes over the instances.", *PRETRAIN, "epochs"))
    parser.add_argument("--learning_rate", type=positive_float,
                        help=default_help("Peak learning rate.", *PRETRAIN, "learning_rate"))
    parser.add_argument("--num_warmup_steps", dest="warmup_steps", type=non_negative_int,
                        help="Default 10,000, or 10%% of a shorter run.")
    parser.add_argument("--save_checkpoints_steps", dest="checkpoint_every", type=positive_int,
                        help="Back up every N steps (records: default "
                             f"{library_default(*FROM_RECORDS, 'checkpoint_every')}; "
                             "text corpus: every epoch).")
    add_boolean_flag(parser, "--mixed_precision", help="Train in mixed_bfloat16.")
    add_boolean_flag(parser, "--adam_bias_correction",
                     help="Adam's bias correction, as Keras, keras-hub and torch step (default: true); "
                          "--noadam_bias_correction steps as run_pretraining.py's AdamWeightDecayOptimizer.")
    parser.set_defaults(check=check, run=run, flag_names=flag_names(parser))


# bert_config.json's keys -> BertBackbone's (for a --config written in google-research/bert's form).
BERT_CONFIG_KEYS = {"num_hidden_layers": "num_layers", "hidden_size": "hidden_dim", "num_attention_heads": "num_heads",
                    "intermediate_size": "intermediate_dim", "max_position_embeddings": "max_sequence_length",
                    "hidden_dropout_prob": "dropout"}


def read_config(path):
    """A --config file: a JSON object of BertBackbone arguments, keys checked."""
    from keras_bert_zoo.cli.library_defaults import backbone_arguments

    with utf8_errors_named(path), open(path, encoding="utf-8-sig") as f:
        config = loads_json(f.read(), f"--config {path}")
    if not isinstance(config, dict):
        raise ValueError(f"--config {path} must hold a JSON object of BertBackbone arguments.")
    valid = backbone_arguments()
    unknown = sorted(set(config) - set(valid))
    if unknown:
        theirs = {key: ours for key, ours in BERT_CONFIG_KEYS.items() if key in config}
        hint = (" It is a bert_config.json (google-research/bert's or transformers' keys): to continue its "
                "checkpoint, pass its directory as --preset; for a fresh model of its shape, name the keys as "
                f"BertBackbone does ({', '.join(f'{key} -> {ours}' for key, ours in theirs.items())})."
                if theirs else "")
        raise ValueError(f"--config {path}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                         f"valid keys: {', '.join(valid)}.{hint}")
    return config


def _input_kind(args):
    """The files of --input_file and whether they are TFRecords."""
    from keras_bert_zoo.data.pretraining_records import is_empty_file
    from keras_bert_zoo.data.pretraining_records import is_pretraining_records
    from keras_bert_zoo.data.pretraining_records import record_files

    files = record_files(",".join(args.input_file))
    # An empty file is read as either kind (records shards beyond the instances are empty): the others decide.
    kinds = {path: is_pretraining_records(path) for path in files if not is_empty_file(path)}
    if not kinds:
        raise UsageError(f"--input_file {', '.join(files[:3])}{' ...' if len(files) > 3 else ''} "
                         f"{'is' if len(files) == 1 else 'are'} empty: pass corpus text or the TFRecords "
                         "create-pretraining-data writes.")
    if len(set(kinds.values())) > 1:
        records = [p for p, r in kinds.items() if r]
        text = [p for p, r in kinds.items() if not r]
        raise UsageError(f"--input_file mixes TFRecords ({records[0]}) and text ({text[0]}): pass one kind "
                         "(records from create-pretraining-data, or corpus text).")
    return files, all(kinds.values())


def _apply(flags):
    return "applies" if len(flags) == 1 else "apply"


def _check_flags(args, records):
    names = args.flag_names
    if records:
        given = [d for d in TEXT_ONLY if getattr(args, d, None) is not None
                 and d not in ("max_seq_length", "max_predictions_per_seq")]
        if given:
            wrong = [names.get(d, "--" + d) for d in given]
            hints = dict.fromkeys(RECORDS_INSTEAD.get(d, "set it when running create-pretraining-data") for d in given)
            raise UsageError(f"{', '.join(wrong)} {_apply(wrong)} only to a text corpus: the TFRecords of --input_file "
                             f"hold finished instances ({'; '.join(hints)}).")
        if args.config and not args.vocab_file:
            raise UsageError("A fresh model (--config) on records needs the vocabulary they were written with: "
                             "pass --vocab_file.")
        if args.preset and args.vocab_file:
            raise UsageError("--vocab_file is for a fresh model (--config); a --preset brings its vocabulary.")
        return
    wrong = [names.get(d, "--" + d) for d in RECORDS_ONLY if getattr(args, d, None) is not None]
    if wrong:
        raise UsageError(f"{', '.join(wrong)} {_apply(wrong)} only to TFRecord --input_file (from create-pretraining-data); "
                         "--input_file here is text.")
    if args.vocab_from_corpus and not args.config:
        raise UsageError("--vocab_from_corpus gives a new vocabulary, which needs a fresh model: pass --config.")
    if args.config and not args.vocab_from_corpus:
        raise UsageError("A fresh model (--config) needs a vocabulary: pass --vocab_from_corpus SIZE.")


def check(args):
    """The flags that are wrong whatever --input_file holds, the --config file and the preset (its name, and a
    given --max_seq_length against its positions), before TensorFlow loads."""
    from keras_bert_zoo.cli.preset_limits import check_sequence_length

    if args.preset and args.do_lower_case is not None:
        raise UsageError("--do_lower_case sets the casing of a new vocabulary (--config): with --preset, the preset's "
                         "tokenizer sets it (an uncased preset lower-cases). Leave the flag out.")
    if args.dynamic_masking and args.do_whole_word_mask:
        whole_words = library_constant("training.pretrain", "DYNAMIC_WHOLE_WORDS")
        raise UsageError(whole_words.format(dynamic="--dynamic_masking", whole_words="--do_whole_word_mask"))
    # No default yet: records hold their length (a given value must match them), text is cut at 128.
    config = read_config(args.config) if args.config else None
    check_sequence_length(args.max_seq_length, None, preset=args.preset, config=config, segments=2)


def run(args):
    from keras_bert_zoo.cli.preset_limits import check_sequence_length
    from keras_bert_zoo.data.pretraining_records import record_files
    from keras_bert_zoo.distribution.chief import claimed_by_chief
    from keras_bert_zoo.distribution.chief import is_chief
    from keras_bert_zoo.utils.tf_config import cluster_workers

    # A multi-worker strategy configures TensorFlow's collectives, which must come before any op runs (telling
    # records from text runs some): with a cluster in TF_CONFIG the strategy is made first.
    strategy = strategy_from_flags(args) if cluster_workers() else None
    config = read_config(args.config) if args.config else None
    files, records = _input_kind(args)
    _check_flags(args, records)
    if not records and args.max_seq_length is None:  # text is cut at PretrainingDataConfig's default, fitted
        check_sequence_length(None, library_default(*DATA_CONFIG, "max_seq_length"), preset=args.preset,
                              config=config, segments=2)
    # The job is its files (by content), however the globs spelled them.
    args.input_file = files
    if args.eval_input_file:
        args.eval_input_file = record_files(args.eval_input_file)
    from keras_bert_zoo.training.pretrain import EXTENDABLE

    job = output_job(args, file_flags=("input_file", "eval_input_file", "config", "vocab_file"), extendable=EXTENDABLE,
                     chief=strategy is None or is_chief(strategy))
    with claimed_by_chief(strategy, job):  # the chief's refusal of the directory stops every worker
        strategy = strategy or strategy_from_flags(args)
        metrics = (_from_records if records else _from_text)(args, files, config, strategy)
    print(json.dumps(metrics, indent=2))


def _common(args, strategy):
    from keras_bert_zoo.cli.library_defaults import given

    return dict(preset=args.preset, strategy=strategy, claim_output_dir=False,
                **given(args, "batch_size", "learning_rate", "warmup_steps", "checkpoint_every", "num_train_steps",
                        "mixed_precision", do_lower_case="lowercase", adam_bias_correction="bias_correction"))


def _from_records(args, files, config, strategy):
    from keras_bert_zoo.cli.library_defaults import given
    from keras_bert_zoo.training.pretrain import pretrain_from_records

    return pretrain_from_records(args.output, files, config=config, vocabulary=args.vocab_file,
                                 eval_input_file=args.eval_input_file, **_common(args, strategy),
                                 **given(args, "max_eval_steps", "max_seq_length", "max_predictions_per_seq"))


def _from_text(args, files, config, strategy):
    from keras_bert_zoo.cli.library_defaults import given
    from keras_bert_zoo.tokenizers.vocabulary_learner import learn_vocabulary
    from keras_bert_zoo.training.pretrain import pretrain

    vocabulary = None
    if args.vocab_from_corpus:
        lowercase = given(args, do_lower_case="lowercase")
        vocabulary = learn_vocabulary(files, args.vocab_from_corpus, **lowercase)
    data_config = given(args, *INSTANCE_FLAGS)  # the library fits the rest to the model (a small one's positions)
    return pretrain(args.output, files, config=config, vocabulary=vocabulary, data_config=data_config,
                    **_common(args, strategy), **given(args, "corpus_format", "epochs", "eval_fraction", dynamic_masking="dynamic"))
