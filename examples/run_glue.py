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

from recipe import add_finetuning_flags
from recipe import apply_quick
from recipe import finetune
from recipe import given
from recipe import recipe_parser
from recipe import run
from recipe import shared_data
from recipe import train_and_held_out
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
    add_finetuning_flags(parser, "examples", "when there is no dev set")
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
    has_dev = os.path.exists(dev_file)
    train, dev = train_and_held_out(train, kbz.data.read_glue(dev_file, task=task) if has_dev else None, args)
    if not has_dev:
        print(f"No {os.path.basename(dev_file)} in {folder}: training on {len(train)} examples of train.tsv and "
              f"scoring {len(dev)} held out of it.")

    regression = not train.label_names  # STS-B
    classifier = kbz.BertClassifier.from_preset(
        args.preset, num_classes=1 if regression else len(train.label_names),
        problem_type="regression" if regression else "multi_class", label_names=train.label_names or None,
        **given(args, sequence_length="max_seq_length"))
    finetune(classifier, train, dev, args)
    write_metrics(args.output_dir, {"task": task, "train_examples": len(train), "eval_examples": len(dev),
                                    **classifier.evaluate_glue(dev)})


if __name__ == "__main__":
    run(main)
