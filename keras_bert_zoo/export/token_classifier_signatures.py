"""`entities`: raw text in, tagged entity spans with character offsets out.

The graph does what `BertTokenClassifier.predict_entities` does in Python,
one step per function: a text's words in strided windows of at most the
preprocessor's window (`_pack_word_windows`, on `graph_windows`: windows
every `doc_stride` pieces, half the window as in `predict_entities`), tag
probabilities per word off its first piece in its max-context window
(`_word_probabilities`), conlleval chunks (`_chunk_begins`, the twin of
`conlleval.extract_chunks`) and their spans and scores (`_chunk_spans`).
"""

import tensorflow as tf

from keras_bert_zoo.export.graph_windows import max_context
from keras_bert_zoo.export.graph_windows import snap_windows_to_words
from keras_bert_zoo.export.request_inputs import checked_request
from keras_bert_zoo.export.request_inputs import clean_text
from keras_bert_zoo.export.request_inputs import text_spans
from keras_bert_zoo.export.request_inputs import trim_to_bucket
from keras_bert_zoo.export.row_chunks import run_model
from keras_bert_zoo.export.serving_signature import ServingSignature
from keras_bert_zoo.metrics.conlleval import OUTSIDE
from keras_bert_zoo.metrics.conlleval import check_tag_scheme
from keras_bert_zoo.preprocessing.model_inputs import MODEL_INPUTS
from keras_bert_zoo.preprocessing.special_tokens import special_token_count
from keras_bert_zoo.preprocessing.strided_windows import default_doc_stride
from keras_bert_zoo.preprocessing.token_classification_preprocessor import split_words_with_offsets

_OUTSIDE, _BEGIN, _INSIDE, _END, _SINGLE = 0, 1, 2, 3, 4
# Tag prefixes as conlleval reads them: BIO/IOB, IOBES, and BILOU's L- / U- as E- / S-.
_PREFIXES = {"B": _BEGIN, "I": _INSIDE, "E": _END, "S": _SINGLE, "L": _END, "U": _SINGLE}


def _tag_scheme(labels):
    """Per tag: its prefix code and entity type index; the type names.

    Raises:
        ValueError: a tag conlleval does not read (`conlleval.check_tag_scheme`:
            the same refusal as `predict_entities`').
    """
    check_tag_scheme(labels, "The served signature entities", whose="the tagger's tags")
    prefixes, kinds, names = [], [], []
    for label in labels:
        if label == OUTSIDE:
            prefixes.append(_OUTSIDE)
            kinds.append(-1)
            continue
        prefix, _, kind = label.partition("-")  # "B" / "I" alone: the empty type, as conlleval reads them
        if kind not in names:
            names.append(kind)
        prefixes.append(_PREFIXES[prefix])
        kinds.append(names.index(kind))
    return prefixes, kinds, names


def _pack_word_windows(preprocessor, words, doc_stride):
    """Every text's words in strided windows, packed as `[CLS] pieces [SEP]`.

    The graph twin of `BertTokenClassifier.sentence_windows` and the packing
    of its windows: windows of at most the window's pieces every
    `doc_stride` pieces, snapped to words (`snap_windows_to_words`), packed
    by the task's own preprocessor; each word is read at its first piece in
    its max-context window.

    Numpy twin: `BertTokenClassifier.sentence_windows`; parity:
    `tests/test_bert_token_classifier.py::test_graph_word_probabilities_match_predict_word_probabilities`.

    Args:
        preprocessor: the task's `TokenClassificationPreprocessor`.
        words: ragged string `[batch, None]`, each text's words.
        doc_stride: int, pieces between window starts.

    Returns:
        `(inputs, read_word)`: the packed windows some word is read from
        (one row per window, flat over the batch), trimmed to their bucket,
        and int32 `[windows, positions]`, the word (among all texts' words)
        read at each position, -1 where none is.
    """
    pieces_per_word = words.with_flat_values(
        tf.cast(preprocessor.tokenizer(words.flat_values).row_lengths(), tf.int32))
    budget = preprocessor.sequence_length - special_token_count(1)
    windows, word_first_piece = snap_windows_to_words(pieces_per_word, budget, doc_stride)
    packed = preprocessor(tf.gather(words.flat_values, tf.ragged.range(windows.first_word, windows.end_word)))
    word_index = packed["word_index"]
    is_first_piece = word_index >= 0
    word = tf.where(is_first_piece, windows.first_word[:, None] + word_index, -1)
    # Off first pieces a spare last entry is read: the gather stays valid when the batch has no words.
    piece = tf.gather(tf.concat([word_first_piece, [0]], 0),
                      tf.where(is_first_piece, word, tf.size(word_first_piece)))
    read_here = max_context(piece - windows.first_piece[:, None], windows.length, piece, is_first_piece,
                            tf.reduce_sum(pieces_per_word.flat_values))
    # A window no word is read from (an empty text's, one inside a word longer than the stride, one whose words
    # all have more context elsewhere) cannot change a result: it is dropped before the model, and before the
    # bucket is chosen, so it costs neither a row nor positions.
    used = tf.reduce_any(read_here, axis=1)
    inputs = trim_to_bucket({k: tf.boolean_mask(packed[k], used) for k in MODEL_INPUTS}, preprocessor.sequence_length)
    read_word = tf.boolean_mask(tf.where(read_here, word, -1), used)
    return inputs, read_word[:, : tf.shape(inputs["token_ids"])[1]]


def _word_probabilities(word_count, read_word, probabilities):
    """Tag probabilities per word, read off each word's first piece.

    The graph twin of `BertTokenClassifier.predict_word_probabilities`:
    words without pieces get uniform probabilities, as there, and are not
    read. Flat over the batch, so memory follows the words sent.

    Numpy twin: `BertTokenClassifier.predict_word_probabilities`; parity:
    `tests/test_bert_token_classifier.py::test_graph_word_probabilities_match_predict_word_probabilities`.

    Args:
        word_count: int32 scalar, words in all texts.
        read_word: int32 `[windows, positions]`, from `_pack_word_windows`.
        probabilities: float32 `[windows, positions, labels]`.

    Returns:
        `(probabilities, read)`: float32 `[words, labels]` and bool `[words]`,
        over all texts' words in order.
    """
    num_labels = probabilities.shape[-1]
    read_positions = tf.where(read_word >= 0)
    word = tf.cast(tf.gather_nd(read_word, read_positions), tf.int64)[:, None]  # each word at most once
    read = tf.scatter_nd(word, tf.ones_like(word[:, 0], tf.int32), [tf.cast(word_count, tf.int64)]) > 0
    return tf.tensor_scatter_nd_update(tf.fill([word_count, num_labels], 1.0 / num_labels), word,
                                       tf.gather_nd(probabilities, read_positions)), read


def _chunk_begins(prefix, kind, words_per_text):
    """Which words open a conlleval chunk: B-X and S-X do; I-X and E-X
    continue an X that B-X or I-X left open (in the same text), else open one.
    (E-X and S-X close their chunk: the tagged word after them opens another.)

    The graph twin of `conlleval.extract_chunks`, flat over the batch.

    Numpy twin: `conlleval.extract_chunks`; parity:
    `tests/test_bert_token_classifier.py::test_graph_chunks_match_extract_chunks`.

    Args:
        prefix: int32 `[words]`, each word's tag prefix (`_OUTSIDE`,
            `_BEGIN`, `_INSIDE`), all texts' words in order.
        kind: int32 `[words]`, each word's entity type (-1 for O).
        words_per_text: int32 `[batch]`.

    Returns:
        bool `[words]`.
    """
    first_word = tf.ragged.range(words_per_text).flat_values == 0
    previous_open = tf.concat([[False], (prefix[:-1] == _BEGIN) | (prefix[:-1] == _INSIDE)], 0) & ~first_word
    same_kind = tf.concat([[False], kind[:-1] == kind[1:]], 0)
    continues = (prefix == _INSIDE) | (prefix == _END)
    return (prefix == _BEGIN) | (prefix == _SINGLE) | (continues & ~(previous_open & same_kind))


def _chunk_spans(begins, prefix, kind, score, row, starts, ends):
    """Each chunk's text, type, byte span and mean tag score.

    The graph twin of `BertTokenClassifier.predict_entities`' loop over
    `extract_chunks`: a chunk is a word that `begins` one and the tagged
    (non-O) words after it, up to the next word that begins one.

    Numpy twin: `BertTokenClassifier.predict_entities`; parity:
    `tests/test_bert_token_classifier.py::test_graph_chunks_match_extract_chunks`.

    Args:
        begins: bool `[words]`, from `_chunk_begins`.
        prefix / kind: int32 `[words]`, as for `_chunk_begins`.
        score: float32 `[words]`, the probability of each word's tag.
        row: int32 `[words]`, the text each word belongs to.
        starts / ends: int `[words]`, each word's byte offsets in its text.

    Returns:
        `(row, kind, start, end, score)`, `[entities]` in text order.
    """
    chunk = tf.cumsum(tf.cast(begins, tf.int32)) - 1
    inside = tf.where(prefix != _OUTSIDE)[:, 0]
    segment = tf.gather(chunk, inside)
    count = tf.reduce_sum(tf.cast(begins, tf.int32))
    return (tf.math.unsorted_segment_max(tf.gather(row, inside), segment, count),
            tf.math.unsorted_segment_max(tf.gather(kind, inside), segment, count),
            tf.math.unsorted_segment_min(tf.gather(starts, inside), segment, count),
            tf.math.unsorted_segment_max(tf.gather(ends, inside), segment, count),
            tf.math.unsorted_segment_mean(tf.gather(score, inside), segment, count))


def _padded(values, rows, nrows, default):
    """`values` of texts `rows`, one row per text, padded with `default`."""
    return tf.RaggedTensor.from_value_rowids(values, rows, nrows=tf.cast(nrows, tf.int64)).to_tensor(
        default_value=default)


def token_classifier_signatures(tagger):
    """Signature `entities` of a `BertTokenClassifier`.

    `text` `[batch]` -> entities padded to the batch's largest count:
    `entity_text`, `entity_label` (`""` padding), `start`, `end` (character
    offsets, -1 padding), `score` (mean tag probability, 0 padding), with
    `entity_count` `[batch]` telling how many are real. Chunks follow
    conlleval. Texts longer than the window are read in strided windows
    (`doc_stride` half the window, as `predict_entities` reads them).
    """
    prefix_table, kind_table, kind_names = _tag_scheme(tagger.label_names)
    prefix_table, kind_table = tf.constant(prefix_table), tf.constant(kind_table)
    kind_names = tf.constant(kind_names or [""])
    preprocessor = tagger.preprocessor
    doc_stride = default_doc_stride(preprocessor.sequence_length - special_token_count(1))
    probabilities_spec = tf.TensorSpec([None, None, len(tagger.label_names)], tf.float32)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def entities(text):
        text = clean_text(*checked_request(text=text))
        batch = tf.shape(text)[0]
        words, starts, ends = split_words_with_offsets(text)
        inputs, read_word = _pack_word_windows(preprocessor, words, doc_stride)
        # The windows of a long text go through the model in bounded chunks, as any other rows.
        probabilities = run_model(tagger, inputs, probabilities_spec,
                                  lambda logits: tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1))
        per_word, read = _word_probabilities(tf.size(words.flat_values), read_word, probabilities)

        # A word the model cannot read (one without pieces) is outside any entity, as in `predict_entities`.
        tag = tf.argmax(per_word, axis=-1, output_type=tf.int32)
        prefix = tf.where(read, tf.gather(prefix_table, tag), _OUTSIDE)
        kind = tf.where(read, tf.gather(kind_table, tag), -1)
        begins = _chunk_begins(prefix, kind, tf.cast(words.row_lengths(), tf.int32))
        entity_row, entity_kind, start, end, entity_score = _chunk_spans(
            begins, prefix, kind, tf.reduce_max(per_word, axis=-1), tf.cast(words.value_rowids(), tf.int32),
            starts.flat_values, ends.flat_values)
        entity_text, start, end = text_spans(text, entity_row, start, end)  # a text not copied per entity
        rows = tf.cast(entity_row, tf.int64)
        return {
            "entity_text": _padded(entity_text, rows, batch, ""),
            "entity_label": _padded(tf.gather(kind_names, entity_kind), rows, batch, ""),
            "start": _padded(start, rows, batch, -1),
            "end": _padded(end, rows, batch, -1),
            "score": _padded(entity_score, rows, batch, 0.0),
            "entity_count": tf.math.bincount(entity_row, minlength=batch, maxlength=batch),
        }

    return [ServingSignature("entities", entities, {"text": ["Germline BRCA1 mutations cause breast cancer."]})]
