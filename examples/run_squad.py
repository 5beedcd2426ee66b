"""Fine-tune extractive question answering on SQuAD-format data (SQuAD v1.1 / v2.0, COVID-QA).

google-research/bert's run_squad.py flags. Trains on --train_file, answers
--predict_file (without one, --eval_fraction of the training questions is
held out: a quick check only, as held-out questions may share a context with
training ones) and writes OUTPUT_DIR/predictions.json ({question id: answer}, the
official evaluation script's input), metrics.json (its exact match and F1)
and OUTPUT_DIR/model.

    python examples/run_squad.py --train_file train-v1.1.json --predict_file dev-v1.1.json --preset bert_base_en_uncased
    python examples/run_squad.py --quick
    python examples/run_squad.py --train_file ../shared/data/qa/covid_qa/train_docs0-77.json --max_seq_length 384
"""

import json
import os

from recipe import add_boolean
from recipe import apply_quick
from recipe import given
from recipe import recipe_parser
from recipe import run
from recipe import shared_data
from recipe import whole_number
from recipe import write_metrics


def main(argv=None):
    parser = recipe_parser(__doc__.split("\n")[0])
    parser.add_argument("--train_file", help="SQuAD-format JSON to train on.")
    parser.add_argument("--predict_file", help="SQuAD-format JSON to answer and score.")
    parser.add_argument("--eval_fraction", type=float, default=0.1, help="Held out of train without --predict_file.")
    parser.add_argument("--max_train_examples", type=int, help="Train on the first N questions only.")
    parser.add_argument("--max_eval_examples", type=int, help="Answer the first N evaluation questions only.")
    parser.add_argument("--max_seq_length", type=int, help="Window in word pieces (question + context).")
    parser.add_argument("--doc_stride", type=int, help="Pieces between context windows.")
    parser.add_argument("--max_query_length", type=int, help="Question pieces kept.")
    parser.add_argument("--n_best_size", type=int, help="Spans considered per question.")
    parser.add_argument("--max_answer_length", type=int, help="Longest answer, in pieces.")
    add_boolean(parser, "--version_2_with_negative", help="SQuAD v2.0: questions may have no answer.")
    parser.add_argument("--null_score_diff_threshold", type=float, help="v2.0: answer only above this margin.")
    parser.add_argument("--train_batch_size", type=int, help="Windows per step.")
    parser.add_argument("--learning_rate", type=float, help="Peak rate of BERT's AdamW schedule.")
    parser.add_argument("--num_train_epochs", type=whole_number, help="Passes over the training data.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the held-out split and the training.")
    args = parser.parse_args(argv)
    apply_quick(args, "squad", max_train_examples=160, max_eval_examples=80, max_seq_length=128, doc_stride=64,
                train_batch_size=16, learning_rate=1e-4, num_train_epochs=2)
    if not (args.train_file or args.quick):
        parser.error("--train_file is required (or --quick)")
    train_file = args.train_file or shared_data("squad", "dev-v1.1-sample-articles0-2.json")

    import keras_bert_zoo as kbz

    train = kbz.data.read_squad(train_file)
    if args.predict_file:
        dev = kbz.data.read_squad(args.predict_file)
    else:
        train, dev = train.split(args.eval_fraction, seed=args.seed)
    train = train.head(args.max_train_examples) if args.max_train_examples else train
    dev = dev.head(args.max_eval_examples) if args.max_eval_examples else dev

    reader = kbz.BertQuestionAnswerer.from_preset(args.preset, **given(
        args, sequence_length="max_seq_length", doc_stride="doc_stride", max_query_length="max_query_length",
        n_best_size="n_best_size", max_answer_length="max_answer_length",
        version_2_with_negative="version_2_with_negative", null_score_diff_threshold="null_score_diff_threshold"))
    reader.compile(**given(args, learning_rate="learning_rate"))
    kbz.finetune(reader, train, None, args.output_dir, seed=args.seed, overwrite_output_dir=args.overwrite_output_dir,
                 **given(args, epochs="num_train_epochs", batch_size="train_batch_size"))
    answers = reader.predict_answers(dev)
    predictions = {question_id: answer["answer"] for question_id, answer in zip(dev.ids, answers)}
    with open(os.path.join(args.output_dir, "predictions.json.tmp"), "w") as f:
        json.dump(predictions, f, indent=2)
    os.replace(os.path.join(args.output_dir, "predictions.json.tmp"), os.path.join(args.output_dir, "predictions.json"))
    gold = {question_id: [text for text, _ in golds] for question_id, golds in zip(dev.ids, dev.answers)}
    write_metrics(args.output_dir, {"train_questions": len(train), "eval_questions": len(dev),
                                    **kbz.metrics.squad_scores(predictions, gold)})


if __name__ == "__main__":
    run(main)
