"""A persistent benchmark worker: builds one peer's step, then times it on request.

    python -m benchmarks.worker

Reads one JSON request per line on stdin and answers one JSON line on
stdout: `{"build": PEER, "config": {...}}` builds and warms the step up (and
answers where it runs and on what versions),
`{"time": N}` runs it N times and answers the seconds of each. The worker
lives for all rounds of one config, so every round times a warm process, and
its peak RSS (and on a GPU, its peak device memory) is that config's.
"""

import json
import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _builder(peer):
    if peer == "hf_torch":
        from benchmarks.peers.hf_torch_peer import build_hf_torch

        return build_hf_torch
    from benchmarks.peers import keras_peers

    return getattr(keras_peers, f"build_{peer}")


def _versions(peer):
    if peer == "hf_torch":
        import torch
        import transformers

        return {"torch": torch.__version__, "transformers": transformers.__version__}
    from benchmarks import machine

    return {**machine.library_versions(), "tensorflow_onednn": machine.tensorflow_onednn()}


def _peak_rss_mb():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def _device(peer):
    """Where the peer's step runs: the GPU's name, or "cpu" (torch and TensorFlow
    each take the first GPU they see)."""
    if peer == "hf_torch":
        import torch

        return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    import tensorflow as tf

    gpus = tf.config.get_visible_devices("GPU")  # what the encoder's GPU path asks too
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU") if gpus else "cpu"


def _peak_device_mb(peer, device):
    if device == "cpu":
        return None
    if peer == "hf_torch":
        import torch

        peak = torch.cuda.max_memory_allocated()
    else:
        import tensorflow as tf

        peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
    return round(peak / 2**20, 1)


def main():
    replies = sys.stdout
    sys.stdout = sys.stderr  # a library's print must not break the protocol
    step = peer = device = None
    for line in sys.stdin:
        request = json.loads(line)
        if "build" in request:
            peer = request["build"]
            step = _builder(peer)(request["config"])
            step()  # the first call traces; the second is a warm one
            step()
            device = _device(peer)
            reply = {"versions": _versions(peer), "device": device}
        else:
            seconds = []
            for _ in range(request["time"]):
                start = time.perf_counter()
                step()
                seconds.append(time.perf_counter() - start)
            reply = {"seconds": seconds}
        reply["peak_rss_mb"] = _peak_rss_mb()
        reply["peak_device_mb"] = _peak_device_mb(peer, device)
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
