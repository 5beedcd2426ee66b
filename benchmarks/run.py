"""Run the configs: every peer in its own persistent worker, interleaved.

For each config, one worker per peer builds and warms its model; then each
round times every peer in turn (the order rotating round by round, so no
peer always runs right after another's cache-polluting work) for about a
second's worth of calls. A figure is the per-round sequences/s; a ratio is
taken round by round and summarized as median, min and max.
"""

import json
import os
import subprocess
import sys

# Importing it sets its TensorFlow defaults (oneDNN kernels on x86; it starts
# no TensorFlow), which every worker then inherits: keras-hub and the matmul
# chain load the same kernels as ours (`run_config` checks what they report).
import keras_bert_zoo  # noqa: F401
from benchmarks import machine, results_file, stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = "keras_bert_zoo"
# Inference peers, then training peers; the matmul chain is the bound.
INFERENCE_PEERS = (OURS, "keras_hub", "hf_torch", "matmul_chain")
TRAINING_PEERS = (OURS, "keras_hub", "hf_torch")
SHAPES = {"inference": ((32, 128), (8, 512), (1, 128)), "train": ((16, 128),), "pretrain": ((16, 128),)}


def configs(jobs, sizes, dtypes, xla=(False,), shapes=None):
    """Every config of the product; `shapes` (`(batch, length)` pairs), if
    given, keeps only those of each job's shapes."""
    for job in jobs:
        for size in sizes:
            for dtype in dtypes:
                for compiled in xla:
                    for batch, length in SHAPES[job]:
                        if shapes is None or (batch, length) in shapes:
                            yield {"job": job, "size": size, "dtype": dtype, "xla": compiled, "batch": batch,
                                   "length": length}


class Worker:
    def __init__(self, peer, python):
        # On a GPU, TensorFlow would otherwise take all its memory in the first worker.
        env = {"TF_FORCE_GPU_ALLOW_GROWTH": "true", **os.environ}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
        self.peer = peer
        self.process = subprocess.Popen([python, "-m", "benchmarks.worker"], cwd=ROOT, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ask(self, request):
        self.send(request)
        return self.receive()

    def send(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()

    def receive(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.peer} worker died (exit code {self.process.wait()}); see its stderr above")
        return json.loads(line)

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def run_config(config, peers, rounds, torch_python, log):
    workers = {}
    try:
        # The peers build (trace, compile, warm up) at once: that is not timed, and
        # on a many-core GPU host it is most of a config's time.
        for peer in peers:
            workers[peer] = Worker(peer, torch_python if peer == "hf_torch" else sys.executable)
            workers[peer].send({"build": peer, "config": config})
        built = {p: workers[p].receive() for p in peers}
        # About a second of calls per peer and round (at least one), from one call of each alone.
        repeats = {p: max(1, round(1.0 / workers[p].ask({"time": 1})["seconds"][0])) for p in peers}
        seq_per_s = {p: [] for p in peers}
        for r in range(rounds):
            order = peers[r % len(peers):] + peers[:r % len(peers)]
            for peer in order:
                seconds = workers[peer].ask({"time": repeats[peer]})["seconds"]
                seq_per_s[peer].append(config["batch"] * len(seconds) / sum(seconds))
        peak = {p: workers[p].ask({"time": 0}) for p in peers}
    finally:
        for worker in workers.values():
            worker.close()
    devices = {p: r["device"] for p, r in built.items()}
    if len(set(devices.values())) > 1:
        raise RuntimeError(f"the peers ran on different devices ({devices}): the ratios would compare devices")
    row = {"config": config, "device": devices[peers[0]], "peers": {}, "ratios": {}}
    for peer in peers:
        row["peers"][peer] = {"seq_per_s": stats.summary(seq_per_s[peer]), "peak_rss_mb": peak[peer]["peak_rss_mb"],
                              "rounds": [round(x, 3) for x in seq_per_s[peer]]}
        if peak[peer]["peak_device_mb"] is not None:
            row["peers"][peer]["peak_device_mb"] = peak[peer]["peak_device_mb"]
        if peer != OURS:
            row["ratios"][f"{OURS}/{peer}"] = stats.round_ratios(seq_per_s[OURS], seq_per_s[peer])
    versions = {}
    for reply in built.values():
        versions.update(reply["versions"])
    kernels = {p: r["versions"]["tensorflow_onednn"] for p, r in built.items() if "tensorflow_onednn" in r["versions"]}
    if len(set(kernels.values())) > 1:
        raise RuntimeError(f"TensorFlow peers loaded different kernels (oneDNN {kernels}): the ratios would compare "
                           f"kernels, not libraries")
    log(describe(row))
    return row, versions


def describe_config(c):
    return f"{c['job']:9s} {c['size']:6s} {c['dtype']:8s}{' XLA' if c.get('xla') else ''} {c['batch']:>2d}x{c['length']:<3d}"


def describe(row):
    head = f"{describe_config(row['config'])} {row['device']}"
    figures = "  ".join(f"{p} {v['seq_per_s']['median']:.1f}" for p, v in row["peers"].items())
    ratios = "  ".join(f"/{k.split('/')[1]} {v['median']:.2f} [{v['min']:.2f}-{v['max']:.2f}]"
                       for k, v in row["ratios"].items())
    return f"{head} seq/s: {figures}   ours{ratios}"


def run(jobs, sizes, dtypes, rounds, torch_python, command, log=print, save=lambda document: None, xla=(False,),
        shapes=None):
    """Measure every config; returns the results document, which `save` also
    gets after every config (so a long run interrupted keeps what it measured)."""
    have_torch = torch_python and os.path.exists(torch_python)
    # The workers add what they ran on (the kernels TensorFlow loaded too).
    document = dict(results_file.new_document(command), rounds=rounds, results=[])
    gpus = machine.gpu_description()
    if gpus:
        document["gpus"] = gpus
    if not have_torch:
        document["skipped"] = "hf_torch: no torch interpreter (make benchmark creates .venv-torch)"
        log(document["skipped"])
    log(f"{document['machine']}  load {document['load_before']}")
    # The (job, size, dtype, XLA) groups failed since the last config measured: a fault tied to one group (a
    # policy out of memory) fails each of its shapes; one met in a second group too is the environment's.
    failing_groups = set()
    remaining = list(configs(jobs, sizes, dtypes, xla, shapes))
    while remaining:
        config = remaining.pop(0)
        peers = [p for p in (INFERENCE_PEERS if config["job"] == "inference" else TRAINING_PEERS)
                 if have_torch or p != "hf_torch"]
        try:
            row, versions = run_config(config, peers, rounds, torch_python, log)
        except Exception as error:  # noqa: BLE001 - a peer that cannot run one config must not cost the others
            # On a lent GPU's few minutes, one peer failing one config (out of memory, an XLA build) would
            # otherwise lose every config after it. The file says what failed; the command exits 1.
            reason = f"{type(error).__name__}: {error}"
            document.setdefault("failed", []).append({"config": config, "error": reason})
            log(f"{describe_config(config)} FAILED: {reason}")
            failing_groups.add(tuple(config[k] for k in ("job", "size", "dtype", "xla")))
        else:
            document["results"].append(row)
            document["versions"].update(versions)
            failing_groups.clear()
        document["load_after"] = machine.load_average()
        if len(failing_groups) == 2 and remaining:
            # Every config would cost a build before failing so: stop.
            document["stopped"] = (f"configs of two groups (job, size, dtype, XLA) failed with none measured "
                                   f"between; {len(remaining)} not run")
            log(document["stopped"])
            remaining = []
        save(document)
    return document
