"""Fine-tune a tagger for biomedical named entities (BioBERT's NER recipe: NCBI-disease, BC5CDR, BC2GM).

Reads DATA_DIR/train.tsv and DATA_DIR/devel.tsv (BioBERT's CoNLL files:
word<TAB>tag, blank line between sentences; without devel.tsv, --eval_fraction
of train is held out). Scores entity-level precision / recall / F1 as
conlleval does; writes OUTPUT_DIR/model, metrics.json and logs.

    python examples/run_ner.py --data_dir NERdata/NCBI-disease --preset biobert_v1.1_base_en_cased
    python examples/run_ner.py --quick
"""

import os
import sys

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
    parser.add_argument("--data_dir", help="Folder of train.tsv (and devel.tsv).")
    add_finetuning_flags(parser, "sentences", "without devel.tsv")
    args = parser.parse_args(argv)
    apply_quick(args, "ner", max_train_examples=500, max_eval_examples=200, max_seq_length=64, train_batch_size=16,
                learning_rate=1e-4, num_train_epochs=3)
    if not (args.data_dir or args.quick):
        parser.error("--data_dir is required (or --quick)")
    data_dir = args.data_dir or shared_data("ner", "NCBI-disease")

    import keras_bert_zoo as kbz

    train = kbz.data.read_conll(os.path.join(data_dir, "train.tsv"))
    devel = os.path.join(data_dir, "devel.tsv")
    dev = kbz.data.read_conll(devel, label_names=train.label_names) if os.path.exists(devel) else None
    train, dev = train_and_held_out(train, dev, args)

    tagger = kbz.BertTokenClassifier.from_preset(args.preset, label_names=train.label_names,
                                                 **given(args, sequence_length="max_seq_length"))
    finetune(tagger, train, dev, args)
    scores = tagger.evaluate_entities(dev.words, dev.tags)
    write_metrics(args.output_dir, {"train_sentences": len(train), "eval_sentences": len(dev),
                                    **{"entity_" + name: value for name, value in scores.items()}})
    if not scores["predicted_entities"]:
        # Entity tags are rare: a short run first learns to tag everything O.
        print(f"The tagger finds no entities yet (scores 0 of {scores['gold_entities']}): it tags every word O, "
              f"the commonest tag, after {len(train)} sentences. Train on more (--max_train_examples, "
              "--num_train_epochs), as --quick's defaults do.", file=sys.stderr)


if __name__ == "__main__":
    run(main)
