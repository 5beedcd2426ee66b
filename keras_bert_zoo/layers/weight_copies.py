"""Weights held in the compute dtype for inference under a mixed policy."""

import contextlib
import threading

import tensorflow as tf

_reading = threading.local()


class WeightCopies:
    """Compute-dtype copies of the weights a mixed-precision model casts on
    every read, for a graph that only infers and is traced once: a serving
    export (`export_for_serving` uses them).

    Under `mixed_bfloat16` (or `mixed_float16`) the encoder's kernels are
    float32 variables cast to 16 bits at each call: for one sentence that
    cast reads and writes more memory than the matmuls themselves (MiniLM's
    export, one SST-2 sentence, on a 2-core AMX Xeon: 12.9 ms per request
    with the casts, 7.5 with the copies). A graph traced inside `reading()`
    reads these copies instead, the same values the cast gives when the
    copies are made, for as long as it lives: it does not follow later
    changes of the weights, and no gradient reaches the weights through it.
    Do not trace a training step or a Keras-cached function (`predict`'s)
    inside `reading()`.

    Which weights are copied: those a layer lists in its `cast_on_read()`
    method (`BertEncoderLayer`'s kernels and biases on the CPU path); none
    under a float32 policy.

    Args:
        model: a Keras model or layer.

    Examples:
    >>> import keras_bert_zoo as kbz
    >>> backbone = kbz.BertBackbone(vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=8,
    ...                             intermediate_dim=16, max_sequence_length=8, dtype="mixed_bfloat16")
    >>> copies = WeightCopies(backbone)
    >>> len(copies.variables), copies.variables[0].dtype.name
    (12, 'bfloat16')
    >>> len(WeightCopies(kbz.BertBackbone(vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=8,
    ...                                   intermediate_dim=16, max_sequence_length=8)).variables)
    0
    """

    def __init__(self, model):
        self._pairs = {}
        for layer in model._flatten_layers():
            for variable in getattr(layer, "cast_on_read", lambda: [])():
                if id(variable) not in self._pairs:
                    copy = tf.Variable(tf.cast(variable.value, layer.compute_dtype), trainable=False,
                                       name=variable.path.replace("/", "_") + "_" + layer.compute_dtype)
                    self._pairs[id(variable)] = (variable, copy)

    @property
    def variables(self):
        """The copies (what a SavedModel of the traced graph must hold)."""
        return [copy for _, copy in self._pairs.values()]

    def copied(self, variable):
        """Whether `variable` has a copy here."""
        return id(variable) in self._pairs

    @contextlib.contextmanager
    def reading(self):
        """Graphs traced inside read the copies (see `read_weight`)."""
        previous = getattr(_reading, "copies", None)
        _reading.copies = self
        try:
            yield self
        finally:
            _reading.copies = previous


def read_weight(variable, dtype):
    """`variable`'s value in `dtype`: its copy where one is being read (see
    `WeightCopies.reading`) and holds that dtype, else a cast."""
    copies = getattr(_reading, "copies", None)
    pair = copies._pairs.get(id(variable)) if copies is not None else None
    if pair is not None and pair[1].dtype == tf.as_dtype(dtype):
        return tf.convert_to_tensor(pair[1])
    # A plain tensor, never the variable: the fused functions are traced per tensor spec.
    return tf.cast(tf.convert_to_tensor(variable.value), dtype)
