"""`keras-bert-zoo pretrain`: continued or from-scratch masked-LM + NSP pretraining."""

import argparse
import json


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
    source.add_argument("--config", help="JSON file of BertBackbone arguments for a fresh model.")
    parser.add_argument("--corpus", required=True, nargs="+", help="Corpus files.")
    parser.add_argument("--corpus_format", choices=("sentences", "documents", "wikitext"), default="sentences")
    parser.add_argument("--output", required=True)
    parser.add_argument("--strategy", choices=("auto", "tpu", "gpus", "cpu", "multiworker"), default="auto")
    parser.add_argument("--tpu", help="TPU name or grpc:// address (strategy tpu/auto).")
    parser.add_argument("--vocab-from-corpus", "--vocab_from_corpus", dest="vocab_from_corpus", type=int,
                        metavar="SIZE", help="Learn a WordPiece vocabulary of about SIZE tokens (needs --config).")
    parser.add_argument("--do_lower_case", action=argparse.BooleanOptionalAction, default=True,
                        help="Casing of a learned vocabulary (default: uncased).")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--masked_lm_prob", type=float, default=0.15)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--short_seq_prob", type=float, default=0.1)
    parser.add_argument("--do_whole_word_mask", action="store_true")
    parser.add_argument("--dynamic_masking", action="store_true", help="Fresh masks every epoch.")
    parser.add_argument("--random_seed", type=int, default=12345)
    parser.add_argument("--train_batch_size", "--batch_size", dest="batch_size", type=int, default=32)
    parser.add_argument("--num_train_epochs", "--epochs", dest="epochs", type=int, default=1)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--num_warmup_steps", dest="warmup_steps", type=int,
                        help="Default 10,000, or 10%% of a shorter run.")
    parser.add_argument("--save_checkpoints_steps", dest="checkpoint_every", type=int,
                        help="Back up every N steps (default: every epoch).")
    parser.add_argument("--mixed_precision", action="store_true", help="Train in mixed_bfloat16.")
    parser.set_defaults(run=run)


def run(args):
    from keras_bert_zoo.distribution.get_strategy import get_strategy
    from keras_bert_zoo.preprocessing.pretraining_instances import PretrainingDataConfig
    from keras_bert_zoo.tokenizers.vocabulary_learner import learn_vocabulary
    from keras_bert_zoo.training.pretrain import pretrain

    config = None
    if args.config:
        with open(args.config) as f:
            config = json.load(f)
    vocabulary = None
    if args.vocab_from_corpus:
        if not args.config:
            raise ValueError("--vocab-from-corpus gives a new vocabulary, which needs a fresh model: pass --config.")
        vocabulary = learn_vocabulary(args.corpus, args.vocab_from_corpus, lowercase=args.do_lower_case)
    elif args.config:
        raise ValueError("A fresh model (--config) needs a vocabulary: pass --vocab-from-corpus SIZE.")
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
    )
    print(json.dumps(metrics, indent=2))
