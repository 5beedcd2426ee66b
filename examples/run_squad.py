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

from keras_bert_zoo.cli.flag_types import add_boolean_flag
from keras_bert_zoo.cli.flag_types import finite_float
from keras_bert_zoo.cli.flag_types import positive_int

from recipe import add_finetuning_flags
from recipe import apply_quick
from recipe import finetune
from recipe import given
from recipe import recipe_parser
from recipe import run
from recipe import shared_data
from recipe import train_and_held_out
from recipe import write_metrics


def main(argv=None):
    parser = recipe_parser(__doc__.split("\n")[0])
    parser.add_argument("--train_file", help="SQuAD-format JSON to train on.")
    parser.add_argument("--predict_file", help="SQuAD-format JSON to answer and score.")
    add_finetuning_flags(parser, "questions", "without --predict_file")
    parser.add_argument("--doc_stride", type=positive_int, help="Pieces between context windows.")
    parser.add_argument("--max_query_length", type=positive_int, help="Question pieces kept.")
    parser.add_argument("--n_best_size", type=positive_int, help="Spans considered per question.")
    parser.add_argument("--max_answer_length", type=positive_int, help="Longest answer, in pieces.")
    add_boolean_flag(parser, "--version_2_with_negative", help="SQuAD v2.0: questions may have no answer.")
    parser.add_argument("--null_score_diff_threshold", type=finite_float, help="v2.0: answer only above this margin.")
    args = parser.parse_args(argv)
    apply_quick(args, "squad", max_train_examples=160, max_eval_examples=80, max_seq_length=128, doc_stride=64,
                train_batch_size=16, learning_rate=1e-4, num_train_epochs=2)
    if not (args.train_file or args.quick):
        parser.error("--train_file is required (or --quick)")
    train_file = args.train_file or shared_data("squad", "dev-v1.1-sample-articles0-2.json")

    import keras_bert_zoo as kbz

    train = kbz.data.read_squad(train_file)
    dev = kbz.data.read_squad(args.predict_file) if args.predict_file else None
    train, dev = train_and_held_out(train, dev, args)

    reader = kbz.BertQuestionAnswerer.from_preset(args.preset, **given(
        args, sequence_length="max_seq_length", doc_stride="doc_stride", max_query_length="max_query_length",
        n_best_size="n_best_size", max_answer_length="max_answer_length",
        version_2_with_negative="version_2_with_negative", null_score_diff_threshold="null_score_diff_threshold"))
    finetune(reader, train, None, args)
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
