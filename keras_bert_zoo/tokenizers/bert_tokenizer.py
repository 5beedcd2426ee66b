"""BERT's WordPiece tokenizer as an in-graph Keras layer."""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_zoo.presets.loader import load_tokenizer
from keras_bert_zoo.tokenizers.text_inputs import check_texts
from keras_bert_zoo.utils.vocabulary_file import load_vocabulary

# BERT's `_clean_text` drops NUL, U+FFFD and every control/format character
# (Unicode category C*) except the three whitespace controls.
_INVALID_CHARS = r"[\x{0}\x{fffd}]|[^\PC\t\n\r]"


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertTokenizer(keras.layers.Layer):
    """WordPiece tokenizer that reproduces google-research/bert's tokenizer.

    Runs entirely in the TensorFlow graph (tensorflow-text's
    `FastBertTokenizer`), so it can be used inside `tf.data.Dataset.map`, on a
    TPU host, and inside an exported SavedModel.

    Normalisation follows BERT's `BasicTokenizer` rather than
    tensorflow-text's built-in NFKC case folding: control characters are
    removed, text is lower-cased with Unicode simple case mapping (full-width
    letters stay full-width), and accents are stripped by NFD decomposition and
    removal of non-spacing marks. Punctuation and CJK characters are split off
    as BERT does.

    Args:
        vocabulary: path of a `vocab.txt` file or a list of tokens. Ids are
            line numbers (empty lines keep their id).
        lowercase: bool. Lower-case the text (uncased models).
        strip_accents: bool or None. Remove accents. `None` follows
            `lowercase`, as BERT's tokenizer does.
        unknown_token: the token for words that cannot be split into
            word-pieces.
        max_bytes_per_word: words longer than this (in UTF-8 bytes) become
            `unknown_token`. BERT counts 200 characters; the two agree on
            ASCII text.

    Examples:
    >>> tokenizer = BertTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cafe", "##s"],
    ...     lowercase=True)
    >>> tokenizer(["The Cafés"]).to_list()
    [[5, 6, 7]]
    """

    def __init__(
        self,
        vocabulary,
        lowercase=True,
        strip_accents=None,
        unknown_token="[UNK]",
        max_bytes_per_word=200,
        **kwargs,
    ):
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        # String inputs must reach `call` untouched.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True

        self.vocabulary = load_vocabulary(vocabulary)
        self.lowercase = bool(lowercase)
        self.strip_accents = self.lowercase if strip_accents is None else bool(strip_accents)
        self.unknown_token = unknown_token
        self.max_bytes_per_word = int(max_bytes_per_word)
        self._token_to_id = {t: i for i, t in enumerate(self.vocabulary)}
        missing = [t for t in (unknown_token, "[CLS]", "[SEP]") if t not in self._token_to_id]
        if missing:
            raise ValueError(
                f"The vocabulary lacks the special token(s) {missing}. A BERT "
                "vocabulary must contain [UNK], [CLS] and [SEP]; check that you "
                "passed the right vocab.txt."
            )
        self._fast_tokenizer = tf_text.FastBertTokenizer(
            vocab=self.vocabulary,
            token_out_type=tf.int32,
            unknown_token=unknown_token,
            max_bytes_per_word=self.max_bytes_per_word,
            lower_case_nfd_strip_accents=False,
            support_detokenization=True,
        )
        self.built = True  # no weights

    # --- Vocabulary -------------------------------------------------------

    def vocabulary_size(self):
        return len(self.vocabulary)

    def get_vocabulary(self):
        return list(self.vocabulary)

    def token_to_id(self, token):
        if token not in self._token_to_id:
            raise KeyError(f"Token '{token}' is not in the vocabulary.")
        return self._token_to_id[token]

    def id_to_token(self, token_id):
        return self.vocabulary[int(token_id)]

    @property
    def pad_token_id(self):
        return self._token_to_id.get("[PAD]", 0)

    @property
    def cls_token_id(self):
        return self._token_to_id["[CLS]"]

    @property
    def sep_token_id(self):
        return self._token_to_id["[SEP]"]

    @property
    def mask_token_id(self):
        return self._token_to_id.get("[MASK]")

    @property
    def unknown_token_id(self):
        return self._token_to_id[self.unknown_token]

    # --- Tokenization -----------------------------------------------------

    def _normalize(self, text):
        """BERT's text cleaning, casing and accent stripping, element-wise."""
        text = tf.strings.regex_replace(text, _INVALID_CHARS, "")
        if self.lowercase:
            text = tf.strings.lower(text, encoding="utf-8")
        if self.strip_accents:
            text = tf_text.normalize_utf8(text, "NFD")
            text = tf.strings.regex_replace(text, r"\p{Mn}", "")
        return text

    @staticmethod
    def _to_string_tensor(inputs):
        if isinstance(inputs, (tf.Tensor, tf.RaggedTensor)):
            if inputs.dtype != tf.string:
                raise TypeError(f"The tokenizer takes strings; received a tensor of dtype {inputs.dtype}.")
            return inputs
        if isinstance(inputs, bytes) or isinstance(inputs, str):
            return tf.constant(inputs)
        return tf.constant(check_texts(inputs, pairs=False), dtype=tf.string)

    def call(self, inputs):
        """Tokenize strings into word-piece ids.

        Args:
            inputs: a string, a list of strings or a string tensor.

        Returns:
            int32 ids: a 1-D tensor for a scalar input, otherwise a
            `tf.RaggedTensor` of shape `[batch, None]`.
        """
        text = self._to_string_tensor(inputs)
        if text.shape.rank == 0:
            return self._fast_tokenizer.tokenize(self._normalize(text[tf.newaxis]))[0]
        return self._fast_tokenizer.tokenize(self._normalize(text))

    def tokenize(self, inputs):
        return self(inputs)

    def tokenize_with_offsets(self, inputs):
        """Tokenize and return byte offsets of each word-piece in the input.

        Offsets point into the original (un-normalised) UTF-8 strings, so
        `text[start:end]` is the span a word-piece came from even when
        lower-casing or accent stripping changed the bytes.

        Args:
            inputs: a list of strings or a rank-1 string tensor.

        Returns:
            `(token_ids, starts, ends)`, three `tf.RaggedTensor`s of shape
            `[batch, None]` (ids int32, offsets int64).
        """
        text = self._to_string_tensor(inputs)
        if text.shape.rank == 0:
            raise ValueError("tokenize_with_offsets takes a batch (a list or rank-1 tensor) of strings.")
        # Normalise character by character to know where each normalised byte
        # came from; a character may grow, shrink or vanish.
        chars, char_starts = tf.strings.unicode_split_with_offsets(text, "UTF-8")
        char_bytes = tf.strings.length(chars.flat_values)
        normalized_chars = chars.with_flat_values(self._normalize(chars.flat_values))
        normalized_text = tf.strings.reduce_join(normalized_chars, axis=-1)
        ids, starts, ends = self._fast_tokenizer.tokenize_with_offsets(normalized_text)

        # Work in one flat byte space: row r of the normalised batch starts at
        # row_base[r]; searchsorted finds the character owning a byte.
        normalized_bytes = tf.strings.length(normalized_chars.flat_values, unit="BYTE")
        cumulative_end = tf.cumsum(tf.cast(normalized_bytes, tf.int64))
        row_totals = tf.reduce_sum(
            normalized_chars.with_flat_values(tf.cast(normalized_bytes, tf.int64)), axis=-1
        )
        row_base = tf.cumsum(row_totals, exclusive=True)
        token_rows = starts.value_rowids()
        base = tf.gather(row_base, token_rows)
        first_char = tf.searchsorted(cumulative_end, starts.flat_values + base, side="right")
        last_char = tf.searchsorted(cumulative_end, ends.flat_values + base - 1, side="right")
        flat_char_starts = char_starts.flat_values
        source_starts = tf.gather(flat_char_starts, first_char)
        source_ends = tf.gather(flat_char_starts, last_char) + tf.cast(tf.gather(char_bytes, last_char), tf.int64)
        return ids, starts.with_flat_values(source_starts), ends.with_flat_values(source_ends)

    def detokenize(self, token_ids):
        """Join word-pieces back into space-separated words.

        A `##` piece is glued to the piece before it (`un ##aff ##able` ->
        `unaffable`); other pieces are joined with one space. The text comes
        back normalised (lower-cased, accents stripped, punctuation split off
        as separate words) and special tokens come back as written
        (`[CLS]`, `[SEP]`, `[PAD]`, `[UNK]`): drop their ids first (e.g. with
        the padding mask) if they are not wanted.

        Args:
            token_ids: ids of one text (a 1-D list / tensor) or of a batch
                (a list of lists, a dense 2-D or a ragged tensor).

        Returns:
            A string tensor: scalar for one text, `[batch]` for a batch.

        Raises:
            ValueError: an id outside the vocabulary.
        """
        if not isinstance(token_ids, (tf.Tensor, tf.RaggedTensor)):
            token_ids = tf.ragged.constant(token_ids, dtype=tf.int32)
        token_ids = tf.cast(token_ids, tf.int32)
        flat = token_ids.flat_values if isinstance(token_ids, tf.RaggedTensor) else token_ids
        if tf.executing_eagerly():
            outside = flat.numpy()[(flat.numpy() < 0) | (flat.numpy() >= self.vocabulary_size())]
            if outside.size:
                raise ValueError(f"Token id {int(outside[0])} is not in the vocabulary "
                                 f"(ids run from 0 to {self.vocabulary_size() - 1}).")
        else:
            tf.debugging.assert_non_negative(flat, message="detokenize: a token id is negative.")
            tf.debugging.assert_less(flat, self.vocabulary_size(), message="detokenize: a token id is not in the vocabulary.")
        if token_ids.shape.rank == 1:
            return self._fast_tokenizer.detokenize(token_ids[tf.newaxis])[0]
        return self._fast_tokenizer.detokenize(token_ids)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor([None, None], dtype="int32", ragged=True)

    # --- Serialization ----------------------------------------------------

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": self.vocabulary,
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "unknown_token": self.unknown_token,
                "max_bytes_per_word": self.max_bytes_per_word,
            }
        )
        return config

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """Create the tokenizer of a preset (name, directory, `hf://` or URL).

        Examples:
        >>> tokenizer = BertTokenizer.from_preset("minilm_l6_h384_en_uncased")
        >>> tokenizer(["Aspirin"]).to_list()
        [[2004, 8197, 6657]]
        """
        return load_tokenizer(preset, cls=cls, **kwargs)
