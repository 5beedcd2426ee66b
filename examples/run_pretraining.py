"""Domain pretraining with masked-LM + next-sentence prediction, under a tf.distribute strategy.

BioBERT's recipe continues pretraining a preset on your corpus (PubMed for
BioBERT); SciBERT's pretrains from scratch with a vocabulary learned from the
corpus (--from_scratch). Flags as google-research/bert's
create_pretraining_data.py and run_pretraining.py; the corpus is one sentence
per line with a blank line between documents (--corpus_format documents: one
document per line). Writes OUTPUT_DIR/model (a preset that every task's
from_preset loads), metrics.json (held-out masked-LM / NSP accuracy before and
after) and backups (rerun the same command to resume). Records written by
`keras-bert-zoo create-pretraining-data` train with `keras-bert-zoo pretrain`.

    python examples/run_pretraining.py --input_file pubmed.txt --preset bert_base_en_cased --num_train_steps 100000
    python examples/run_pretraining.py --input_file "papers/*.txt" --from_scratch --vocab_size 31000 \
        --num_hidden_layers 12 --hidden_size 768 --num_attention_heads 12 --intermediate_size 3072 \
        --strategy tpu --tpu my-tpu
    python examples/run_pretraining.py --quick                  # continue the offline preset on PubMed abstracts
    python examples/run_pretraining.py --quick --from_scratch   # a small model and vocabulary on WikiText-2
"""

import glob
import json

from keras_bert_zoo.cli.flag_types import add_boolean_flag
from keras_bert_zoo.cli.flag_types import fraction
from keras_bert_zoo.cli.flag_types import non_negative_int
from keras_bert_zoo.cli.flag_types import positive_float
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.flag_types import probability

from recipe import apply_quick
from recipe import given
from recipe import recipe_parser
from recipe import run
from recipe import shared_data


SIZE_FLAGS = ("--num_hidden_layers", "--hidden_size", "--num_attention_heads", "--intermediate_size")


def _corpus_files(input_file):
    files = []
    for part in input_file.split(","):
        matches = sorted(glob.glob(part))
        if not matches:
            raise ValueError(f"--input_file: nothing matches {part}")
        files.extend(matches)
    return files


def main(argv=None):
    parser = recipe_parser(__doc__.split("\n")[0])
    parser.add_argument("--input_file", help="Corpus text file(s): comma-separated paths or globs.")
    parser.add_argument("--corpus_format", choices=("sentences", "documents", "wikitext"),
                        help="sentences: one per line, blank line between documents (default).")
    parser.add_argument("--from_scratch", action="store_true", help="A new model with a vocabulary learned from the corpus.")
    parser.add_argument("--vocab_size", type=positive_int, help="--from_scratch: size of the learned vocabulary.")
    add_boolean_flag(parser, "--do_lower_case", help="--from_scratch: an uncased vocabulary (default true).")
    sizes = parser.add_argument_group("--from_scratch: model size (bert_config.json's names; BERT-Base: 12, 768, 12, 3072)")
    for flag in SIZE_FLAGS:
        sizes.add_argument(flag, type=positive_int)
    parser.add_argument("--max_seq_length", type=positive_int, help="Instance length in word pieces.")
    parser.add_argument("--max_predictions_per_seq", type=positive_int, help="Masked pieces per instance at most.")
    parser.add_argument("--masked_lm_prob", type=fraction, help="Share of pieces masked.")
    parser.add_argument("--short_seq_prob", type=probability, help="Share of instances made shorter on purpose.")
    parser.add_argument("--dupe_factor", type=positive_int, help="Passes over the corpus with different masks.")
    add_boolean_flag(parser, "--do_whole_word_mask", help="Mask all pieces of a word together.")
    parser.add_argument("--train_batch_size", type=positive_int, help="Global batch (split over the replicas).")
    parser.add_argument("--learning_rate", type=positive_float, help="Peak rate of BERT's AdamW schedule.")
    parser.add_argument("--num_train_steps", type=positive_int, help="Steps to train (the data repeats as needed).")
    parser.add_argument("--num_warmup_steps", type=non_negative_int, help="Linear warm-up steps.")
    parser.add_argument("--save_checkpoints_steps", type=positive_int, help="Back up every N steps (resume point).")
    parser.add_argument("--strategy", default="auto", choices=("auto", "cpu", "gpus", "tpu", "multiworker"),
                        help="auto: a TPU if --tpu / TPU_NAME names one, else TF_CONFIG's workers, GPUs, the CPU.")
    parser.add_argument("--tpu", help="TPU name or grpc:// address (--strategy tpu / auto).")
    add_boolean_flag(parser, "--use_bf16", help="Train in mixed bfloat16 (TPUs, GPUs, CPUs with AMX).")
    args = parser.parse_args(argv)
    if args.from_scratch and args.preset:
        parser.error("--preset and --from_scratch: continue a preset, or pretrain a new model, not both")
    if args.from_scratch:
        apply_quick(args, "pretraining_from_scratch", input_file=shared_data("corpus", "wikitext-2", "valid.txt")
                    if args.quick and not args.input_file else None, corpus_format="wikitext", vocab_size=2000,
                    num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128,
                    max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1, train_batch_size=32,
                    learning_rate=2e-3, num_train_steps=300)
    else:
        apply_quick(args, "pretraining", input_file=shared_data("corpus", "pubmed_abstracts", "PubMedAbstract_1MB.txt")
                    if args.quick and not args.input_file else None, corpus_format="documents", max_seq_length=64,
                    max_predictions_per_seq=10, dupe_factor=1, train_batch_size=8, learning_rate=1e-4,
                    num_train_steps=60)
    if not args.input_file:
        parser.error("--input_file is required (or --quick)")
    if args.from_scratch:
        if not args.vocab_size:
            parser.error("--from_scratch needs --vocab_size (the size of the vocabulary to learn)")
        missing = [flag for flag in SIZE_FLAGS if getattr(args, flag[2:]) is None]
        if missing:
            parser.error(f"--from_scratch needs the model's size: {' '.join(missing)} (BERT-Base: 12, 768, 12, 3072)")
    else:
        given_sizes = [flag for flag in ("--vocab_size", "--do_lower_case", *SIZE_FLAGS)
                       if getattr(args, flag[2:]) is not None]
        if given_sizes:
            parser.error(f"{' '.join(given_sizes)} only apply with --from_scratch (a preset has its own)")
    corpus = _corpus_files(args.input_file)

    import keras_bert_zoo as kbz

    data_config = kbz.PretrainingDataConfig(**given(
        args, max_seq_length="max_seq_length", max_predictions_per_seq="max_predictions_per_seq",
        masked_lm_prob="masked_lm_prob", short_seq_prob="short_seq_prob", dupe_factor="dupe_factor",
        do_whole_word_mask="do_whole_word_mask"))
    if args.from_scratch:
        lowercase = True if args.do_lower_case is None else args.do_lower_case
        model = {"vocabulary": kbz.learn_vocabulary(corpus, args.vocab_size, lowercase=lowercase),
                 "lowercase": lowercase, "config": {
                     "max_sequence_length": data_config.max_seq_length,
                     **given(args, num_layers="num_hidden_layers", hidden_dim="hidden_size",
                             num_heads="num_attention_heads", intermediate_dim="intermediate_size")}}
    else:
        model = {"preset": args.preset}
    # Built here to show the choice; kbz.pretrain also takes the kind ("tpu") itself.
    strategy = kbz.distribution.get_strategy(args.strategy, tpu=args.tpu)
    print(f"Training on {strategy.num_replicas_in_sync} replica(s) with {type(strategy).__name__.lstrip('_')}.")
    metrics = kbz.pretrain(
        args.output_dir, corpus, data_config=data_config, strategy=strategy, mixed_precision=bool(args.use_bf16),
        overwrite_output_dir=args.overwrite_output_dir, **model,
        **given(args, corpus_format="corpus_format", batch_size="train_batch_size", learning_rate="learning_rate",
                num_train_steps="num_train_steps", warmup_steps="num_warmup_steps",
                checkpoint_every="save_checkpoints_steps"))
    print(json.dumps(metrics, indent=2))
    print(f"Wrote {args.output_dir}: model/ (a preset), metrics.json, TensorBoard logs.")


if __name__ == "__main__":
    run(main)
