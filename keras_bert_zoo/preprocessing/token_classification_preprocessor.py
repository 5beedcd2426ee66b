"""Words (and word tags) to packed word-piece inputs for token classification."""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_zoo.preprocessing.special_tokens import special_token_count
from keras_bert_zoo.preprocessing.text_offsets import byte_to_char
from keras_bert_zoo.preprocessing.text_preprocessor import TextPreprocessor

# Words as BERT's basic tokenizer sees them: runs of word characters, and
# every other non-space character on its own. Python's Unicode `\w` and `\s`
# spelled out for RE2, whose own `\w` and `\s` are ASCII-only.
_SPACE = r"\s\p{Z}\x{1c}-\x{1f}\x{85}"
_WORD_CHAR = r"\p{L}\p{M}\p{N}_"  # a combining mark (decomposed text) stays in its word, as in BERT's tokenizer
# A CJK ideograph is a word on its own, as BERT's tokenizer splits them (google-research/bert's
# `_is_chinese_char` ranges): a run of them is no one word, and an entity may start inside it. Marks after one
# (variation selectors) stay with it: alone, an uncased model strips them to nothing, a word it cannot read.
_CJK = (r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}"
        r"\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}")
_SYMBOL = f"[^{_SPACE}{_WORD_CHAR}]|[{_CJK}]\\p{{M}}*"


def split_words_with_offsets(texts):
    """In-graph word splitting of a string tensor `[batch]`.

    Returns:
        `(words, starts, ends)`: ragged `[batch, None]` words and their UTF-8
        byte offsets in each text.
    """
    # tensorflow-text's split stops at the first NUL byte, dropping every word after it: NUL becomes \x01, another
    # control character (the same byte length, so the offsets hold), a symbol of its own as NUL is.
    texts = tf.strings.regex_replace(texts, r"\x00", "\x01")
    return tf_text.regex_split_with_offsets(texts, f"[{_SPACE}]+|{_SYMBOL}", _SYMBOL)


def split_words(text):
    """Split raw text into words with character offsets: `[(word, start, end)]`.

    A list of texts gives one such list per text (split in one call).
    """
    texts = [text] if isinstance(text, str) else list(text)
    if not texts:
        return []
    _, starts, ends = split_words_with_offsets(tf.constant(texts))
    results = []
    for t, s, e in zip(texts, starts.to_list(), ends.to_list()):
        to_char = byte_to_char(t)
        results.append([(t[to_char[a] : to_char[b]], int(to_char[a]), int(to_char[b])) for a, b in zip(s, e)])
    return results[0] if isinstance(text, str) else results


def _pad(ragged, length, value):
    """`[value] + row + [value]`, padded with `value` to `length`: an aux
    ragged tensor framed as its ids are by `[CLS]` and `[SEP]`."""
    return tf.pad(ragged.to_tensor(default_value=value, shape=[None, length - 1]), [[0, 0], [1, 0]],
                  constant_values=value)


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class TokenClassificationPreprocessor(TextPreprocessor):
    """Pack word lists as `[CLS] pieces [SEP]`, tags on each word's first piece.

    Each word is split into word-pieces; a word's tag is trained and
    predicted on its first piece only (the other pieces, `[CLS]`, `[SEP]`
    and padding get sample weight 0), as in BERT's NER recipe. Runs in the
    graph on ragged batches of words, so it works in `tf.data`.

    Args:
        tokenizer: a `BertTokenizer`.
        sequence_length: packed length; longer sentences are cut (the task
            windows them).

    Call args:
        words: `tf.RaggedTensor` of strings `[batch, None]`.
        labels: optional int `tf.RaggedTensor` `[batch, None]` of tag ids;
            -1 marks a word that is not scored (weight 0: a window's word
            that another window scores).

    Returns:
        `(inputs, labels, sample_weight)` with labels, or `inputs` alone;
        `inputs` also holds `word_index` (`[batch, seq]`, the word a first
        piece starts, -1 elsewhere), which the model does not take.
    """

    def __init__(self, tokenizer, sequence_length=128, max_sequence_length=None, **kwargs):
        super().__init__(tokenizer, sequence_length, max_sequence_length, **kwargs)

    def call(self, words, labels=None):
        if isinstance(words, tf.Tensor):
            if words.shape.rank != 2 or words.dtype != tf.string:
                raise TypeError(f"The words are a {words.dtype.name} tensor of shape {words.shape}; give sentences as "
                                "lists of words, [batch, words] strings: split raw texts into words first "
                                "(BertTokenClassifier.predict_entities reads raw texts).")
            words = tf.RaggedTensor.from_tensor(words)  # sentences of one length: no padding to drop
        elif not isinstance(words, tf.RaggedTensor):
            words = tf.ragged.constant(words, dtype=tf.string)
        pieces = self.tokenizer(words.flat_values)  # [words, pieces]
        # Per-piece values gather their word's (`value_rowids`: each piece's word), and the ragged ops stay few:
        # tf.data and the serving export trace this graph, ragged broadcasting adds ~1,000 ops per `tf.where`.
        piece_word = pieces.value_rowids()
        is_first = tf.equal(tf.range(tf.size(piece_word, out_type=piece_word.dtype)),
                            tf.gather(pieces.row_starts(), piece_word))
        word_position = tf.gather(tf.ragged.range(tf.cast(words.row_lengths(), tf.int32)).flat_values, piece_word)
        budget = self.sequence_length - special_token_count(1)

        def per_sentence(flat):  # one value per piece -> [batch, pieces], cut to the window
            return words.with_flat_values(pieces.with_flat_values(flat)).merge_dims(1, 2)[:, :budget]

        token_ids = per_sentence(pieces.flat_values)
        is_first_piece = per_sentence(is_first)
        word_index = per_sentence(tf.where(is_first, word_position, -1))
        # [CLS] pieces [SEP] [PAD]...: [SEP] goes right after each row's last piece.
        ids = _pad(token_ids, self.sequence_length, self.tokenizer.pad_token_id)
        ends = tf.cast(token_ids.row_lengths(), tf.int32)[:, None] + 1
        columns = tf.range(self.sequence_length)[None, :]
        ids = tf.where(columns == 0, self.tokenizer.cls_token_id,
                       tf.where(columns == ends, self.tokenizer.sep_token_id, ids))
        inputs = {
            "token_ids": ids,
            "segment_ids": tf.zeros_like(ids),
            "padding_mask": tf.cast(columns <= ends, tf.int32),
            "word_index": _pad(word_index, self.sequence_length, -1),
        }
        if labels is None:
            return inputs
        if not isinstance(labels, tf.RaggedTensor):
            labels = tf.ragged.constant(labels, dtype=tf.int32)
        # The gather below would shift tags to other words (or fail with TF's bare message) otherwise.
        check = tf.debugging.assert_equal(
            tf.cast(labels.row_lengths(), tf.int64), tf.cast(words.row_lengths(), tf.int64),
            message="A sentence has another number of tags than words: give one tag per word.")
        with tf.control_dependencies([check]):
            tags = tf.cast(tf.identity(labels.flat_values), tf.int32)
        piece_labels = per_sentence(tf.gather(tags, piece_word))
        scored = tf.logical_and(is_first_piece, piece_labels >= 0)
        sample_weight = _pad(tf.cast(scored, tf.float32), self.sequence_length, 0.0)
        return inputs, _pad(tf.maximum(piece_labels, 0), self.sequence_length, 0), sample_weight
