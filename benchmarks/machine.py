"""What a figure was measured on: CPU model and flags, cores, GPUs, load, TF's kernels."""

import importlib.metadata
import os
import platform
import shutil
import subprocess

# The flags that decide bfloat16 speed: AMX tiles (~4x AVX-512 BF16 matmul
# throughput), AVX-512 BF16 and VNNI; and, on a CPU without AVX-512, the
# vector units float32 runs on (AVX2 + FMA).
FLAGS = ("amx_bf16", "amx_int8", "amx_tile", "avx512_bf16", "avx512_vnni", "avx512f", "avx2", "fma")


def cpu_description():
    model, flags = platform.processor() or "unknown", set()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "flags": [f for f in FLAGS if f in flags]}


def gpu_description():
    """The NVIDIA GPUs' name, memory and driver (nvidia-smi's words), or None."""
    if not shutil.which("nvidia-smi"):
        return None
    fields = ("name", "memory.total", "driver_version")
    try:
        listing = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [dict(zip(fields, (v.strip() for v in line.split(",")))) for line in listing.splitlines() if line.strip()]


def load_average():
    return [round(x, 2) for x in os.getloadavg()]


def tensorflow_onednn():
    """"on" if this process's TensorFlow loaded oneDNN's kernels, "off" for
    Eigen's: what a TF figure means depends on it, and TF peers must share it."""
    from tensorflow.python.util import _pywrap_util_port

    return "on" if _pywrap_util_port.IsMklEnabled() else "off"


def source_commit():
    """The project checkout's commit, with "+changes" when its code differs from
    it (the results files and README, which benchmark runs rewrite, aside); else
    `$BENCHMARKS_COMMIT` (a copy with no git, as on a GPU image), else None."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        def git(*args):
            return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=60,
                                  check=True).stdout.strip()

        # A copy inside another repository must not name that one's commit.
        if os.path.realpath(git("rev-parse", "--show-toplevel")) != os.path.realpath(root):
            raise subprocess.SubprocessError("not the project's own checkout")
        head = git("rev-parse", "HEAD")
        changes = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/results",
                      ":!README.md")
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("BENCHMARKS_COMMIT") or None
    return head + ("+changes" if changes else "")


def library_versions():
    """The installed TensorFlow stack every TF peer runs on (read from its
    metadata), and the version of the keras_bert_zoo that runs: the
    checkout's, installed or not (a GPU image runs it from `PYTHONPATH`)."""
    from keras_bert_zoo.version import __version__

    return {"keras_bert_zoo": __version__, **{name: importlib.metadata.version(name)
                                              for name in ("keras", "keras_hub", "tensorflow", "tensorflow_text")}}
