"""BertTokenClassifier (NER): alignment, learning NCBI-disease, entities, round-trip."""

import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.data.conll import read_conll
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor
from keras_bert_zoo.preprocessing.token_classification_preprocessor import split_words
from tests.conftest import TINY_CHECKPOINT
from tests.conftest import shared_path

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


def test_split_words_offsets():
    text = "BRCA1-related cancer (breast)."
    words = split_words(text)
    assert [w for w, _, _ in words] == ["BRCA1", "-", "related", "cancer", "(", "breast", ")", "."]
    assert all(text[s:e] == w for w, s, e in words)


@pytest.fixture(scope="module")
def ncbi():
    data = read_conll(shared_path("ner", "NCBI-disease", "train.tsv"))
    train, held_out = data.split(0.1, seed=0)
    return train.words[:500], train.tags[:500], held_out.words[:200], held_out.tags[:200]


def test_learns_ncbi_disease_from_a_small_slice(default_preset_dir, ncbi, tmp_path):
    train_words, train_tags, test_words, test_tags = ncbi
    ner = kbz.BertTokenClassifier.from_preset(default_preset_dir, labels=LABELS, sequence_length=64)
    ner.compile(learning_rate=1e-4)
    before = ner.evaluate_entities(test_words, test_tags)
    history = ner.fit(train_words, train_tags, epochs=3, batch_size=16, verbose=0)
    after = ner.evaluate_entities(test_words, test_tags)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert before["f1"] < 0.1
    assert after["f1"] > 0.45, after

    entities = ner.predict_entities(["Germline mutations in BRCA1 cause hereditary breast cancer ."])[0]
    assert all(set(e) == {"text", "label", "start", "end", "score"} for e in entities)
    text = "Germline mutations in BRCA1 cause hereditary breast cancer ."
    assert any("cancer" in e["text"] and e["label"] == "Disease" for e in entities)
    assert all(text[e["start"]:e["end"]] == e["text"] and 0 < e["score"] <= 1 for e in entities)

    ner.save_to_preset(str(tmp_path / "ner"))
    restored = kbz.BertTokenClassifier.from_preset(str(tmp_path / "ner"))
    for a, b in zip(restored.weights, ner.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # Same weights; float32 kernels may sum in another order (oneDNN), hence 1e-5.
    np.testing.assert_allclose(
        restored.predict_word_probabilities(test_words[:5])[0], ner.predict_word_probabilities(test_words[:5])[0],
        atol=1e-5,
    )


def test_mismatched_tags_and_unknown_labels_are_refused():
    shared_path("checkpoints", "keras_bert_test_tiny")
    ner = kbz.BertTokenClassifier.from_preset(TINY_CHECKPOINT, labels=LABELS, sequence_length=8)
    with pytest.raises(ValueError, match="Sentence 0 has 2 words but 1 tags"):
        ner.fit([["all", "work"]], [["O"]])
    with pytest.raises(ValueError, match=r"Unknown tag\(s\) \['B-Chemical'\]"):
        ner.fit([["all"]], [["B-Chemical"]])


def test_words_beyond_the_window_warn():
    shared_path("checkpoints", "keras_bert_test_tiny")
    ner = kbz.BertTokenClassifier.from_preset(TINY_CHECKPOINT, labels=LABELS, sequence_length=6)
    with pytest.warns(UserWarning, match="3 words fell outside the 6-piece window"):
        tags = ner.predict_tags([["all", "work", "and", "no", "play", "makes", "jack"]])
    assert len(tags[0]) == 7 and tags[0][4:] == ["O", "O", "O"]


def test_under_strategy_and_keras_file_round_trip(tmp_path):
    import keras
    import tensorflow as tf

    shared_path("checkpoints", "keras_bert_test_tiny")
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        ner = kbz.BertTokenClassifier.from_preset(TINY_CHECKPOINT, labels=LABELS, sequence_length=8)
    sentences = [["all", "work", "and"], ["jack", "a", "dull", "boy"]] * 4
    tags = [["B-Disease", "I-Disease", "O"], ["O", "O", "B-Disease", "I-Disease"]] * 4
    history = ner.fit(sentences, tags, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    ner.save(str(tmp_path / "ner.keras"))
    restored = keras.saving.load_model(str(tmp_path / "ner.keras"))
    np.testing.assert_allclose(restored.predict_word_probabilities(sentences[:2])[1],
                               ner.predict_word_probabilities(sentences[:2])[1], atol=1e-6)
