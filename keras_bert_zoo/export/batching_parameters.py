"""TF Serving's server-side batching settings, written beside an export."""

import os

from keras_bert_zoo.utils.atomic import atomic_file

BATCHING_FILE = "batching_parameters.txt"


def batching_parameters(max_batch_size=32, batch_timeout_micros=2000, max_enqueued_batches=100,
                        num_batch_threads=None):
    """TF Serving's `--batching_parameters_file` content (protobuf text format).

    With `--enable_batching`, the server merges concurrent requests to one
    model into batches of up to `max_batch_size` texts, waiting at most
    `batch_timeout_micros` for a batch to fill; a request of more than
    `max_batch_size` texts is refused. The string signatures take `[batch]`
    tensors and return `[batch, ...]` outputs, so their requests merge and
    split along the first axis without padding (`pad_variable_length_inputs`
    stays off). `predict_ids` requests of different lengths fail the whole
    batch they are merged into: its clients must all send one length.

    Args:
        max_batch_size: the largest merged batch (the batch a CPU runs at
            full speed; 32 in the benchmarks).
        batch_timeout_micros: how long a request may wait for others; 2 ms
            is small against a batch-1 BERT request (~10 ms on 2 cores).
        max_enqueued_batches: batches queued before requests are refused.
        num_batch_threads: batches run at once; TF Serving's guide sets it to
            the server's CPU cores (default: this machine's).

    Returns:
        The file's text.

    Examples:
    >>> print(batching_parameters(num_batch_threads=4).splitlines()[-1])
    num_batch_threads { value: 4 }
    """
    values = {"max_batch_size": max_batch_size, "batch_timeout_micros": batch_timeout_micros,
              "max_enqueued_batches": max_enqueued_batches,
              "num_batch_threads": (os.cpu_count() or 1) if num_batch_threads is None else num_batch_threads}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "batch_timeout_micros" else 1):
            raise ValueError(f"{name} must be a {'non-negative' if name == 'batch_timeout_micros' else 'positive'} "
                             f"integer; got {value!r}.")
    header = ("# TF Serving batching: tensorflow_model_server --enable_batching "
              f"--batching_parameters_file=<this file>. num_batch_threads: the server's CPU cores.\n")
    return header + "".join(f"{name} {{ value: {value} }}\n" for name, value in values.items())


def batching_file(model_dir):
    """The settings file's path in `model_dir`; a directory in its place is refused (an export checks it before
    its long work, not once its version is written)."""
    path = os.path.join(model_dir, BATCHING_FILE)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path} is a directory: remove it, or rename it, for the batching settings file.")
    return path


def write_batching_parameters(model_dir, **settings):
    """Write `model_dir/batching_parameters.txt` atomically, unless it exists;
    returns its path.

    The file sits beside the version directories, where TF Serving, which
    loads only numbered directories, ignores it. An existing file is kept: it
    holds the settings the server runs with (`num_batch_threads` set to its
    cores, say), which a new version must not reset.
    """
    path = batching_file(model_dir)
    if not os.path.lexists(path):  # a link, even one whose target is gone, is the user's
        with atomic_file(path, "w") as f:
            f.write(batching_parameters(**settings))
    return path
