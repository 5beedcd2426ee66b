"""Signatures run their model in chunks of rows, so a request's memory is bounded (export/row_chunks.py)."""

import string

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.export import masked_lm_signature
from keras_bert_zoo.export import row_chunks
from keras_bert_zoo.export.row_chunks import chunk_rows
from keras_bert_zoo.export.row_chunks import map_row_chunks
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor

_CHARACTERS = string.ascii_lowercase
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *".,", *_CHARACTERS, *("##" + c for c in _CHARACTERS),
              "the", "cat", "sat"]


@pytest.mark.parametrize("rows, per_chunk", [(0, 4), (1, 4), (6, 4), (8, 4), (9, 1), (5, 100)])
def test_chunks_hold_at_most_their_rows_and_concatenate_in_order(rows, per_chunk):
    inputs = {"token_ids": tf.reshape(tf.range(rows * 3), [rows, 3]), "extra": tf.range(rows)}

    def fn(part):
        size = tf.shape(part["token_ids"])[0]
        return {"first": part["token_ids"][:, 0], "chunk_size": tf.fill([size], size), "echo": part["extra"]}

    spec = {"first": tf.TensorSpec([None], tf.int32), "chunk_size": tf.TensorSpec([None], tf.int32),
            "echo": tf.TensorSpec([None], tf.int32)}
    out = tf.function(lambda x: map_row_chunks(fn, x, spec, per_chunk))(inputs)
    np.testing.assert_array_equal(out["first"], np.arange(rows) * 3)
    np.testing.assert_array_equal(out["echo"], np.arange(rows))
    assert out["chunk_size"].numpy().max(initial=0) <= per_chunk
    # Every chunk but the last is full: the request ran in ceil(rows / per_chunk) calls.
    expected = [min(per_chunk, rows - start) for start in range(0, rows, per_chunk)
                for _ in range(min(per_chunk, rows - start))]
    np.testing.assert_array_equal(out["chunk_size"], expected)


def test_chunk_rows_keeps_the_token_budget():
    assert int(chunk_rows(tf.constant(128), 16384)) == 128
    assert int(chunk_rows(tf.constant(512), 16384)) == 32
    assert int(chunk_rows(tf.constant(100000), 16384)) == 1  # a row longer than the budget still runs, alone
    assert int(chunk_rows(tf.constant(0), 16384)) == 16384


def _backbone():
    return kbz.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
                            intermediate_dim=16, max_sequence_length=64)


@pytest.fixture(scope="module")
def tasks():
    keras.utils.set_random_seed(11)
    tokenizer = kbz.BertTokenizer(VOCABULARY)
    classifier = kbz.BertClassifier(_backbone(), kbz.BertPreprocessor(tokenizer, 32), num_classes=3)
    tagger = kbz.BertTokenClassifier(_backbone(), TokenClassificationPreprocessor(tokenizer, 16),
                                     label_names=["O", "B-X", "I-X"])
    qa = kbz.BertQuestionAnswerer(_backbone(), kbz.BertPreprocessor(tokenizer, 32), doc_stride=8,
                                  max_query_length=8)
    pretrainer = kbz.BertPretrainer(_backbone(), preprocessor=kbz.BertPreprocessor(tokenizer, 32))
    for dense in (classifier.output_dense, tagger.output_dense, qa.span_dense):
        dense.kernel.assign(dense.kernel.numpy() * 30.0)  # predictions far from uniform: a sharper test
    return classifier, tagger, qa, pretrainer


@pytest.mark.slow
def test_exports_in_many_chunks_answer_as_the_tasks_do(tasks, tmp_path, monkeypatch):
    """With budgets of a few rows, every signature runs its model many times per request; the answers are
    the Python tasks' own (Keras predict, the numpy decoders), which never chunk this way."""
    classifier, tagger, qa, pretrainer = tasks
    texts = ["the cat sat", "a b c d e f g h", "cats sat.", "x", "the the cat", ""] * 3
    context = " ".join(["the cat sat on a mat, b c d e"] * 5)  # many windows of 32 positions
    questions = [{"id": str(i), "question": q, "context": context if i % 2 else "the cat sat."}
                 for i, q in enumerate(["the cat", "sat", "mat", "b c"] * 3)]
    masked = ["the [MASK] sat [MASK]", "[MASK]", "the cat", "a [MASK] b [MASK] c [MASK]"] * 3
    tagged = texts + [context]  # its windows run in chunks as any other rows
    expected = {"probabilities": classifier.predict_proba(texts), "entities": tagger.predict_entities(tagged),
                "answers": qa.predict_answers(questions), "fill_mask": pretrainer.fill_mask(masked, top_k=3)}

    monkeypatch.setattr(row_chunks, "MAX_CHUNK_TOKENS", 40)  # a row or two of the buckets used
    monkeypatch.setattr(masked_lm_signature, "_MAX_CHUNK_LOGITS", 3 * len(VOCABULARY))  # 3 masks a chunk
    paths = {name: task.export(str(tmp_path), model_name=name)
             for name, task in zip(["clf", "ner", "qa", "mlm"], tasks)}
    monkeypatch.undo()
    loaded = {name: kbz.export.load_export(path) for name, path in paths.items()}
    # Every signature that runs a model does it in a loop of chunks.
    for name, signature in [("clf", "classify"), ("clf", "embed"), ("clf", "predict_ids"), ("ner", "entities"),
                            ("qa", "answer"), ("mlm", "fill_mask"), ("mlm", "fill_mask_pairs")]:
        graph = loaded[name].signatures[signature].graph.as_graph_def()
        ops = {node.op for function in graph.library.function for node in function.node_def}
        assert ops & {"While", "StatelessWhile"}, (name, signature)

    out = loaded["clf"].signatures["classify"](text=tf.constant(texts))
    np.testing.assert_allclose(out["probabilities"], expected["probabilities"], atol=1e-5)

    out = loaded["ner"].signatures["entities"](text=tf.constant(tagged))
    served = [[(t.decode(), s) for t, s in zip(out["entity_text"][i][:n].numpy(), out["start"][i][:n].numpy())]
              for i, n in enumerate(out["entity_count"].numpy())]
    assert served == [[(e["text"], e["start"]) for e in row] for row in expected["entities"]]

    out = loaded["qa"].signatures["answer"](question=tf.constant([q["question"] for q in questions]),
                                            context=tf.constant([q["context"] for q in questions]))
    answers = expected["answers"]
    answers = [answers[q["id"]] if isinstance(answers, dict) else answers[i] for i, q in enumerate(questions)]
    assert [a.decode() for a in out["answer"].numpy()] == [a["answer"] for a in answers]
    np.testing.assert_allclose(out["score"], [a["score"] for a in answers], atol=1e-5)

    out = loaded["mlm"].signatures["fill_mask"](text=tf.constant(masked))
    for row, guesses in enumerate(expected["fill_mask"]):
        assert out["mask_count"][row] == len(guesses)
        for mask, top in enumerate(guesses):
            assert [t.decode() for t in out["top_tokens"][row, mask, :3].numpy()] == [token for token, _ in top]
            np.testing.assert_allclose(out["top_scores"][row, mask, :3], [p for _, p in top], atol=1e-6)

    ids = tf.constant([[2, 40, 41, 3]] * 7)
    out = loaded["clf"].signatures["predict_ids"](token_ids=ids, segment_ids=tf.zeros_like(ids),
                                                  padding_mask=tf.ones_like(ids))
    reference = classifier.predict_on_batch({"token_ids": ids, "segment_ids": tf.zeros_like(ids),
                                             "padding_mask": tf.ones_like(ids)})
    np.testing.assert_allclose(out["logits"], reference, atol=1e-5)


@pytest.mark.slow
def test_predict_ids_serves_floats_as_float32_under_a_mixed_policy(tmp_path):
    """The symbolic outputs that give the chunks' structure carry the compute dtype; the served floats are
    float32 whatever it is, as the string signatures' are."""
    keras.utils.set_random_seed(5)
    backbone = kbz.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
                                intermediate_dim=16, max_sequence_length=64, dtype="mixed_bfloat16")
    pretrainer = kbz.BertPretrainer(backbone, preprocessor=kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 32),
                                    dtype="mixed_bfloat16")
    inputs = {"token_ids": tf.constant([[2, 40, 4, 3]] * 3), "segment_ids": tf.zeros([3, 4], tf.int32),
              "padding_mask": tf.ones([3, 4], tf.int32), "mask_positions": tf.constant([[2]] * 3)}
    expected = pretrainer(inputs, training=False)
    served = kbz.export.load_export(pretrainer.export(str(tmp_path), model_name="mlm")).signatures["predict_ids"]
    out = served(**inputs)
    assert {name: value.dtype for name, value in out.items()} == {"masked_lm_logits": tf.float32,
                                                                   "next_sentence_logits": tf.float32}
    for name, value in out.items():
        np.testing.assert_allclose(value, tf.cast(expected[name], tf.float32), atol=0.05)
