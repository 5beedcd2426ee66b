"""The cluster that the TF_CONFIG environment variable describes, read without TensorFlow."""

import json
import os


def cluster_workers():
    """How many workers (a chief included) TF_CONFIG's cluster lists; 0 without TF_CONFIG.

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
        cluster = json.loads(text).get("cluster", {})
        return sum(len(cluster.get(kind) or []) for kind in ("chief", "worker"))
    except (ValueError, AttributeError, TypeError):
        raise ValueError('TF_CONFIG is not the JSON object TensorFlow reads ({"cluster": {"worker": ["host:port", '
                         '...]}, "task": {"type": "worker", "index": 0}}): fix it, or unset it.') from None
