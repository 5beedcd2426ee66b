"""Fine-tune a tagger for biomedical named entities (BioBERT's NER recipe: NCBI-disease, BC5CDR, BC2GM).

Reads DATA_DIR/train.tsv and DATA_DIR/devel.tsv (BioBERT's CoNLL files:
word<TAB>tag, blank line between sentences; without devel.tsv, --eval_fraction
of train is held out). Scores entity-level precision / recall / F1 as
conlleval does; writes OUTPUT_DIR/model, metrics.json and logs.

    python examples/run_ner.py --data_dir NERdata/NCBI-disease --preset biobert_v1.1_base_en_cased
    python examples/run_ner.py --quick
"""

import os

from recipe import apply_quick
from recipe import given
from recipe import recipe_parser
from recipe import run
from recipe import shared_data
from recipe import whole_number
from recipe import write_metrics


def main(argv=None):
    parser = recipe_parser(__doc__.split("\n")[0])
    parser.add_argument("--data_dir", help="Folder of train.tsv (and devel.tsv).")
    parser.add_argument("--eval_fraction", type=float, default=0.1, help="Held out of train without devel.tsv.")
    parser.add_argument("--max_train_examples", type=int, help="Train on the first N sentences only.")
    parser.add_argument("--max_eval_examples", type=int, help="Score the first N evaluation sentences only.")
    parser.add_argument("--max_seq_length", type=int, help="Window in word pieces (longer sentences are strided).")
    parser.add_argument("--train_batch_size", type=int, help="Windows per step.")
    parser.add_argument("--learning_rate", type=float, help="Peak rate of BERT's AdamW schedule.")
    parser.add_argument("--num_train_epochs", type=whole_number, help="Passes over the training data.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the held-out split and the training.")
    args = parser.parse_args(argv)
    apply_quick(args, "ner", max_train_examples=500, max_eval_examples=200, max_seq_length=64, train_batch_size=16,
                learning_rate=1e-4, num_train_epochs=3)
    if not (args.data_dir or args.quick):
        parser.error("--data_dir is required (or --quick)")
    data_dir = args.data_dir or shared_data("ner", "NCBI-disease")

    import keras_bert_zoo as kbz

    train = kbz.data.read_conll(os.path.join(data_dir, "train.tsv"))
    devel = os.path.join(data_dir, "devel.tsv")
    if os.path.exists(devel):
        dev = kbz.data.read_conll(devel, label_names=train.label_names)
    else:
        train, dev = train.split(args.eval_fraction, seed=args.seed)
    train = train.head(args.max_train_examples) if args.max_train_examples else train
    dev = dev.head(args.max_eval_examples) if args.max_eval_examples else dev

    tagger = kbz.BertTokenClassifier.from_preset(args.preset, label_names=train.label_names,
                                                 **given(args, sequence_length="max_seq_length"))
    tagger.compile(**given(args, learning_rate="learning_rate"))
    kbz.finetune(tagger, train, None, args.output_dir, validation_data=dev, seed=args.seed,
                 overwrite_output_dir=args.overwrite_output_dir,
                 **given(args, epochs="num_train_epochs", batch_size="train_batch_size"))
    scores = tagger.evaluate_entities(dev.words, dev.tags)
    write_metrics(args.output_dir, {"train_sentences": len(train), "eval_sentences": len(dev),
                                    **{"entity_" + name: value for name, value in scores.items()}})


if __name__ == "__main__":
    run(main)
