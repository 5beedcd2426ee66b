"""BertTokenClassifier (NER): alignment, learning NCBI-disease, entities, round-trip, export steps."""

import itertools
import re
import string
import unicodedata
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.data.conll import read_conll
from keras_bert_zoo.export.graph_windows import snap_windows_to_words
from keras_bert_zoo.export.token_classifier_signatures import _chunk_begins
from keras_bert_zoo.export.token_classifier_signatures import _chunk_spans
from keras_bert_zoo.export.token_classifier_signatures import _pack_word_windows
from keras_bert_zoo.export.token_classifier_signatures import _tag_scheme
from keras_bert_zoo.export.token_classifier_signatures import _word_probabilities
from keras_bert_zoo.export.token_classifier_signatures import token_classifier_signatures
from keras_bert_zoo.metrics.conlleval import extract_chunks
from keras_bert_zoo.preprocessing.strided_windows import window_starts
from keras_bert_zoo.preprocessing.strided_windows import word_windows
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor
from keras_bert_zoo.preprocessing.token_classification_preprocessor import split_words
from keras_bert_zoo.tasks.bert_token_classifier import check_entity_tags
from tests.conftest import shared_path
from tests.round_trip import keras_file_round_trip, preset_round_trip

LABELS = ["O", "B-Disease", "I-Disease"]


def test_tags_sit_on_first_word_pieces():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "breast", "can", "##cer", "risk", "."]
    pre = TokenClassificationPreprocessor(kbz.BertTokenizer(vocab), sequence_length=8)
    inputs, labels, weights = pre([["breast", "cancer", "risk", "."]], [[1, 2, 0, 0]])
    assert inputs["token_ids"].numpy().tolist() == [[2, 5, 6, 7, 8, 9, 3, 0]]
    assert labels.numpy().tolist() == [[0, 1, 2, 2, 0, 0, 0, 0]]
    assert weights.numpy().tolist() == [[0, 1, 1, 0, 1, 1, 0, 0]]
    assert inputs["word_index"].numpy().tolist() == [[-1, 0, 1, -1, 2, 3, -1, -1]]
    assert inputs["padding_mask"].numpy().tolist() == [[1, 1, 1, 1, 1, 1, 1, 0]]


def _bert_ner_packing(tokenizer, sentences, tags, length):
    """BERT's NER recipe in plain Python, over the tokenizer's pieces of each word: a word's tag on all its
    pieces (trained on the first only), the pieces cut to `length - 2`, then [CLS] ... [SEP] and padding."""
    flat = [w for s in sentences for w in s]
    pieces = iter(tokenizer(tf.constant(flat, tf.string)).to_list())
    rows = []
    for words, word_tags in zip(sentences, tags):
        ids, labels, weights, index = [], [], [], []
        for position, tag in enumerate(word_tags):
            for k, piece in enumerate(next(pieces)):
                ids.append(piece), labels.append(tag), weights.append(float(k == 0))
                index.append(position if k == 0 else -1)
        cut = length - 2
        ids, labels, weights, index = ids[:cut], labels[:cut], weights[:cut], index[:cut]
        pad = length - 2 - len(ids)
        rows.append({
            "token_ids": [tokenizer.cls_token_id] + ids + [tokenizer.sep_token_id] + [tokenizer.pad_token_id] * pad,
            "segment_ids": [0] * length,
            "padding_mask": [1] * (len(ids) + 2) + [0] * pad,
            "word_index": [-1] + index + [-1] * (pad + 1),
            "labels": [0] + labels + [0] * (pad + 1),
            "sample_weight": [0.0] + weights + [0.0] * (pad + 1),
        })
    return rows


@pytest.mark.parametrize("length", [3, 8, 64])
def test_packing_is_berts_ner_recipe_eager_and_traced(default_preset_dir, length):
    """Real NCBI sentences with the default preset's vocabulary, and a vocabulary whose [PAD] is not id 0,
    around the edges: an empty sentence, words of no piece, of many pieces, sentences over the window."""
    data = read_conll(shared_path("ner", "NCBI-disease", "train.tsv")).head(40)
    sentences = list(data.words) + [[], ["\x00", "breast", ""], ["cancer"] * 40, ["risk", "xyzzy", "cancer"]]
    tags = [[LABELS.index(t) for t in s] for s in data.tags] + [[], [1, 2, 0], [1, 2] * 20, [0, 1, 2]]
    custom = kbz.BertTokenizer(["[UNK]", "[CLS]", "[SEP]", "[MASK]", "[PAD]", "can", "##cer", "risk", "breast"])
    for tokenizer in (kbz.BertTokenizer.from_preset(default_preset_dir), custom):
        expected = _bert_ner_packing(tokenizer, sentences, tags, length)
        pre = TokenClassificationPreprocessor(tokenizer, sequence_length=length)
        words, ids = tf.ragged.constant(sentences, tf.string), tf.ragged.constant(tags, tf.int32)
        for run in (pre, tf.function(lambda w, t: pre(w, t))):
            inputs, labels, weights = run(words, ids)
            got = {**{k: v.numpy().tolist() for k, v in inputs.items()}, "labels": labels.numpy().tolist(),
                   "sample_weight": weights.numpy().tolist()}
            for name in got:
                assert got[name] == [row[name] for row in expected], (name, tokenizer.pad_token_id)


def test_split_words_offsets():
    text = "BRCA1-related cancer (breast)."
    words = split_words(text)
    assert [w for w, _, _ in words] == ["BRCA1", "-", "related", "cancer", "(", "breast", ")", "."]
    assert all(text[s:e] == w for w, s, e in words)


@pytest.mark.parametrize("text", [
    "Naïve T-cells (CD4+) rose 3.5×, café\u00a0au\u2003lait; x_y",
    "e\u0301 \u4e2d\u6587 \u0661\u0662 \u00b2 \u2167 \x1cword\x85end\u2028",
    "\u6211\u5728\u5317\u4eac\u5927\u5b66\u3002Ann x\u4e2dy \U00020001\U0002f800 \u9fff\u4dbfa\uf900",  # CJK runs
    "\u845b\U000e0100\u98fe\u533a \u4e2d\u0301\u0302\u6587",  # a variation selector, marks: kept with their ideograph
    "cancer\x00 breast cancer\x00x \x01\x00",  # NUL, which tensorflow-text's own split stops at
    "",
    "   ",
])
def test_split_words_match_python_unicode_regex(text):
    # The in-graph splitter (RE2) against Python's Unicode `\w+|[^\w\s]`, combining marks counted as word
    # characters (decomposed text: BERT's tokenizer keeps a mark in its word), and each CJK ideograph a word of
    # its own (the ranges of google-research/bert's tokenization._is_chinese_char), with the marks after it.
    cjk = ("\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f\U0002b740-\U0002b81f"
           "\U0002b820-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f")
    marks = "".join(sorted({c for c in text if unicodedata.category(c).startswith("M")}))
    word = f"(?:(?![{cjk}])[\\w{re.escape(marks)}])"
    ideograph = f"[{cjk}][{re.escape(marks)}]*" if marks else f"[{cjk}]"
    expected = [(m.group(), m.start(), m.end()) for m in re.finditer(f"{ideograph}|{word}+|[^\\w\\s]", text)]
    assert split_words(text) == expected


def test_a_word_in_decomposed_unicode_stays_one_word():
    """Text in NFD (macOS file names and clipboards) was cut at each combining mark: "Sjo", mark, "gren"."""
    text = unicodedata.normalize("NFD", "Sjögren syndrome, Ménière")
    assert split_words(text) == [("Sjo\u0308gren", 0, 8), ("syndrome", 9, 17), (",", 17, 18),
                                 ("Me\u0301nie\u0300re", 19, 28)]


@pytest.fixture(scope="module")
def ncbi():
    data = read_conll(shared_path("ner", "NCBI-disease", "train.tsv"))
    train, held_out = data.split(0.1, seed=0)
    return train.words[:500], train.tags[:500], held_out.words[:200], held_out.tags[:200]


@pytest.mark.learning
def test_learns_ncbi_disease_from_a_small_slice(default_preset_dir, ncbi, tmp_path):
    train_words, train_tags, test_words, test_tags = ncbi
    ner = kbz.BertTokenClassifier.from_preset(default_preset_dir, label_names=LABELS, sequence_length=64)
    ner.compile(learning_rate=1e-4)
    before = ner.evaluate_entities(test_words, test_tags)
    history = ner.fit(train_words, train_tags, epochs=3, batch_size=16, verbose=0)
    after = ner.evaluate_entities(test_words, test_tags)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert before["f1"] < 0.1
    assert after["f1"] > 0.45, after
    # Four held-out sentences run together (well over the 64-piece window) are
    # read through strided windows: entity F1 stays close to sentence by sentence.
    joined_words = [sum(test_words[i : i + 4], []) for i in range(0, len(test_words), 4)]
    joined_tags = [sum(test_tags[i : i + 4], []) for i in range(0, len(test_tags), 4)]
    joined = ner.evaluate_entities(joined_words, joined_tags)
    assert joined["f1"] > after["f1"] - 0.08, (joined, after)

    entities = ner.predict_entities(["Germline mutations in BRCA1 cause hereditary breast cancer ."])[0]
    assert all(set(e) == {"text", "label", "start", "end", "score"} for e in entities)
    text = "Germline mutations in BRCA1 cause hereditary breast cancer ."
    assert any("cancer" in e["text"] and e["label"] == "Disease" for e in entities)
    assert all(text[e["start"]:e["end"]] == e["text"] and 0 < e["score"] <= 1 for e in entities)

    restored = preset_round_trip(ner, tmp_path)
    # Same weights; float32 kernels may sum in another order (oneDNN), hence 1e-5.
    np.testing.assert_allclose(
        restored.predict_word_probabilities(test_words[:5])[0], ner.predict_word_probabilities(test_words[:5])[0],
        atol=1e-5,
    )


def test_mismatched_tags_and_unknown_labels_are_refused(tiny_checkpoint):
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    with pytest.raises(ValueError, match="Sentence 0 has 2 words but 1 tags"):
        ner.fit([["all", "work"]], [["O"]])
    with pytest.raises(ValueError, match=r"Unknown tag\(s\) \['B-Chemical'\]"):
        ner.fit([["all"]], [["B-Chemical"]])


def test_evaluate_on_a_dataset_of_unscored_words_alone_warns_that_its_zeros_say_nothing(tiny_checkpoint):
    # Every tag -1 (a word not scored): Keras scored no word and gave accuracy 0.0 and loss 0.0, in silence.
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    ner.compile()
    words = tf.ragged.constant([["all", "work"], ["no", "play"]])
    unscored = tf.data.Dataset.from_tensor_slices((words, tf.ragged.constant([[-1, -1], [-1, -1]])))
    with pytest.warns(UserWarning, match=r"evaluate scored no word: every tag it was given is -1 .*"
                                         r"\(label names or ids 0\.\.2\)"):
        assert ner.evaluate(unscored, verbose=0, return_dict=True) == {"accuracy": 0.0, "loss": 0.0}
    scored = tf.data.Dataset.from_tensor_slices((words, tf.ragged.constant([[0, -1], [-1, -1]])))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="evaluate scored no word")
        assert ner.evaluate(scored, verbose=0, return_dict=True)["loss"] > 0


def test_word_windows_follow_run_squad_max_context():
    # 7 one-piece words, windows of 4 every 2: starts 0, 2, 4. By hand, with
    # score min(left, right) + 0.01 * length, pieces 0-2 are best read in
    # window 0, pieces 3-4 in window 1, pieces 5-6 in window 2.
    ranges, best = word_windows([1] * 7, window=4, stride=2)
    assert ranges == [(0, 4), (2, 6), (4, 7)]
    assert best.tolist() == [0, 0, 0, 1, 1, 2, 2]
    # Multi-piece words: first pieces at 0, 2, 3, 6; a window holds the words
    # whose first piece falls inside it; a word with no pieces has no window.
    ranges, best = word_windows([2, 1, 3, 1, 0], window=4, stride=2)
    assert ranges == [(0, 3), (1, 3), (3, 4)]
    assert best.tolist() == [0, 0, 1, 2, -1]


def test_long_sentences_are_read_through_strided_windows(tiny_checkpoint):
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=6)
    sentence = ["all", "work", "and", "no", "play", "makes", "jack"]  # one piece each, 4 fit
    assert ner.preprocessor.tokenizer(sentence).row_lengths().numpy().tolist() == [1] * 7
    probabilities = ner.predict_word_probabilities([sentence])[0]
    # Reference: each window run on its own as a sentence that fits.
    window_0, window_1, window_2 = ner.predict_word_probabilities([sentence[0:4], sentence[2:6], sentence[4:7]])
    expected = np.concatenate([window_0[0:3], window_1[1:3], window_2[1:3]])
    np.testing.assert_allclose(probabilities, expected, atol=1e-6)

    # fit and evaluate score each word once, in the window it is read from (with every window's words, evaluate
    # counted the overlaps twice: 209 predictions for 146 words), each with its own tag.
    tags = ["O", "B-Disease", "I-Disease", "O", "O", "B-Disease", "O"]
    inputs, labels, weights = next(iter(ner.make_dataset([sentence], [tags], batch_size=8)))
    ids = ner.tag_ids([tags])[0]
    for row, (first, end) in enumerate([(0, 3), (3, 5), (5, 7)]):
        assert labels[row].numpy()[weights[row].numpy() > 0].tolist() == ids[first:end]
    # So evaluate's accuracy is the word accuracy of predict_tags, computed here by hand.
    sentences, gold = [sentence, sentence[:3], sentence[1:]], [tags, tags[:3], tags[1:]]
    predicted = ner.predict_tags(sentences)
    words = [p == g for ps, gs in zip(predicted, gold) for p, g in zip(ps, gs)]
    assert ner.evaluate(sentences, gold, return_dict=True, verbose=0)["accuracy"] == pytest.approx(np.mean(words))



# --- The exported graph's steps against their numpy twins ------------------------

@pytest.mark.parametrize("labels", [["O", "B-X", "I-X", "B-Y", "I-Y"], ["O", "B", "I"], ["O", "B", "I", "B-Y", "I-Y"],
                                    ["O", "B-X", "I-X", "E-X", "S-X", "S-Y"], ["O", "B-X", "I-X", "L-X", "U-X", "E-Y"]])
def test_graph_chunks_match_extract_chunks(labels):
    """Every tag sequence of up to 4 words (the empty one too), in one batch, so
    chunks also meet text boundaries: the graph's entities are conlleval's (typed
    tags, BioBERT's B / I / O without a type, IOBES and BILOU)."""
    prefix_table, kind_table, kinds = _tag_scheme(labels)
    sequences = [list(tags) for n in range(5) for tags in itertools.product(range(len(labels)), repeat=n)]
    tags = np.concatenate(sequences).astype(np.int32)
    score = np.random.default_rng(0).uniform(size=tags.size).astype(np.float32)
    position = np.concatenate([np.arange(len(s)) for s in sequences]).astype(np.int64)  # word offsets as bytes
    row = np.repeat(np.arange(len(sequences)), [len(s) for s in sequences]).astype(np.int32)
    prefix, kind = tf.gather(prefix_table, tags), tf.gather(kind_table, tags)
    begins = _chunk_begins(prefix, kind, tf.constant([len(s) for s in sequences], tf.int32))
    entities = [tensor.numpy().tolist() for tensor in _chunk_spans(begins, prefix, kind, score, row, position,
                                                                   position + 1)]
    expected, offset = [], 0
    for text, sequence in enumerate(sequences):
        for label, first, end in extract_chunks([labels[t] for t in sequence]):
            expected.append((text, label, first, end, score[offset + first : offset + end].mean()))
        offset += len(sequence)
    assert len(expected) > 100
    got = list(zip(*entities))
    assert [(r, kinds[k], a, b) for r, k, a, b, _ in got] == [entity[:4] for entity in expected]
    np.testing.assert_allclose([entity[4] for entity in got], [entity[4] for entity in expected], rtol=1e-6)


# Edge cases: empty texts, words without pieces (at a text's start and end, beside the next text), a word longer
# than the window, a stride longer than the window and one of a single piece.
@pytest.mark.parametrize("window, stride", [(8, 4), (8, 3), (5, 20), (6, 1)])
def test_graph_word_windows_match_word_windows(window, stride):
    rng = np.random.default_rng(window * 100 + stride)
    texts = [[], [0, 0], [3], [1] * 20, rng.integers(0, 4, 40).tolist(), [0, 12, 0, 1, 1, 9, 0], [0, 2, 0], [5]]
    windows, word_first_piece = snap_windows_to_words(tf.ragged.constant(texts, tf.int32), window, stride)
    flat_counts = np.concatenate(texts).astype(int)
    word_offset = np.cumsum([0] + [len(t) for t in texts])
    piece_offset = np.cumsum([0] + [sum(t) for t in texts])
    np.testing.assert_array_equal(word_first_piece, np.cumsum(flat_counts) - flat_counts)
    expected = []
    for text, counts in enumerate(texts):
        ranges, _ = word_windows(counts, window, stride)
        starts = window_starts(sum(counts), window, stride)
        for (first, end), start in zip(ranges, starts):
            words = [word_offset[text] + w for w in range(first, end) if counts[w]]
            expected.append((text, words, piece_offset[text] + start, min(window, sum(counts) - start)))
    # A graph range may hold more words without pieces beside its own: they pack to nothing.
    got = [(text, [w for w in range(first, end) if flat_counts[w]], first_piece, length)
           for text, first, end, first_piece, length in zip(*[t.numpy().tolist() for t in windows])]
    assert got == expected
    assert all(word_offset[text] <= first <= end <= word_offset[text + 1]
               for text, first, end in zip(*[t.numpy() for t in windows[:3]]))


def test_graph_word_probabilities_match_predict_word_probabilities(tiny_checkpoint):
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    words = ["all", "work", "and", "no", "play", "makes", "jack"]  # one piece each, 6 fit a window
    sentences = [words[:3], [], (words * 3)[:16], ["\u200b", "all", "\u200b", "work", "\u200b"], ["\u200b"]]
    ragged = tf.ragged.constant(sentences, dtype=tf.string)
    for doc_stride in (3, 2, 10):
        inputs, read_word = _pack_word_windows(ner.preprocessor, ragged, doc_stride)
        probabilities = tf.nn.softmax(tf.cast(ner(inputs, training=False), tf.float32))
        per_word, read = _word_probabilities(tf.size(ragged.flat_values), read_word, probabilities)
        # The long sentence is read in windows, each word once, from its max-context window.
        expected = ner.predict_word_probabilities(sentences, doc_stride=doc_stride)
        np.testing.assert_allclose(per_word, np.concatenate(expected), atol=1e-6)
        assert read.numpy().tolist() == [word != "\u200b" for sentence in sentences for word in sentence]
        # Only windows some word is read from are run: not the empty sentences', nor those holding only "\u200b".
        assert len(inputs["token_ids"]) == sum(best.any() for _, _, best in ner.sentence_windows(sentences, doc_stride))


# Every unknown word is spelled letter by letter: a long word is many pieces.
SPELLING_VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *".,", *string.ascii_lowercase,
                       *("##" + c for c in string.ascii_lowercase), "the", "cat", "sat", "on", "mat"]


def _spelling_tagger():
    """A tiny random tagger over `SPELLING_VOCABULARY` reading windows of 8 pieces every 4, its output layer
    scaled so that its tags vary from word to word (entities of every length)."""
    keras.utils.set_random_seed(5)
    backbone = kbz.BertBackbone(vocabulary_size=len(SPELLING_VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
                                intermediate_dim=16, max_sequence_length=16)
    tokenizer = kbz.BertTokenizer(SPELLING_VOCABULARY)
    labels = ["O", "B-X", "I-X", "B-Y", "I-Y"]
    ner = kbz.BertTokenClassifier(backbone, TokenClassificationPreprocessor(tokenizer, 10), label_names=labels)
    ner.output_dense.kernel.assign(np.random.default_rng(0).normal(size=ner.output_dense.kernel.shape) * 20)
    return ner


def _served_entities(out):
    """The signature `entities`' padded outputs as `predict_entities`' dicts, one list per text."""
    count = out["entity_count"].numpy()
    return [[{"text": out["entity_text"][i, j].numpy().decode(), "label": out["entity_label"][i, j].numpy().decode(),
              "start": int(out["start"][i, j]), "end": int(out["end"][i, j]), "score": float(out["score"][i, j])}
             for j in range(n)] for i, n in enumerate(count)]


def _assert_same_entities(actual, expected):
    """The same entities (text, label, offsets), their scores to float32 rounding."""
    def spans(rows):
        return [[(e["text"], e["label"], e["start"], e["end"]) for e in row] for row in rows]

    assert spans(actual) == spans(expected)
    np.testing.assert_allclose([e["score"] for row in actual for e in row],
                               [e["score"] for row in expected for e in row], atol=1e-5)


def test_the_served_entities_of_long_texts_are_the_predicted_ones():
    """PubMed abstracts are far longer than the window: the served signature read one window (the words past it
    in no entity, `truncated` set) where predict_entities reads strided windows. It reads them as
    predict_entities does: a text of many windows, a word of many pieces across a window's edge, a word longer
    than the window, words without pieces (control and format characters), empty texts, short texts between."""
    ner = _spelling_tagger()
    tokenizer = ner.preprocessor.tokenizer
    # Windows of 8 pieces every 4; "abcdef" holds pieces 6-11 of the first text, across the first window's edge.
    first_window = "the cat the cat ab abcdef"
    assert [len(p) for p in tokenizer(tf.constant(first_window.split())).to_list()] == [1, 1, 1, 1, 2, 6]
    texts = [first_window + " sat on the mat, the cat sat. " * 4 + "abcdefghijklm the cat",
             "", "\x01 the cat \u200b on \x7f the mat sat on the cat \u200b", "cat",
             "the \u200b " * 12 + "\u200b", "the mat " * 9, " \x01 "]
    expected = ner.predict_entities(texts)
    assert any(e["start"] > len(first_window) for e in expected[0]), "no entity past the first window"
    assert any(e["start"] > 30 for e in expected[5]), "no entity past the first window"
    out = token_classifier_signatures(ner)[0].function(tf.constant(texts))
    assert "truncated" not in out
    _assert_same_entities(_served_entities(out), expected)
    # A batch without a word (it failed the gather of first pieces, found by tests/test_serving_fuzz.py).
    assert token_classifier_signatures(ner)[0].function(tf.constant(["", " \t"]))["entity_count"].numpy().tolist() \
        == [0, 0]


def test_windows_nothing_is_read_from_are_not_run_and_change_no_entity(tmp_path):
    """Texts whose windows hold nothing to tag (empty, whitespace, control characters only; the middle of a word
    longer than the stride) sent alone, together, among normal texts and as a 5,000-character CJK run, through
    the loaded export as TF Serving calls it: each text gets `predict_entities`' entities whatever it is sent
    with, and the model runs only on windows some word is read from (it ran every window of a 60-piece word,
    and an empty row for every empty text)."""
    ner = _spelling_tagger()
    nothing_to_tag = ["", " \t\n\u3000\u2028", "\x01\x02\x7f\u200b\ufeff", "\x00" * 40]
    long_word = "ab" * 30  # one word of 60 pieces: windows start every 4 pieces, its first piece is in one
    cjk = "北京大学的学生" * 715  # each ideograph its own word (one [UNK] piece), a window each 4 of them
    normal = ["the cat sat on the mat.", "ann sat, the cat ran on " * 6 + long_word + " the mat"]
    texts = [*nothing_to_tag, long_word, cjk[:5000], *normal]
    expected = ner.predict_entities(texts)
    assert expected[4] and expected[5] and expected[7], "no entities to compare"

    rows = [len(_pack_word_windows(ner.preprocessor, tf.ragged.constant([[w for w, _, _ in words]], tf.string),
                                   4)[0]["token_ids"]) for words in split_words(texts)]
    assert rows[:5] == [0, 0, 0, 0, 1]
    assert rows[5] == len(window_starts(5000, 8, 4))  # each CJK window is the max-context one of its middle

    entities = kbz.export.load_export(ner.export(str(tmp_path))).signatures["entities"]
    for text, reference in zip(texts, expected):
        _assert_same_entities(_served_entities(entities(text=tf.constant([text]))), [reference])
    mixed = [0, 6, 1, 5, 2, 4, 3, 7, 0]  # normal texts between those with nothing to tag
    _assert_same_entities(_served_entities(entities(text=tf.constant([texts[i] for i in mixed]))),
                          [expected[i] for i in mixed])
    _assert_same_entities(_served_entities(entities(text=tf.constant(nothing_to_tag + [long_word] * 3))),
                          expected[:4] + [expected[4]] * 3)
    assert entities(text=tf.constant([], tf.string))["entity_count"].shape == (0,)


@pytest.mark.slow
def test_under_strategy_and_keras_file_round_trip(tiny_checkpoint, tmp_path):
    import tensorflow as tf

    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    sentences = [["all", "work", "and"], ["jack", "a", "dull", "boy"]] * 4
    tags = [["B-Disease", "I-Disease", "O"], ["O", "O", "B-Disease", "I-Disease"]] * 4
    history = ner.fit(sentences, tags, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    restored = keras_file_round_trip(ner, tmp_path)
    np.testing.assert_allclose(restored.predict_word_probabilities(sentences[:2])[1],
                               ner.predict_word_probabilities(sentences[:2])[1], atol=1e-6)


def test_labels_is_the_deprecated_name_of_label_names(tiny_checkpoint):
    with pytest.warns(DeprecationWarning, match="`labels` is now `label_names`"):
        ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, labels=LABELS, sequence_length=8)
    assert ner.label_names == LABELS
    with pytest.warns(DeprecationWarning, match="labels is now .label_names"):
        assert ner.labels == LABELS
    # A config saved before the rename (key "labels") still loads, and takes new names from from_preset.
    config = ner.get_config()
    config["labels"] = config.pop("label_names")
    with pytest.warns(DeprecationWarning):
        assert kbz.BertTokenClassifier.from_config(config).label_names == LABELS
    renamed = ["O", "B-Chemical", "I-Chemical"]
    assert kbz.BertTokenClassifier.from_config(dict(config, label_names=renamed)).label_names == renamed
    with pytest.raises(ValueError, match="Pass label_names only"):
        kbz.BertTokenClassifier.from_preset(tiny_checkpoint, labels=LABELS, label_names=LABELS, sequence_length=8)


def test_a_tagger_of_bare_types_tags_but_refuses_to_find_entities(tiny_checkpoint, tmp_path):
    """Types without a prefix ("PER") name no entity for conlleval: predict_entities found none and
    evaluate_entities scored F1 0, in silence, where the export refused them in words of its own."""
    bare = ["O", "PER", "LOC"]
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=bare, sequence_length=8)
    sentences, tags = [["Ann", "Smith", "ran"], ["to", "Paris"]], [["PER", "PER", "O"], ["O", "LOC"]]
    ner.fit(sentences, tags, epochs=1, verbose=0)  # a tagger of any tags trains and tags (POS tags, say)
    ner.output_dense.kernel.assign(np.zeros(ner.output_dense.kernel.shape, "float32"))
    ner.output_dense.bias.assign([0.0, 5.0, 0.0])  # every word: PER
    assert ner.predict_tags(sentences) == [["PER"] * 3, ["PER"] * 2]
    refused = (r"finds entities by conlleval tags, but 2 of this tagger's tags are not conlleval tags: 'PER', 'LOC'\. "
               r"conlleval reads O and tags of a prefix B-, I-, E-, S- \(IOBES\) or L-, U- \(BILOU\).* Write an entity "
               r"type without a prefix \('PER'\) as 'I-PER' on each of an entity's words .* Or rename this tagger's "
               r"tags in the order of its outputs \(its trained weights stay\): tagger.label_names = "
               r"\['O', 'I-PER', 'I-LOC'\] .*predict_tags gives its tags as they are\.$")
    with pytest.raises(ValueError, match="^predict_entities " + refused):
        ner.predict_entities(["Ann Smith ran"])
    with pytest.raises(ValueError, match="^evaluate_entities " + refused):
        ner.evaluate_entities(sentences, tags)
    with pytest.raises(ValueError, match="^The served signature entities " + refused):
        ner.export(str(tmp_path / "export"))
    assert not (tmp_path / "export").exists()
    # The exported decoder's own check is the same rule, in the same words.
    with pytest.raises(ValueError, match=r"^The served signature entities finds entities by conlleval tags, but 2 of "
                                         r"the tagger's tags are not conlleval tags: 'PER', 'LOC'\. conlleval reads"):
        token_classifier_signatures(ner)
    # The fix named: renamed in its outputs' order, every word is I-PER, one entity per text (IO: conlleval joins
    # consecutive I-PER words), spanning it whole.
    ner.label_names = ["O", "I-PER", "I-LOC"]
    assert [[(e["text"], e["label"], e["start"], e["end"]) for e in found]
            for found in ner.predict_entities(["Ann Smith ran", "to Paris"])] == [
        [("Ann Smith ran", "PER", 0, 13)], [("to Paris", "PER", 0, 8)]]
    assert ner.evaluate_entities(sentences, [["I-PER", "I-PER", "O"], ["O", "I-LOC"]])["predicted_entities"] == 2


def test_entity_tags_of_every_scheme_are_taken_and_others_named():
    for tags in (["O", "B-PER", "I-PER"], ["O", "I-PER", "I-LOC"], ["O", "B", "I"], ["O", "B-X", "I-X", "E-X", "S-X"],
                 ["O", "B-X", "I-X", "L-X", "U-X"]):
        assert check_entity_tags(tags, "predict_entities") is None, tags
    assert check_entity_tags(None, "predict_entities") is None  # not known yet
    # A bare type beside its I- (renamed, two outputs would share a name) and tag ids get no renaming to copy.
    for tags, named in ((["O", "PER", "I-PER"], "'PER'"), ([0, 1, 2], "0, 1, 2")):
        with pytest.raises(ValueError, match=rf"are not conlleval tags: {named}\.|is not a conlleval tag: {named}\."
                                             r".*tagger.label_names = \['O', 'B-<type>', 'I-<type>', '...'\] "):
            check_entity_tags(tags, "predict_entities")


def test_gold_entity_words_the_model_cannot_read_are_warned_of(tiny_checkpoint):
    # A word with no word-pieces (a lone zero-width space) is tagged O: its entity is always missed, and the scores
    # said nothing of it.
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    sentences = [["all", "work"], ["no", "\u200b", "play"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ner.evaluate_entities(sentences, [["B-Disease", "O"], ["O", "O", "B-Disease"]])  # none on an O word
    with pytest.warns(UserWarning, match=r"^1 word\(s\) tagged as part of an entity have no word-pieces, .* word 1 "
                                         r"of sentence 1, '\\u200b', tagged I-Disease\)"):
        scores = ner.evaluate_entities(sentences, [["O", "O"], ["O", "I-Disease", "I-Disease"]])
    assert ner.predict_tags(sentences)[1][1] == "O" and scores["gold_entities"] == 1


def test_a_tagger_of_one_tag_is_refused(tiny_checkpoint):
    # It would predict that tag everywhere, and Keras' loss failed on its one-logit head naming no tag.
    with pytest.raises(ValueError, match=r"label_names holds one tag \['O'\]: a tagger tells entity tags"):
        kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=["O"], sequence_length=8)


def test_tags_checked_as_fit_checks_them_wherever_they_are_given(tiny_checkpoint):
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    # One string per sentence was read as a tag per character ("OO": two tags).
    with pytest.raises(TypeError, match=r"The tags of sentence 0 are one string \('OO'\); give them as a list"):
        ner.fit([["all", "work"]], ["OO"])
    sentences = [["all", "work", "and"], ["no", "play"]]
    names = [["B-Disease", "I-Disease", "O"], ["O", "B-Disease"]]
    ids = [[LABELS.index(t) for t in row] for row in names]
    # evaluate_entities takes ids (and UTF-8 bytes, as a Dataset's strings) as fit does, and refuses unknown gold
    # tags (they were scored as no entity).
    assert ner.evaluate_entities(sentences, ids) == ner.evaluate_entities(sentences, names) == \
        ner.evaluate_entities(sentences, [[t.encode() for t in row] for row in names])
    with pytest.raises(TypeError, match="The tags of sentence 1 are NoneType; give a list"):
        ner.evaluate(sentences, [names[0], None])
    assert ner.evaluate_entities(sentences, names)["gold_entities"] == 2
    with pytest.raises(ValueError, match=r"Unknown tag\(s\) \['X'\] at sentence 0, word 0"):
        ner.evaluate_entities(sentences, [["X", "O", "O"], ["O", "O"]])
    with pytest.raises(ValueError, match="Sentence 1 has 2 words but 1 tags"):
        ner.evaluate_entities(sentences, [["O", "O", "O"], ["O"]])
    with pytest.raises(ValueError, match="No sentences: the input list is empty"):  # it scored an F1 of 0
        ner.evaluate_entities([], [])
    for stride in (0, -3, 2.5):
        with pytest.raises(ValueError, match=f"doc_stride must be a positive whole number; got {stride!r}"):
            ner.predict_tags(sentences, doc_stride=stride)


def test_predict_warns_when_long_sentences_give_more_rows_than_sentences(tiny_checkpoint):
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    long = ["all", "work", "and", "no", "play"] * 3
    with pytest.warns(UserWarning, match=r"predict: \d+ more rows than the 2 sentences.*use predict_tags"):
        rows = ner.predict([long, ["all"]])
    assert len(rows) > 2 and [len(t) for t in ner.predict_tags([long, ["all"]])] == [15, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(ner.predict([["all", "work"], ["all"]])) == 2


def test_saving_and_loading_read_no_deprecated_attribute(tiny_checkpoint, tmp_path):
    """Keras' saving reads every attribute dir() lists: the deprecated `labels` warned on each save and load."""
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        preset_round_trip(ner, tmp_path / "preset")
        keras_file_round_trip(ner, tmp_path)
    assert not [w for w in caught if "label_names" in str(w.message)]
    assert "labels" not in dir(ner)
    with pytest.raises(AttributeError, match="has no attribute 'label'"):
        ner.label  # noqa: B018


def test_a_datasets_tags_and_words_in_every_common_form(tiny_checkpoint):
    """Tag names, dense batches of equal-length sentences and bad ids in a Dataset: learned, or refused with the
    model's own message as batches are read (they met TF's bare loss or iteration errors)."""
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=LABELS, sequence_length=8)
    words, names = [["all", "work"], ["no", "play"]], [["B-Disease", "I-Disease"], ["O", "B-Disease"]]
    ids = [[LABELS.index(t) for t in row] for row in names]
    reference = ner.evaluate(words, names, return_dict=True, verbose=0)["loss"]
    for tags in (names, ids):
        dense = tf.data.Dataset.from_tensor_slices((words, tags))  # equal lengths: dense tensors
        for ds in (dense, dense.batch(2), tf.data.Dataset.from_tensor_slices((tf.ragged.constant(words),
                                                                              tf.ragged.constant(tags)))):
            assert ner.evaluate(ds, return_dict=True, verbose=0)["loss"] == pytest.approx(reference, rel=1e-6)
    ragged = lambda tags: tf.data.Dataset.from_tensor_slices((tf.ragged.constant(words),  # noqa: E731
                                                              tf.ragged.constant(tags)))
    for tags, message in ((ids[:1] + [[1, 7]], r"A tag id is 3 or more; ids are 0..2, of label_names: O, B-Disease"),
                          (ids[:1] + [[-2, 0]], r"A tag id is below -1; ids are 0..2 \(-1: a word not scored\)"),
                          (names[:1] + [["O", "B-X"]], "A tag is not one of label_names: O, B-Disease, I-Disease")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            ner.fit(ragged(tags), epochs=1, verbose=0)
    # -1 is a word not scored: accuracy over the other three words, by hand from predict_tags.
    predicted = ner.predict_tags(words)
    hits = [predicted[0][0] == names[0][0], predicted[0][1] == names[0][1], predicted[1][1] == names[1][1]]
    assert ner.evaluate(ragged(ids[:1] + [[-1, ids[1][1]]]), return_dict=True, verbose=0)["accuracy"] == \
        pytest.approx(np.mean(hits))
    with pytest.raises(TypeError, match="The sentences are a tf.data.Dataset: predict_tags, .* take word lists"):
        ner.predict_tags(tf.data.Dataset.from_tensor_slices(tf.ragged.constant(words)))
    with pytest.raises(TypeError, match=r"The words are a string tensor of shape \(.*\); give sentences as lists"):
        ner.predict(tf.data.Dataset.from_tensor_slices(["Familial hypercholesterolemia", "all work"]))


@pytest.mark.slow
def test_words_the_model_does_not_read_are_outside_any_entity(tiny_checkpoint, tmp_path):
    """A tag set with "O" last (sorted tags) and a head that leans to no tag: a word without pieces (a lone
    zero-width space) has uniform probabilities, whose argmax is the first tag. It is "O", never an entity, in
    Python and in the served graph alike; a long text's words past the first window are read, in both."""
    labels = ["B-Disease", "I-Disease", "O"]
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=labels, sequence_length=6)
    ner.output_dense.kernel.assign(np.zeros(ner.output_dense.kernel.shape, "float32"))
    ner.output_dense.bias.assign([0.0, 0.0, 0.1])  # read words: "O", by a small margin
    assert ner.predict_tags([["all", "\u200b", "work"]]) == [["O", "O", "O"]]
    np.testing.assert_allclose(ner.predict_word_probabilities([["\u200b"]])[0], [[1 / 3] * 3])
    texts = ["all \u200b work", " ".join(["all"] * 9)]  # the second: 9 words, 4 fit a window
    assert ner.predict_entities(texts) == [[], []]
    served = kbz.export.load_export(ner.export(str(tmp_path), model_name="ner")).signatures["entities"]
    out = served(text=tf.constant(texts))
    assert out["entity_count"].numpy().tolist() == [0, 0]

    # Where the head does tag them, the same words are entities in both: the rule hides nothing real.
    ner.output_dense.bias.assign([5.0, 0.0, 0.0])
    assert [len(e) for e in ner.predict_entities(texts)] == [2, 9]
    out = kbz.export.load_export(ner.export(str(tmp_path), model_name="ner2")).signatures["entities"](
        text=tf.constant(texts))
    assert out["entity_count"].numpy().tolist() == [2, 9]  # every window read


@pytest.mark.slow
@pytest.mark.parametrize("labels", [["O", "B-X", "I-X", "E-X", "S-X", "S-Y"], ["O", "B-X", "I-X", "L-X", "U-X", "U-Y"]])
def test_an_iobes_or_bilou_tagger_serves_the_entities_it_predicts(tiny_checkpoint, tmp_path, labels):
    """IOBES / BILOU taggers were refused by the export ("reads BIO/IOB tags"); they serve conlleval's chunks,
    as predict_entities reads them."""
    ner = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=labels, sequence_length=16)
    rng = np.random.default_rng(10)  # a head that predicts most of the tags
    ner.output_dense.kernel.assign(rng.normal(size=ner.output_dense.kernel.shape).astype("float32") * 20)
    ner.output_dense.bias.assign(rng.normal(size=len(labels)).astype("float32") * 3)
    texts = ["all work and no play makes jack a dull boy", "no play", "jack jack jack all", "a dull boy makes work"]
    assert len({tag for row in ner.predict_tags([text.split() for text in texts]) for tag in row}) >= 4
    expected = ner.predict_entities(texts)
    assert sum(map(len, expected)) > 4 and any(" " in e["text"] for row in expected for e in row)
    out = kbz.export.load_export(ner.export(str(tmp_path), model_name="ner")).signatures["entities"](
        text=tf.constant(texts))
    served = [[(t.decode(), k.decode(), s) for t, k, s in zip(out["entity_text"][i][:n].numpy(),
                                                             out["entity_label"][i][:n].numpy(),
                                                             out["start"][i][:n].numpy())]
              for i, n in enumerate(out["entity_count"].numpy())]
    assert served == [[(e["text"], e["label"], e["start"]) for e in row] for row in expected]


def test_the_served_entities_of_a_long_text_do_not_copy_it_per_entity():
    """Each entity's offsets and text were cut from a copy of its whole text (a gather, then Substr): memory grew
    as entities x text bytes, so with long texts read in windows a 100 KB text took 5.6 GB and a 1 MB text ran
    the server out of memory. The text is decoded once; the offsets and texts still match predict_entities on
    accents, CJK, combining marks, invalid UTF-8 and empty texts."""
    keras.utils.set_random_seed(5)
    backbone = kbz.BertBackbone(vocabulary_size=len(SPELLING_VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
                                intermediate_dim=16, max_sequence_length=16)
    labels = ["O", "B-X", "I-X", "B-Y", "I-Y"]
    ner = kbz.BertTokenClassifier(backbone, TokenClassificationPreprocessor(kbz.BertTokenizer(SPELLING_VOCABULARY),
                                                                            10), label_names=labels)
    ner.output_dense.kernel.assign(np.random.default_rng(0).normal(size=ner.output_dense.kernel.shape) * 20)
    signature = token_classifier_signatures(ner)[0].function
    graph = signature.get_concrete_function().graph
    assert not [op.name for op in graph.get_operations() if op.type == "Substr"]
    texts = ["Café  résumé the cat " * 6, "", "中文 the cat 中 sat on the mat", "cafe\u0301 the ca\u0301t sat",
             b"the \xff\xfe cat on the mat \xc3".decode("utf-8", "replace"), "the mat " * 20]
    expected = ner.predict_entities(texts)
    out = signature(tf.constant(texts))
    count = out["entity_count"].numpy()
    assert count.tolist() == [len(row) for row in expected] and count.sum() > 20
    served = [[(out["entity_text"][i, j].numpy().decode(), int(out["start"][i, j]), int(out["end"][i, j]))
               for j in range(n)] for i, n in enumerate(count)]
    assert served == [[(e["text"], e["start"], e["end"]) for e in row] for row in expected]
    assert all(texts[i][a:b] == t for i, row in enumerate(served) for t, a, b in row)


def test_tags_of_another_prefix_get_no_renaming_that_conlleval_would_misread():
    """"O-PER" renamed "I-O-PER" would be read as the type "O-PER": such tags get the general advice."""
    from keras_bert_zoo.tasks.bert_token_classifier import check_entity_tags

    with pytest.raises(ValueError) as refused:
        check_entity_tags(["O", "O-PER", "O-LOC"], "predict_entities")
    assert "I-O-PER" not in str(refused.value) and "'B-<type>', 'I-<type>'" in str(refused.value)
    with pytest.raises(ValueError, match=re.escape("tagger.label_names = ['O', 'I-PER', 'I-LOC']")):
        check_entity_tags(["O", "PER", "LOC"], "predict_entities")


def test_evaluate_entities_takes_a_readers_result(tiny_checkpoint, tmp_path):
    """evaluate_squad and evaluate_glue take a reader's result alone; evaluate_entities required the tags apart
    (evaluate_entities(read_conll(path)): "missing 1 required positional argument: 'tags'")."""
    path = tmp_path / "two.tsv"
    path.write_text("John\tB-PER\nran\tO\n\nMary\tB-PER\nsat\tO\n")
    data = read_conll(str(path))
    tagger = kbz.BertTokenClassifier.from_preset(tiny_checkpoint, label_names=data.label_names, sequence_length=12)
    kernel, bias = tagger.output_dense.get_weights()
    tagger.output_dense.set_weights([np.zeros_like(kernel), np.where(np.arange(len(bias)) == 1, 100.0, 0.0)])
    assert data.label_names[1] == "B-PER"  # every word tagged B-PER: each its own entity
    # Hand-computed: 4 entities predicted, 2 gold, both found: precision 1/2, recall 1, F1 2/3.
    scores = tagger.evaluate_entities(data)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.5, 1.0, pytest.approx(2 / 3))
    assert tagger.evaluate_entities(data.words, data.tags) == scores == tagger.evaluate_entities(*data)
    with pytest.raises(ValueError, match=r"evaluate_entities needs the tags: .* evaluate_entities\(read_conll\(path"):
        tagger.evaluate_entities(data.words)
    with pytest.raises(ValueError, match="hold their labels; pass them without y"):
        tagger.evaluate_entities(data, data.tags)
