"""Checks on a GPU before its benchmarks: `python -m benchmarks.gpu_check`.

On a GPU the encoder runs keras-hub's forward pass (see `BertEncoderLayer`),
a path CI's CPU-only machines reach only by asking for it
(`encoder_device("gpu")`). This runs it where it is meant to run:

1. BERT-Base (random weights, ragged padding) on the GPU against the
   CPU-shaped path on the CPU, same weights, in float32 (TensorFloat-32 off)
   and both mixed policies: relative L2 error of the sequence output.
2. A small classifier trained on the GPU with `fit` on raw text in each
   policy: it must learn a rule a bag of words decides.
3. Its raw-text export for GPU serving, loaded back and asked good and bad
   requests (empty, over-long, invalid UTF-8): the Keras model's answers,
   and finite probabilities for the bad ones.

Without a GPU it refuses to run; `--device cpu` runs the same checks with
both paths on the CPU (what the test suite does, at a tiny size). Writes a
JSON report (`--output_file`) and exits 1 if any check fails.
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np

import keras_bert_zoo as kbz
from benchmarks import machine
from benchmarks.peers import SIZES, VOCABULARY_SIZE, token_inputs

# Relative L2 error allowed between the two paths' sequence outputs, per policy (bfloat16 keeps 8 bits).
TOLERANCES = {"float32": 1e-5, "mixed_bfloat16": 3e-2, "mixed_float16": 5e-3}
WORDS = ["good", "bad", "film", "plot", "the", "was", "acting", "very", "not", "quite", "music", "ending"]


def _scopes(device):
    """The device the checked path runs on, and the CPU reference's."""
    import tensorflow as tf

    from keras_bert_zoo.layers.bert_encoder_layer import encoder_device

    if device == "gpu":
        return (lambda: tf.device("/GPU:0")), (lambda: _stack(tf.device("/CPU:0"), encoder_device("cpu")))
    return (lambda: encoder_device("gpu")), (lambda: encoder_device("cpu"))


def _stack(*contexts):
    import contextlib

    stack = contextlib.ExitStack()
    for context in contexts:
        stack.enter_context(context)
    return stack


def compare_paths(size, policy, device, batch=8, length=128):
    """Relative L2 error of the GPU-shaped path against the CPU-shaped one."""
    import tensorflow as tf

    tf.config.experimental.enable_tensor_float_32_execution(False)
    backbone = kbz.BertBackbone(vocabulary_size=VOCABULARY_SIZE, max_sequence_length=512, dtype=policy,
                                **SIZES[size])
    rng = np.random.default_rng(0)
    for weight in backbone.weights:  # larger than BERT's 0.02 init: every layer changes the output
        if len(weight.shape) >= 2:
            weight.assign(rng.normal(0.0, weight.shape[0] ** -0.5, weight.shape).astype("float32"))
    ids, segments, mask, _ = token_inputs(batch, length)
    inputs = {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}
    checked_scope, reference_scope = _scopes(device)
    with checked_scope():
        checked = backbone(inputs)["sequence_output"]
    with reference_scope():
        reference = backbone(inputs)["sequence_output"]
    checked, reference = (np.asarray(t, "float64") for t in (checked, reference))
    error = float(np.linalg.norm(checked - reference) / np.linalg.norm(reference))
    return {"check": "outputs", "size": size, "policy": policy, "device": _device_of(backbone),
            "relative_l2_error": error, "ok": bool(np.isfinite(checked).all() and error <= TOLERANCES[policy])}


def _device_of(model):
    """Where the model's weights live: "GPU:0", "CPU:0"."""
    import tensorflow as tf

    spec = tf.DeviceSpec.from_string(model.weights[0].value.device)
    return f"{spec.device_type}:{spec.device_index}"


def _texts(count, seed):
    """Sentences whose label is whether "good" occurs: a bag of words decides it."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(count):
        words = list(rng.choice(WORDS[2:], rng.integers(3, 9)))
        label = int(rng.integers(0, 2))
        words.insert(int(rng.integers(0, len(words) + 1)), "good" if label else "bad")
        texts.append(" ".join(words))
        labels.append(label)
    return texts, np.array(labels)


def train_and_serve(policy, device, export_dir):
    """Fit a small classifier in `policy`, then serve its export for GPUs."""
    import tensorflow as tf

    checked_scope, _ = _scopes(device)
    tokenizer = kbz.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS)
    backbone = kbz.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=2, num_heads=2, hidden_dim=64,
                                intermediate_dim=128, max_sequence_length=32, dtype=policy)
    model = kbz.BertClassifier(backbone, kbz.BertPreprocessor(tokenizer, sequence_length=16), num_classes=2)
    model.compile(learning_rate=3e-3)
    train, train_y = _texts(256, seed=0)
    held_out, held_out_y = _texts(64, seed=1)
    with checked_scope():
        history = model.fit(train, train_y, batch_size=32, epochs=6, verbose=0)
        accuracy = float((model.predict_proba(held_out).argmax(-1) == held_out_y).mean())
        expected = model.predict_proba(held_out[:8])
    row = {"check": "train_and_serve", "policy": policy, "device": _device_of(model),
           "loss_first_epoch": history.history["loss"][0], "loss_last_epoch": history.history["loss"][-1],
           "held_out_accuracy": accuracy}
    from keras_bert_zoo.export.export_for_serving import load_export

    path = model.export(export_dir, model_name="gpu_check", serving_device="gpu")
    serve = load_export(path).signatures["serving_default"]
    with checked_scope():
        served = serve(text=tf.constant(held_out[:8]))["probabilities"].numpy()
        bad = [b"", " ".join(["good"] * 300).encode(), b"good \xff\xfe film", "caf\xe9 ".encode() * 3]
        bad_served = serve(text=tf.constant(bad))["probabilities"].numpy()
    # Served in float32 from the same weights: as close as one forward pass in the model's compute dtype allows.
    row["served_max_difference"] = float(np.abs(served - expected).max())
    tolerance = 1e-5 if policy == "float32" else 2e-2
    row["ok"] = bool(accuracy >= 0.9 and row["served_max_difference"] <= tolerance
                     and np.isfinite(bad_served).all() and np.allclose(bad_served.sum(-1), 1.0, atol=1e-5))
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--size", choices=sorted(SIZES), default="base")
    parser.add_argument("--policies", default="float32,mixed_bfloat16,mixed_float16")
    parser.add_argument("--output_file", required=True)
    args = parser.parse_args(argv)
    policies = args.policies.split(",")
    unknown = sorted(set(policies) - set(TOLERANCES))
    if unknown:
        parser.error(f"--policies: unknown {unknown}; choose from {sorted(TOLERANCES)}")
    import tensorflow as tf

    if args.device == "gpu" and not tf.config.list_physical_devices("GPU"):
        parser.error("TensorFlow sees no GPU (see benchmarks/README.md, 'On a GPU'); --device cpu runs the checks "
                     "with both paths on the CPU")
    report = {"command": " ".join(["python -m benchmarks.gpu_check", *(argv or sys.argv[1:])]),
              "machine": machine.cpu_description(), "gpus": machine.gpu_description(),
              "versions": {"tensorflow": tf.__version__, "keras_bert_zoo": kbz.__version__}, "checks": []}
    with tempfile.TemporaryDirectory() as export_base:
        for policy in policies:
            for row in (compare_paths(args.size, policy, args.device),
                        train_and_serve(policy, args.device, os.path.join(export_base, policy))):
                print(json.dumps(row), flush=True)
                report["checks"].append(row)
    report["ok"] = all(row["ok"] for row in report["checks"])
    with open(args.output_file, "w") as f:
        json.dump(report, f, indent=1)
    print("all checks passed" if report["ok"] else "SOME CHECKS FAILED")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
