"""What one call costs a user with a few examples: keras_bert_zoo's
BertClassifier vs keras-hub's BertTextClassifier, same weights (the offline
default preset), same sequence length, raw text in, in one process.

    python benchmarks/call_overhead_vs_keras_hub.py [--rounds 7] [--output_file ...]

Scenarios: `predict` on one text, on one pair, on 32 pairs, `evaluate`
on 32 labelled pairs, and one epoch of `fit` on them (one step: what a call
costs beyond its step; each peer's own default optimizer). For each, a first call (tracing included: what the
first call in a notebook costs), then `--rounds` rounds timing one call of
each peer, in an order that alternates round by round. Figures: milliseconds
per call (median, min, max); `keras_hub_over_ours` is keras-hub's time over
ours, taken round by round (above 1: ours is quicker).
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras_bert_zoo as kbz  # noqa: E402  (first: its kernel default applies only before TensorFlow loads)

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks import machine, results_file, stats  # noqa: E402

PRESET = "minilm_l6_h384_en_uncased"
TEXTS_A = ["The company said its profit rose in the third quarter.", "He was born in a small town in Ohio."] * 16
TEXTS_B = ["Its third-quarter profit went up, the company said.", "His birthplace is a village in Ohio."] * 16
LABELS = [1, 0] * 16
SCENARIOS = ("predict 1 text", "predict 1 pair", "predict 32 pairs", "evaluate 32 pairs", "fit 32 pairs")


def build_ours(sequence_length):
    clf = kbz.BertClassifier.from_preset(PRESET, num_classes=2, sequence_length=sequence_length)
    clf.compile()
    return dict(zip(SCENARIOS, (
        lambda: clf.predict(TEXTS_A[:1]),
        lambda: clf.predict([(TEXTS_A[0], TEXTS_B[0])]),
        lambda: clf.predict((TEXTS_A, TEXTS_B)),
        lambda: clf.evaluate((TEXTS_A, TEXTS_B), LABELS, verbose=0),
        lambda: clf.fit((TEXTS_A, TEXTS_B), LABELS, epochs=1, verbose=0),
    )))


def build_keras_hub(sequence_length):
    ours = kbz.BertBackbone.from_preset(PRESET)
    config = {k: getattr(ours, k) for k in ("vocabulary_size", "num_layers", "num_heads", "hidden_dim",
                                            "intermediate_dim", "max_sequence_length", "num_segments")}
    backbone = keras_hub.models.BertBackbone(**config)
    backbone.set_weights(ours.get_weights())
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=kbz.BertTokenizer.from_preset(PRESET).get_vocabulary(),
                                               lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=sequence_length)
    clf = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor)
    clf.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    a, b = np.array(TEXTS_A), np.array(TEXTS_B)
    return dict(zip(SCENARIOS, (
        lambda: clf.predict(a[:1], verbose=0),
        lambda: clf.predict((a[:1], b[:1]), verbose=0),
        lambda: clf.predict((a, b), verbose=0),
        lambda: clf.evaluate((a, b), np.array(LABELS), verbose=0),
        lambda: clf.fit((a, b), np.array(LABELS), epochs=1, verbose=0),
    )))


def milliseconds(call):
    start = time.perf_counter()
    call()
    return 1e3 * (time.perf_counter() - start)


def main():
    parser = results_file.script_parser(__doc__, "call_overhead_vs_keras_hub_cpu2.json",
                                        rounds_help="timed calls of each scenario and peer")
    parser.add_argument("--sequence_length", type=int, default=128)
    args = parser.parse_args()
    results_file.check_flags(parser, args.rounds, args.output_file)

    document = results_file.new_document("python benchmarks/call_overhead_vs_keras_hub.py " + " ".join(sys.argv[1:]))
    document["versions"]["tensorflow_onednn"] = machine.tensorflow_onednn()
    document["setup"] = {"preset": PRESET, "sequence_length": args.sequence_length, "rounds": args.rounds}
    peers = {"keras_bert_zoo": build_ours(args.sequence_length), "keras_hub": build_keras_hub(args.sequence_length)}
    document["results"] = {}
    for scenario in SCENARIOS:
        first = {name: milliseconds(calls[scenario]) for name, calls in peers.items()}
        times = {name: [] for name in peers}
        for round_index in range(args.rounds):
            order = list(peers) if round_index % 2 == 0 else list(reversed(peers))
            for name in order:
                times[name].append(milliseconds(peers[name][scenario]))
        row = {name: {"first_call_ms": first[name], "ms": stats.summary(times[name])} for name in peers}
        row["keras_hub_over_ours"] = stats.round_ratios(times["keras_hub"], times["keras_bert_zoo"])
        row["keras_hub_over_ours_first_call"] = first["keras_hub"] / first["keras_bert_zoo"]
        document["results"][scenario] = row
        print(scenario, json.dumps(row), flush=True)
    results_file.write_document(args.output_file, document)
    print(f"wrote {args.output_file}")


if __name__ == "__main__":
    main()
