"""AdamW set up as BERT fine-tuning and pretraining use it."""

from keras_bert_zoo.optimization.fused_adamw import FusedAdamW
from keras_bert_zoo.optimization.warmup_linear_decay import WarmupLinearDecay

# LayerNorm scales/offsets and biases are not decayed (BERT's
# `exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`); in Keras
# they are the variables named gamma, beta and bias.
NO_DECAY_NAMES = ["bias", "gamma", "beta"]


def bert_adamw(
    learning_rate=5e-5,
    total_steps=None,
    warmup_ratio=0.1,
    warmup_steps=None,
    weight_decay=0.01,
    global_clipnorm=1.0,
):
    """Create AdamW with warm-up + linear decay and BERT's decay exclusions.

    Args:
        learning_rate: peak learning rate (paper: 2e-5..5e-5 fine-tuning,
            1e-4 pretraining).
        total_steps: number of training steps; `None` keeps the rate
            constant.
        warmup_ratio: fraction of `total_steps` spent warming up (10%).
        warmup_steps: warm-up steps, overriding `warmup_ratio`.
        weight_decay: decoupled weight decay (0.01).
        global_clipnorm: clip gradients by global norm (1.0, as BERT).

    Returns:
        A `FusedAdamW`: Keras' AdamW, its update one kernel per variable.

    Examples:
    >>> optimizer = bert_adamw(2e-5, total_steps=1000)
    >>> round(float(optimizer.learning_rate), 9)  # step 0 of the warm-up
    0.0
    """
    if total_steps is not None:
        warmup = int(round(total_steps * warmup_ratio)) if warmup_steps is None else int(warmup_steps)
        learning_rate = WarmupLinearDecay(learning_rate, total_steps, warmup)
    optimizer = FusedAdamW(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=global_clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    return optimizer
