"""Choosing a strategy: a TPU on this host, the strategy shown, batches the replicas share, TF_CONFIG's workers."""

import importlib
import json
import logging
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf
from tensorflow.python.distribute import multi_worker_util

import keras_bert_zoo as kbz
from keras_bert_zoo.cli.main import _library_log_lines
from keras_bert_zoo.distribution import check_global_batch_size, get_strategy
from keras_bert_zoo.utils.tf_config import cluster_workers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


@pytest.mark.subprocess
def test_a_batch_the_replicas_cannot_share_equally_is_refused(tiny_checkpoint):
    """MirroredStrategy splits 9 over 2 replicas as 5 and 4 without a word (a TPU cannot compile that); both
    pretraining entries and finetune refuse it before they read data or claim their output directory."""
    probe = """
import json, os, tempfile, tensorflow as tf
tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                           [tf.config.LogicalDeviceConfiguration()] * 2)
from keras_bert_zoo.distribution import check_global_batch_size
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
batch = next(iter(strategy.experimental_distribute_dataset(tf.data.Dataset.range(9).batch(9))))
sizes = [int(part.shape[0]) for part in strategy.experimental_local_results(batch)]
check_global_batch_size(8, strategy)
try:
    check_global_batch_size(9, strategy)
    refused = None
except ValueError as e:
    refused = str(e)
import keras_bert_zoo as kbz
out = os.path.join(tempfile.mkdtemp(), "run")
entries = []
for entry in (lambda: kbz.pretrain(out, "missing.txt", preset=TINY, strategy=strategy, batch_size=9),
              lambda: kbz.pretrain_from_records(out, "missing-*.tfrecord", preset=TINY, strategy=strategy,
                                                batch_size=9)):
    try:
        entry()
    except (ValueError, OSError) as e:
        entries.append(str(e))
with strategy.scope():
    classifier = kbz.BertClassifier.from_preset(TINY, num_classes=2, sequence_length=8)
    classifier.compile()
try:
    kbz.finetune(classifier, ["a text"] * 9, [0] * 9, out, batch_size=9)
except ValueError as e:
    entries.append(str(e))
print(json.dumps({"sizes": sizes, "refused": refused, "entries": entries, "written": os.path.exists(out)}))
""".replace("TINY", repr(tiny_checkpoint))
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["sizes"] == [5, 4]
    assert outcome["refused"] == ("The batch size 9 is not a multiple of the 2 replicas of MirroredStrategy: each "
                                  "replica takes an equal part of the global batch. Use 8 or 10.")
    assert outcome["entries"] == [outcome["refused"]] * 3 and not outcome["written"]


def test_waiting_for_the_other_workers_is_said_before_tensorflow_waits(monkeypatch, caplog):
    # MultiWorkerMirroredStrategy waits for every worker of TF_CONFIG without a word, deaf to SIGTERM: a worker
    # started alone sat silent for minutes.
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
                                                "task": {"type": "worker", "index": 0}}))
    said = []
    monkeypatch.setattr(tf.distribute, "MultiWorkerMirroredStrategy",
                        lambda: said.extend(caplog.messages) or tf.distribute.get_strategy())
    with caplog.at_level(logging.WARNING, logger="keras_bert_zoo"):  # shown where no logging is set up
        get_strategy("multiworker")
    assert said == ["Strategy multiworker: waiting for all 2 workers of TF_CONFIG to start; until they have, only "
                    "SIGKILL stops this process."]


def test_a_tpu_named_beside_another_strategy_is_refused():
    # --strategy cpu --tpu my-tpu trained on the CPU, the TPU ignored in silence.
    with pytest.raises(ValueError, match=r"A TPU \(my-tpu\) is trained on with strategy 'tpu' \(or 'auto'\), not "
                                         r"'cpu': leave the TPU out, or ask for strategy 'tpu'."):
        get_strategy("cpu", tpu="my-tpu")


def test_one_replica_takes_any_batch():
    check_global_batch_size(7, tf.distribute.get_strategy())
    check_global_batch_size(7)


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


@pytest.mark.parametrize("batch_size", [0, -2, "8", None, 8.0, True])
def test_a_batch_size_that_is_no_positive_whole_number_is_refused_naming_it(batch_size):
    # "8" and None failed inside the modulo with Python's TypeError; 0 and -2 passed the check.
    with pytest.raises(ValueError, match=re.escape(f"batch_size must be a positive whole number; got {batch_size!r}.")):
        check_global_batch_size(batch_size)
    with pytest.raises(ValueError, match="batch_size must be a positive whole number"):
        kbz.pretrain_from_records("unused", "missing-*.tfrecord", preset="unused", batch_size=batch_size,
                                  strategy="cpu")


@pytest.mark.parametrize("text", ["{cluster: 1}", "[" * 100_000, '{"cluster": []}'])
def test_a_tf_config_tensorflow_cannot_read_is_named_with_its_shape(monkeypatch, text):
    # One nested past Python's recursion limit raised a bare RecursionError.
    monkeypatch.setenv("TF_CONFIG", text)
    with pytest.raises(ValueError, match=r"TF_CONFIG is not the JSON object TensorFlow reads \(\{\"cluster\""):
        cluster_workers()
