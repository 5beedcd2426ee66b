"""`keras-bert-zoo pretrain`: continued or from-scratch masked-LM + NSP pretraining."""

import argparse
import json

from keras_bert_zoo.cli.create_pretraining_data_command import add_instance_arguments
from keras_bert_zoo.cli.flag_types import existing_file
from keras_bert_zoo.cli.flag_types import non_negative_int
from keras_bert_zoo.cli.flag_types import positive_float
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.output_job import add_output_arguments
from keras_bert_zoo.cli.output_job import flag_names
from keras_bert_zoo.cli.output_job import output_job


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "pretrain",
        help="Pretrain (masked-LM + next sentence) on a corpus; writes a preset.",
        description="Continue pretraining a preset (BioBERT-style) or pretrain a fresh config with a vocabulary "
                    "learned from the corpus (SciBERT-style). Writes OUTPUT/model (a preset every task loads), "
                    "OUTPUT/metrics.json and OUTPUT/backup (rerun the command to resume).",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", help="Continue from this preset.")
    source.add_argument("--config", type=existing_file, help="JSON file of BertBackbone arguments for a fresh model.")
    parser.add_argument("--corpus", required=True, nargs="+", type=existing_file, help="Corpus files.")
    parser.add_argument("--corpus_format", choices=("sentences", "documents", "wikitext"), default="sentences")
    add_output_arguments(parser, help="Output directory (model/, metrics.json, backup/, job.json).")
    parser.add_argument("--strategy", choices=("auto", "tpu", "gpus", "cpu", "multiworker"), default="auto")
    parser.add_argument("--tpu", help="TPU name or grpc:// address (strategy tpu/auto).")
    parser.add_argument("--vocab-from-corpus", "--vocab_from_corpus", dest="vocab_from_corpus", type=positive_int,
                        metavar="SIZE", help="Learn a WordPiece vocabulary of about SIZE tokens (needs --config).")
    parser.add_argument("--do_lower_case", action=argparse.BooleanOptionalAction, default=True,
                        help="Casing of a learned vocabulary (default: uncased).")
    add_instance_arguments(parser, dupe_factor=5)
    parser.add_argument("--dynamic_masking", action="store_true", help="Fresh masks every epoch.")
    parser.add_argument("--train_batch_size", "--batch_size", dest="batch_size", type=positive_int, default=32)
    parser.add_argument("--num_train_epochs", "--epochs", dest="epochs", type=positive_int, default=1)
    parser.add_argument("--learning_rate", type=positive_float, default=1e-4)
    parser.add_argument("--num_warmup_steps", dest="warmup_steps", type=non_negative_int,
                        help="Default 10,000, or 10%% of a shorter run.")
    parser.add_argument("--save_checkpoints_steps", dest="checkpoint_every", type=positive_int,
                        help="Back up every N steps (default: every epoch).")
    parser.add_argument("--mixed_precision", action="store_true", help="Train in mixed_bfloat16.")
    parser.set_defaults(run=run, flag_names=flag_names(parser))


def _read_config(path):
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except ValueError as e:
        raise ValueError(f"--config {path} is not valid JSON ({e}).") from None
    if not isinstance(config, dict):
        raise ValueError(f"--config {path} must hold a JSON object of BertBackbone arguments.")
    return config


def run(args):
    from keras_bert_zoo.cli.preset_limits import check_sequence_length

    config = _read_config(args.config) if args.config else None
    if args.vocab_from_corpus and not args.config:
        raise ValueError("--vocab-from-corpus gives a new vocabulary, which needs a fresh model: pass --config.")
    if args.config and not args.vocab_from_corpus:
        raise ValueError("A fresh model (--config) needs a vocabulary: pass --vocab-from-corpus SIZE.")
    check_sequence_length(args.max_seq_length, preset=args.preset, config=config)
    with output_job(args, file_flags=("corpus", "config")):
        _pretrain(args, config)


def _pretrain(args, config):
    from keras_bert_zoo.distribution.get_strategy import get_strategy
    from keras_bert_zoo.preprocessing.pretraining_instances import PretrainingDataConfig
    from keras_bert_zoo.tokenizers.vocabulary_learner import learn_vocabulary
    from keras_bert_zoo.training.pretrain import pretrain

    vocabulary = None
    if args.vocab_from_corpus:
        vocabulary = learn_vocabulary(args.corpus, args.vocab_from_corpus, lowercase=args.do_lower_case)
    data_config = PretrainingDataConfig(
        max_seq_length=args.max_seq_length, max_predictions_per_seq=args.max_predictions_per_seq,
        masked_lm_prob=args.masked_lm_prob, short_seq_prob=args.short_seq_prob, dupe_factor=args.dupe_factor,
        do_whole_word_mask=args.do_whole_word_mask, random_seed=args.random_seed,
    )
    metrics = pretrain(
        args.output, args.corpus, preset=args.preset, config=config, vocabulary=vocabulary,
        lowercase=args.do_lower_case, corpus_format=args.corpus_format, data_config=data_config,
        dynamic=args.dynamic_masking, strategy=get_strategy(args.strategy, tpu=args.tpu), batch_size=args.batch_size,
        epochs=args.epochs, learning_rate=args.learning_rate, warmup_steps=args.warmup_steps,
        checkpoint_every=args.checkpoint_every, mixed_precision=args.mixed_precision,
        claim_output_dir=False,
    )
    print(json.dumps(metrics, indent=2))
