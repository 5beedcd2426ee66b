"""Fine-tune a classifier on a GLUE task: single sentences (SST-2, CoLA) or pairs (MRPC, RTE, ...).

google-research/bert's run_classifier.py flags (train, then evaluate).
--data_dir is the GLUE folder or the task's own folder (glue_data/MRPC):
reads train.tsv, and dev.tsv (dev_matched.tsv for MNLI) when present, else
holds out --eval_fraction of train. Writes OUTPUT_DIR/model (a preset),
metrics.json and TensorBoard logs.

    python examples/run_glue.py --task_name MRPC --data_dir glue_data/MRPC --preset bert_base_en_uncased
    python examples/run_glue.py --task_name SST-2 --quick
"""

import os

from recipe import apply_quick
from recipe import given
from recipe import recipe_parser
from recipe import run
from recipe import shared_data
from recipe import whole_number
from recipe import write_metrics

GLUE_TASKS = ("CoLA", "SST-2", "MRPC", "QQP", "STS-B", "MNLI", "QNLI", "RTE", "WNLI")


def _task_name(value):
    for name in GLUE_TASKS:  # run_classifier.py lower-cases it
        if value.lower() == name.lower():
            return name
    raise ValueError(f"--task_name {value}: not a GLUE task; one of {', '.join(GLUE_TASKS)}")


def main(argv=None):
    parser = recipe_parser(__doc__.split("\n")[0])
    parser.add_argument("--task_name", required=True, help=", ".join(GLUE_TASKS) + " (any case).")
    parser.add_argument("--data_dir", help="The GLUE folder, or the task's folder holding train.tsv.")
    parser.add_argument("--eval_fraction", type=float, default=0.1, help="Held out of train when there is no dev set.")
    parser.add_argument("--max_train_examples", type=int, help="Train on the first N examples only.")
    parser.add_argument("--max_eval_examples", type=int, help="Score the first N evaluation examples only.")
    parser.add_argument("--max_seq_length", type=int, help="Packed length in word pieces.")
    parser.add_argument("--train_batch_size", type=int, help="Examples per step.")
    parser.add_argument("--learning_rate", type=float, help="Peak rate of BERT's AdamW schedule.")
    parser.add_argument("--num_train_epochs", type=whole_number, help="Passes over the training data.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the held-out split and the training.")
    args = parser.parse_args(argv)
    try:
        task = _task_name(args.task_name)
    except ValueError as e:
        parser.error(str(e))
    apply_quick(args, "glue_" + task.lower(), max_train_examples=480, max_eval_examples=200,
                max_seq_length=64, train_batch_size=16, learning_rate=1e-4, num_train_epochs=3)
    if not (args.data_dir or args.quick):
        parser.error("--data_dir is required (or --quick)")
    folder = args.data_dir or os.path.dirname(shared_data("glue", task, "train.tsv"))
    if not os.path.exists(os.path.join(folder, "train.tsv")):
        folder = os.path.join(folder, task)

    import keras_bert_zoo as kbz

    train = kbz.data.read_glue(os.path.join(folder, "train.tsv"), task=task)
    dev_file = os.path.join(folder, "dev_matched.tsv" if task == "MNLI" else "dev.tsv")
    if os.path.exists(dev_file):
        dev = kbz.data.read_glue(dev_file, task=task)
    else:
        print(f"No {os.path.basename(dev_file)} in {folder}: scoring {args.eval_fraction:.0%} of train held out.")
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
    write_metrics(args.output_dir, {"task": task, "train_examples": len(train), "eval_examples": len(dev),
                                    **classifier.evaluate_glue(dev)})


if __name__ == "__main__":
    run(main)
