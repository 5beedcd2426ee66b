"""Run by tests/test_replica_clipping.py in a fresh process (logical devices must be set before TensorFlow
starts): the same steps on one device and on two replicas, with gradients above the clipping norm. Writes the
weights to OUT_DIR/{name}.npz and prints the gradients' global norms as JSON.

Usage: python -m tests.replica_clipping_runner OUT_DIR
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

import keras_bert_zoo as kbz  # noqa: E402
from keras_bert_zoo.data.pretraining_records import pretraining_batches  # noqa: E402
from keras_bert_zoo.layers.fused_ops import xla_fusion  # noqa: E402
from keras_bert_zoo.optimization.fused_adamw import FusedAdamW  # noqa: E402
from tests.strategy_runner import batches  # noqa: E402

MIRRORED = ["/cpu:0", "/cpu:1"]


def replica_gradients():
    """Three steps of two replicas' gradients for a (3, 4) kernel and a bias: the global batch's gradient is their
    sum, above the clipping norm 1 at steps 1 and 3 (in another direction than either replica's part) and below
    it at step 2, where only a sum taken twice would change the step."""
    rng = np.random.default_rng(3)
    steps = []
    for size in (2.0, 0.03, 1.5):
        parts = [(rng.normal(size=(3, 4)) * size * (1 + 2 * r), rng.normal(size=4) * size) for r in range(2)]
        steps.append([tuple(np.float32(g) for g in part) for part in parts])
    return steps


def apply_steps(optimizer_class, strategy, steps, fusion=True):
    with strategy.scope():
        variables = [keras.Variable(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4), name="kernel"),
                     keras.Variable(np.full(4, 0.5, "float32"), name="bias")]
        # epsilon 1 makes Adam's step grow with the gradient (not only its sign), so a sum taken twice shows.
        optimizer = optimizer_class(learning_rate=0.1, weight_decay=0.1, epsilon=1.0, global_clipnorm=1.0)
        optimizer.build(variables)

    @tf.function
    def step_on_replicas(kernels, biases):
        def step():
            replica = tf.distribute.get_replica_context().replica_id_in_sync_group
            with xla_fusion(fusion):  # per thread, and the replicas run in threads of their own
                optimizer.apply_gradients(zip([tf.gather(kernels, replica), tf.gather(biases, replica)], variables))
        strategy.run(step)

    with xla_fusion(fusion):
        for parts in steps:
            kernels, biases = (np.stack([part[i] for part in parts]) for i in range(2))
            if strategy.num_replicas_in_sync == 1:
                optimizer.apply_gradients(zip([tf.constant(kernels.sum(0)), tf.constant(biases.sum(0))], variables))
            else:
                step_on_replicas(kernels, biases)
    return [v.numpy() for v in variables]


def pretrainer(strategy, weights=None):
    """A pretrainer compiled as by default (bert_adamw, clipping at global norm 1), trained 4 steps."""
    with strategy.scope():
        keras.utils.set_random_seed(1)
        backbone = kbz.BertBackbone(vocabulary_size=2000, num_layers=1, num_heads=2, hidden_dim=16,
                                    intermediate_dim=32, dropout=0.0, max_sequence_length=16)
        model = kbz.BertPretrainer(backbone)
        model.compile(learning_rate=1e-3, total_steps=4, warmup_steps=0)
    if weights is not None:
        model.set_weights(weights)
    return model


def main(out_dir):
    steps = replica_gradients()
    norms = {"replica_steps": [float(np.sqrt(sum(np.sum((a + b) ** 2) for a, b in zip(*parts)))) for parts in steps]}
    mirrored = tf.distribute.MirroredStrategy(MIRRORED)
    np.savez(os.path.join(out_dir, "keras_one_device.npz"),
             *apply_steps(keras.optimizers.AdamW, tf.distribute.get_strategy(), steps))
    for fusion in (True, False):
        name = "fused" if fusion else "xla_fusion_off"
        np.savez(os.path.join(out_dir, f"{name}_two_replicas.npz"), *apply_steps(FusedAdamW, mirrored, steps, fusion))

    data = batches(vocabulary_size=2000, count=16)
    single = pretrainer(tf.distribute.get_strategy())
    initial = single.get_weights()
    x, y, sample_weight = next(iter(pretraining_batches(data, batch_size=8)))
    with tf.GradientTape() as tape:
        loss = single.compute_loss(x=x, y=y, y_pred=single(x), sample_weight=sample_weight)
    gradients = tape.gradient(loss, single.trainable_variables)
    norms["pretrainer_first_batch"] = float(tf.linalg.global_norm([tf.convert_to_tensor(g) for g in gradients]))
    two = pretrainer(mirrored, initial)
    for name, model in (("pretrainer_one_device", single), ("pretrainer_two_replicas", two)):
        model.fit(pretraining_batches(data, batch_size=8), epochs=2, verbose=0)
        np.savez(os.path.join(out_dir, f"{name}.npz"), *model.get_weights())
    np.savez(os.path.join(out_dir, "pretrainer_initial.npz"), *initial)
    print(json.dumps(norms))


if __name__ == "__main__":
    main(sys.argv[1])
