"""BERT's AdamW: schedule values and which variables decay."""

import keras
import numpy as np
import pytest

from keras_bert_zoo.optimization.bert_adamw import bert_adamw
from keras_bert_zoo.optimization.warmup_linear_decay import WarmupLinearDecay


def test_schedule_matches_bert_formula():
    schedule = WarmupLinearDecay(2e-5, total_steps=1000, warmup_steps=100)
    # Hand-computed: warm-up 2e-5 * s / 100; decay 2e-5 * (1000 - s) / 900.
    for step, expected in [(0, 0.0), (50, 1e-5), (100, 2e-5), (550, 1e-5), (1000, 0.0), (1200, 0.0)]:
        assert float(schedule(step)) == pytest.approx(expected, abs=1e-12)
    clone = WarmupLinearDecay.from_config(schedule.get_config())
    assert float(clone(300)) == pytest.approx(float(schedule(300)))


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
