"""BertPreprocessor: BERT's packing and pair truncation."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"a{i}" for i in range(40)] + [f"b{i}" for i in range(40)]


def _tokenizer():
    return kbz.BertTokenizer(VOCAB)


def _bert_truncate_seq_pair(tokens_a, tokens_b, max_length):
    """google-research/bert's _truncate_seq_pair, restated."""
    tokens_a, tokens_b = list(tokens_a), list(tokens_b)
    while len(tokens_a) + len(tokens_b) > max_length:
        (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
    return tokens_a, tokens_b


def test_single_text_layout():
    pre = kbz.BertPreprocessor(_tokenizer(), sequence_length=8)
    out = pre(["a1 a2 a3"])
    assert out["token_ids"].numpy().tolist() == [[2, 6, 7, 8, 3, 0, 0, 0]]
    assert out["segment_ids"].numpy().tolist() == [[0] * 8]
    assert out["padding_mask"].numpy().tolist() == [[1, 1, 1, 1, 1, 0, 0, 0]]
    assert all(v.dtype == tf.int32 for v in out.values())


def test_pair_layout():
    pre = kbz.BertPreprocessor(_tokenizer(), sequence_length=9)
    out = pre([("a1 a2", "b0 b1")])
    assert out["token_ids"].numpy().tolist() == [[2, 6, 7, 3, 45, 46, 3, 0, 0]]
    assert out["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1, 1, 0, 0]]
    assert out["padding_mask"].numpy().tolist() == [[1, 1, 1, 1, 1, 1, 1, 0, 0]]


@pytest.mark.filterwarnings("ignore:.*were truncated")
@pytest.mark.parametrize("sequence_length", [6, 9, 12])
def test_pair_truncation_is_bert_longest_first(sequence_length):
    pre = kbz.BertPreprocessor(_tokenizer(), sequence_length=sequence_length)
    lengths = list(itertools.product(range(0, 11), range(0, 11)))
    pairs = [(" ".join(f"a{i}" for i in range(la)), " ".join(f"b{i}" for i in range(lb))) for la, lb in lengths]
    out = pre(pairs)["token_ids"].numpy()
    for (la, lb), row in zip(lengths, out):
        a, b = _bert_truncate_seq_pair(range(la), range(lb), sequence_length - 3)
        expected = [2] + [5 + i for i in a] + [3] + [45 + i for i in b] + [3]
        expected += [0] * (sequence_length - len(expected))
        assert row.tolist() == expected, (la, lb)


@pytest.mark.filterwarnings("ignore:.*were truncated")
def test_single_text_truncation_keeps_final_sep():
    pre = kbz.BertPreprocessor(_tokenizer(), sequence_length=5)
    assert pre(["a1 a2 a3 a4 a5"])["token_ids"].numpy().tolist() == [[2, 6, 7, 8, 3]]


def test_mixed_batch_keeps_order():
    pre = kbz.BertPreprocessor(_tokenizer(), sequence_length=8)
    mixed = pre(["a1", ("a2", "b2"), "a3"])["token_ids"].numpy()
    assert mixed[0].tolist() == pre(["a1"])["token_ids"].numpy()[0].tolist()
    assert mixed[1].tolist() == pre([("a2", "b2")])["token_ids"].numpy()[0].tolist()
    assert mixed[2].tolist() == pre(["a3"])["token_ids"].numpy()[0].tolist()


def test_tensor_inputs_and_tf_data_static_shapes():
    pre = kbz.BertPreprocessor(_tokenizer(), sequence_length=7)
    ds = tf.data.Dataset.from_tensor_slices((["a1 a2", "a3"], ["b1", "b2 b3"])).batch(2, drop_remainder=True)
    ds = ds.map(lambda a, b: pre((a, b)))
    assert ds.element_spec["token_ids"].shape.as_list() == [2, 7]
    batch = next(iter(ds))
    assert batch["token_ids"].numpy().tolist() == pre([("a1 a2", "b1"), ("a3", "b2 b3")])["token_ids"].numpy().tolist()


def test_sequence_length_beyond_positions_is_refused():
    with pytest.raises(ValueError, match="512 position embeddings"):
        kbz.BertPreprocessor(_tokenizer(), sequence_length=513, max_sequence_length=512)


def test_from_preset_knows_max_positions(default_preset_dir):
    with pytest.raises(ValueError, match="sequence_length <= 512"):
        kbz.BertPreprocessor.from_preset(default_preset_dir, sequence_length=1024)


def test_from_preset_without_a_length_packs_a_small_model_s_positions(tiny_checkpoint, default_preset_dir):
    # It packed 512 and was refused on the tiny checkpoint's 16 positions for a length nobody gave.
    assert kbz.BertPreprocessor.from_preset(tiny_checkpoint).sequence_length == 16
    assert kbz.BertPreprocessor.from_preset(default_preset_dir).sequence_length == 512
    with pytest.raises(ValueError, match="sequence_length=17 is longer than the model's 16 position embeddings"):
        kbz.BertPreprocessor.from_preset(tiny_checkpoint, sequence_length=17)


def test_config_round_trip():
    pre = kbz.BertPreprocessor(_tokenizer(), sequence_length=10, max_sequence_length=16)
    clone = kbz.BertPreprocessor.from_config(pre.get_config())
    texts = [("a1 a2 a3", "b4 b5")]
    np.testing.assert_array_equal(clone(texts)["token_ids"], pre(texts)["token_ids"])
    assert clone.max_sequence_length == 16


def test_truncation_warns_in_eager_calls():
    pre = kbz.BertPreprocessor(_tokenizer(), sequence_length=5)
    with pytest.warns(UserWarning, match="1 of 2 inputs are longer than sequence_length=5 word-pieces"):
        pre(["a1 a2 a3 a4", "a1"])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pre(["a1 a2 a3", "a1"])  # fits exactly: no warning
