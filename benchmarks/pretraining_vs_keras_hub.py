"""Pretraining throughput: instance creation, and training steps/s of our
BertPretrainer (masked-LM + next sentence) beside keras-hub's BertMaskedLM
(masked-LM only), same backbone size, same batches, one process.

    python benchmarks/pretraining_vs_keras_hub.py [--steps 20] [--batch_size 32] [--rounds 3]

Data: WikiText-2 validation (shared/data), tokenized with the offline default
preset's vocabulary; instances as create_pretraining_data.py makes them
(max_seq_length 128, max_predictions_per_seq 20). Models: a fresh MiniLM-size
BERT (6 layers, hidden 384, 12 heads) in float32, AdamW, batch 32. keras-hub
trains on the same masked positions and weights; it has no NSP head, so it
does strictly less work per step. Each round times both, the order rotating;
the ratio is taken round by round (median, min, max).
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras_bert_zoo as kbz  # noqa: E402  (first: its kernel default applies only before TensorFlow loads)
from keras_bert_zoo.data.pretraining_records import pretraining_batches  # noqa: E402

import keras  # noqa: E402
import keras_hub  # noqa: E402

from benchmarks import machine, results_file, stats  # noqa: E402

SHARED = os.environ.get("KERAS_BERT_ZOO_SHARED_DATA", os.path.join(results_file.ROOT, os.pardir, "shared", "data"))
SIZE = {"num_layers": 6, "num_heads": 12, "hidden_dim": 384, "intermediate_dim": 1536, "max_sequence_length": 512}


def data_throughput(tokenizer):
    """Instance creation is single-threaded Python (one core); tokenization
    (TF-Text, in batches) is timed separately."""
    start = time.perf_counter()
    documents = kbz.data.read_documents(os.path.join(SHARED, "corpus", "wikitext-2", "valid.txt"), tokenizer,
                                        corpus_format="wikitext")
    tokenized = time.perf_counter()
    instances = kbz.create_pretraining_instances(documents, tokenizer, kbz.PretrainingDataConfig(dupe_factor=5))
    done = time.perf_counter()
    count = len(instances["token_ids"])
    return instances, {
        "instances": count,
        "tokenize_s": round(tokenized - start, 2),
        "instances_per_s_one_core": round(count / (done - tokenized), 1),
        "instances_per_s_with_tokenization": round(count / (done - start), 1),
    }


def steps_per_second(model, dataset, steps):
    model.fit(dataset.take(3), verbose=0)  # trace and warm up
    start = time.perf_counter()
    model.fit(dataset.take(steps), verbose=0)
    return steps / (time.perf_counter() - start)


def main():
    parser = results_file.script_parser(__doc__, "pretraining_vs_keras_hub_cpu2.json",
                                        "timing rounds, the order rotating")
    parser.add_argument("--steps", type=int, default=20, help="steps timed per peer per round")
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args()
    results_file.check_flags(parser, args.rounds, args.output_file)

    document = results_file.new_document("python benchmarks/pretraining_vs_keras_hub.py " + " ".join(sys.argv[1:]))
    document["versions"]["tensorflow_onednn"] = machine.tensorflow_onednn()
    tokenizer = kbz.BertTokenizer.from_preset(kbz.DEFAULT_PRESET)
    instances, document["data"] = data_throughput(tokenizer)
    print("data", document["data"], flush=True)

    keras.utils.set_random_seed(0)
    ours = kbz.BertPretrainer(kbz.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), **SIZE))
    ours.compile(learning_rate=1e-4)
    hub_backbone = keras_hub.models.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), **SIZE)
    hub = keras_hub.models.BertMaskedLM(hub_backbone, preprocessor=None)
    hub.compile(optimizer=kbz.bert_adamw(1e-4), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                weighted_metrics=["sparse_categorical_accuracy"])

    ours_ds = pretraining_batches(instances, args.batch_size, repeat=True)
    hub_ds = ours_ds.map(lambda x, y, w: (x, y["masked_lm_logits"], w["masked_lm_logits"]))
    peers = {"keras_bert_zoo_mlm_nsp": (ours, ours_ds), "keras_hub_mlm_only": (hub, hub_ds)}
    rates = {name: [] for name in peers}
    for r in range(args.rounds):
        for name in list(peers)[r % 2:] + list(peers)[:r % 2]:
            rates[name].append(steps_per_second(*peers[name], args.steps))
        print({k: [round(v, 3) for v in values] for k, values in rates.items()}, flush=True)
    document["train_steps_per_s"] = {name: stats.summary(values) for name, values in rates.items()}
    document["train_steps_per_s"]["ratio"] = stats.round_ratios(*rates.values())
    document["setup"] = {"model": SIZE, "batch_size": args.batch_size, "max_seq_length": 128,
                         "max_predictions_per_seq": 20, "steps_timed": args.steps, "rounds": args.rounds}
    results_file.write_document(args.output_file, document)
    print(json.dumps(document["train_steps_per_s"], indent=1))
    print(f"wrote {args.output_file}")


if __name__ == "__main__":
    main()
