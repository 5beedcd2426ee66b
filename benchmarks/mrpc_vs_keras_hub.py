"""MRPC fine-tuning: keras_bert_zoo's BertClassifier vs keras-hub's
BertTextClassifier, same weights (the offline default preset), same split,
same recipe, in one script.

    python benchmarks/mrpc_vs_keras_hub.py [--epochs 3] [--max_seq_length 128]

The recipe is run_classifier.py's: AdamW (weight decay 0.01, LayerNorm and
biases excluded), 10% linear warm-up then linear decay, batch 32, 3 epochs.
10% of shared/data/glue/MRPC/train.tsv (seeded) is held out for evaluation,
since the dev set is not in the shared data. Reports accuracy / F1 on the
held-out part and training steps/s (epochs after the first, which includes
tracing) for both, and their ratios.
"""

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402

import keras_bert_zoo as kbz  # noqa: E402
from keras_bert_zoo.data.glue import read_glue  # noqa: E402
from keras_bert_zoo.metrics.classification_metrics import accuracy  # noqa: E402
from keras_bert_zoo.metrics.classification_metrics import binary_f1  # noqa: E402

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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="Write the results here.")
    args = parser.parse_args()

    train, held_out = read_glue(args.data).split(0.1, seed=args.seed)
    steps_per_epoch = int(np.ceil(len(train) / args.batch_size))
    # Paths relative to the repository: a results file names no machine's directories.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    results = {"train_examples": len(train), "held_out_examples": len(held_out),
               **vars(args), "data": os.path.relpath(os.path.abspath(args.data), root)}
    for name, run in (("keras_bert_zoo", run_ours), ("keras_hub", run_keras_hub)):
        keras.utils.set_random_seed(args.seed)
        predictions, timer = run(train, held_out, args)
        results[name] = {
            "accuracy": accuracy(held_out.labels, predictions),
            "f1": binary_f1(held_out.labels, predictions),
            "train_steps_per_s": steps_per_second(timer, steps_per_epoch),
            "epoch_seconds": timer.times,
        }
        print(name, json.dumps(results[name]), flush=True)
        keras.backend.clear_session()
    ours, hub = results["keras_bert_zoo"], results["keras_hub"]
    results["accuracy_difference_points"] = 100 * (ours["accuracy"] - hub["accuracy"])
    results["steps_per_s_ratio"] = ours["train_steps_per_s"] / hub["train_steps_per_s"]
    print(json.dumps({k: results[k] for k in ("accuracy_difference_points", "steps_per_s_ratio")}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
