"""The benchmark harness: its statistics, its bound, its results files and README table."""

import fnmatch
import json
import os
import platform
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import __main__ as benchmarks_cli
from benchmarks import call_overhead_vs_keras_hub as call_overhead
from benchmarks import gpu_check
from benchmarks import report, run, stats
from benchmarks import serving_vs_keras_hub as serving
from benchmarks.peers import keras_peers

ROOT = run.ROOT
RESULTS = [os.path.join("benchmarks", "results", f) for pattern in report.RESULTS_FILES
           for f in sorted(fnmatch.filter(os.listdir(os.path.join(ROOT, "benchmarks", "results")), pattern))]


def test_summary_is_median_min_and_max():
    assert stats.summary([3.0, 1.0, 2.0, 10.0, 4.0]) == {"median": 3.0, "min": 1.0, "max": 10.0}


def test_ratios_are_taken_round_by_round():
    # Per-round ratios 2, 1, 3: a ratio of medians (4 / 2) would hide the spread.
    assert stats.round_ratios([2.0, 4.0, 6.0], [1.0, 4.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0}


@pytest.mark.parametrize("argv, message", [
    (["run", "--rounds", "2", "--output_file", "x.json"], "at least 3"),
    (["run", "--output_file", "/tmp/x.json"], "relative to the repository"),
    (["run", "--sizes", "huge", "--output_file", "x.json"], "unknown 'huge'"),
    (["run", "--dtypes", "int8", "--output_file", "x.json"], "unknown 'int8'"),
    (["run", "--xla", "auto", "--output_file", "x.json"], "unknown 'auto'"),
    (["run", "--shapes", "16x512", "--output_file", "x.json"], "unknown '16x512'"),
    (["run", "--output_file", "no_such_folder/x.json"], "no folder 'no_such_folder'"),
    (["run", "--torch_python", "no-such-python3", "--output_file", "x.json"],
     "--torch_python no-such-python3: no such interpreter"),
    (["run", "--torch_python", "no_such_folder/python", "--output_file", "x.json"],
     "--torch_python no_such_folder/python: no such interpreter"),
    (["run", "--torch_python", "./README.md", "--output_file", "x.json"], "--torch_python ./README.md: no such interpreter"),
    (["run", "--jobs", "train", "--shapes", "1x128", "--output_file", "x.json"],
     "--shapes 1x128 matches none of the shapes of --jobs train (train: 16x128)"),
])
def test_bad_flags_are_refused_before_anything_runs(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        benchmarks_cli.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_torch_interpreter_is_a_command_on_path_or_a_path_in_the_repository(monkeypatch, tmp_path):
    # A GPU image's torch is its plain `python3`: a command on PATH, as a shell would run it.
    command = tmp_path / "image-python3"
    command.write_text("#!/bin/sh\n")
    command.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert benchmarks_cli._interpreter("image-python3") == str(command)
    assert benchmarks_cli._interpreter(str(command)) == str(command)
    assert benchmarks_cli._interpreter(os.path.join("~", "image-python3")) == str(command)
    # A path is the repository's, and must be an executable file.
    assert benchmarks_cli._interpreter(os.path.join("benchmarks", "__main__.py")) is None
    assert benchmarks_cli._interpreter(os.path.join("benchmarks", "peers")) is None  # a folder
    measured = []
    monkeypatch.setattr(run, "run", lambda jobs, sizes, dtypes, rounds, torch_python, *a, **k: measured.append(
        torch_python) or {"results": []})
    benchmarks_cli.main(["run", "--torch_python", "image-python3", "--output_file", "x.json"])
    # Without `.venv-torch` the default is no HF torch peer, not an error.
    monkeypatch.setattr(benchmarks_cli, "DEFAULT_TORCH_PYTHON", os.path.join("no_such_folder", "python"))
    benchmarks_cli.main(["run", "--output_file", "x.json"])
    assert measured == [str(command), None]


def test_versions_name_the_checkout_that_runs_installed_or_not(monkeypatch):
    import importlib.metadata

    import keras_bert_zoo
    from benchmarks import machine

    installed = importlib.metadata.version

    def only_the_stack(name):  # a checkout on PYTHONPATH, as on a GPU image: no metadata of its own
        if name == "keras_bert_zoo":
            raise importlib.metadata.PackageNotFoundError(name)
        return installed(name)

    monkeypatch.setattr(importlib.metadata, "version", only_the_stack)
    versions = machine.library_versions()
    assert versions["keras_bert_zoo"] == keras_bert_zoo.__version__
    assert versions["tensorflow"] == installed("tensorflow")


def test_a_config_that_fails_is_recorded_and_the_run_goes_on(monkeypatch, capsys):
    def run_config(config, peers, rounds, torch_python, log):
        if config["dtype"] == "float16":
            raise RuntimeError("the keras_hub worker died (exit code 1); see its stderr above")
        figures = {"seq_per_s": {"median": 1.0, "min": 1.0, "max": 1.0}, "peak_rss_mb": 1.0}
        return {"config": config, "device": "cpu", "peers": {p: figures for p in peers}, "ratios": {}}, {"tensorflow": "x"}

    monkeypatch.setattr(run, "run_config", run_config)
    saved, lines = [], []
    document = run.run(["inference"], ["base"], ["float16", "float32"], 3, None, "python -m benchmarks run",
                       log=lines.append, save=lambda d: saved.append(json.loads(json.dumps(d))), shapes=[(32, 128)])
    # The float32 config after the failed one was measured, without the HF torch peer this run has no interpreter for.
    assert [r["config"]["dtype"] for r in document["results"]] == ["float32"]
    assert list(document["results"][0]["peers"]) == [run.OURS, "keras_hub", "matmul_chain"]
    assert document["failed"] == [{"config": {"job": "inference", "size": "base", "dtype": "float16", "xla": False,
                                              "batch": 32, "length": 128},
                                   "error": "RuntimeError: the keras_hub worker died (exit code 1); see its stderr above"}]
    assert len(saved) == 2 and saved[0]["failed"] and not saved[0]["results"]  # written after each config
    assert any("float16" in line and "FAILED" in line for line in lines)
    rendered = report.render(dict(document, load_after=[0, 0, 0]), "x.json")
    assert "Not measured: inference base float16 32 x 128: RuntimeError: the keras_hub worker died" in rendered
    assert "Not measured" in report.render(dict(document, failed=[dict(document["failed"][0], error="")],
                                                load_after=[0, 0, 0]), "x.json")

    # A fault tied to one policy fails each of its shapes, and the other policy's configs still run ...
    saved.clear()
    tied = run.run(["inference", "train"], ["base"], ["float16", "float32"], 3, None, "python -m benchmarks run",
                   log=lines.append, save=lambda d: saved.append(json.loads(json.dumps(d))))
    assert [(r["config"]["job"], r["config"]["dtype"]) for r in tied["results"]] == [("inference", "float32")] * 3 + [
        ("train", "float32")]
    assert len(tied["failed"]) == 4 and "stopped" not in tied
    # ... while one met in a second group with nothing measured between (the environment's) stops the run.
    monkeypatch.setattr(run, "run_config", lambda config, *a: run_config(dict(config, dtype="float16"), *a))
    saved.clear()
    stopped = run.run(["inference", "train"], ["base"], ["float32", "bfloat16"], 3, None, "python -m benchmarks run",
                      log=lines.append, save=lambda d: saved.append(json.loads(json.dumps(d))))
    # float32's three shapes, then bfloat16's first: 4 of 8 configs tried.
    assert len(stopped["failed"]) == 4 and not stopped["results"]
    assert stopped["stopped"] == "configs of two groups (job, size, dtype, XLA) failed with none measured between; 4 not run"
    assert saved[-1]["stopped"] == stopped["stopped"]  # the file says so too
    assert "Stopped: configs of two groups" in report.render(dict(stopped, load_after=[0, 0, 0]), "x.json")
    # With nothing left to run, nothing is said to be left out.
    assert "stopped" not in run.run(["train"], ["base"], ["float32", "bfloat16"], 3, None, "python -m benchmarks run",
                                    log=lines.append)

    # The command says so: exit status 1, the file written all the same.
    monkeypatch.setattr(run, "run", lambda *a, **k: document)
    with pytest.raises(SystemExit) as exit_info:
        benchmarks_cli.main(["run", "--output_file", "x.json"])
    assert exit_info.value.code == 1
    assert "1 config(s) failed" in capsys.readouterr().err


def test_results_name_the_commit_that_ran(monkeypatch):
    from benchmarks import machine, results_file

    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if not head:
        pytest.skip("not a git checkout")
    assert machine.source_commit() in (head, head + "+changes")
    assert results_file.new_document("python benchmarks/x.py")["commit"] == machine.source_commit()
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError("no git")))
    monkeypatch.delenv("BENCHMARKS_COMMIT", raising=False)
    assert machine.source_commit() is None and "commit" not in results_file.new_document("python benchmarks/x.py")
    monkeypatch.setenv("BENCHMARKS_COMMIT", "b93840f")  # a copy with no git says which commit it is
    assert results_file.new_document("python benchmarks/x.py")["commit"] == "b93840f"


def test_configs_cover_every_dtype_and_xla_setting_of_the_shapes_asked_for():
    configs = list(run.configs(["inference", "train"], ["base"], ["float32", "float16"], [False, True], [(1, 128)]))
    # Train's only shape is 16x128: asking for 1x128 keeps inference's alone.
    assert [(c["job"], c["dtype"], c["xla"], c["batch"], c["length"]) for c in configs] == [
        ("inference", "float32", False, 1, 128), ("inference", "float32", True, 1, 128),
        ("inference", "float16", False, 1, 128), ("inference", "float16", True, 1, 128)]
    assert len(list(run.configs(["inference"], ["base"], ["float32"]))) == len(run.SHAPES["inference"])


def test_gpu_check_compares_the_gpu_shaped_encoder_with_the_cpu_shaped_one():
    """The check run before GPU benchmarks, here with both paths on the CPU: keras-hub's forward pass (what a
    GPU runs; one call per layer) against the matmul-by-matmul one (none), on weights that make every layer move
    the output."""
    row = gpu_check.compare_paths("tiny", "float32", "cpu", batch=3, length=16)
    assert row["keras_hub_calls"] == {"checked": 2, "reference": 0}
    assert row["ok"] and 0 < row["relative_l2_error"] < gpu_check.TOLERANCES["float32"]


def test_gpu_check_fails_when_the_gpu_shaped_pass_does_not_run(monkeypatch):
    """What the check exists to catch: a GPU machine whose encoder still takes the CPU-shaped path."""
    from keras_bert_zoo.layers import bert_encoder_layer

    monkeypatch.setattr(bert_encoder_layer, "runs_on_gpu", lambda: False)
    row = gpu_check.compare_paths("tiny", "float32", "cpu", batch=3, length=16)
    assert row["keras_hub_calls"] == {"checked": 0, "reference": 0} and not row["ok"]


def test_gpu_check_refuses_to_run_without_a_gpu(capsys):
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        pytest.skip("a GPU is here")
    output_file = os.path.join("benchmarks", "results", "never_written.json")
    with pytest.raises(SystemExit) as exit_info:
        gpu_check.main(["--output_file", output_file])
    assert exit_info.value.code == 2 and "TensorFlow sees no GPU" in capsys.readouterr().err
    assert not os.path.exists(os.path.join(ROOT, output_file))


def test_gpu_check_refuses_an_output_file_it_could_not_write_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as exit_info:
        gpu_check.main(["--device", "cpu", "--output_file", os.path.join("no_such_folder", "x.json")])
    assert exit_info.value.code == 2 and "no folder 'no_such_folder'" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(fnmatch.filter(os.listdir(os.path.join(ROOT, "benchmarks", "results")),
                                                      "gpu_check_*.json")))
def test_gpu_check_files_name_their_gpu_and_pass_every_check_of_every_policy(path):
    with open(os.path.join(ROOT, "benchmarks", "results", path)) as f:
        document = json.load(f)
    assert document["command"].startswith("python -m benchmarks.gpu_check") and document["gpus"][0]["name"]
    assert document["ok"] and all(row["ok"] for row in document["checks"])
    assert {(row["check"], row["policy"]) for row in document["checks"]} == {
        (check, policy) for check in ("outputs", "train_and_serve") for policy in gpu_check.TOLERANCES}


def test_a_gpu_results_file_renders_its_gpu_xla_and_device_memory():
    row = {"config": {"job": "inference", "size": "base", "dtype": "bfloat16", "xla": True, "batch": 32,
                      "length": 128},
           "device": "NVIDIA H100 80GB HBM3",
           "peers": {p: {"seq_per_s": {"median": m, "min": m, "max": m}, "peak_rss_mb": 2000.0, "peak_device_mb": g}
                     for p, m, g in ((run.OURS, 20.0, 500.0), ("keras_hub", 10.0, 600.4))},
           "ratios": {f"{run.OURS}/keras_hub": {"median": 2.0, "min": 1.5, "max": 2.5}}}
    document = {"command": "python -m benchmarks run", "started": "2026-11-24 23:00:00", "load_before": [1, 1, 1],
                "load_after": [1, 1, 1], "machine": {"cpu": "Xeon", "cores": 16, "flags": ["avx2"]},
                "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory.total": "81559 MiB", "driver_version": "580"}],
                "note": "A note.", "results": [row]}
    text = report.render(document, "benchmarks/results/bench_x.json")
    assert "GPU NVIDIA H100 80GB HBM3 (81559 MiB, driver 580)" in text and text.splitlines()[0].endswith("A note.")
    assert "peak GPU MB (ours / keras-hub / HF torch)" in text
    assert "| inference | base | bfloat16, XLA | 32 x 128 | 20.0 | 10.0 | - | - | 2.00 (1.50-2.50) | - | - " \
           "| 500 / 600 / - |" in text


def _matmul_shapes(function, *args):
    """(rows, inner, columns, batch) of every matmul a traced function runs."""
    graph = function.get_concrete_function(*args).graph
    shapes = []
    for op in graph.get_operations():
        if op.type in ("MatMul", "BatchMatMulV2"):
            a, b = (tuple(t.shape) for t in op.inputs)
            ta, tb = op.get_attr("transpose_a" if op.type == "MatMul" else "adj_x"), \
                op.get_attr("transpose_b" if op.type == "MatMul" else "adj_y")
            rows, inner = (a[-1], a[-2]) if ta else (a[-2], a[-1])
            columns = b[-2] if tb else b[-1]
            shapes.append((rows, inner, columns, int(np.prod(a[:-2], dtype=int))))
    assert shapes, "no matmul found: the graph walk is broken"
    return sorted(shapes)


@pytest.mark.parametrize("max_scores", [0, 1 << 20], ids=["head_by_head", "all_heads"])
def test_matmul_chain_runs_exactly_the_encoders_matrix_products(monkeypatch, max_scores):
    """The bound is honest: the same products, none missing and none extra, attention head by head or over
    all heads at once as the encoder runs it at that size."""
    import keras_bert_zoo as kbz
    import tensorflow as tf

    from keras_bert_zoo.layers import bert_encoder_layer

    monkeypatch.setattr(bert_encoder_layer, "ALL_HEADS_MAX_SCORES", max_scores)
    monkeypatch.setattr(keras_peers, "ALL_HEADS_MAX_SCORES", max_scores)

    config = {"job": "inference", "size": "tiny", "dtype": "float32", "batch": 3, "length": 16}
    size = keras_peers.SIZES["tiny"]
    backbone = kbz.BertBackbone(vocabulary_size=100, **size)
    inputs, _ = keras_peers._inputs(dict(config))
    inputs = {k: tf.clip_by_value(v, 0, 99) for k, v in inputs.items()}
    encoder = tf.function(lambda x: backbone(x, training=False)["sequence_output"])
    ours = _matmul_shapes(encoder, inputs)
    # The pooler's [batch, hidden] product is not part of the sequence output's work.
    ours.remove((3, 32, 32, 1))
    assert ours == _matmul_shapes(keras_peers.matmul_chain_function(config))


def test_readme_table_is_rendered_from_the_results_files():
    assert RESULTS, "no benchmarks/results/bench_*.json"
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    assert report.readme_section(RESULTS, ROOT) in readme, "run `python -m benchmarks readme`"


@pytest.mark.parametrize("path", sorted(os.listdir(os.path.join(ROOT, "benchmarks", "results"))))
def test_no_results_file_names_a_machines_path(path):
    with open(os.path.join(ROOT, "benchmarks", "results", path)) as f:
        assert not re.search(r'"(/|[A-Za-z]:\\\\)', f.read()), "an absolute path in a results file"


@pytest.mark.parametrize("path", RESULTS)
def test_results_file_names_its_machine(path):
    with open(os.path.join(ROOT, path)) as f:
        document = json.load(f)
    assert document["machine"]["cores"] >= 1 and "flags" in document["machine"] and document["machine"]["cpu"]
    assert len(document["load_before"]) == len(document["load_after"]) == 3
    if document["command"].startswith("python benchmarks/call_overhead_vs_keras_hub.py"):
        # every call, both peers, first call and rounds, a ratio per round
        assert set(document["results"]) == set(call_overhead.SCENARIOS)
        for row in document["results"].values():
            for peer in (run.OURS, "keras_hub"):
                assert row[peer]["first_call_ms"] > 0 and 0 < row[peer]["ms"]["min"] <= row[peer]["ms"]["median"]
            assert row["keras_hub_over_ours"]["min"] <= row["keras_hub_over_ours"]["median"]
        return
    if isinstance(document["results"], dict):  # serving: every scenario, both peers, a ratio
        assert document["command"].startswith("python benchmarks/serving_vs_keras_hub.py")
        assert set(document["results"]) == {serving.scenario_name(*s) for s in serving.SCENARIOS}
        for row in document["results"].values():
            assert row[run.OURS]["sentences_per_s"]["median"] > 0 and row["keras_hub"]["sentences_per_s"]["median"] > 0
            assert row[f"ratio_{run.OURS}/keras_hub"]["min"] <= row[f"ratio_{run.OURS}/keras_hub"]["median"]
        return
    setting = re.match(r"(?:TF_ENABLE_ONEDNN_OPTS=([01]) )?python -m benchmarks run ", document["command"])
    assert setting, document["command"]
    if setting.group(1):  # the kernels the workers loaded, as the command sets them
        assert setting.group(1) == {"on": "1", "off": "0"}[document["versions"]["tensorflow_onednn"]]
    for row in document["results"]:
        assert len(row["peers"][run.OURS]["rounds"]) == document["rounds"]
        if document.get("gpus"):  # every peer ran on the GPU the file names, and its memory there is recorded
            assert row["device"] == document["gpus"][0]["name"]
            assert all(peer["peak_device_mb"] > 0 for peer in row["peers"].values())


# What each benchmark script writes (the examples' accuracy evidence, finetune_* / pretrain_*, is a run's metrics).
SCRIPT_RESULTS = [f for f in sorted(os.listdir(os.path.join(ROOT, "benchmarks", "results")))
                  if f.startswith(("bench_", "serving_vs_", "int8_vs_", "mrpc_vs_", "pretraining_vs_", "call_overhead_vs_"))]


@pytest.mark.parametrize("name", SCRIPT_RESULTS)
def test_every_benchmark_results_file_records_its_command_machine_load_and_versions(name):
    with open(os.path.join(ROOT, "benchmarks", "results", name)) as f:
        document = json.load(f)
    script = re.sub(r"(_(avx2|avx512|bf16|mixed_bf16))+$", "", name.split("_cpu2")[0])
    assert re.match(r"(TF_ENABLE_ONEDNN_OPTS=[01] )?python (-m benchmarks run|benchmarks/%s\.py)" % script,
                    document["command"]), document["command"]
    assert document["machine"]["cpu"] and document["machine"]["cores"] >= 1 and "flags" in document["machine"]
    assert len(document["load_before"]) == len(document["load_after"]) == 3
    assert document["versions"]["tensorflow"] and document["versions"]["keras_bert_zoo"]


@pytest.mark.parametrize("script", ["mrpc_vs_keras_hub", "pretraining_vs_keras_hub", "call_overhead_vs_keras_hub"])
def test_task_level_benchmarks_refuse_an_absolute_output_file_before_anything_runs(script, tmp_path):
    result = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script + ".py"), "--output_file",
                             str(tmp_path / "x.json")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "relative to the repository" in result.stderr, result.stderr[-2000:]
    assert not (tmp_path / "x.json").exists()


def test_serving_benchmark_batches_with_the_settings_the_export_ships(tmp_path):
    from keras_bert_zoo.export import batching_parameters

    path = tmp_path / "batching_parameters.txt"
    path.write_text(batching_parameters(max_batch_size=16, batch_timeout_micros=500, num_batch_threads=3))
    assert serving.read_batching_parameters(str(path)) == {
        "max_batch_size": 16, "batch_timeout_micros": 500, "max_enqueued_batches": 100, "num_batch_threads": 3}


def test_serving_ratios_are_taken_round_by_round():
    def rounds(*figures):
        return [{serving.scenario_name(*s): {"sentences_per_s": f, "p50_ms": 1.0, "p95_ms": 2.0}
                 for s in serving.SCENARIOS} for f in figures]

    summary = serving.summarize({run.OURS: rounds(2.0, 4.0, 6.0), "keras_hub": rounds(1.0, 4.0, 2.0)})
    row = summary["8_clients_batch_1_tf_batching"]
    assert row[f"ratio_{run.OURS}/keras_hub"] == {"median": 2.0, "min": 1.0, "max": 3.0}
    assert row["keras_hub"]["sentences_per_s"] == {"median": 2.0, "min": 1.0, "max": 4.0}


@pytest.mark.skipif(sys.platform != "linux" or platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the oneDNN default is for TensorFlow's x86 Linux builds")
def test_the_runner_hands_its_workers_the_librarys_onednn_default():
    # Workers import TensorFlow before keras_bert_zoo: only the environment the runner passes decides.
    environment = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    probe = "import os, benchmarks.run; print(os.environ['TF_ENABLE_ONEDNN_OPTS'])"
    probed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env={**environment, "PYTHONPATH": ROOT}, cwd=ROOT)
    assert probed.returncode == 0, probed.stderr
    assert probed.stdout.strip() == "1"


@pytest.mark.subprocess
@pytest.mark.parametrize("job, peer", [("inference", "matmul_chain"), ("pretrain", "keras_hub")])
def test_a_config_runs_interleaved_in_persistent_workers(job, peer):
    config = {"job": job, "size": "tiny", "dtype": "float32", "batch": 2, "length": 64}
    lines = []
    row, versions = run.run_config(config, [run.OURS, peer], 3, None, lines.append)
    for name in (run.OURS, peer):
        figures = row["peers"][name]
        assert len(figures["rounds"]) == 3 and min(figures["rounds"]) > 0
        assert figures["seq_per_s"]["min"] <= figures["seq_per_s"]["median"] <= figures["seq_per_s"]["max"]
        assert figures["peak_rss_mb"] > 100  # a process holding TensorFlow
    expected = [o / c for o, c in zip(row["peers"][run.OURS]["rounds"], row["peers"][peer]["rounds"])]
    assert row["ratios"][f"keras_bert_zoo/{peer}"]["median"] == pytest.approx(np.median(expected), abs=2e-3)
    assert versions["keras_bert_zoo"] and versions["tensorflow"]
    # The workers' TensorFlow loaded oneDNN's kernels, the library's default on x86 Linux, unless the caller said 0.
    if sys.platform == "linux" and platform.machine().lower() in ("x86_64", "amd64"):
        expected = "off" if os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").lower() in ("0", "false") else "on"
        assert versions["tensorflow_onednn"] == expected
    assert lines and job in lines[0] and "tiny" in lines[0]
