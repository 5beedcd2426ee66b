"""BertTokenizer against google-research/bert's FullTokenizer outputs."""

import json
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

import keras_bert_zoo as kbz
from tests.conftest import shared_path

VOCABS = {
    "bert-base-uncased": True,
    "bert-base-cased": False,
    "scibert_scivocab_uncased": True,
}


def _tokenizer(name):
    return kbz.BertTokenizer(shared_path("vocab", name, "vocab.txt"), lowercase=VOCABS[name])


def _references(name):
    with open(shared_path("vocab", name, "tokenization_reference.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("name", sorted(VOCABS))
def test_reproduces_original_tokenizer_exactly(name):
    tokenizer = _tokenizer(name)
    references = _references(name)
    ids = tokenizer([r["text"] for r in references]).to_list()
    mismatches = [r["text"] for r, got in zip(references, ids) if got != r["ids"]]
    assert len(references) > 400
    assert mismatches == []


@pytest.mark.parametrize("name", sorted(VOCABS))
def test_offsets_point_at_the_source_text(name):
    """Every word-piece's span in the original text normalises to the piece."""
    tokenizer = _tokenizer(name)
    texts = [r["text"] for r in _references(name)]
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    checked = 0
    for text, row_ids, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        data = text.encode("utf-8")
        for token_id, start, end in zip(row_ids, row_starts, row_ends):
            piece = tokenizer.id_to_token(token_id)
            if piece == "[UNK]":
                continue
            span = data[start:end].decode("utf-8")
            if VOCABS[name]:
                span = "".join(c for c in unicodedata.normalize("NFD", span.lower()) if unicodedata.category(c) != "Mn")
            assert piece.removeprefix("##") in span, (text, piece, span)
            checked += 1
    assert checked > 5000


def test_scibert_empty_vocabulary_line_keeps_ids_aligned():
    path = shared_path("vocab", "scibert_scivocab_uncased", "vocab.txt")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    empty = [i for i, line in enumerate(lines) if line == ""]
    assert empty == [30106]  # line 30107
    tokenizer = kbz.BertTokenizer(path)
    assert tokenizer.vocabulary_size() == len(lines) == 31090
    for i in (30105, 30107, 31089):
        assert tokenizer.token_to_id(lines[i]) == i


def test_accents_are_stripped_when_lowercasing_like_bert():
    tokenizer = _tokenizer("bert-base-uncased")
    assert tokenizer(["café"]).to_list() == tokenizer(["cafe"]).to_list()
    assert tokenizer.unknown_token_id not in tokenizer(["café naïve résumé"]).to_list()[0]


def test_lowercasing_is_not_nfkc_case_folding():
    """Full-width letters stay full-width, as in BERT's tokenizer ([UNK] here)."""
    tokenizer = _tokenizer("bert-base-uncased")
    assert tokenizer(["Ｈｅｌｌｏ"]).to_list() == [[tokenizer.unknown_token_id]]
    assert tokenizer(["HELLO"]).to_list() == [[tokenizer.token_to_id("hello")]]


def test_strip_accents_independent_of_casing():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Cafe", "café", "cafe"]
    stripped = kbz.BertTokenizer(vocab, lowercase=False, strip_accents=True)
    kept = kbz.BertTokenizer(vocab, lowercase=True, strip_accents=False)
    assert stripped(["Café"]).to_list() == [[5]]
    assert kept(["CAFÉ"]).to_list() == [[6]]


def test_control_characters_removed_and_cjk_split():
    tokenizer = _tokenizer("bert-base-uncased")
    # BERT drops NUL and format characters (zero-width space) and splits CJK.
    assert tokenizer(["hel\x00lo"]).to_list() == tokenizer(["hello"]).to_list()
    assert tokenizer(["力加"]).to_list() == [[tokenizer.token_to_id("力"), tokenizer.token_to_id("加")]]


def test_scalar_input_and_tf_data():
    tokenizer = _tokenizer("bert-base-uncased")
    assert tokenizer("Hello world").numpy().tolist() == tokenizer(["Hello world"]).to_list()[0]
    ds = tf.data.Dataset.from_tensor_slices(["hello world", "a b c"]).map(tokenizer)
    assert [x.numpy().tolist() for x in ds] == tokenizer(["hello world", "a b c"]).to_list()


def test_config_round_trip():
    tokenizer = _tokenizer("bert-base-cased")
    clone = kbz.BertTokenizer.from_config(tokenizer.get_config())
    text = ["Familial Hypercholesterolemia (FH) is common."]
    assert clone(text).to_list() == tokenizer(text).to_list()
    assert not clone.lowercase


def test_vocabulary_without_special_tokens_is_refused():
    with pytest.raises(ValueError, match=r"\[CLS\]"):
        kbz.BertTokenizer(["[PAD]", "[UNK]", "hello"])


def test_from_preset_matches_reference_vocab(default_preset_dir):
    tokenizer = kbz.BertTokenizer.from_preset(default_preset_dir)
    reference = _references("bert-base-uncased")[:50]
    assert tokenizer([r["text"] for r in reference]).to_list() == [r["ids"] for r in reference]
    np.testing.assert_equal(tokenizer.lowercase, True)


def test_a_repeated_vocabulary_token_is_named_with_its_lines(tmp_path):
    lines = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cell", "##s", "cell"]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(lines) + "\n")
    # tensorflow-text's own refusal names neither the token nor the file.
    with pytest.raises(RuntimeError, match="must be unique"):
        tf_text.FastWordpieceTokenizer(lines)
    with pytest.raises(ValueError, match=r"vocab.txt: the token 'cell' is on line 6 and again on line 8"):
        kbz.BertTokenizer(str(vocab))
    with pytest.raises(ValueError, match=r"The vocabulary: the token 'cell' is on line 6 and again on line 8"):
        kbz.BertTokenizer(lines)
