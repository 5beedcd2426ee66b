"""BERT's learning-rate schedule: linear warm-up, then linear decay to zero."""

import keras
from keras import ops


def _check_steps(total_steps, warmup_steps):
    if total_steps <= 0:
        raise ValueError(f"total_steps must be positive; got {total_steps}.")
    # More warm-up than steps is google-research/bert's too: the rate rises all run and never reaches the peak.
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0; got {warmup_steps}.")


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * step / warmup_steps` during warm-up, else `peak * (1 - step / total_steps)`.

    google-research/bert's `optimization.py`: a linear decay from
    `peak_learning_rate` at step 0 to zero at `total_steps`, replaced during
    the first `warmup_steps` by a linear rise from zero. After warm-up the
    rate goes on from the decay's value there (`peak * (1 - warmup_steps /
    total_steps)`), and with `warmup_steps` beyond `total_steps` it rises all
    the way, ending below the peak. The step counts live in variables, so `set_steps` gives a
    traced train step a new schedule without tracing it again.

    Args:
        peak_learning_rate: the rate reached at the end of warm-up.
        total_steps: number of training steps.
        warmup_steps: number of warm-up steps.

    Examples:
    >>> schedule = WarmupLinearDecay(1e-4, total_steps=100, warmup_steps=10)
    >>> [round(float(schedule(s)), 7) for s in (0, 5, 9, 10, 55, 100)]
    [0.0, 5e-05, 9e-05, 9e-05, 4.5e-05, 0.0]
    >>> schedule.set_steps(total_steps=20, warmup_steps=0)
    >>> [round(float(schedule(s)), 7) for s in (0, 10, 20)]
    [0.0001, 5e-05, 0.0]
    """

    def __init__(self, peak_learning_rate, total_steps, warmup_steps):
        _check_steps(total_steps, warmup_steps)
        self.peak_learning_rate = float(peak_learning_rate)
        # float32 whatever floatx is: bfloat16 counts steps exactly only up to 256.
        self._steps = keras.Variable([float(total_steps), float(warmup_steps)], dtype="float32", trainable=False,
                                     name="warmup_linear_decay_steps")
        self.total_steps, self.warmup_steps = int(total_steps), int(warmup_steps)

    def set_steps(self, total_steps, warmup_steps):
        """Schedule `total_steps` with `warmup_steps` of warm-up from now on."""
        _check_steps(total_steps, warmup_steps)
        self._steps.assign([float(total_steps), float(warmup_steps)])
        self.total_steps, self.warmup_steps = int(total_steps), int(warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        total, warmup = self._steps[0], self._steps[1]
        warmup_rate = self.peak_learning_rate * step / ops.maximum(warmup, 1.0)
        # optimization.py's decay runs from step 0, under the warm-up: after warm-up the rate resumes below the
        # peak, at peak * (1 - warmup / total), not at the peak.
        decay_rate = self.peak_learning_rate * ops.maximum(total - step, 0.0) / total
        return ops.where(step < warmup, warmup_rate, decay_rate)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
        }
