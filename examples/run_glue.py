"""Fine-tune a classifier on a GLUE task: single sentences (SST-2, CoLA) or pairs (MRPC, RTE, ...).

google-research/bert's run_classifier.py flags. Reads DATA_DIR/TASK/train.tsv,
and DATA_DIR/TASK/dev.tsv when present (else holds out --eval_fraction of
train); writes OUTPUT_DIR/model (a preset), metrics.json and TensorBoard logs.

    python examples/run_glue.py --task_name MRPC --data_dir glue_data --preset bert_base_en_uncased
    python examples/run_glue.py --task_name SST-2 --quick
"""

import os

from recipe import apply_quick
from recipe import given
from recipe import recipe_parser
from recipe import shared_data
from recipe import write_metrics


def main(argv=None):
    parser = recipe_parser(__doc__.split("\n")[0])
    parser.add_argument("--task_name", required=True, help="CoLA, SST-2, MRPC, QQP, STS-B, MNLI, QNLI, RTE or WNLI.")
    parser.add_argument("--data_dir", help="The GLUE folder (holding TASK_NAME/train.tsv).")
    parser.add_argument("--eval_fraction", type=float, default=0.1, help="Held out of train when there is no dev.tsv.")
    parser.add_argument("--max_train_examples", type=int, help="Train on the first N examples only.")
    parser.add_argument("--max_eval_examples", type=int, help="Score the first N evaluation examples only.")
    parser.add_argument("--max_seq_length", type=int)
    parser.add_argument("--train_batch_size", type=int)
    parser.add_argument("--learning_rate", type=float)
    parser.add_argument("--num_train_epochs", type=int)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    apply_quick(args, "glue_" + args.task_name.lower(), max_train_examples=480, max_eval_examples=200,
                max_seq_length=64, train_batch_size=16, learning_rate=1e-4, num_train_epochs=3)
    if not (args.data_dir or args.quick):
        parser.error("--data_dir is required (or --quick)")
    data_dir = args.data_dir or shared_data("glue")

    import keras_bert_zoo as kbz

    folder = os.path.join(data_dir, args.task_name)
    train = kbz.data.read_glue(os.path.join(folder, "train.tsv"), task=args.task_name)
    if os.path.exists(os.path.join(folder, "dev.tsv")):
        dev = kbz.data.read_glue(os.path.join(folder, "dev.tsv"), task=args.task_name)
    else:
        train, dev = train.split(args.eval_fraction, seed=args.seed)
    train = train.head(args.max_train_examples) if args.max_train_examples else train
    dev = dev.head(args.max_eval_examples) if args.max_eval_examples else dev

    regression = not train.label_names  # STS-B
    classifier = kbz.BertClassifier.from_preset(
        args.preset, num_classes=1 if regression else len(train.label_names),
        problem_type="regression" if regression else "multi_class", label_names=train.label_names or None,
        **given(args, sequence_length="max_seq_length"))
    classifier.compile(**given(args, learning_rate="learning_rate"))
    kbz.finetune(classifier, train, None, args.output_dir, validation_data=dev, seed=args.seed,
                 overwrite_output_dir=args.overwrite_output_dir,
                 **given(args, epochs="num_train_epochs", batch_size="train_batch_size"))
    write_metrics(args.output_dir, {"task": args.task_name, "train_examples": len(train), "eval_examples": len(dev),
                                    **classifier.evaluate_glue(dev)})


if __name__ == "__main__":
    main()
