"""Text (or text pairs) to BERT's packed, fixed-length int32 inputs."""

import warnings

import keras
import tensorflow as tf
import tensorflow_text as tf_text
from keras_hub.layers import MultiSegmentPacker

from keras_bert_zoo.preprocessing.special_tokens import special_token_count
from keras_bert_zoo.preprocessing.text_preprocessor import TextPreprocessor
from keras_bert_zoo.preprocessing.truncation_warning import TruncationWarning
from keras_bert_zoo.tokenizers.bert_tokenizer import BertTokenizer  # noqa: F401 (docstring examples)
from keras_bert_zoo.tokenizers.text_inputs import check_texts


def _as_segments(inputs):
    """Normalise the accepted input forms to a tuple of rank-1 string tensors."""
    if isinstance(inputs, dict):
        raise TypeError(
            "BertPreprocessor takes strings, a list of strings, a list of "
            "(text_a, text_b) pairs or a tuple of string tensors; received a dict."
        )
    if isinstance(inputs, (str, bytes)):
        return (tf.constant([inputs]),)
    if isinstance(inputs, tf.Tensor):
        return (inputs if inputs.shape.rank else inputs[tf.newaxis],)
    if isinstance(inputs, tuple):
        if all(isinstance(x, tf.Tensor) for x in inputs):
            return inputs
        if all(isinstance(x, (str, bytes)) for x in inputs):
            # One example: ("text a", "text b").
            return tuple(tf.constant([x]) for x in inputs)
        # Columns: (texts_a, texts_b).
        return tuple(tf.constant(check_texts(x, pairs=False), dtype=tf.string) for x in inputs)
    inputs = check_texts(inputs)
    if inputs and all(isinstance(x, (tuple, list)) for x in inputs):
        return tuple(tf.constant(list(col), dtype=tf.string) for col in zip(*inputs))
    return (tf.constant(inputs, dtype=tf.string),)


def _is_mixed_batch(inputs):
    """A Python list holding both single texts and (text_a, text_b) pairs."""
    if not isinstance(inputs, list):
        return False
    kinds = {isinstance(x, (tuple, list)) for x in inputs}
    return len(kinds) == 2


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertPreprocessor(TextPreprocessor):
    """Tokenize and pack text into `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`.

    Pairs are truncated longest-first, exactly as google-research/bert's
    `_truncate_seq_pair` (on a tie the second segment loses a token). Output
    shapes are static, so the layer runs inside `tf.data.Dataset.map` on a
    TPU host.

    Args:
        tokenizer: a `BertTokenizer`.
        sequence_length: the packed length (`max_seq_length`).
        max_sequence_length: the model's number of positions, if known;
            a larger `sequence_length` is refused.

    Call args:
        inputs: a string; a `(text_a, text_b)` tuple of strings; a list
            whose items are strings or `(text_a, text_b)` pairs (one item
            per example); a string tensor; or a tuple of columns
            `(texts_a, texts_b)` as lists or string tensors.

    Returns:
        A dict of int32 tensors `token_ids`, `segment_ids`, `padding_mask`,
        each `[batch, sequence_length]`.

    Examples:
    >>> tokenizer = BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "yes", "no"])
    >>> pre = BertPreprocessor(tokenizer, sequence_length=6)
    >>> pre([("yes", "no no")])["token_ids"].numpy().tolist()
    [[2, 5, 3, 6, 6, 3]]
    """

    def __init__(self, tokenizer, sequence_length=512, max_sequence_length=None, **kwargs):
        super().__init__(tokenizer, sequence_length, max_sequence_length, **kwargs)
        # Segments arrive already truncated (`_truncate`); "waterfall" keeps the
        # packer in core TF ops, where "round_robin" adds TF-Text's
        # RoundRobinTrim op, which TF Serving's builds (TF-Text 2.12) lack.
        self.packer = MultiSegmentPacker(
            sequence_length=self.sequence_length,
            truncate="waterfall",
            start_value=tokenizer.cls_token_id,
            end_value=tokenizer.sep_token_id,
            pad_value=tokenizer.pad_token_id,
        )

    def _truncate(self, segments):
        budget = self.sequence_length - special_token_count(len(segments))
        if len(segments) == 1:
            return (segments[0][:, :budget],)
        # ShrinkLongestTrimmer cuts the first of equally long segments;
        # BERT cuts the last, so the segments go in reversed.
        trimmed = tf_text.ShrinkLongestTrimmer(budget).trim(list(reversed(segments)))
        return tuple(reversed(trimmed))

    def warn_if_truncating(self, inputs):
        """Warn (`TruncationWarning`) of texts, given as `call` takes them, longer than `sequence_length`.
        `call` warns itself only when it runs eagerly: a task that packs in a traced function calls this."""
        self._warn_if_truncating(tuple(self.tokenizer(s) for s in _as_segments(inputs)))

    def _warn_if_truncating(self, token_segments):
        lengths = sum(s.row_lengths() for s in token_segments) + special_token_count(len(token_segments))
        over = int(tf.reduce_sum(tf.cast(lengths > self.sequence_length, tf.int32)))
        if over:
            warnings.warn(TruncationWarning(over, int(lengths.shape[0]), self.sequence_length,
                                            int(tf.reduce_max(lengths))), stacklevel=3)

    def call(self, inputs):
        if isinstance(inputs, list):
            # Checked whole, so that a bad item is named by its index in the batch.
            inputs = check_texts(inputs)
        if _is_mixed_batch(inputs):
            # Pack singles and pairs separately, then restore the input order.
            pair_rows = [i for i, x in enumerate(inputs) if isinstance(x, (tuple, list))]
            single_rows = [i for i, x in enumerate(inputs) if not isinstance(x, (tuple, list))]
            singles = self.call([inputs[i] for i in single_rows])
            pairs = self.call([tuple(inputs[i]) for i in pair_rows])
            order = tf.math.invert_permutation(single_rows + pair_rows)
            return {k: tf.gather(tf.concat([singles[k], pairs[k]], 0), order) for k in singles}
        segments = _as_segments(inputs)
        if not 1 <= len(segments) <= 2:
            raise ValueError(f"BERT packs one or two segments; received {len(segments)}.")
        token_segments = tuple(self.tokenizer(s) for s in segments)
        if tf.executing_eagerly():
            self._warn_if_truncating(token_segments)
        outputs = self.pack(token_segments)
        # Ragged ops lose a static batch size; keep it for TPU input pipelines.
        shape = [segments[0].shape[0], self.sequence_length]
        return {k: tf.ensure_shape(v, shape) for k, v in outputs.items()}

    def pack(self, token_segments):
        """Truncate (as BERT does) and pack one or two ragged id segments."""
        token_ids, segment_ids = self.packer(self._truncate(tuple(token_segments)))
        return {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": tf.cast(token_ids != self.tokenizer.pad_token_id, tf.int32),
        }
