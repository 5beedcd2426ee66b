"""Which process of a run writes its outputs, and how the other workers learn that it may."""

import contextlib
import os
import tempfile

import tensorflow as tf

from keras_bert_zoo.utils.job_record import OutputDirectoryError

# The chief's refusal travels to the other workers as bytes in an int32 tensor of this many (a longer one is cut).
_MESSAGE_BYTES = 4096


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


@contextlib.contextmanager
def claimed_by_chief(strategy, claim):
    """Enter `claim`, the context manager that claims the output directory (`running_job`, which only the chief
    checks), and stop every worker of a cluster when the chief's claim fails.

    The other workers do not look at the directory: left alone, they went on to train (and waited for ever on
    the chief in their first collective op) when the chief refused it. So every worker takes part in one
    all-reduce that carries the chief's error message, and raises it too, as an `OutputDirectoryError`.

    Args:
        strategy: the run's strategy; None (no strategy made yet) or one of a single process: `claim` is
            entered as it is.
        claim: a context manager; entered in every worker (the others' yields without claiming).

    Yields:
        What `claim` yields.
    """
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        with claim as value:
            yield value
        return
    with contextlib.ExitStack() as stack:
        try:
            value, refusal = stack.enter_context(claim), None
        except Exception as e:  # OutputDirectoryError, or an OSError of the shared storage
            value, refusal = None, e
        shared = _chief_refusal(strategy, refusal if is_chief(strategy) else None)
        if refusal is not None:
            raise refusal
        if shared is not None:
            raise OutputDirectoryError(shared)
        yield value


def _chief_refusal(strategy, refusal):
    """The chief's `refusal` message as every worker receives it from one all-reduce; None when it claimed.

    Only the chief sends a non-zero tensor, from each of its local replicas (every worker has as many): the sum
    divided by that count is the chief's message.
    """
    code = [0] * (_MESSAGE_BYTES + 1)
    if refusal is not None:
        text = str(refusal).encode("utf-8")[:_MESSAGE_BYTES]
        code[:len(text) + 1] = [1, *text]
    local_replicas = len(strategy.extended.worker_devices)
    total = _summed_over_replicas(strategy, code).numpy()
    received = total // local_replicas
    if not received[0]:
        return None
    return bytes(received[1:][received[1:] > 0].astype("uint8")).decode("utf-8", "ignore")


def chiefs_seed(strategy, seed):
    """The chief's `seed` (0 <= seed < 2**31) on every worker of a multi-worker cluster, from one all-reduce;
    `seed` itself under any other strategy.

    Workers that each draw their own seed (none given) shuffle the data each in another order, and each then
    takes its share of every global batch from its own order: examples trained twice in an epoch, others never.
    Sent as two 16-bit halves, so that the sum over the chief's replicas stays inside int32 (every worker has
    as many replicas, as for `_chief_refusal`).
    """
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return seed
    sent = [seed >> 16, seed & 0xFFFF] if is_chief(strategy) else [0, 0]
    high, low = _summed_over_replicas(strategy, sent).numpy() // len(strategy.extended.worker_devices)
    return int(high) << 16 | int(low)


def chief_output_dir(strategy, output_dir):
    """Make `output_dir` in the chief, and hold the other workers of a cluster until it has.

    The other workers read the chief's backup there, which its claim of the directory may just have removed (an
    overwrite): they go on only once the chief has claimed it. One collective op waits for all.

    Args:
        strategy: the run's strategy; one of a single process only makes the directory.
        output_dir: the directory the chief writes.

    Returns:
        Whether this process is the chief (`is_chief`).
    """
    chief = is_chief(strategy)
    if chief:
        os.makedirs(output_dir, exist_ok=True)
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        _summed_over_replicas(strategy, 1)
    return chief


def _summed_over_replicas(strategy, value):
    """The sum of int32 `value` over every replica of the cluster: one collective op, traced (run eagerly,
    TensorFlow warns of its overhead on every call)."""
    def replica_value():
        return tf.constant(value, tf.int32)

    @tf.function(autograph=False)
    def summed():
        return strategy.reduce("SUM", strategy.run(replica_value), axis=None)

    return summed()


def save_preset_in_chief(model, path, chief):
    """Save `model` as a preset at `path` in the chief.

    Saving may be collective (variables synchronized on read): the other workers save as the chief does,
    somewhere of their own that they remove (TensorFlow's multi-worker checkpointing).

    Args:
        model: the trained model (a task or a pretrainer).
        path: the preset directory the chief writes.
        chief: whether this process is the chief (`is_chief`).
    """
    if chief:
        model.save_to_preset(path)
        return
    with tempfile.TemporaryDirectory() as scratch:
        model.save_to_preset(os.path.join(scratch, os.path.basename(path)))
