"""Choosing a strategy: a TPU on this host, the strategy shown, TF_CONFIG's workers."""

import importlib
import json
import logging

import pytest
import tensorflow as tf
from tensorflow.python.distribute import multi_worker_util

from keras_bert_zoo.cli.main import _library_log_lines
from keras_bert_zoo.distribution import get_strategy
from keras_bert_zoo.utils.tf_config import cluster_workers

# The module, not the function the package names after it.
get_strategy_module = importlib.import_module("keras_bert_zoo.distribution.get_strategy")


def test_auto_takes_a_tpu_attached_to_this_host_as_local(monkeypatch):
    """On a TPU VM the chips are local devices, and TPUClusterResolver reaches them as "local" (without a name it
    asks the GCE metadata server, which names none there)."""
    monkeypatch.delenv("TPU_NAME", raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    asked = []
    monkeypatch.setattr(get_strategy_module, "_tpu_strategy",
                        lambda tpu: asked.append(tpu) or tf.distribute.get_strategy())
    local = [tf.config.PhysicalDevice("/physical_device:CPU:0", "CPU"),
             tf.config.PhysicalDevice("/physical_device:TPU_SYSTEM:0", "TPU_SYSTEM"),
             tf.config.PhysicalDevice("/physical_device:TPU:0", "TPU")]
    monkeypatch.setattr(tf.config, "list_physical_devices",
                        lambda kind=None: [d for d in local if kind in (None, d.device_type)])
    get_strategy("auto")
    assert asked == ["local"]


def test_auto_on_a_machine_without_a_tpu_resolves_none(monkeypatch, caplog):
    """No resolver is tried (a named one can wait on the network); the strategy chosen is logged."""
    monkeypatch.delenv("TPU_NAME", raising=False)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    if tf.config.list_physical_devices("TPU") or tf.config.list_physical_devices("GPU"):
        pytest.skip("this machine has an accelerator")

    def no_resolver(*args, **kwargs):
        raise AssertionError("a TPU resolver was tried")

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", no_resolver)
    with caplog.at_level(logging.INFO, logger="keras_bert_zoo"):
        strategy = get_strategy("auto")
    assert strategy is tf.distribute.get_strategy()
    assert caplog.messages == ["Strategy cpu (auto): DefaultDistributionStrategy, 1 replica in sync."]


def test_the_command_line_shows_the_strategy_on_a_line_of_stderr(capsys):
    with _library_log_lines("pretrain"):
        get_strategy("cpu")
    assert capsys.readouterr().err == "keras-bert-zoo pretrain: Strategy cpu: DefaultDistributionStrategy, 1 replica " \
                                      "in sync.\n"
    get_strategy("cpu")  # the handler is gone with the command
    assert capsys.readouterr().err == ""


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
