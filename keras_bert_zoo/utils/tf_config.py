"""The cluster that the TF_CONFIG environment variable describes, read without TensorFlow."""

import os

from keras_bert_zoo.utils.text_files import loads_json


def cluster_workers():
    """How many workers this task trains with: TF_CONFIG's chief and workers; 0 without TF_CONFIG.

    Evaluators and parameter servers are not workers, and an evaluator's
    task is in a cluster of its own (the evaluators), as TensorFlow's
    `multi_worker_util.worker_count` counts them: an evaluator beside two
    workers does not join their collectives.

    Raises:
        ValueError: TF_CONFIG is set but is not the JSON object TensorFlow reads.

    Examples:
    >>> import os
    >>> os.environ["TF_CONFIG"] = '{"cluster": {"worker": ["h0:2222", "h1:2222"]}, "task": {"index": 0}}'
    >>> cluster_workers()
    2
    >>> del os.environ["TF_CONFIG"]
    """
    text = os.environ.get("TF_CONFIG")
    if not text:
        return 0
    try:
        config = loads_json(text, "TF_CONFIG")
        cluster = config.get("cluster", {})
        kinds = ("evaluator",) if (config.get("task") or {}).get("type") == "evaluator" else ("chief", "worker")
        return sum(len(cluster.get(kind) or []) for kind in kinds)
    except (ValueError, AttributeError, TypeError):
        raise ValueError('TF_CONFIG is not the JSON object TensorFlow reads ({"cluster": {"worker": ["host:port", '
                         '...]}, "task": {"type": "worker", "index": 0}}): fix it, or unset it.') from None
