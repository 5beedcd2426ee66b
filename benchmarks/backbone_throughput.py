"""Backbone inference throughput: keras_bert_zoo vs keras-hub, same weights.

Both backbones run in this one process on the same inputs (batch 32 x 128
tokens), interleaved round by round so that machine noise hits both alike,
in float32 and mixed bfloat16, at MiniLM-L6 and BERT-Base sizes. Each forward
pass is a `tf.function` (no XLA: on CPU it makes bfloat16 slower).

    python benchmarks/backbone_throughput.py [--rounds 5] [--sizes minilm,base]

Prints sequences/s for both and the ratio ours / keras-hub, and writes the
table as JSON with --json.
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import keras_bert_zoo as kbz  # noqa: E402

SIZES = {
    "minilm": dict(vocabulary_size=30522, num_layers=6, num_heads=12, hidden_dim=384, intermediate_dim=1536),
    "base": dict(vocabulary_size=30522, num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072),
}
BATCH, LENGTH = 32, 128


def make_inputs(seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(LENGTH // 2, LENGTH + 1, BATCH)
    mask = (np.arange(LENGTH)[None] < lengths[:, None]).astype("int32")
    return {
        "token_ids": tf.constant(rng.integers(1000, 30000, (BATCH, LENGTH)).astype("int32") * mask),
        "segment_ids": tf.zeros((BATCH, LENGTH), "int32"),
        "padding_mask": tf.constant(mask),
    }


def build_pair(size, dtype):
    config = SIZES[size]
    if size == "minilm":
        ours = kbz.BertBackbone.from_preset("minilm_l6_h384_en_uncased", dtype=dtype)
    else:
        ours = kbz.BertBackbone(**config, dtype=dtype)
    hub = keras_hub.models.BertBackbone(
        vocabulary_size=config["vocabulary_size"], num_layers=config["num_layers"], num_heads=config["num_heads"],
        hidden_dim=config["hidden_dim"], intermediate_dim=config["intermediate_dim"], max_sequence_length=512,
        num_segments=2, dtype=dtype,
    )
    # Same weights: both are the same layers in the same order.
    hub.set_weights(ours.get_weights())
    return ours, hub


def forward_fn(model):
    @tf.function
    def forward(inputs):
        return model(inputs, training=False)["sequence_output"]

    return forward


def time_once(forward, inputs, repeats):
    start = time.perf_counter()
    for _ in range(repeats):
        forward(inputs).numpy()
    return BATCH * repeats / (time.perf_counter() - start)


def run(sizes, dtypes, rounds):
    inputs = make_inputs()
    rows = []
    for size in sizes:
        for dtype in dtypes:
            ours, hub = build_pair(size, dtype)
            f_ours, f_hub = forward_fn(ours), forward_fn(hub)
            for f in (f_ours, f_hub):  # trace and warm up
                f(inputs).numpy()
                f(inputs).numpy()
            repeats = 3 if size == "minilm" else 1
            ours_speeds, hub_speeds = [], []
            for _ in range(rounds):
                ours_speeds.append(time_once(f_ours, inputs, repeats))
                hub_speeds.append(time_once(f_hub, inputs, repeats))
            row = {
                "size": size,
                "dtype": dtype,
                "keras_bert_zoo_seq_per_s": round(statistics.median(ours_speeds), 1),
                "keras_hub_seq_per_s": round(statistics.median(hub_speeds), 1),
            }
            row["ratio"] = round(row["keras_bert_zoo_seq_per_s"] / row["keras_hub_seq_per_s"], 3)
            rows.append(row)
            print(
                f"{size:7s} {dtype:15s} ours {row['keras_bert_zoo_seq_per_s']:7.1f} seq/s   "
                f"keras-hub {row['keras_hub_seq_per_s']:7.1f} seq/s   ratio {row['ratio']:.2f}",
                flush=True,
            )
            del ours, hub
            keras.backend.clear_session()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="minilm,base")
    parser.add_argument("--dtypes", default="float32,mixed_bfloat16")
    parser.add_argument("--json", help="Write the results to this JSON file.")
    args = parser.parse_args()
    print(f"batch {BATCH} x {LENGTH} tokens, {os.cpu_count()} CPU cores, TF {tf.__version__}, keras-hub {keras_hub.__version__}")
    rows = run(args.sizes.split(","), args.dtypes.split(","), args.rounds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
