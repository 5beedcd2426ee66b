"""BERT's learning-rate schedule: linear warm-up, then linear decay to zero."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * step / warmup_steps` during warm-up, then linear decay to 0.

    As google-research/bert's `optimization.py`: the rate rises linearly
    over `warmup_steps` to `peak_learning_rate` and falls linearly to zero at
    `total_steps`.

    Args:
        peak_learning_rate: the rate reached at the end of warm-up.
        total_steps: number of training steps.
        warmup_steps: number of warm-up steps.

    Examples:
    >>> schedule = WarmupLinearDecay(1e-4, total_steps=100, warmup_steps=10)
    >>> [round(float(schedule(s)), 7) for s in (0, 5, 10, 55, 100)]
    [0.0, 5e-05, 0.0001, 5e-05, 0.0]
    """

    def __init__(self, peak_learning_rate, total_steps, warmup_steps):
        if total_steps <= 0:
            raise ValueError(f"total_steps must be positive; got {total_steps}.")
        if not 0 <= warmup_steps <= total_steps:
            raise ValueError(f"warmup_steps must be in [0, total_steps]; got {warmup_steps} of {total_steps}.")
        self.peak_learning_rate = float(peak_learning_rate)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = self.peak_learning_rate * step / max(self.warmup_steps, 1)
        decay_span = max(self.total_steps - self.warmup_steps, 1)
        decay = self.peak_learning_rate * ops.maximum(self.total_steps - step, 0.0) / decay_span
        return ops.where(step < self.warmup_steps, warmup, decay)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
        }
