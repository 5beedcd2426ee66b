"""One call to the strategy a run should use."""

import logging
import os

import tensorflow as tf

from keras_bert_zoo.utils.tf_config import cluster_workers
from keras_bert_zoo.utils.whole_numbers import positive_whole_number

KINDS = ("auto", "tpu", "gpus", "cpu", "multiworker")

_log = logging.getLogger(__name__)


def _local_tpu():
    """Whether TPU chips are attached to this host (a TPU VM, Colab's TPU runtime), which TPUClusterResolver
    reaches as "local" (without a name it looks one up as a Cloud TPU's, which Colab's TPU VMs refuse). Listing
    local devices is what the GPU check does: under a millisecond, no network, on a machine without a TPU."""
    return any(device.device_type in ("TPU", "TPU_SYSTEM") for device in tf.config.list_physical_devices())


def _tpu_strategy(tpu):
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except Exception as e:  # resolvers fail with ValueError, OpError or network errors
        name = tpu or os.environ.get("TPU_NAME") or "(none given)"
        raise ValueError(f"No TPU could be resolved (TPU name: {name}): {e}. Pass the TPU's name or grpc:// "
                         "address as tpu= / --tpu (or set TPU_NAME), or use strategy 'gpus' or 'cpu'.") from None
    return tf.distribute.TPUStrategy(resolver)


def get_strategy(kind="auto", tpu=None):
    """The `tf.distribute.Strategy` for `kind`.

    Args:
        kind: `"tpu"` (TPUStrategy; clear error when no TPU resolves),
            `"gpus"` (MirroredStrategy over the local GPUs), `"multiworker"`
            (MultiWorkerMirroredStrategy from `TF_CONFIG`), `"cpu"` (the
            default strategy), or `"auto"`: a TPU if `tpu`/`TPU_NAME` names
            one, else several workers if `TF_CONFIG` lists them, else a TPU
            attached to this host (a TPU VM), else the local GPUs, else the
            CPU.
        tpu: TPU name, `grpc://` address, or `"local"` (this host's TPU).

    Returns:
        A strategy; build and compile the model under `strategy.scope()`.
        The one chosen is logged (INFO, logger
        `keras_bert_zoo.distribution.get_strategy`; the command line shows
        it on stderr).

    Examples:
    >>> get_strategy("cpu").num_replicas_in_sync
    1
    """
    if kind not in KINDS:
        raise ValueError(f"Unknown strategy '{kind}'; use one of {KINDS}.")
    if tpu and kind not in ("tpu", "auto"):
        raise ValueError(f"A TPU ({tpu}) is trained on with strategy 'tpu' (or 'auto'), not '{kind}': leave the TPU "
                         "out, or ask for strategy 'tpu'.")
    requested = kind
    if kind == "auto":
        if tpu or os.environ.get("TPU_NAME"):
            kind = "tpu"
        elif cluster_workers() > 1:
            kind = "multiworker"
        elif _local_tpu():
            kind, tpu = "tpu", "local"
        elif tf.config.list_physical_devices("GPU"):
            kind = "gpus"
        else:
            kind = "cpu"
    strategy = _make_strategy(kind, tpu)
    replicas = strategy.num_replicas_in_sync
    _log.info("Strategy %s%s: %s, %d replica%s in sync.", kind, " (auto)" if requested == "auto" else "",
              type(strategy).__name__.strip("_"), replicas, "" if replicas == 1 else "s")
    return strategy


def _make_strategy(kind, tpu):
    if kind == "tpu":
        return _tpu_strategy(tpu)
    if kind == "multiworker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("Strategy 'multiworker' reads the cluster from the TF_CONFIG environment variable, "
                             "which is not set.")
        workers = cluster_workers()
        if workers > 1:
            # TensorFlow waits here for every worker, without a word and for as long as it takes (deaf to SIGTERM):
            # a warning, which Python shows without any logging set up.
            _log.warning("Strategy multiworker: waiting for all %d workers of TF_CONFIG to start; until they have, only "
                      "SIGKILL stops this process.", workers)
        return tf.distribute.MultiWorkerMirroredStrategy()
    if kind == "gpus":
        if not tf.config.list_physical_devices("GPU"):
            raise ValueError("Strategy 'gpus' found no GPU; use 'cpu' (or 'auto').")
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def check_global_batch_size(batch_size, strategy=None):
    """Refuse a global batch that the replicas cannot share equally.

    A TPU compiles one shape for every core, and MirroredStrategy splits
    such a batch into unequal parts without a word (9 over 2 replicas: 5
    and 4). Call it before training, with the strategy the model is built
    under.

    Args:
        batch_size: the global batch (all replicas together).
        strategy: a `tf.distribute.Strategy`; the current one when `None`.

    Raises:
        ValueError: `batch_size` is not a multiple of the replicas in sync.

    Examples:
    >>> check_global_batch_size(32, get_strategy("cpu"))
    """
    batch_size = positive_whole_number(batch_size, "batch_size")
    strategy = strategy or tf.distribute.get_strategy()
    replicas = strategy.num_replicas_in_sync
    if batch_size % replicas:
        low, high = batch_size // replicas * replicas, (batch_size // replicas + 1) * replicas
        lower = f"{low} or " if low else ""
        raise ValueError(f"The batch size {batch_size} is not a multiple of the {replicas} replicas of "
                         f"{type(strategy).__name__}: each replica takes an equal part of the global batch. Use "
                         f"{lower}{high}.")
