"""MRPC fine-tuning: keras_bert_zoo's BertClassifier vs keras-hub's
BertTextClassifier, same weights (the offline default preset), same split,
same recipe, in one script.

    python benchmarks/mrpc_vs_keras_hub.py [--epochs 3] [--max_seq_length 128] [--output_file ...]

The recipe is run_classifier.py's: AdamW (weight decay 0.01, LayerNorm and
biases excluded), 10% linear warm-up then linear decay, batch 32, 3 epochs.
10% of shared/data/glue/MRPC/train.tsv (seeded) is held out for evaluation,
since the dev set is not in the shared data. Reports accuracy / F1 on the
held-out part and training steps/s (epochs after the first, which includes
tracing) for both, and their ratios. The peers train one after the other (a
whole fine-tuning run each), so compare this file's ratio with care: the
interleaved per-step figures are `python -m benchmarks run --jobs train`'s.
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras_bert_zoo as kbz  # noqa: E402  (first: its kernel default applies only before TensorFlow loads)
from keras_bert_zoo.data.glue import read_glue  # noqa: E402
from keras_bert_zoo.metrics.classification_metrics import accuracy  # noqa: E402
from keras_bert_zoo.metrics.classification_metrics import binary_f1  # noqa: E402

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks import machine, results_file  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "shared", "data", "glue", "MRPC", "train.tsv")
PRESET = "minilm_l6_h384_en_uncased"


class EpochTimer(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self.start)

    def on_train_begin(self, logs=None):
        self.times = []


def steps_per_second(timer, steps_per_epoch):
    later = timer.times[1:] or timer.times
    return steps_per_epoch / float(np.mean(later))


def run_ours(train, held_out, args):
    clf = kbz.BertClassifier.from_preset(PRESET, num_classes=2, sequence_length=args.max_seq_length)
    clf.compile(learning_rate=args.learning_rate)
    timer = EpochTimer()
    clf.fit(train.texts, train.labels, epochs=args.epochs, batch_size=args.batch_size, callbacks=[timer], verbose=2)
    predictions = clf.predict_proba(held_out.texts).argmax(-1)
    return predictions, timer


def run_keras_hub(train, held_out, args):
    ours = kbz.BertBackbone.from_preset(PRESET)
    config = {k: getattr(ours, k) for k in ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                                            "intermediate_dim", "max_sequence_length", "num_segments")}
    backbone = keras_hub.models.BertBackbone(**config)
    backbone.set_weights(ours.get_weights())
    tokenizer = keras_hub.models.BertTokenizer(
        vocabulary=kbz.BertTokenizer.from_preset(PRESET).get_vocabulary(), lowercase=True
    )
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=args.max_seq_length)
    clf = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor)
    steps = int(np.ceil(len(train) / args.batch_size)) * args.epochs
    clf.compile(
        optimizer=kbz.bert_adamw(args.learning_rate, total_steps=steps),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    x = tuple(np.array(column) for column in zip(*train.texts))
    timer = EpochTimer()
    clf.fit(x=x, y=np.array(train.labels), epochs=args.epochs, batch_size=args.batch_size, callbacks=[timer],
            verbose=2, shuffle=True)
    logits = clf.predict(tuple(np.array(column) for column in zip(*held_out.texts)), batch_size=args.batch_size)
    return logits.argmax(-1), timer


def main():
    parser = results_file.script_parser(__doc__, "mrpc_vs_keras_hub_cpu2.json")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    results_file.check_output_file(parser, args.output_file)

    document = results_file.new_document("python benchmarks/mrpc_vs_keras_hub.py " + " ".join(sys.argv[1:]))
    document["versions"]["tensorflow_onednn"] = machine.tensorflow_onednn()
    train, held_out = read_glue(args.data).split(0.1, seed=args.seed)
    steps_per_epoch = int(np.ceil(len(train) / args.batch_size))
    setup = {k: v for k, v in vars(args).items() if k != "output_file"}
    # Relative to the repository: a results file names no machine's directories.
    setup["data"] = os.path.relpath(os.path.abspath(args.data), results_file.ROOT)
    document["setup"] = {"train_examples": len(train), "held_out_examples": len(held_out), **setup}
    for name, run in (("keras_bert_zoo", run_ours), ("keras_hub", run_keras_hub)):
        keras.utils.set_random_seed(args.seed)
        predictions, timer = run(train, held_out, args)
        document[name] = {
            "accuracy": accuracy(held_out.labels, predictions),
            "f1": binary_f1(held_out.labels, predictions),
            "train_steps_per_s": steps_per_second(timer, steps_per_epoch),
            "epoch_seconds": timer.times,
        }
        print(name, json.dumps(document[name]), flush=True)
        keras.backend.clear_session()
    ours, hub = document["keras_bert_zoo"], document["keras_hub"]
    document["accuracy_difference_points"] = 100 * (ours["accuracy"] - hub["accuracy"])
    document["steps_per_s_ratio"] = ours["train_steps_per_s"] / hub["train_steps_per_s"]
    results_file.write_document(args.output_file, document)
    print(json.dumps({k: document[k] for k in ("accuracy_difference_points", "steps_per_s_ratio")}))
    print(f"wrote {args.output_file}")


if __name__ == "__main__":
    main()
