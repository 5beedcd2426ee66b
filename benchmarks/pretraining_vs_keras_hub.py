"""Pretraining throughput: instance creation, and training steps/s of our
BertPretrainer (masked-LM + next sentence) beside keras-hub's BertMaskedLM
(masked-LM only), same backbone size, same batches, one process.

    python benchmarks/pretraining_vs_keras_hub.py [--steps 20] [--batch_size 32]

Data: WikiText-2 validation (shared/data), tokenized with the offline default
preset's vocabulary; instances as create_pretraining_data.py makes them
(max_seq_length 128, max_predictions_per_seq 20). Models: a fresh MiniLM-size
BERT (6 layers, hidden 384, 12 heads) in float32, AdamW, batch 32. keras-hub
trains on the same masked positions and weights; it has no NSP head, so it
does strictly less work per step.
"""

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402

import keras_bert_zoo as kbz  # noqa: E402
from keras_bert_zoo.data.pretraining_records import pretraining_batches  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("KERAS_BERT_ZOO_SHARED_DATA", os.path.join(ROOT, os.pardir, "shared", "data"))
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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--output", default=os.path.join(ROOT, "benchmarks", "results",
                                                         "pretraining_vs_keras_hub_cpu2.json"))
    args = parser.parse_args()

    tokenizer = kbz.BertTokenizer.from_preset(kbz.DEFAULT_PRESET)
    instances, data = data_throughput(tokenizer)
    print("data", data, flush=True)

    keras.utils.set_random_seed(0)
    ours = kbz.BertPretrainer(kbz.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), **SIZE))
    ours.compile(learning_rate=1e-4)
    hub_backbone = keras_hub.models.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), **SIZE)
    hub = keras_hub.models.BertMaskedLM(hub_backbone, preprocessor=None)
    hub.compile(optimizer=kbz.bert_adamw(1e-4), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                weighted_metrics=["sparse_categorical_accuracy"])

    ours_ds = pretraining_batches(instances, args.batch_size, repeat=True)
    hub_ds = ours_ds.map(lambda x, y, w: (x, y["masked_lm_logits"], w["masked_lm_logits"]))
    results = {"ours": [], "keras_hub": []}
    for _ in range(args.rounds):  # interleaved, so both see the same machine state
        results["ours"].append(steps_per_second(ours, ours_ds, args.steps))
        results["keras_hub"].append(steps_per_second(hub, hub_ds, args.steps))
        print({k: [round(v, 3) for v in values] for k, values in results.items()}, flush=True)
    ours_rate, hub_rate = max(results["ours"]), max(results["keras_hub"])
    report = {
        "data": data,
        "train_steps_per_s": {"keras_bert_zoo_mlm_nsp": round(ours_rate, 3), "keras_hub_mlm_only": round(hub_rate, 3),
                              "ratio": round(ours_rate / hub_rate, 2)},
        "setup": {"model": SIZE, "batch_size": args.batch_size, "max_seq_length": 128, "max_predictions_per_seq": 20,
                  "steps_timed": args.steps, "rounds": args.rounds, "cpu_cores": os.cpu_count()},
    }
    print(json.dumps(report, indent=2))
    with open(args.output, "w") as f:
        json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
