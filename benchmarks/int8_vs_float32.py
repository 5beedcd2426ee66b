"""Weight-quantized int8 (Keras' `quantize("int8")`) against float32 for CPU
serving: speed, size and held-out accuracy, on a classifier fine-tuned here.

    python benchmarks/int8_vs_float32.py [--rounds 3] [--train_examples 2000] [--eval_examples 1000]
        [--output_file benchmarks/results/int8_vs_float32_cpu2.json]

The offline default preset (MiniLM-L6) is fine-tuned for one epoch on the
first `--train_examples` SST-2 train sentences and scored on the next
`--eval_examples` (held out), as float32 and after `quantize("int8")` (int8
kernels with per-channel scales, inputs quantized per token on each call:
Keras' int8 path). Timed: the classifier on packed inputs at 32x128 and
1x128, both models in one process, the order alternating round by round;
and TensorFlow's matmul alone at the encoder's feed-forward shapes in
float32, bfloat16 and int8 (int8 x int8 -> int32, what the int8 path runs).
Size: the `.weights.h5` files. The project ships int8 as an export option
only if it is >= 1.3x faster at <= 0.5 point accuracy loss.
"""

import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import machine, results_file, stats  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESET = "minilm_l6_h384_en_uncased"
SHARED = os.environ.get("KERAS_BERT_ZOO_SHARED_DATA", os.path.join(ROOT, os.pardir, "shared", "data"))
# (rows, inner, columns): the feed-forward products of MiniLM and Base at 32x128.
GEMMS = ((4096, 384, 1536), (4096, 768, 3072))


def _seconds(function, repeats):
    function()
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats


def gemm_rates(repeats=5):
    """GFLOP/s of one matmul per dtype at each shape."""
    import tensorflow as tf

    rates = {}
    for rows, inner, columns in GEMMS:
        a, b = tf.random.normal([rows, inner]), tf.random.normal([inner, columns])
        operands = {"float32": (a, b, None), "bfloat16": (tf.cast(a, "bfloat16"), tf.cast(b, "bfloat16"), None),
                    "int8": (tf.cast(a * 20, "int8"), tf.cast(b * 20, "int8"), tf.int32)}
        for dtype, (x, y, output_type) in operands.items():
            product = tf.function(lambda x=x, y=y, output_type=output_type: tf.matmul(x, y, output_type=output_type))
            seconds = _seconds(product, repeats)
            rates[f"{rows}x{inner}x{columns}_{dtype}"] = round(2 * rows * inner * columns / seconds / 1e9, 1)
    return rates


def main():
    parser = results_file.script_parser(__doc__, "int8_vs_float32_cpu2.json", "timing rounds, the order alternating")
    parser.add_argument("--train_examples", type=int, default=2000,
                        help="SST-2 sentences fine-tuned on (default: %(default)s)")
    parser.add_argument("--eval_examples", type=int, default=1000,
                        help="the next SST-2 sentences, held out and scored (default: %(default)s)")
    args = parser.parse_args()
    results_file.check_flags(parser, args.rounds, args.output_file)

    import keras_bert_zoo as kbz  # first: its kernel default applies only before TensorFlow loads

    import keras
    import numpy as np

    document = results_file.new_document("python benchmarks/int8_vs_float32.py " + " ".join(sys.argv[1:]))
    document["versions"]["tensorflow_onednn"] = machine.tensorflow_onednn()
    sst2 = kbz.data.read_glue(os.path.join(SHARED, "glue", "SST-2", "train.tsv"))
    texts, labels = list(sst2.texts), np.asarray(sst2.labels)
    train = slice(0, args.train_examples)
    held_out = slice(args.train_examples, args.train_examples + args.eval_examples)
    document["setup"] = {"preset": PRESET, "data": "SST-2 train.tsv: the first examples train, the next are held out",
                         "train_examples": args.train_examples, "eval_examples": args.eval_examples, "epochs": 1,
                         "batch_size": 32, "sequence_length": 64, "rounds": args.rounds}

    keras.utils.set_random_seed(0)
    models = {"float32": kbz.BertClassifier.from_preset(PRESET, num_classes=2, sequence_length=64)}
    models["float32"].fit(texts[train], labels[train], epochs=1, batch_size=32)
    with tempfile.TemporaryDirectory() as directory:
        paths = {"float32": os.path.join(directory, "float32.weights.h5"),
                 "int8": os.path.join(directory, "int8.weights.h5")}
        models["int8"] = kbz.BertClassifier.from_preset(PRESET, num_classes=2, sequence_length=64)
        models["int8"].set_weights(models["float32"].get_weights())
        # Saved from the uncompiled copy: the fitted model's file would hold its optimizer's slots too.
        models["int8"].save_weights(paths["float32"])
        models["int8"].quantize("int8")
        models["int8"].save_weights(paths["int8"])
        document["weights_mb"] = {k: round(os.path.getsize(p) / 2**20, 1) for k, p in paths.items()}

    document["held_out_accuracy"] = {}
    for name, model in models.items():
        predicted = model.predict_labels(texts[held_out])
        document["held_out_accuracy"][name] = round(100 * float(np.mean(np.asarray(predicted) == labels[held_out])), 2)

    document["seq_per_s"], ratios = {}, {}
    for batch in (32, 1):
        packed = models["float32"].preprocessor(texts[held_out][:batch])
        packed = {k: np.pad(v.numpy(), [(0, 0), (0, 128 - v.shape[1])]) for k, v in packed.items()}  # x128
        figures = {name: [] for name in models}
        for r in range(args.rounds):
            for name in (("float32", "int8") if r % 2 == 0 else ("int8", "float32")):
                seconds = _seconds(lambda m=models[name]: m.predict_on_batch(packed), repeats=3 if batch > 1 else 10)
                figures[name].append(batch / seconds)
        document["seq_per_s"][f"{batch}x128"] = {name: stats.summary(v) for name, v in figures.items()}
        ratios[f"{batch}x128"] = stats.round_ratios(figures["int8"], figures["float32"])
    document["speed_ratio_int8/float32"] = ratios
    document["gemm_gflop_per_s"] = gemm_rates()
    document["accuracy_change_points"] = round(document["held_out_accuracy"]["int8"]
                                               - document["held_out_accuracy"]["float32"], 2)
    results_file.write_document(args.output_file, document)
    print(json.dumps({k: document[k] for k in ("held_out_accuracy", "weights_mb", "speed_ratio_int8/float32",
                                                "gemm_gflop_per_s")}, indent=1))
    print(f"wrote {args.output_file}")


if __name__ == "__main__":
    main()
