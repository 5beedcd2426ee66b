"""Checks on a GPU before its benchmarks.

    python -m benchmarks.gpu_check [--device gpu|cpu] [--size base] [--policies float32,mixed_bfloat16,mixed_float16]
        [--output_file benchmarks/results/gpu_check.json]

On a GPU the encoder runs keras-hub's forward pass (see `BertEncoderLayer`),
a path CI's CPU-only machines reach only by asking for it
(`encoder_device("gpu")`). This runs it where it is meant to run, counting
keras-hub's layer calls to prove which pass ran:

1. BERT-Base (kernels scaled to their fan-in, ragged padding) on the GPU
   against the CPU-shaped path on the CPU, same weights, in each policy:
   relative L2 error of the sequence output.
2. A small classifier trained on the GPU with `fit` on raw text in each
   policy: it must learn a rule that one word decides.
3. Its raw-text export for GPU serving, loaded back and asked good and bad
   requests (empty, over-long, invalid UTF-8): the Keras model's answers (log
   probabilities, which keep the logits' differences where probabilities
   saturate), and finite probabilities for the bad ones.

TensorFloat-32 is off, as in the benchmarks. `--device cpu` runs the same
checks with both paths on the CPU (the test suite runs check 1 so, at a tiny
size). A check that raises is recorded as failed; the file is rewritten
after every check; exit status 1 if any failed.
"""

import contextlib
import os
import sys
import tempfile
import traceback

import numpy as np

import keras_bert_zoo as kbz
from benchmarks import machine, results_file
from benchmarks.peers import SIZES, VOCABULARY_SIZE, token_inputs

# Relative L2 error allowed between the two paths' sequence outputs, per policy (bfloat16 keeps 8 bits).
TOLERANCES = {"float32": 1e-5, "mixed_bfloat16": 3e-2, "mixed_float16": 5e-3}
# Served against Keras' log probabilities: the same pass traced twice, in the policy's compute dtype.
SERVING_TOLERANCES = {"float32": 1e-4, "mixed_bfloat16": 5e-2, "mixed_float16": 1e-2}
WORDS = ["good", "bad", "film", "plot", "the", "was", "acting", "very", "not", "quite", "music", "ending"]


@contextlib.contextmanager
def _on(device, encoder_shape):
    """Run on `device` ("gpu" or "cpu") with the encoder shaped for `encoder_shape`."""
    import tensorflow as tf

    from keras_bert_zoo.layers.bert_encoder_layer import encoder_device

    with tf.device("/GPU:0" if device == "gpu" else "/CPU:0"), encoder_device(encoder_shape):
        yield


@contextlib.contextmanager
def _checked_path(device):
    """The path under check: on a GPU, the encoder as TensorFlow's device
    choice shapes it (no override: that choice is what is checked)."""
    if device == "gpu":
        with _on("gpu", None):
            yield
    else:
        with _on("cpu", "gpu"):
            yield


@contextlib.contextmanager
def _counting_keras_hubs_calls():
    """Count calls of keras-hub's `TransformerEncoder.call`: the GPU-shaped
    pass makes one per layer, the CPU-shaped one none."""
    from keras_bert_zoo.layers import bert_encoder_layer

    encoder_class = bert_encoder_layer.TransformerEncoder
    original, calls = encoder_class.call, []

    def counted(self, *args, **kwargs):
        calls.append(self.name)
        return original(self, *args, **kwargs)

    encoder_class.call = counted
    try:
        yield calls
    finally:
        encoder_class.call = original


def _scale_kernels(backbone):
    """Kernels drawn with std 1/sqrt(fan-in): every layer moves the output
    (BERT's 0.02 leaves the later layers near the identity)."""
    rng = np.random.default_rng(0)
    for layer in backbone.transformer_layers:
        for weight in layer.weights:
            if weight.path.endswith("kernel"):
                # [hidden, ...] kernels read hidden inputs; the attention output's [heads, head_dim, hidden] too.
                fan_in = weight.shape[0] * (weight.shape[1] if weight.shape[0] == layer.num_heads else 1)
                weight.assign(rng.normal(0.0, fan_in ** -0.5, weight.shape).astype("float32"))


def compare_paths(size, policy, device, batch=8, length=128):
    """Relative L2 error of the GPU-shaped path against the CPU-shaped one.

    Returns:
        A row: the error, keras-hub's layer calls in each path, `ok`.
    """
    backbone = kbz.BertBackbone(vocabulary_size=VOCABULARY_SIZE, max_sequence_length=512, dtype=policy,
                                **SIZES[size])
    _scale_kernels(backbone)
    ids, segments, mask, _ = token_inputs(batch, length)
    inputs = {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}
    with _counting_keras_hubs_calls() as checked_calls, _checked_path(device):
        checked = backbone(inputs)["sequence_output"]
    with _counting_keras_hubs_calls() as reference_calls, _on("cpu", "cpu"):
        reference = backbone(inputs)["sequence_output"]
    checked, reference = (np.asarray(t, "float64") for t in (checked, reference))
    error = float(np.linalg.norm(checked - reference) / np.linalg.norm(reference))
    layers = len(backbone.transformer_layers)
    return {"check": "outputs", "size": size, "policy": policy, "device": _device_name(device),
            "keras_hub_calls": {"checked": len(checked_calls), "reference": len(reference_calls)},
            "relative_l2_error": error,
            "ok": bool(len(checked_calls) == layers and not reference_calls and np.isfinite(checked).all()
                       and error <= TOLERANCES[policy])}


def _device_name(device):
    return "GPU:0" if device == "gpu" else "CPU:0"


def _texts(count, seed):
    """Sentences whose label is whether "good" occurs: one word decides it."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for _ in range(count):
        words = list(rng.choice(WORDS[2:], rng.integers(3, 9)))
        label = int(rng.integers(0, 2))
        words.insert(int(rng.integers(0, len(words) + 1)), "good" if label else "bad")
        texts.append(" ".join(words))
        labels.append(label)
    return texts, np.array(labels)


def _log(probabilities):
    return np.log(np.maximum(np.asarray(probabilities, "float64"), 1e-30))


def train_and_serve(policy, device, export_dir):
    """Fit a small classifier in `policy`, then serve its export for GPUs.

    Returns:
        A row: losses, held-out accuracy, the served answers' largest
        difference from Keras' (log probabilities), `ok`.
    """
    import tensorflow as tf

    from keras_bert_zoo.export.export_for_serving import load_export

    tokenizer = kbz.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS)
    backbone = kbz.BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), num_layers=2, num_heads=2, hidden_dim=64,
                                intermediate_dim=128, max_sequence_length=32, dtype=policy)
    model = kbz.BertClassifier(backbone, kbz.BertPreprocessor(tokenizer, sequence_length=16), num_classes=2)
    model.compile(learning_rate=3e-3)
    train, train_y = _texts(256, seed=0)
    held_out, held_out_y = _texts(64, seed=1)
    with _counting_keras_hubs_calls() as calls, _checked_path(device):
        history = model.fit(train, train_y, batch_size=32, epochs=6, verbose=0)
        accuracy = float((model.predict_proba(held_out).argmax(-1) == held_out_y).mean())
        expected = model.predict_proba(held_out[:8])
    path = model.export(export_dir, model_name="gpu_check", serving_device="gpu")
    serve = load_export(path).signatures["serving_default"]
    bad = [b"", " ".join(["good"] * 300).encode(), b"good \xff\xfe film", b"bad \xc3\x28 plot"]
    with _checked_path(device):
        served = serve(text=tf.constant(held_out[:8]))["probabilities"].numpy()
        bad_served = serve(text=tf.constant(bad))["probabilities"].numpy()
    difference = float(np.abs(_log(served) - _log(expected)).max())
    return {"check": "train_and_serve", "policy": policy, "device": _device_name(device),
            "keras_hub_calls": len(calls), "loss_first_epoch": history.history["loss"][0],
            "loss_last_epoch": history.history["loss"][-1], "held_out_accuracy": accuracy,
            "served_max_log_probability_difference": difference,
            "ok": bool(calls and accuracy >= 0.9 and difference <= SERVING_TOLERANCES[policy]
                       and np.isfinite(bad_served).all() and np.allclose(bad_served.sum(-1), 1.0, atol=1e-5))}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = results_file.script_parser(__doc__, "gpu_check.json")
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                        help="where the checked path runs; cpu: both paths on the CPU (default: %(default)s)")
    parser.add_argument("--size", choices=sorted(SIZES), default="base", help="check 1's model (default: %(default)s)")
    parser.add_argument("--policies", default=",".join(TOLERANCES), help="Keras policies (default: %(default)s)")
    args = parser.parse_args(argv)
    results_file.check_output_file(parser, args.output_file)
    policies = args.policies.split(",")
    unknown = sorted(set(policies) - set(TOLERANCES))
    if unknown:
        parser.error(f"--policies: unknown {unknown}; choose from {sorted(TOLERANCES)}")
    import tensorflow as tf

    if args.device == "gpu" and not tf.config.list_physical_devices("GPU"):
        parser.error("TensorFlow sees no GPU (see benchmarks/README.md, 'On a GPU'); --device cpu runs the checks "
                     "with both paths on the CPU")
    tf.config.experimental.enable_tensor_float_32_execution(False)
    document = results_file.new_document("python -m benchmarks.gpu_check " + " ".join(argv))
    document.update(gpus=machine.gpu_description(), checks=[])
    with tempfile.TemporaryDirectory() as export_base:
        for policy in policies:
            for check, run in (("outputs", lambda: compare_paths(args.size, policy, args.device)),
                               ("train_and_serve",
                                lambda: train_and_serve(policy, args.device, os.path.join(export_base, policy)))):
                try:
                    row = run()
                except Exception:  # recorded, and the other checks still run
                    row = {"check": check, "policy": policy, "error": traceback.format_exc(limit=3), "ok": False}
                print(row, flush=True)
                document["checks"].append(row)
                document["ok"] = all(r["ok"] for r in document["checks"])
                results_file.write_document(args.output_file, document)
    print("all checks passed" if document["ok"] else "SOME CHECKS FAILED")
    return 0 if document["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
