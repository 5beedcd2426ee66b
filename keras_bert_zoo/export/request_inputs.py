"""What every serving signature does to a request before the model runs.

Requests are batches of raw strings. Bytes that are not UTF-8 become U+FFFD
(so every text has a defined result), and packed inputs are cut to the
smallest of a few bucket lengths that holds the batch's longest text: short
requests do not pay for 512 positions, and the runtime sees only a handful
of shapes.
"""

import tensorflow as tf

BUCKETS = (16, 32, 64, 128, 256, 384, 512)


def clean_text(text):
    """Replace invalid UTF-8 in a string tensor with U+FFFD."""
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)


def bucket_length(lengths, sequence_length):
    """The smallest bucket (or `sequence_length`) >= the longest of `lengths`."""
    buckets = tf.constant([b for b in BUCKETS if b < sequence_length] + [sequence_length], tf.int32)
    longest = tf.reduce_max(tf.concat([tf.cast(lengths, tf.int32), [1]], 0))
    return tf.reduce_min(tf.where(buckets >= longest, buckets, sequence_length))


def trim_to_bucket(inputs, sequence_length):
    """Cut packed (end-padded) inputs to the bucket of their longest row."""
    length = bucket_length(tf.reduce_sum(inputs["padding_mask"], axis=1), sequence_length)
    return {name: value[:, :length] for name, value in inputs.items()}


def pack_texts(preprocessor, *columns):
    """Tokenize and pack one or two string columns in the graph.

    Returns:
        `(inputs, truncated)`: bucket-trimmed model inputs, and a bool
        `[batch]` marking texts cut to fit `sequence_length`.
    """
    tokens = [preprocessor.tokenizer(clean_text(column)) for column in columns]
    lengths = tf.add_n([t.row_lengths() for t in tokens]) + 1 + len(tokens)
    truncated = lengths > preprocessor.sequence_length
    return trim_to_bucket(preprocessor.pack(tokens), preprocessor.sequence_length), truncated


def byte_to_char_offsets(texts, rows, byte_offsets):
    """Character offsets of `byte_offsets` into `texts[rows]` (in the graph)."""
    prefixes = tf.strings.substr(tf.gather(texts, rows), tf.zeros_like(byte_offsets), byte_offsets)
    return tf.strings.length(prefixes, unit="UTF8_CHAR")
