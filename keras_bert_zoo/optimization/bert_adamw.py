"""AdamW set up as BERT fine-tuning and pretraining use it."""

import keras

from keras_bert_zoo.optimization.fused_adamw import FusedAdamW
from keras_bert_zoo.optimization.warmup_linear_decay import WarmupLinearDecay

# LayerNorm scales/offsets and biases are not decayed (BERT's
# `exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`); in Keras
# they are the variables named gamma, beta and bias.
NO_DECAY_NAMES = ["bias", "gamma", "beta"]

# BERT's fine-tuning warm-up: the first 10% of the steps.
WARMUP_RATIO = 0.1


def _warmup_steps(total_steps, warmup_ratio, warmup_steps):
    return int(round(total_steps * warmup_ratio)) if warmup_steps is None else int(warmup_steps)


def bert_adamw(
    learning_rate=5e-5,
    total_steps=None,
    warmup_ratio=WARMUP_RATIO,
    warmup_steps=None,
    weight_decay=0.01,
    global_clipnorm=1.0,
    bias_correction=True,
):
    """Create AdamW with warm-up + linear decay and BERT's decay exclusions.

    Adam's moments are bias-corrected by default, as in Keras and torch;
    google-research/bert's `AdamWeightDecayOptimizer` omits the correction, so
    its steps are larger early on (`(1 - beta_1^t) / sqrt(1 - beta_2^t)`: ~3x
    at step 100, 1.26x at step 1,000): `bias_correction=False` steps as it does.

    Args:
        learning_rate: peak learning rate (paper: 2e-5..5e-5 fine-tuning,
            1e-4 pretraining).
        total_steps: number of training steps; `None` keeps the rate
            constant.
        warmup_ratio: fraction of `total_steps` spent warming up (10%).
        warmup_steps: warm-up steps, overriding `warmup_ratio`.
        weight_decay: decoupled weight decay (0.01).
        global_clipnorm: clip gradients by global norm (1.0, as BERT).
        bias_correction: Adam's bias correction (see above); `False` steps
            as google-research/bert's optimizer does.

    Returns:
        A `FusedAdamW`: Keras' AdamW, its step one pass per variable.

    Examples:
    >>> optimizer = bert_adamw(2e-5, total_steps=1000)
    >>> round(float(optimizer.learning_rate), 9)  # step 0 of the warm-up
    0.0
    """
    if total_steps is not None:
        learning_rate = WarmupLinearDecay(learning_rate, total_steps, _warmup_steps(total_steps, warmup_ratio,
                                                                                    warmup_steps))
    optimizer = FusedAdamW(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=global_clipnorm,
        bias_correction=bias_correction,
    )
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    return optimizer


def restart_bert_adamw(optimizer, total_steps, warmup_ratio=WARMUP_RATIO, warmup_steps=None):
    """Start a `bert_adamw` optimizer over again, as a new one would.

    The step count and Adam's moments go back to zero and the schedule
    warms up and decays over `total_steps`, in place: a train step that
    Keras traced with this optimizer runs on without a new trace (tens of
    seconds for a Base model on a CPU).

    Args:
        optimizer: a built optimizer from `bert_adamw` with a `total_steps`
            schedule (or one wrapped in Keras' `LossScaleOptimizer`, whose
            loss scale carries on).
        total_steps, warmup_ratio, warmup_steps: as `bert_adamw`.

    Returns:
        True, or False when `optimizer` has no schedule to restart (the
        caller builds a new one).

    Examples:
    >>> variable = keras.Variable([1.0])
    >>> optimizer = bert_adamw(1e-3, total_steps=10)
    >>> _ = optimizer.apply_gradients([(keras.ops.array([1.0]), variable)])
    >>> restart_bert_adamw(optimizer, total_steps=100)
    True
    >>> int(optimizer.iterations), float(optimizer.learning_rate)
    (0, 0.0)
    """
    adamw = getattr(optimizer, "inner_optimizer", optimizer)
    schedule = getattr(adamw, "_learning_rate", None)
    if not isinstance(schedule, WarmupLinearDecay) or not adamw.built:
        return False
    schedule.set_steps(total_steps, _warmup_steps(total_steps, warmup_ratio, warmup_steps))
    # AdamW's state (iterations, first and second moments) starts at zero.
    for variable in adamw.variables:
        variable.assign(keras.ops.zeros(variable.shape, variable.dtype))
    return True
