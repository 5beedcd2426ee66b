"""What every serving signature does to a request before the model runs.

Requests are batches of raw strings. TF Serving hands the graph whatever
shape a client sends, so each signature first checks, with ops inside the
graph, that every input is a vector `[batch]` and that the inputs of one
request hold the same number of strings: anything else is an
`InvalidArgumentError` naming the input, never a crash of the server.
Bytes that are not UTF-8 become U+FFFD
(so every text has a defined result), and packed inputs are cut to the
smallest of a few bucket lengths that holds the batch's longest text: short
requests do not pay for 512 positions, and the runtime sees only a handful
of shapes.
"""

import tensorflow as tf

from keras_bert_zoo.preprocessing.special_tokens import special_token_count

BUCKETS = (16, 32, 64, 128, 256, 384, 512)


def checked_request(**columns):
    """The request's string inputs, checked before any other op reads them.

    Args:
        **columns: the signature's inputs by name, first the one the others
            pair with (e.g. `text=..., text_b=...`).

    Returns:
        The inputs in the same order, each known to be `[batch]` with one
        common batch size (else `InvalidArgumentError` when the graph runs).
    """
    # EnsureShape checks at run time; a rank test would be folded away by
    # the graph optimizer, which trusts the signature's declared shape.
    checked = {name: tf.ensure_shape(column, [None], name=f"{name}_must_be_a_vector")
               for name, column in columns.items()}
    (first, first_column), *others = checked.items()
    same_batch = [
        tf.debugging.assert_equal(tf.size(column), tf.size(first_column),
                                  message=f"{name} must hold one string per string of {first}")
        for name, column in others
    ]
    with tf.control_dependencies(same_batch):
        return [tf.identity(column) for column in checked.values()]


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
    lengths = tf.add_n([t.row_lengths() for t in tokens]) + special_token_count(len(tokens))
    truncated = lengths > preprocessor.sequence_length
    return trim_to_bucket(preprocessor.pack(tokens), preprocessor.sequence_length), truncated


def text_spans(texts, rows, byte_starts, byte_ends):
    """The substrings `texts[rows][start:end]` and their character offsets, in the graph.

    For many spans of one long text (a tagger's entities): each text is decoded once and each span's
    characters gathered, so memory follows the texts plus the spans. (`byte_to_char_offsets` copies its
    text per span: the entities of a 100 KB text took gigabytes, and a 1 MB text ran out of memory.)

    Args:
        texts: string `[batch]`, valid UTF-8 (`clean_text`).
        rows: int `[spans]`, each span's text.
        byte_starts / byte_ends: int `[spans]`, byte offsets at character boundaries.

    Returns:
        `(text, start, end)`: string `[spans]`, and int32 `[spans]` character offsets.
    """
    codepoints, char_bytes = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")
    # Each character's byte offset among all texts' bytes: one ascending sequence to search.
    byte_base = tf.cumsum(tf.cast(tf.strings.length(texts), tf.int64), exclusive=True)
    flat_bytes = char_bytes.flat_values + tf.gather(byte_base, char_bytes.value_rowids())
    rows = tf.cast(rows, tf.int64)

    def flat_char(byte_offsets):  # a text's end is the next text's first character
        return tf.searchsorted(flat_bytes, tf.gather(byte_base, rows) + tf.cast(byte_offsets, tf.int64),
                               side="left", out_type=tf.int64)

    first, end = flat_char(byte_starts), flat_char(byte_ends)
    text = tf.strings.unicode_encode(tf.gather(codepoints.flat_values, tf.ragged.range(first, end)), "UTF-8")
    char_base = tf.gather(char_bytes.row_starts(), rows)
    return text, tf.cast(first - char_base, tf.int32), tf.cast(end - char_base, tf.int32)


def byte_to_char_offsets(texts, rows, byte_offsets):
    """Character offsets of `byte_offsets` into `texts[rows]` (in the graph)."""
    prefixes = tf.strings.substr(tf.gather(texts, rows), tf.zeros_like(byte_offsets), byte_offsets)
    return tf.strings.length(prefixes, unit="UTF8_CHAR")
