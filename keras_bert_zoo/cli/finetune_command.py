"""`keras-bert-zoo finetune`, `evaluate` and `predict` for classification."""

import json
import os
import sys

TASKS = ("classify",)


def _add_data_options(parser):
    parser.add_argument("--format", choices=("glue", "jsonl", "csv"), help="Data format (default: guessed).")
    parser.add_argument("--glue_task", help="GLUE task of a TSV (default: its folder name, e.g. MRPC).")
    parser.add_argument("--text_column", default="text")
    parser.add_argument("--text_b_column", help="Second text of a pair (csv/jsonl).")
    parser.add_argument("--label_column", default="label")
    parser.add_argument("--skip_bad_rows", action="store_true", help="Skip (and count) bad rows instead of failing.")


def add_parser(subparsers):
    parser = subparsers.add_parser("finetune", help="Fine-tune a preset on a labelled file.")
    parser.add_argument("--task", choices=TASKS, required=True)
    parser.add_argument("--preset", default="minilm_l6_h384_en_uncased")
    parser.add_argument("--train", required=True, help="Training file.")
    parser.add_argument("--eval", help="Evaluation file (default: hold out --eval_fraction of --train).")
    parser.add_argument("--eval_fraction", type=float, default=0.1)
    parser.add_argument("--output", required=True, help="Output directory (model/, metrics.json, backup/).")
    parser.add_argument("--problem_type", choices=("multi_class", "regression"), default="multi_class")
    parser.add_argument("--epochs", "--num_train_epochs", type=int, default=3)
    parser.add_argument("--batch_size", "--train_batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    _add_data_options(parser)
    parser.set_defaults(run=run_finetune)

    evaluate = subparsers.add_parser("evaluate", help="Score a fine-tuned model on a labelled file.")
    evaluate.add_argument("--model", required=True, help="A fine-tuned model directory (OUTPUT/model).")
    evaluate.add_argument("--eval", required=True)
    evaluate.add_argument("--batch_size", type=int, default=32)
    evaluate.add_argument("--output", help="Write the metrics JSON here.")
    _add_data_options(evaluate)
    evaluate.set_defaults(run=run_evaluate)

    predict = subparsers.add_parser("predict", help="Label texts with a fine-tuned model.")
    predict.add_argument("--model", required=True)
    predict.add_argument("--input", required=True, help="One text per line; 'text_a<TAB>text_b' for pairs.")
    predict.add_argument("--output", help="JSON lines output (default: stdout).")
    predict.add_argument("--batch_size", type=int, default=32)
    predict.set_defaults(run=run_predict)


def _read(path, args, label_names=None, regression=False):
    from keras_bert_zoo.data.readers import read_classification

    return read_classification(
        path, format=args.format, glue_task=args.glue_task, text_column=args.text_column,
        text_b_column=args.text_b_column, label_column=args.label_column, label_names=label_names,
        regression=regression, on_error="skip" if args.skip_bad_rows else "raise",
    )


def score(classifier, data, batch_size=32):
    """The field's metrics for a classifier on labelled examples."""
    from keras_bert_zoo.metrics.classification_metrics import classification_report
    from keras_bert_zoo.metrics.classification_metrics import regression_report

    outputs = classifier.predict_proba(data.texts, batch_size=batch_size)
    if classifier.problem_type == "regression":
        return regression_report(data.labels, outputs)
    return classification_report(data.labels, outputs.argmax(-1), classifier.num_classes)


def run_finetune(args):
    from keras_bert_zoo.tasks.bert_classifier import BertClassifier
    from keras_bert_zoo.training.finetune import finetune
    from keras_bert_zoo.training.finetune import METRICS_FILE
    from keras_bert_zoo.training.finetune import write_json

    regression = args.problem_type == "regression"
    train = _read(args.train, args, regression=regression)
    if args.eval:
        evaluation = _read(args.eval, args, label_names=train.label_names, regression=regression)
    else:
        train, evaluation = train.split(args.eval_fraction, seed=args.seed)
    print(f"train: {len(train)} examples ({train.skipped} bad rows skipped), eval: {len(evaluation)}", file=sys.stderr)
    classifier = BertClassifier.from_preset(
        args.preset,
        num_classes=1 if regression else len(train.label_names),
        problem_type=args.problem_type,
        label_names=train.label_names,
        sequence_length=args.max_seq_length,
    )
    classifier.compile(learning_rate=args.learning_rate)
    finetune(classifier, train.texts, train.labels, args.output, epochs=args.epochs,
             batch_size=args.batch_size, seed=args.seed)
    metrics = {"task": "classify", "preset": args.preset, "train_examples": len(train),
               "eval_examples": len(evaluation), **score(classifier, evaluation, args.batch_size)}
    write_json(os.path.join(args.output, METRICS_FILE), metrics)
    print(json.dumps(metrics, indent=2))


def run_evaluate(args):
    from keras_bert_zoo.tasks.bert_classifier import BertClassifier

    classifier = BertClassifier.from_preset(args.model)
    data = _read(args.eval, args, label_names=classifier.label_names, regression=classifier.problem_type == "regression")
    metrics = {"eval_examples": len(data), **score(classifier, data, args.batch_size)}
    if args.output:
        from keras_bert_zoo.training.finetune import write_json

        write_json(args.output, metrics)
    print(json.dumps(metrics, indent=2))


def run_predict(args):
    from keras_bert_zoo.tasks.bert_classifier import BertClassifier

    classifier = BertClassifier.from_preset(args.model)
    with open(args.input, encoding="utf-8") as f:
        texts = [tuple(line.split("\t")) if "\t" in line else line for line in f.read().splitlines() if line.strip()]
    outputs = classifier.predict_proba(texts, batch_size=args.batch_size)
    names = classifier.label_names or list(range(classifier.num_classes))
    lines = []
    for text, row in zip(texts, outputs):
        if classifier.problem_type == "regression":
            record = {"text": text, "value": float(row[0])}
        else:
            best = int(row.argmax())
            record = {"text": text, "label": names[best], "score": float(row[best]),
                      "probabilities": [round(float(p), 6) for p in row]}
        lines.append(json.dumps(record))
    if args.output:
        from keras_bert_zoo.utils.atomic import atomic_file

        with atomic_file(args.output, "w") as f:
            f.writelines(line + "\n" for line in lines)
    else:
        print("\n".join(lines))
