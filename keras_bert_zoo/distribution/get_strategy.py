"""One call to the strategy a run should use."""

import os

import tensorflow as tf

from keras_bert_zoo.utils.tf_config import cluster_workers

KINDS = ("auto", "tpu", "gpus", "cpu", "multiworker")


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
            one, else several workers if `TF_CONFIG` lists them, else the
            local GPUs, else the CPU.
        tpu: TPU name or `grpc://` address.

    Returns:
        A strategy; build and compile the model under `strategy.scope()`.

    Examples:
    >>> get_strategy("cpu").num_replicas_in_sync
    1
    """
    if kind not in KINDS:
        raise ValueError(f"Unknown strategy '{kind}'; use one of {KINDS}.")
    if kind == "auto":
        if tpu or os.environ.get("TPU_NAME"):
            kind = "tpu"
        elif cluster_workers() > 1:
            kind = "multiworker"
        elif tf.config.list_physical_devices("GPU"):
            kind = "gpus"
        else:
            kind = "cpu"
    if kind == "tpu":
        return _tpu_strategy(tpu)
    if kind == "multiworker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("Strategy 'multiworker' reads the cluster from the TF_CONFIG environment variable, "
                             "which is not set.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    if kind == "gpus":
        if not tf.config.list_physical_devices("GPU"):
            raise ValueError("Strategy 'gpus' found no GPU; use 'cpu' (or 'auto').")
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()
