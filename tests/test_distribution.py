"""Choosing a strategy: TF_CONFIG's workers."""

import json

import pytest
import tensorflow as tf
from tensorflow.python.distribute import multi_worker_util

from keras_bert_zoo.distribution import get_strategy
from keras_bert_zoo.utils.tf_config import cluster_workers


@pytest.mark.parametrize("task_type", ["chief", "worker", "evaluator"])
def test_workers_are_counted_as_tensorflow_counts_them(monkeypatch, task_type):
    """Evaluators and parameter servers do not train with the workers; an evaluator's cluster is its own."""
    cluster = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "evaluator": ["h3:1"], "ps": ["h4:1"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": task_type, "index": 0}}))
    assert cluster_workers() == multi_worker_util.worker_count(cluster, task_type)
    assert cluster_workers() == (1 if task_type == "evaluator" else 3)


def test_an_evaluator_beside_one_worker_does_not_make_auto_multiworker(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    if tf.config.list_physical_devices("TPU") or tf.config.list_physical_devices("GPU"):
        pytest.skip("this machine has an accelerator")
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["h0:1"], "evaluator": ["h1:1"]},
                                                "task": {"type": "worker", "index": 0}}))
    assert cluster_workers() == 1
    assert get_strategy("auto") is tf.distribute.get_strategy()
