"""Serving benchmark: our raw-text SavedModel vs the best keras-hub export,
same weights, each loaded in a fresh process, on real sentence lengths.

    python benchmarks/serving_vs_keras_hub.py [--max_seq_length 128] [--requests 300] [--batches 60]

keras-hub's own exports take token ids; the best it can do for text is its
`BertTextClassifier` wrapped by hand in `keras.export.ExportArchive` together
with its preprocessor, which pads every request to `sequence_length`. Ours
(`BertClassifier.export`) tokenizes in the graph and packs each request to
the bucket of its longest text. Both classifiers carry the offline default
preset's weights (MiniLM-L6) and the same head. Timed on SST-2 train
sentences (shared/data): throughput and p50/p95 latency at batch 1 and 32.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESET = "minilm_l6_h384_en_uncased"
SHARED = os.environ.get("KERAS_BERT_ZOO_SHARED_DATA", os.path.join(ROOT, os.pardir, "shared", "data"))


def build_exports(directory, sequence_length):
    import keras
    import keras_hub
    import tensorflow as tf

    import keras_bert_zoo as kbz

    keras.utils.set_random_seed(0)
    ours = kbz.BertClassifier.from_preset(PRESET, num_classes=2, sequence_length=sequence_length)
    ours_path = ours.export(directory, model_name="ours")

    backbone = ours.backbone
    config = {k: getattr(backbone, k) for k in ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                                                "intermediate_dim", "max_sequence_length", "num_segments")}
    hub_backbone = keras_hub.models.BertBackbone(**config)
    hub_backbone.set_weights(backbone.get_weights())
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=ours.preprocessor.tokenizer.get_vocabulary(), lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=sequence_length)
    hub = keras_hub.models.BertTextClassifier(hub_backbone, num_classes=2, preprocessor=None)
    hub.output_dense.set_weights(ours.output_dense.get_weights())

    preprocessor(tf.constant(["build"]))  # ExportArchive only tracks built layers
    archive = keras.export.ExportArchive()
    archive.track(hub)
    archive.track(preprocessor)

    def serve(text):
        return {"probabilities": tf.nn.softmax(hub(preprocessor(text), training=False), axis=-1)}

    archive.add_endpoint("serve", serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    hub_path = os.path.join(directory, "keras_hub", "1")
    archive.write_out(hub_path, verbose=False)
    return {"keras_bert_zoo": (ours_path, "classify"), "keras_hub": (hub_path, "serve")}


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def worker(path, signature, out, requests, batches):
    """Fresh process: load one export, time it on SST-2 sentences."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from keras_bert_zoo.data.glue import read_glue

    texts = [t for t in read_glue(os.path.join(SHARED, "glue", "SST-2", "train.tsv")).texts]
    function = tf.saved_model.load(path).signatures[signature]

    def call(batch):
        outputs = function(text=tf.constant(batch))
        return {k: v.numpy() for k, v in outputs.items()}

    result = {}
    for batch_size, count in ((1, requests), (32, batches)):
        for i in range(3):  # warm-up: tracing caches, oneDNN primitives
            call(texts[i * batch_size : (i + 1) * batch_size])
        latencies = []
        start = 3 * batch_size
        for i in range(count):
            batch = texts[start + i * batch_size : start + (i + 1) * batch_size]
            t0 = time.perf_counter()
            call(batch)
            latencies.append(time.perf_counter() - t0)
        result[f"batch_{batch_size}"] = {
            "sentences_per_s": round(batch_size * count / sum(latencies), 1),
            "p50_ms": round(1000 * percentile(latencies, 50), 2),
            "p95_ms": round(1000 * percentile(latencies, 95), 2),
        }
    with open(out, "w") as f:
        json.dump(result, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--requests", type=int, default=300, help="batch-1 requests timed")
    parser.add_argument("--batches", type=int, default=60, help="batch-32 requests timed")
    parser.add_argument("--output", default=os.path.join(ROOT, "benchmarks", "results", "serving_vs_keras_hub_cpu2.json"))
    parser.add_argument("--worker", nargs=3, metavar=("PATH", "SIGNATURE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker, args.requests, args.batches)

    with tempfile.TemporaryDirectory() as directory:
        exports = build_exports(directory, args.max_seq_length)
        results = {}
        for name, (path, signature) in exports.items():  # one after the other, never concurrently
            out = os.path.join(directory, name + ".json")
            subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", path, signature, out,
                            "--requests", str(args.requests), "--batches", str(args.batches)], check=True)
            results[name] = json.load(open(out))
            print(name, results[name], flush=True)
    for key in ("batch_1", "batch_32"):
        results[f"ratio_{key}"] = round(results["keras_bert_zoo"][key]["sentences_per_s"]
                                        / results["keras_hub"][key]["sentences_per_s"], 2)
    results["setup"] = {"preset": PRESET, "max_seq_length": args.max_seq_length, "cpu_cores": os.cpu_count(),
                        "data": "SST-2 train sentences, in file order"}
    print(json.dumps(results, indent=2))
    with open(args.output, "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
