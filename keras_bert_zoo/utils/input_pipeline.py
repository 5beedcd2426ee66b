"""What the `tf.data` pipelines a task hands Keras in `fit`, `evaluate` and `predict` share: no
autotuning thread (`without_autotune_thread`). That is the library's own pipelines and a user's
Dataset, pretraining's record batches included (`Task` turns the thread off where they reach Keras);
only `fit` on packed arrays runs Keras' own (it splits and shuffles them). The record batches read as
fast untuned: 23,000-29,000 instances of 64 pieces a second either way on 2 CPU cores (batches of
256); a host feeding accelerators has more cores, which the untuned parallel maps use."""

import tensorflow as tf


def without_autotune_thread(dataset):
    """`dataset` with tf.data's autotuning model thread turned off.

    An iterator of an autotuned pipeline (TensorFlow 2.21) owns a thread that
    re-optimizes it, sleeping longer each time (up to 60 s). When Keras drops
    the iterator at the end of `fit`, `evaluate` or `predict`, the call can
    wait out the rest of that sleep: on a 2-core CPU, fits of a minute or two
    (MiniLM NER, and a plain Keras MLP on a `Dataset` or on arrays alike)
    returned 34-46 s after their last step in about half the runs; with the
    thread off, every run returned at once, at the same step time. Parallel
    maps then run at tf.data's default parallelism (the cores, at most 16);
    nothing else in these pipelines is tuned. The option applies to the whole
    pipeline, a `Dataset` a user passed in included.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
