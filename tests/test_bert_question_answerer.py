"""BertQuestionAnswerer: run_squad windows, learning SQuAD, answers mapped to the context."""

import keras
import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.data.squad import read_squad
from keras_bert_zoo.preprocessing.question_answering_features import build_features
from tests.conftest import shared_path

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "who", "ran"] + [f"w{i}" for i in range(30)]


def _check_is_max_context(doc_spans, cur_span_index, position):
    """run_squad.py's _check_is_max_context, restated on (start, length) spans."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return cur_span_index == best_index


def test_windows_follow_run_squad():
    tokenizer = kbz.BertTokenizer(VOCAB)
    context = " ".join(f"w{i}" for i in range(25))  # 25 context pieces
    features = build_features(tokenizer, ["who ran"], [context], [("w12 w13", context.index("w12"))],
                              max_seq_length=14, doc_stride=4, max_query_length=64)
    window = 14 - 2 - 3  # 9 context pieces per window
    starts = [0, 4, 8, 12, 16]  # run_squad: stop once a window reaches the end
    assert features.inputs["token_ids"].shape == (5, 14)
    spans = [(s, min(window, 25 - s)) for s in starts]
    for w, (start, length) in enumerate(spans):
        row = features.inputs["token_ids"][w]
        assert row[:4].tolist() == [2, 5, 6, 3]
        assert row[4:4 + length].tolist() == [tokenizer.token_to_id(f"w{i}") for i in range(start, start + length)]
        assert features.inputs["segment_ids"][w].tolist() == [0] * 4 + [1] * (length + 1) + [0] * (9 - length)
        for k in range(length):
            assert features.max_context[w][4 + k] == _check_is_max_context(spans, w, start + k)
            assert context[slice(*features.char_spans[w][4 + k])] == f"w{start + k}"
    # The answer (pieces 12-13) lies wholly inside windows 2 (8-16) and 3 (12-20) only;
    # positions are offset by "[CLS] who ran [SEP]". Elsewhere it points at [CLS].
    assert features.start_positions.tolist() == [0, 0, 4 + 4, 4 + 0, 0]
    assert features.end_positions.tolist() == [0, 0, 4 + 5, 4 + 1, 0]


def test_gold_labels_decode_to_the_answers():
    data = read_squad(shared_path("squad", "dev-v1.1-sample-articles0-2.json")).head(300)
    tokenizer = kbz.BertTokenizer(shared_path("vocab", "bert-base-uncased", "vocab.txt"))
    f = build_features(tokenizer, data.questions, data.contexts, [a[0] for a in data.answers], max_seq_length=128,
                       doc_stride=64)
    answered = np.flatnonzero(f.start_positions > 0)
    decoded = [data.contexts[f.example_index[w]][f.char_spans[w][f.start_positions[w]][0]:
                                               f.char_spans[w][f.end_positions[w]][1]] for w in answered]
    exact = [d == data.answers[f.example_index[w]][0][0] for d, w in zip(decoded, answered)]
    # Answers ending inside a word-piece ("gold" of "golden") cannot be exact, as in run_squad.
    assert np.mean(exact) > 0.95
    # Every answered example has at least one window holding its answer.
    assert set(f.example_index[answered]) == set(range(len(data)))


@pytest.mark.learning
def test_learns_squad_from_a_small_slice(default_preset_dir, tmp_path):
    data = read_squad(shared_path("squad", "dev-v1.1-sample-articles0-2.json"))
    train, test = data.head(200), data._take(range(300, 400))
    keras.utils.set_random_seed(0)  # a 200-question run varies with the head's init and order
    qa = kbz.BertQuestionAnswerer.from_preset(default_preset_dir, sequence_length=128, doc_stride=64)
    qa.compile(learning_rate=1e-4)
    before = qa.evaluate_squad(test)
    history = qa.fit(train, epochs=2, batch_size=16, verbose=0)
    after = qa.evaluate_squad(test)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]
    assert after["f1"] > before["f1"] + 6 and after["f1"] > 12, (before, after)
    answer = qa.predict_answers([{"question": "Which team won Super Bowl 50?", "context": data.contexts[0]}])[0]
    assert data.contexts[0][answer["start"]:answer["end"]] == answer["answer"] and 0 < answer["score"] <= 1

    qa.save_to_preset(str(tmp_path / "qa"))
    restored = kbz.BertQuestionAnswerer.from_preset(str(tmp_path / "qa"))
    for a, b in zip(restored.predict_answers(test.head(5)), qa.predict_answers(test.head(5))):
        assert (a["answer"], a["start"], a["end"]) == (b["answer"], b["start"], b["end"])
        assert a["score"] == pytest.approx(b["score"], abs=1e-5)


@pytest.mark.slow
def test_long_context_answers_come_from_their_window(tiny_checkpoint):
    """A 30k-character COVID-QA article: every answer maps to real context characters."""
    data = read_squad(shared_path("qa", "covid_qa", "train_docs0-77.json")).head(3)
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16, doc_stride=4, max_query_length=4)
    answers = qa.predict_answers(data)
    for context, answer in zip(data.contexts, answers):
        assert answer["answer"] == context[answer["start"]:answer["end"]]


def test_examples_need_question_and_context(tiny_checkpoint):
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16)
    with pytest.raises(ValueError, match="Example 0 is not a dict with 'question' and 'context'"):
        qa.predict_answers([{"question": "who?"}])


def test_n_best_decoding_and_v2_null_threshold(tiny_checkpoint):
    """Decoding on hand-set logits: constraints of run_squad's n-best search, and v2.0's null rule."""
    from keras_bert_zoo.preprocessing.question_answering_features import QAFeatures

    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=8, max_answer_length=2,
                                              version_2_with_negative=True, null_score_diff_threshold=1.0)
    context = "aa bb cc dd"
    spans = np.array([[-1, -1], [-1, -1], [0, 2], [3, 5], [6, 8], [9, 11], [-1, -1], [-1, -1]])
    features = QAFeatures({"padding_mask": np.ones((1, 8), "int32")}, np.array([0]), spans[None], np.ones((1, 8), bool))
    start = np.full(8, -10.0)
    end = np.full(8, -10.0)
    start[2], end[5] = 5.0, 6.0   # best pair is 3 pieces long: over max_answer_length
    start[3], end[4] = 4.0, 4.5   # best valid span: "bb cc", score 8.5
    start[0], end[0] = 4.0, 4.0   # null score 8.0: within the threshold, so answered
    answer = qa._best_answer(context, [0], features, {"start_logits": start[None], "end_logits": end[None]})
    assert (answer["answer"], answer["start"], answer["end"]) == ("bb cc", 3, 8)
    start[0] = 6.0                # null score 10.0 > 8.5 + 1.0: no answer
    answer = qa._best_answer(context, [0], features, {"start_logits": start[None], "end_logits": end[None]})
    assert (answer["answer"], answer["start"]) == ("", -1)
    assert answer["score"] == pytest.approx(1 / (1 + np.exp(8.5 - 10.0)))


@pytest.mark.parametrize("pieces, stride", [(23, 4), (40, 3), (9, 4), (30, 20)])
def test_max_context_matches_run_squad_with_short_last_windows(pieces, stride):
    tokenizer = kbz.BertTokenizer(VOCAB)
    context = " ".join(f"w{i % 30}" for i in range(pieces))
    f = build_features(tokenizer, ["who ran"], [context], max_seq_length=14, doc_stride=stride)
    window, step = 9, min(stride, 9)
    starts = [0]
    while starts[-1] + window < pieces:
        starts.append(starts[-1] + step)
    spans = [(s, min(window, pieces - s)) for s in starts]
    assert len(f.example_index) == len(spans)
    for w, (start, length) in enumerate(spans):
        assert [bool(f.max_context[w][4 + k]) for k in range(length)] == [
            _check_is_max_context(spans, w, start + k) for k in range(length)]


@pytest.mark.slow
def test_under_strategy_and_keras_file_round_trip(tiny_checkpoint, tmp_path):
    import tensorflow as tf

    data = read_squad(shared_path("squad", "dev-v1.1-sample-articles0-2.json")).head(8)
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16, doc_stride=4,
                                                  max_query_length=4)
    history = qa.fit(data, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    qa.save(str(tmp_path / "qa.keras"))
    restored = keras.saving.load_model(str(tmp_path / "qa.keras"))
    assert (restored.doc_stride, restored.max_query_length) == (4, 4)
    for a, b in zip(restored.predict_answers(data.head(2)), qa.predict_answers(data.head(2))):
        assert (a["answer"], a["start"], a["end"]) == (b["answer"], b["start"], b["end"])
        assert a["score"] == pytest.approx(b["score"], abs=1e-5)
