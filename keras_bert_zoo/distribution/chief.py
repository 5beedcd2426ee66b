"""Which process of a run writes its outputs."""


def is_chief(strategy):
    """Whether this process writes the run's outputs (job record, backup, logs, model, metrics).

    The workers of a `MultiWorkerMirroredStrategy` cluster run one job, usually into one shared output directory
    (GCS on a TPU pod): its chief alone writes there, as TensorFlow's `should_checkpoint` says (the `chief` task,
    else worker 0). A single-process strategy (TPU, GPUs, CPU) is its own chief.

    Examples:
    >>> import tensorflow as tf
    >>> is_chief(tf.distribute.get_strategy())
    True
    """
    return bool(strategy.extended.should_checkpoint)
