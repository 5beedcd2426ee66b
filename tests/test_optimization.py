"""BERT's AdamW: schedule values, which variables decay, and the fused step against Keras' AdamW."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_zoo.layers import bert_encoder_layer
from keras_bert_zoo.layers.fused_ops import xla_fusion

from keras_bert_zoo.optimization.bert_adamw import NO_DECAY_NAMES, bert_adamw, restart_bert_adamw
from keras_bert_zoo.optimization.fused_adamw import FusedAdamW
from keras_bert_zoo.optimization.warmup_linear_decay import WarmupLinearDecay


@pytest.mark.parametrize("total, warmup", [(1000, 100), (10, 0), (10, 20), (10, 10)])
def test_schedule_is_bert_optimization_pys(total, warmup):
    """google-research/bert's optimization.py: polynomial_decay(power=1) to 0 over num_train_steps from step 0,
    replaced by peak * step / num_warmup_steps while step < num_warmup_steps. The decay started at the peak after
    warm-up (spread over total - warmup steps), and more warm-up than steps was refused after the model loaded."""
    peak = 2e-5
    schedule = WarmupLinearDecay(peak, total_steps=total, warmup_steps=warmup)
    for step in sorted({*range(0, total + 1, max(1, total // 20)), warmup - 1, warmup, total + 5} - {-1}):
        decayed = peak * (1 - min(step, total) / total)
        expected = peak * step / warmup if step < warmup else decayed
        assert float(schedule(step)) == pytest.approx(expected, rel=1e-6, abs=1e-12), step
    clone = WarmupLinearDecay.from_config(schedule.get_config())
    assert float(clone(total // 3)) == pytest.approx(float(schedule(total // 3)))


def test_warmup_ratio_sets_warmup_steps():
    optimizer = bert_adamw(5e-5, total_steps=200, warmup_ratio=0.1)
    schedule = optimizer._learning_rate
    assert (schedule.warmup_steps, schedule.total_steps) == (20, 200)
    assert optimizer.epsilon == 1e-6 and optimizer.weight_decay == 0.01 and optimizer.global_clipnorm == 1.0


def test_layer_norm_and_bias_are_not_decayed():
    dense = keras.layers.Dense(3)
    norm = keras.layers.LayerNormalization()
    model = keras.Sequential([keras.Input((4,)), dense, norm])
    for variable in model.trainable_variables:
        variable.assign(np.ones(variable.shape, "float32"))
    optimizer = bert_adamw(0.1, weight_decay=0.5)
    # Zero gradients: Adam moves nothing, so any change is weight decay.
    optimizer.apply_gradients([(np.zeros(v.shape, "float32"), v) for v in model.trainable_variables])
    changed = {v.name: not np.allclose(v.numpy(), 1.0) for v in model.trainable_variables}
    assert changed == {"kernel": True, "bias": False, "gamma": False, "beta": False}
    np.testing.assert_allclose(dense.kernel.numpy(), 1.0 - 0.1 * 0.5, rtol=1e-6)


def _adamw_run(optimizer_class, steps=4, **kwargs):
    """Train a tiny embedding + dense model with `optimizer_class`; return its weights."""
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((5,), dtype="int32"), keras.layers.Embedding(20, 4),
                              keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(3)])
    optimizer = optimizer_class(learning_rate=WarmupLinearDecay(0.05, total_steps=10, warmup_steps=2),
                                weight_decay=0.1, beta_1=0.9, beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0, **kwargs)
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    # Only some embedding rows are looked up: their gradient is IndexedSlices.
    x, y = rng.integers(0, 8, (16, 5)).astype("int32"), rng.integers(0, 3, 16)
    if steps:
        model.fit(x, y, batch_size=4, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False)
    return [w.numpy() for w in model.weights]


@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_adamw_moves_weights_as_keras_adamw(amsgrad):
    # Keras' own AdamW is the reference: same schedule, clipping, decay exclusions, sparse embedding gradients.
    reference, fused = _adamw_run(keras.optimizers.AdamW, amsgrad=amsgrad), _adamw_run(FusedAdamW, amsgrad=amsgrad)
    initial = _adamw_run(FusedAdamW, steps=0)
    for before, want, got in zip(initial, reference, fused):
        assert not np.allclose(before, want)  # every variable moved
        # Float rounding only: one wrong term would move weights by a fraction of the 0.05 rate.
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


def test_bert_adamw_is_fused_and_round_trips():
    optimizer = bert_adamw(3e-5, total_steps=100)
    assert isinstance(optimizer, FusedAdamW)
    clone = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(clone) is FusedAdamW
    assert (clone.weight_decay, clone.epsilon, clone.global_clipnorm) == (0.01, 1e-6, 1.0)


def _steps(optimizer, variable, gradients):
    for gradient in gradients:
        optimizer.apply_gradients([(keras.ops.array(gradient), variable)])
    return variable.numpy()


@pytest.mark.parametrize("loss_scaled", [False, True])
def test_a_restarted_optimizer_moves_weights_as_a_new_one(loss_scaled):
    """`fit` restarts the "auto" optimizer in place for each call; a new `bert_adamw` over the same steps is the
    reference. Wrapped in Keras' LossScaleOptimizer (mixed_float16), the inner AdamW restarts."""
    wrap = keras.optimizers.LossScaleOptimizer if loss_scaled else (lambda optimizer: optimizer)
    gradients = np.random.default_rng(0).normal(size=(7, 3)).astype("float32")
    used = wrap(bert_adamw(0.05, total_steps=4, weight_decay=0.1))
    variable = keras.Variable(np.ones(3, "float32"))
    _steps(used, variable, gradients[:4])
    start = variable.numpy()
    assert restart_bert_adamw(used, total_steps=7, warmup_steps=2)
    assert used.iterations.numpy() == 0
    fresh, reference = wrap(bert_adamw(0.05, total_steps=7, warmup_steps=2, weight_decay=0.1)), keras.Variable(start)
    np.testing.assert_allclose(_steps(used, variable, gradients), _steps(fresh, reference, gradients), rtol=1e-6)
    schedule = (used.inner_optimizer if loss_scaled else used)._learning_rate
    assert schedule.get_config() == {"peak_learning_rate": 0.05, "total_steps": 7, "warmup_steps": 2}


def test_restart_leaves_what_it_cannot_restart_to_its_caller():
    assert not restart_bert_adamw(bert_adamw(0.05, total_steps=10), total_steps=5)  # not built: no state yet
    constant = bert_adamw(0.05)
    constant.build([keras.Variable([1.0])])
    assert not restart_bert_adamw(constant, total_steps=5)  # no schedule
    schedule = WarmupLinearDecay(1e-4, total_steps=10, warmup_steps=1)
    with pytest.raises(ValueError, match="warmup_steps must be >= 0"):
        schedule.set_steps(total_steps=5, warmup_steps=-1)
    with pytest.raises(ValueError, match="total_steps must be positive"):
        schedule.set_steps(total_steps=0, warmup_steps=0)
    assert float(schedule(5)) == pytest.approx(1e-4 * (1 - 5 / 10))  # unchanged by the refusals


def _apply_steps(optimizer_class, gradients, dense=False, **kwargs):
    """A kernel, a bias (not decayed) and an embedding whose gradient is IndexedSlices with a repeated row (or,
    `dense`, the rows they sum to)."""
    variables = [keras.Variable(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4), name="kernel"),
                 keras.Variable(np.full(4, 0.5, "float32"), name="bias"),
                 keras.Variable(np.ones((6, 4), "float32"), name="embeddings")]
    optimizer = optimizer_class(learning_rate=WarmupLinearDecay(0.05, total_steps=10, warmup_steps=2), beta_1=0.9,
                                beta_2=0.999, epsilon=1e-6, **kwargs)
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    for kernel, bias, rows in gradients:
        embedding = tf.IndexedSlices(tf.constant(rows), tf.constant([1, 4, 1]), tf.constant([6, 4]))
        embedding = tf.convert_to_tensor(embedding) if dense else embedding
        optimizer.apply_gradients(zip([tf.constant(kernel), tf.constant(bias), embedding], variables))
    return [v.numpy() for v in variables]


@pytest.mark.parametrize("options", [dict(weight_decay=0.1, global_clipnorm=1.0),
                                     dict(weight_decay=0.0, global_clipnorm=0.5), dict(weight_decay=0.1)],
                         ids=["decay_and_global_clipping", "no_decay", "no_clipping"])
def test_the_one_pass_step_is_keras_adamw_with_clipping_decay_and_repeated_rows(options):
    """Gradients far above the clipping norms, so the scale matters. The embedding's IndexedSlices repeat a row:
    Keras' global norm squares its slices apart, and so does ours. Unclipped by the global norm, Keras' Adam also
    squares them apart for its second moment, where TensorFlow's ApplyAdam (as torch) takes the row they sum to:
    there the reference gets that row."""
    rng = np.random.default_rng(1)
    gradients = [(rng.normal(size=(3, 4)) * 5, rng.normal(size=4) * 5, rng.normal(size=(3, 4)) * 5) for _ in range(3)]
    gradients = [tuple(g.astype("float32") for g in step) for step in gradients]
    want = _apply_steps(keras.optimizers.AdamW, gradients, dense="global_clipnorm" not in options, **options)
    got = _apply_steps(FusedAdamW, gradients, **options)
    for w, g in zip(want, got):
        # Rounding only (the norm sums in another order): squaring the summed row instead moved weights by 3e-3.
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)


def test_a_gradient_that_is_not_finite_makes_the_step_nan_as_in_keras():
    gradients = [(np.full((3, 4), np.inf, "float32"), np.zeros(4, "float32"), np.zeros((3, 4), "float32"))]
    for optimizer_class in (keras.optimizers.AdamW, FusedAdamW):
        kernel, bias, embedding = _apply_steps(optimizer_class, gradients, weight_decay=0.1, global_clipnorm=1.0)
        assert np.isnan(kernel).all() and np.isnan(bias).all() and np.isnan(embedding).all()


def _step_ops(optimizer):
    """The op types of one traced `apply`, outside the functions it calls, and whether one is XLA-compiled."""
    variables = [keras.Variable(np.ones((3, 4), "float32"), name="kernel")]
    optimizer.build(variables)
    graph = tf.function(lambda: optimizer.apply([tf.ones((3, 4))], variables)).get_concrete_function().graph
    graph_def = graph.as_graph_def()
    compiled = any(f.attr["_XlaMustCompile"].b for f in graph_def.library.function)
    return {node.op for node in graph_def.node}, compiled


def test_the_step_is_one_compiled_pass_on_a_cpu_and_apply_adam_elsewhere(monkeypatch):
    ops, compiled = _step_ops(bert_adamw(0.1))
    # The norm is one read per gradient (no squares written out), the clipped gradients and the decay are not
    # written out either: they are in the compiled pass.
    assert compiled and "L2Loss" in ops
    assert {"Square", "ResourceApplyAdam", "AssignSubVariableOp"}.isdisjoint(ops)
    with xla_fusion(False):
        ops, compiled = _step_ops(bert_adamw(0.1))
    assert not compiled and {"Square", "ResourceApplyAdam", "AssignSubVariableOp"} <= ops
    monkeypatch.setattr(bert_encoder_layer, "runs_on_gpu", lambda: True)
    ops, compiled = _step_ops(bert_adamw(0.1))
    assert not compiled and "ResourceApplyAdam" in ops


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "xla_fusion_off"])
def test_under_a_strategy_the_step_is_keras_adamw_whichever_thread_decides(fusion):
    """A strategy clips and decays in a replica's thread and updates in the caller's; `xla_fusion` is per thread.
    Deciding in each place dropped the decay (xla_fusion off in the caller: 1e-2 off Keras after 3 steps)."""
    def run(optimizer_class):
        strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
        with strategy.scope():
            variable = keras.Variable(np.full(4, 0.5, "float32"), name="kernel")
            optimizer = optimizer_class(learning_rate=0.01, weight_decay=0.1, global_clipnorm=1.0)
        with xla_fusion(fusion):
            for _ in range(3):
                strategy.run(lambda: optimizer.apply_gradients([(tf.constant([5.0, -3.0, 2.0, 7.0]), variable)]))
        return variable.numpy()

    np.testing.assert_allclose(run(FusedAdamW), run(keras.optimizers.AdamW), rtol=1e-6)


def test_an_undecayed_variable_is_not_touched_by_the_decay():
    """Keras leaves a variable excluded from decay out of it: an infinite weight stays infinite, not inf * 0."""
    def run(optimizer_class):
        variable = keras.Variable([np.inf, 1.0], name="bias")
        optimizer = optimizer_class(learning_rate=0.01, weight_decay=0.1)
        optimizer.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
        optimizer.apply_gradients([(tf.constant([1.0, 1.0]), variable)])
        return variable.numpy()

    got, want = run(FusedAdamW), run(keras.optimizers.AdamW)
    assert np.isposinf(got[0]) and np.isposinf(want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)



@pytest.mark.parametrize("fusion", [True, False], ids=["one_pass", "apply_adam"])
def test_without_bias_correction_the_step_is_google_research_berts(fusion):
    """google-research/bert's AdamWeightDecayOptimizer (optimization.py), written out in numpy: clip by the global
    norm, m and v without bias correction, `update = m / (sqrt(v) + eps) + wd * w` on decayed variables,
    `w -= lr * update`. Its early steps are ~3x Keras' (bias-corrected) ones, so a correction left in fails."""
    rng = np.random.default_rng(2)
    gradients = [tuple(g.astype("float32") for g in (rng.normal(size=(3, 4)) * 5, rng.normal(size=4) * 5,
                                                     rng.normal(size=(3, 4)) * 5)) for _ in range(3)]
    schedule = WarmupLinearDecay(0.05, total_steps=10, warmup_steps=2)
    want = [np.linspace(-1, 1, 12).reshape(3, 4), np.full(4, 0.5), np.ones((6, 4))]
    moments = [[np.zeros_like(w), np.zeros_like(w)] for w in want]
    for step, (kernel, bias, rows) in enumerate(gradients):
        embedding = np.zeros((6, 4))
        np.add.at(embedding, [1, 4, 1], rows)  # the rows the embedding's IndexedSlices sum to (`dense`)
        grads = [kernel, bias, embedding]
        norm = np.sqrt(sum(np.sum(np.square(g.astype("float64"))) for g in grads))
        grads = [g * min(1.0, 1.0 / norm) for g in grads]
        rate = float(schedule(step))
        for i, (w, g, (m, v)) in enumerate(zip(want, grads, moments)):
            m[...] = 0.9 * m + 0.1 * g
            v[...] = 0.999 * v + 0.001 * np.square(g)
            update = m / (np.sqrt(v) + 1e-6) + (0.1 * w if i != 1 else 0.0)  # the bias is not decayed
            want[i] = w - rate * update
    with xla_fusion(fusion):
        got = _apply_steps(FusedAdamW, gradients, dense=True, weight_decay=0.1,
                           global_clipnorm=1.0, bias_correction=False)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)


def test_bias_correction_round_trips_and_is_refused_where_keras_steps():
    optimizer = bert_adamw(1e-4, total_steps=10, bias_correction=False)
    assert keras.optimizers.deserialize(keras.optimizers.serialize(optimizer)).bias_correction is False
    with pytest.raises(ValueError, match="without amsgrad"):
        FusedAdamW(amsgrad=True, bias_correction=False)
    with pytest.raises(TypeError, match="True or False; got 'no'"):
        FusedAdamW(bias_correction="no")
