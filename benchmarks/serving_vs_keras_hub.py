"""Serving benchmark: our raw-text SavedModel vs the best keras-hub export,
same weights, fresh processes, real sentences, one client and eight at once.

    python benchmarks/serving_vs_keras_hub.py [--rounds 3] [--max_seq_length 128]
        [--dtype float32|bfloat16|mixed_bfloat16] [--output_file benchmarks/results/serving_vs_keras_hub_cpu2.json]

keras-hub's own exports take token ids; the best it can do for text is its
`BertTextClassifier` wrapped by hand in `keras.export.ExportArchive` together
with its preprocessor, which pads every request to `sequence_length`. Ours
(`BertClassifier.export`) tokenizes in the graph and packs each request to
the bucket of its longest text. Both carry the offline default preset's
weights (MiniLM-L6) and the same head, in `--dtype` (bfloat16 weights halve
the export and, on CPUs with AMX, ran 1.3-1.9x faster; `mixed_bfloat16`
keeps float32 variables, of which ours stores the encoder's kernels in
bfloat16 and keras-hub's casts them on every request).

Each round loads each export in a fresh process (the order alternating round
by round) and times SST-2 train sentences in these scenarios:

- 1 client sending batch-1 / batch-32 requests back to back;
- 8 clients (threads) at once, each sending batch-1 / batch-32 requests,
  straight into the signature (TF runs the calls concurrently), and through
  TF's own batching op (`BatchFunction`, the op behind in-graph batching;
  TF Serving's `--enable_batching` uses the same batch scheduler) with the
  settings of the `batching_parameters.txt` our export writes.

A figure is sentences/s over all clients and p50/p95 request latency; ratios
are per round (ours / keras-hub), summarized as median, min and max.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import machine, results_file, stats  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESET = "minilm_l6_h384_en_uncased"
SHARED = os.environ.get("KERAS_BERT_ZOO_SHARED_DATA", os.path.join(ROOT, os.pardir, "shared", "data"))
PEERS = ("keras_bert_zoo", "keras_hub")
# (clients, batch size, through TF's batching op); requests per client.
SCENARIOS = ((1, 1, False), (1, 32, False), (8, 1, False), (8, 1, True), (8, 32, False), (8, 32, True))
REQUESTS = {1: 24, 32: 3}


def scenario_name(clients, batch_size, batching):
    return f"{clients}_clients_batch_{batch_size}" + ("_tf_batching" if batching else "")


def build_exports(directory, sequence_length, dtype):
    import keras
    import keras_hub
    import tensorflow as tf

    import keras_bert_zoo as kbz
    from keras_bert_zoo.export.batching_parameters import BATCHING_FILE

    keras.utils.set_random_seed(0)
    ours = kbz.BertClassifier.from_preset(PRESET, num_classes=2, sequence_length=sequence_length, dtype=dtype)
    ours_path = ours.export(directory, model_name="ours")

    backbone = ours.backbone
    config = {k: getattr(backbone, k) for k in ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                                                "intermediate_dim", "max_sequence_length", "num_segments")}
    hub_backbone = keras_hub.models.BertBackbone(**config, dtype=dtype)
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
    # Both peers batch with the settings our export ships.
    batching_file = os.path.join(os.path.dirname(ours_path), BATCHING_FILE)
    return {"keras_bert_zoo": (ours_path, "classify"), "keras_hub": (hub_path, "serve")}, batching_file


def read_batching_parameters(path):
    """The `name { value: N }` lines of TF Serving's batching file."""
    with open(path) as f:
        return {name: int(value) for name, value in re.findall(r"^(\w+) \{ value: (\d+) \}", f.read(), re.M)}


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def worker(path, signature, batching_file, out):
    """Fresh process: load one export, time every scenario on SST-2 sentences."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from keras_bert_zoo.data.glue import read_glue

    texts = list(read_glue(os.path.join(SHARED, "glue", "SST-2", "train.tsv")).texts)
    loaded = tf.saved_model.load(path)  # kept alive: the signature refers to its variables
    signature_function = loaded.signatures[signature]
    (output_name,) = [k for k in signature_function.structured_outputs if "prob" in k]
    settings = read_batching_parameters(batching_file)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def direct(text):
        return signature_function(text=text)[output_name]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def batched(text):
        @tf.nondifferentiable_batch_function(settings["num_batch_threads"], settings["max_batch_size"],
                                             settings["batch_timeout_micros"],
                                             max_enqueued_batches=settings["max_enqueued_batches"])
        def merged(merged_text):
            return signature_function(text=merged_text)[output_name]

        return merged(text)

    # Batching must not change answers: a request merged with others (and
    # packed to their bucket) scores as it does alone.
    probe = tf.constant(texts[:4])
    np.testing.assert_allclose(batched(probe).numpy(), direct(probe).numpy(), atol=1e-4)

    result, cursor = {"tensorflow_onednn": machine.tensorflow_onednn()}, 0
    for clients, batch_size, batching in SCENARIOS:
        function = batched if batching else direct
        requests = REQUESTS[batch_size]
        slices = []
        for _ in range(clients):
            slices.append([texts[cursor + i * batch_size: cursor + (i + 1) * batch_size] for i in range(requests)])
            cursor += requests * batch_size
        for batch in slices[0][:2]:  # warm-up: tracing caches, oneDNN primitives
            function(tf.constant(batch))
        latencies, start = [], threading.Barrier(clients + 1)

        def client(batches):
            start.wait()
            for batch in batches:
                t0 = time.perf_counter()
                function(tf.constant(batch)).numpy()
                latencies.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=client, args=(s,)) for s in slices]
        for thread in threads:
            thread.start()
        start.wait()
        t0 = time.perf_counter()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - t0
        result[scenario_name(clients, batch_size, batching)] = {
            "sentences_per_s": clients * requests * batch_size / seconds,
            "p50_ms": 1000 * percentile(latencies, 50), "p95_ms": 1000 * percentile(latencies, 95)}
    with open(out, "w") as f:
        json.dump(result, f)


def summarize(rounds_by_peer):
    """Per scenario: each peer's median figures, and ours / keras-hub per round."""
    summary = {}
    for clients, batch_size, batching in SCENARIOS:
        name = scenario_name(clients, batch_size, batching)
        row = {}
        for peer, rounds in rounds_by_peer.items():
            row[peer] = {key: stats.summary([r[name][key] for r in rounds])
                         for key in ("sentences_per_s", "p50_ms", "p95_ms")}
        row["ratio_keras_bert_zoo/keras_hub"] = stats.round_ratios(
            *([r[name]["sentences_per_s"] for r in rounds_by_peer[peer]] for peer in PEERS))
        summary[name] = row
    return summary


def main():
    parser = results_file.script_parser(__doc__, "serving_vs_keras_hub_cpu2.json", "rounds of fresh processes per peer")
    parser.add_argument("--max_seq_length", type=int, default=128,
                        help="the exports' longest packed length (default: %(default)s)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "mixed_bfloat16"), default="float32",
                        help="the exports' weights and compute (bfloat16: fast on CPUs with AMX; mixed_bfloat16: "
                             "Keras' mixed policy, a model fine-tuned in mixed precision)")
    parser.add_argument("--worker", nargs=4, metavar=("PATH", "SIGNATURE", "BATCHING_FILE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker)
    results_file.check_flags(parser, args.rounds, args.output_file)

    document = results_file.new_document("python benchmarks/serving_vs_keras_hub.py " + " ".join(sys.argv[1:]))
    document["setup"] = {"preset": PRESET, "dtype": args.dtype, "max_seq_length": args.max_seq_length,
                         "rounds": args.rounds, "requests_per_client": {f"batch_{b}": n for b, n in REQUESTS.items()},
                         "data": "SST-2 train sentences, in file order"}
    with tempfile.TemporaryDirectory() as directory:
        exports, batching_file = build_exports(directory, args.max_seq_length, args.dtype)
        document["batching_parameters"] = read_batching_parameters(batching_file)
        rounds_by_peer, kernels = {peer: [] for peer in PEERS}, set()
        for r in range(args.rounds):
            for peer in PEERS[r % 2:] + PEERS[:r % 2]:
                path, signature = exports[peer]
                out = os.path.join(directory, f"{peer}_{r}.json")
                subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", path, signature,
                                batching_file, out], check=True)
                with open(out) as f:
                    figures = json.load(f)
                kernels.add(figures.pop("tensorflow_onednn"))
                if len(kernels) > 1:
                    raise RuntimeError("the serving workers loaded different TensorFlow kernels (oneDNN on in some, "
                                       "off in others): their figures would not compare. Set TF_ENABLE_ONEDNN_OPTS.")
                rounds_by_peer[peer].append(figures)
                print(f"round {r + 1} {peer}: " + "  ".join(
                    f"{k} {v['sentences_per_s']:.1f}/s" for k, v in rounds_by_peer[peer][-1].items()), flush=True)
    document["versions"]["tensorflow_onednn"] = kernels.pop()
    document["results"] = summarize(rounds_by_peer)
    results_file.write_document(args.output_file, document)
    for name, row in document["results"].items():
        ratio = row["ratio_keras_bert_zoo/keras_hub"]
        print(f"{name:34s} ours {row['keras_bert_zoo']['sentences_per_s']['median']:7.1f}/s  keras-hub "
              f"{row['keras_hub']['sentences_per_s']['median']:7.1f}/s  ratio {ratio['median']:.2f} "
              f"({ratio['min']:.2f}-{ratio['max']:.2f})")
    print(f"wrote {args.output_file}")


if __name__ == "__main__":
    main()
