"""Two processes as the workers of a `MultiWorkerMirroredStrategy` cluster on 127.0.0.1, for the tests of
multi-worker training."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_ports(count):
    import socket

    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def run_cluster(*argv, env=lambda index: {}, timeout=240):
    """Run `python ARGV` as the two workers of a cluster on 127.0.0.1 (worker 0 the chief); each one's
    `(returncode, stdout, stderr, pid)`."""
    workers = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = []
    for index in range(2):
        worker_env = dict(os.environ, PYTHONPATH=ROOT, TF_CONFIG=json.dumps(
            {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}), **env(index))
        processes.append(subprocess.Popen([sys.executable, *argv], cwd=ROOT, env=worker_env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
    try:
        outputs = [p.communicate(timeout=timeout) for p in processes]
    finally:
        for p in processes:
            p.kill()
    return [(p.returncode, out, err, p.pid) for p, (out, err) in zip(processes, outputs)]


def two_worker_cluster(*argv, env=lambda index: {}, timeout=240):
    """Run `python ARGV` as the two workers of a cluster on 127.0.0.1; `([stdout, ...], [pid, ...])` when both
    succeed."""
    results = run_cluster(*argv, env=env, timeout=timeout)
    assert all(code == 0 for code, _, _, _ in results), results[0][2][-2000:] + results[1][2][-2000:]
    return [out for _, out, _, _ in results], [pid for _, _, _, pid in results]
