"""Run a signature's model over a request in chunks of rows.

A request's size is the client's choice: one context of 100 KB is a hundred
QA windows, a thousand texts of 62 masks are 62,000 rows of vocabulary
logits. Run at once, the activations grow with the request until the server
runs out of memory. Every signature runs its model through
`map_row_chunks` instead: one chunk at a time, each of a bounded number of
tokens, so the memory a request needs beyond its inputs and outputs is
bounded whatever its size. A request that fits one chunk (every batch TF
Serving's batching forms with the settings we write) runs as one call.
"""

import tensorflow as tf

# Tokens (rows x positions) one chunk holds: 32 rows of 512, 128 of 128. The activations of a chunk stay within a
# few hundred MB for BERT-Large; a 32 x 128 batch, the serving benchmarks' largest, is one chunk.
MAX_CHUNK_TOKENS = 16384


def chunk_rows(length, max_tokens=None):
    """Rows of `length` positions a chunk holds (at least one).

    Args:
        length: int32 scalar tensor, positions per row (or any per-row width
            the memory grows with, e.g. masks x vocabulary / positions).
        max_tokens: the budget; default `MAX_CHUNK_TOKENS`.
    """
    max_tokens = MAX_CHUNK_TOKENS if max_tokens is None else max_tokens
    return tf.maximum(1, max_tokens // tf.maximum(tf.cast(length, tf.int32), 1))


def map_row_chunks(fn, inputs, output_signature, rows_per_chunk):
    """`fn(inputs)`, computed on consecutive slices of `rows_per_chunk` rows.

    Rows must be independent (BERT reads each row on its own), so the result
    is `fn` on the whole batch, concatenated along the first axis. Chunks
    run one after another (`parallel_iterations=1`): the point is to hold
    one chunk's activations at a time. An empty batch is one empty chunk.

    Args:
        fn: maps a nest of `[rows, ...]` tensors to a nest of `[rows, ...]`
            tensors with `output_signature`'s structure (cast to its dtypes).
        inputs: a nest of tensors with a common first dimension.
        output_signature: a nest of `tf.TensorSpec`, the structure, dtypes
            and shapes (first dimension `None`) of `fn`'s outputs.
        rows_per_chunk: int32 scalar (see `chunk_rows`).

    Returns:
        The nest of `output_signature`, every tensor `[rows, ...]`.

    Examples:
    >>> x = {"token_ids": tf.reshape(tf.range(12), [6, 2])}
    >>> out = map_row_chunks(lambda d: tf.reduce_sum(d["token_ids"], 1), x,
    ...                      tf.TensorSpec([None], tf.int32), rows_per_chunk=4)
    >>> out.numpy().tolist()
    [1, 5, 9, 13, 17, 21]
    """
    rows = tf.shape(tf.nest.flatten(inputs)[0])[0]
    rows_per_chunk = tf.maximum(1, tf.cast(rows_per_chunk, tf.int32))
    count = tf.maximum(1, (rows + rows_per_chunk - 1) // rows_per_chunk)
    specs = tf.nest.flatten(output_signature)
    arrays = [tf.TensorArray(spec.dtype, size=count, infer_shape=False, element_shape=tf.TensorShape(None))
              for spec in specs]

    def step(i, arrays):
        part = tf.nest.map_structure(lambda t: t[i * rows_per_chunk : (i + 1) * rows_per_chunk], inputs)
        outputs = tf.nest.flatten(fn(part))
        return i + 1, [array.write(i, tf.cast(out, spec.dtype)) for array, out, spec in zip(arrays, outputs, specs)]

    _, arrays = tf.while_loop(lambda i, _: i < count, step, (tf.constant(0), arrays), parallel_iterations=1)
    results = [tf.ensure_shape(array.concat(), spec.shape) for array, spec in zip(arrays, specs)]
    return tf.nest.pack_sequence_as(output_signature, results)


def run_model(model, inputs, output_signature, postprocess=None):
    """`model(inputs, training=False)` (then `postprocess`) in chunks of at
    most `MAX_CHUNK_TOKENS` tokens; `inputs` are packed, with `token_ids`."""
    def fn(part):
        outputs = model(part, training=False)
        return outputs if postprocess is None else postprocess(outputs)

    return map_row_chunks(fn, inputs, output_signature, chunk_rows(tf.shape(inputs["token_ids"])[1]))
