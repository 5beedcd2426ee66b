"""BertQuestionAnswerer: run_squad windows, learning SQuAD, answers mapped to the context, export steps."""

import json
import logging
import re
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.data.squad import read_squad
from keras_bert_zoo.export.graph_windows import piece_windows
from keras_bert_zoo.export.question_answerer_signatures import _context_positions
from keras_bert_zoo.export.question_answerer_signatures import _decode_answers
from keras_bert_zoo.export.question_answerer_signatures import _pack_windows
from keras_bert_zoo.preprocessing.question_answering_features import build_features
from keras_bert_zoo.preprocessing.strided_windows import window_starts
from keras_bert_zoo.tasks.bert_question_answerer import _as_examples
from tests.conftest import shared_path
from tests.round_trip import keras_file_round_trip, preset_round_trip

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

    restored = preset_round_trip(qa, tmp_path)
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


def _answerer(positions, sequence_length, **kwargs):
    backbone = kbz.BertBackbone(vocabulary_size=len(VOCAB), num_layers=1, num_heads=2, hidden_dim=8,
                                intermediate_dim=16, max_sequence_length=positions)
    return kbz.BertQuestionAnswerer(backbone, kbz.BertPreprocessor(kbz.BertTokenizer(VOCAB), sequence_length),
                                    **kwargs)


def test_default_lengths_are_run_squad_s_and_fitted_only_where_its_question_leaves_no_context(tiny_checkpoint):
    """run_squad.py's max_query_length 64 and doc_stride 128 leave no context in 16 positions (a question of 13
    pieces or more failed): not given, they are cut to fit there. Where its question fits they stay, and the
    windows are run_squad.py's (at 128 they step 61 pieces, the context a window holds)."""
    assert (_answerer(512, 384).doc_stride, _answerer(512, 384).max_query_length) == (128, 64)
    at_128 = _answerer(128, 128)
    assert (at_128.doc_stride, at_128.max_query_length) == (128, 64)
    long_context = " ".join(f"w{i % 30}" for i in range(150))
    long_question = " ".join(["who"] * 70)  # cut to 64 pieces: a window holds 128 - 64 - 3 = 61 of the context
    reference = build_features(at_128.preprocessor.tokenizer, [long_question], [long_context], max_seq_length=128,
                               doc_stride=128, max_query_length=64)
    features = at_128.features(_as_examples([{"question": long_question, "context": long_context}]))
    for name, packed in reference.inputs.items():
        np.testing.assert_array_equal(features.inputs[name], packed)
    assert len(reference.example_index) == 3  # 150 pieces in windows of 61, 61 apart
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint)  # 384, cut to the checkpoint's 16 positions
    assert (qa.preprocessor.sequence_length, qa.doc_stride, qa.max_query_length) == (16, 4, 4)
    question = "which team won the game played in the stadium of the city by the bay in the year fifty"
    example = {"question": question, "context": CONTEXT}
    # The windows are run_squad.py's at 16 / 4 / 4: a 4-piece question, 9 context pieces, 4 apart.
    reference = build_features(qa.preprocessor.tokenizer, [question], [CONTEXT], max_seq_length=16, doc_stride=4,
                               max_query_length=4)
    features = qa.features(_as_examples([example]))
    for name, packed in reference.inputs.items():
        np.testing.assert_array_equal(features.inputs[name], packed)
    assert len(reference.example_index) > 1 and (reference.inputs["segment_ids"][:, 6] == 1).all()
    answer = qa.predict_answers([example])[0]
    assert answer["answer"] == CONTEXT[answer["start"]:answer["end"]]


def test_lengths_given_that_cannot_fit_are_refused_naming_them(tiny_checkpoint):
    with pytest.raises(ValueError, match=re.escape(
            "max_query_length=13 leaves no room for the context in 16 positions (the question and 3 special tokens "
            "take them all): pass max_query_length=12 or less.")):
        kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, max_query_length=13)
    # A stride beyond the 9 context pieces a window holds (16 - 4 - 3) is kept: windows step 9, as run_squad.py's.
    wide = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, doc_stride=10)
    question_and_context = {"question": "who won", "context": CONTEXT}
    reference = build_features(wide.preprocessor.tokenizer, ["who won"], [CONTEXT], max_seq_length=16,
                               doc_stride=10, max_query_length=4)
    np.testing.assert_array_equal(wide.features(_as_examples([question_and_context])).inputs["token_ids"],
                                  reference.inputs["token_ids"])
    # Given values that fit are kept, run_squad.py's own at 384 too.
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, doc_stride=9, max_query_length=4)
    assert (qa.doc_stride, qa.max_query_length) == (9, 4)
    assert (_answerer(512, 128, doc_stride=61, max_query_length=64).doc_stride, _answerer(
        512, 384, doc_stride=128, max_query_length=64).max_query_length) == (61, 64)


def test_fitted_lengths_are_saved_as_not_given_and_old_configs_are_fitted(tiny_checkpoint, tmp_path):
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint)
    config = qa.get_config()
    assert (config["doc_stride"], config["max_query_length"]) == (None, None)
    restored = keras_file_round_trip(qa, tmp_path)
    assert (restored.doc_stride, restored.max_query_length) == (4, 4)
    # Earlier versions saved run_squad.py's 128 / 64 whatever the length: a model saved at 16 positions loads.
    old = kbz.BertQuestionAnswerer.from_config({**config, "doc_stride": 128, "max_query_length": 64})
    assert (old.doc_stride, old.max_query_length) == (4, 4)
    # Where they fit (128 positions), such a model reads the windows it was trained on: 64 / 128, as given.
    at_128 = _answerer(128, 128)
    old = kbz.BertQuestionAnswerer.from_config({**at_128.get_config(), "doc_stride": 128, "max_query_length": 64})
    assert (old.doc_stride, old.max_query_length) == (128, 64)


def test_examples_need_question_and_context(tiny_checkpoint):
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16)
    with pytest.raises(ValueError, match="Example 0 is not a dict with 'question' and 'context'"):
        qa.predict_answers([{"question": "who?"}])
    # (question, context) pairs, as a classifier takes (text_a, text_b), answer as the dicts do.
    pairs = [("Who ran?", "Ann ran."), ("Where?", "In Zürich, by the lake.")]
    assert qa.predict_answers(pairs) == qa.predict_answers([{"question": q, "context": c} for q, c in pairs])
    # 'answer' for SQuAD's 'answers' was read as no answer, and v1.1 mode refused it as unanswered.
    with pytest.raises(ValueError, match=r"QA example 0 has 'answer' but no 'answers': SQuAD's key"):
        qa.fit([{"question": "Who ran?", "context": "Ann ran.", "answer": {"text": "Ann", "answer_start": 0}}])
    with pytest.raises(ValueError, match=r"QA example 0 has 'Answer_text' but no 'answers'"):
        qa.evaluate_squad([{"question": "Who ran?", "context": "Ann ran.", "Answer_text": "Ann"}])
    # Predicting needs no answers: a field of another name is the user's own.
    assert qa.predict_answers([{"question": "Who ran?", "context": "Ann ran.", "answer_text": "Ann"}]) == \
        qa.predict_answers([("Who ran?", "Ann ran.")])


def test_a_tuple_of_two_columns_is_questions_and_contexts(tiny_checkpoint):
    """(questions, contexts), Keras' form of two text inputs, as every task reads it: its rows were read as pairs,
    so (["q1", "q2"], ["c1", "c2"]) asked q1 about the text "q2", and c1 about "c2", in silence."""
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16)
    questions, contexts = ["Who ran?", "Where?"], ["Ann ran.", "In Zürich, by the lake."]
    examples = _as_examples((questions, contexts))
    assert (examples.questions, examples.contexts) == (questions, contexts)
    pairs = list(zip(questions, contexts))
    for columns in ((questions, contexts), (tuple(questions), np.array(contexts, dtype=object))):
        assert qa.predict_answers(columns) == qa.predict_answers(pairs)
    with pytest.raises(ValueError, match=r"columns \(questions, contexts\) hold 2 questions and 1 contexts"):
        qa.predict_answers((questions, contexts[:1]))
    with pytest.raises(ValueError, match=r"\(found str\), nor a \(question, context\) pair. One pair alone is a list "
                                         r"of one: \[\(question, context\)\]"):
        qa.predict_answers(pairs[0])


def test_predicting_questions_of_any_count_traces_once_without_a_retracing_warning(tiny_checkpoint, caplog,
                                                                               monkeypatch):
    """The README's path: tasks answering a question, then a batch of another size, made TensorFlow warn of
    "tf.function retracing" (five traces of Keras' predict step in ten calls). Answers are as the eager model's."""
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    # A fresh tally: TensorFlow warns twice per process at most, so earlier tests could hide the warning.
    monkeypatch.setattr(polymorphic_function, "_frequent_tracing_detector_manager",
                        polymorphic_function._FrequentTracingDetectorManager())
    one = [{"question": "Who won?", "context": "The Broncos won Super Bowl 50."}]
    more = one + [{"question": "Who ran?", "context": "Ann ran to the park, and Bob walked home."},
                  {"question": "What sat?", "context": "The cat sat on the mat."}]
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        for _ in range(3):
            qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16, doc_stride=4,
                                                      max_query_length=4)
            qa.predict_answers(one)
            answers = qa.predict_answers(more, batch_size=2)  # a full and a partial batch
    assert not [r.getMessage() for r in caplog.records if "retracing" in r.getMessage()]
    assert qa.predict_function.experimental_get_tracing_count() == 1
    features = qa.features(_as_examples(more))
    outputs = {k: v.numpy() for k, v in qa(features.inputs, training=False).items()}
    for index, (example, answer) in enumerate(zip(more, answers)):
        expected = qa._best_answer(example["context"], np.flatnonzero(features.example_index == index), features,
                                   outputs)
        assert (answer["answer"], answer["start"], answer["end"]) == (expected["answer"], expected["start"],
                                                                      expected["end"])
        assert answer["score"] == pytest.approx(expected["score"], abs=1e-5)


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



# --- The exported graph's steps against their numpy twins ------------------------

# Edge cases: an empty context, one exactly a window long, a stride longer than
# the rest of the context, a stride longer than the window, and a mixed batch.
@pytest.mark.parametrize("lengths, windows, stride", [
    ([0], [9], 4), ([9], [9], 4), ([10], [9], 5), ([25], [9], 20), ([23, 0, 9, 40, 1], [9, 5, 9, 3, 9], 4)])
def test_graph_windows_match_window_starts(lengths, windows, stride):
    example, start, length = piece_windows(tf.constant(lengths), tf.constant(windows), stride)
    expected = [(row, s, max(0, min(window, pieces - s)))
                for row, (pieces, window) in enumerate(zip(lengths, windows))
                for s in window_starts(pieces, window, stride)]
    assert list(zip(example.numpy().tolist(), start.numpy().tolist(), length.numpy().tolist())) == expected


# Questions of different lengths; contexts: empty, exactly one window, a stride
# past the rest, many windows, and non-ASCII text (byte and character offsets differ).
QA_QUESTIONS = ["who ran", "who", "w1 w2 w3", "ran", "who ran", "who"]
QA_CONTEXTS = ["", " ".join(f"w{i}" for i in range(9)), " ".join(f"w{i}" for i in range(11)),
               " ".join(f"w{i % 30}" for i in range(40)), "Zürich w3 — café w4 w5 naïve w6", "w7"]


def _graph_windows(tokenizer, stride, max_seq_length=14, max_query_length=4):
    preprocessor = kbz.BertPreprocessor(tokenizer, max_seq_length)
    query = tokenizer(tf.constant(QA_QUESTIONS))[:, :max_query_length]
    pieces, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(QA_CONTEXTS))
    inputs, layout = _pack_windows(preprocessor, query, pieces, stride)
    features = build_features(tokenizer, QA_QUESTIONS, QA_CONTEXTS, max_seq_length=max_seq_length,
                              doc_stride=stride, max_query_length=max_query_length)
    return inputs, layout, (starts, ends), features


@pytest.mark.parametrize("stride", [2, 4, 20])
def test_graph_windows_and_max_context_match_build_features(stride):
    tokenizer = kbz.BertTokenizer(VOCAB)
    inputs, layout, (starts, _), features = _graph_windows(tokenizer, stride)
    width = inputs["token_ids"].shape[1]
    assert layout.example.numpy().tolist() == features.example_index.tolist()
    for name, packed in inputs.items():  # bucket-trimmed: the rest is padding
        np.testing.assert_array_equal(packed.numpy(), features.inputs[name][:, :width])
        assert not features.inputs[name][:, width:].any()
    is_context, max_context = _context_positions(layout, width, tf.shape(starts.flat_values)[0])
    np.testing.assert_array_equal(is_context.numpy(), features.char_spans[:, :width, 0] >= 0)
    np.testing.assert_array_equal(max_context.numpy(), features.max_context[:, :width])


@pytest.mark.parametrize("version_2, n_best_size, max_answer_length", [(False, 20, 30), (True, 3, 2)])
def test_graph_decoding_matches_best_answer(version_2, n_best_size, max_answer_length):
    """Hand-made logits (no model): the graph's answers are `_best_answer`'s."""
    tokenizer = kbz.BertTokenizer(VOCAB)
    inputs, layout, (starts, ends), features = _graph_windows(tokenizer, stride=4)
    config = types.SimpleNamespace(n_best_size=n_best_size, max_answer_length=max_answer_length,
                                   version_2_with_negative=version_2, null_score_diff_threshold=0.5)
    rng = np.random.default_rng(0)
    logits = {name: rng.normal(size=features.inputs["token_ids"].shape).astype(np.float32)
              for name in ("start_logits", "end_logits")}
    logits["start_logits"][layout.example.numpy() == 3, 0] = 5.0  # a null score that wins (v2.0)
    width = inputs["token_ids"].shape[1]
    graph = _decode_answers(tf.constant(QA_CONTEXTS), starts, ends, layout, inputs["padding_mask"],
                            {name: value[:, :width] for name, value in logits.items()}, config)
    abstained = 0
    for row, context in enumerate(QA_CONTEXTS):
        windows = np.flatnonzero(features.example_index == row)
        expected = kbz.BertQuestionAnswerer._best_answer(config, context, windows, features, logits)
        assert graph["answer"][row].numpy().decode() == expected["answer"]
        assert (graph["start"][row], graph["end"][row]) == (expected["start"], expected["end"])
        assert graph["score"][row].numpy() == pytest.approx(expected["score"], abs=1e-6)
        abstained += bool(context) and expected["start"] == -1
    assert (abstained > 0) == version_2  # the v2.0 null rule was exercised


@pytest.mark.slow
def test_under_strategy_and_keras_file_round_trip(tiny_checkpoint, tmp_path):
    import tensorflow as tf

    data = read_squad(shared_path("squad", "dev-v1.1-sample-articles0-2.json")).head(8)
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16, doc_stride=4,
                                                  max_query_length=4)
    history = qa.fit(data, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    restored = keras_file_round_trip(qa, tmp_path)
    assert (restored.doc_stride, restored.max_query_length) == (4, 4)
    for a, b in zip(restored.predict_answers(data.head(2)), qa.predict_answers(data.head(2))):
        assert (a["answer"], a["start"], a["end"]) == (b["answer"], b["start"], b["end"])
        assert a["score"] == pytest.approx(b["score"], abs=1e-5)


CONTEXT = "The Broncos won Super Bowl 50 in Santa Clara."


def test_an_answer_start_below_zero_or_missing_is_refused(tiny_checkpoint):
    """A negative offset found its text counted from the context's end (Python's slices) and trained the
    example as unanswerable; HF answers without answer_start were read as no answer."""
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16)
    assert CONTEXT[-41:-34] == "Broncos"  # what the negative offset used to find
    answer = {"text": "Broncos", "answer_start": -41}
    with pytest.raises(kbz.data.DataFormatError, match="answer_start must be a character offset from 0; found -41"):
        qa.fit([{"question": "Who?", "context": CONTEXT, "answers": [answer]}])
    with pytest.raises(ValueError, match=r"holds 1 texts and answer_start None; give one answer_start"):
        qa.fit([{"question": "Who?", "context": CONTEXT, "answers": {"text": ["The Broncos"]}}])
    for starts in ([4], np.array([4])):  # HF datasets' columns, as lists or arrays
        assert _as_examples([{"question": "Who?", "context": CONTEXT, "answers": {"text": ["Broncos"],
                                                                              "answer_start": starts}}]
                            ).answers == [[("Broncos", 4)]]
    assert _as_examples([{"question": "Who?", "context": CONTEXT, "answers": {"text": []}}]).answers == [[]]


def test_answers_as_one_dict_or_as_arrays_are_read():
    """One answer's dict alone had its keys read as answers ("answer 0 is 'text'"); HF datasets' columns as numpy
    arrays (`with_format("numpy")`, pandas) the same, and an array of answer dicts had no truth value."""
    def answers(given):
        return _as_examples([{"question": "Who?", "context": CONTEXT, "answers": given}]).answers

    two = [("Broncos", 4), ("The Broncos", 0)]
    assert answers({"text": "Broncos", "answer_start": 4}) == [[("Broncos", 4)]]
    assert answers({"text": np.array(["Broncos", "The Broncos"]), "answer_start": np.array([4, 0])}) == [two]
    assert answers(np.array([{"text": t, "answer_start": a} for t, a in two])) == [two]
    assert answers(np.array([])) == answers(None) == [[]]
    with pytest.raises(ValueError, match=r"'answers' is a dict of keys \['texts'\]; give \[\{'text': \.\.\."):
        answers({"texts": ["Broncos"]})


def test_scoring_refuses_two_examples_of_one_id(tiny_checkpoint):
    """Scores are keyed by id: two questions of one id were scored as one (total 1 of 2). Predicting and training,
    which answer by index, take them."""
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16)
    first = {"question": "Who won?", "context": CONTEXT, "answers": [{"text": "The Broncos", "answer_start": 0}]}
    second = {"question": "Where?", "context": CONTEXT, "answers": [{"text": "Santa Clara", "answer_start": 33}]}
    with pytest.raises(ValueError, match=r"Examples 0 and 1 have one id, 'q': give each question its own 'id'"):
        qa.evaluate_squad([dict(first, id="q"), dict(second, id="q")])
    with pytest.raises(ValueError, match=r"Examples 0 and 1 have one id, '0'"):
        qa.evaluate_squad([first, dict(second, id=0)])  # the first takes its index as id
    assert qa.evaluate_squad([first, second])["total"] == 2
    assert qa.evaluate_squad([dict(first, id=None), dict(second, id=None)])["total"] == 2  # None: no id, its index
    assert len(qa.predict_answers([dict(first, id="q"), dict(second, id="q")])) == 2


def test_texts_given_as_utf8_bytes_read_as_their_strings(tiny_checkpoint):
    """The README takes texts as strings or UTF-8 bytes; QA crashed on bytes inside its offset mapping."""
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16, doc_stride=4, max_query_length=4)
    text = {"question": "Who won?", "context": "Die Broncos gewannen in Zürich.",
            "answers": [{"text": "Zürich", "answer_start": 23}]}
    encoded = {"question": text["question"].encode(), "context": text["context"].encode(),
               "answers": [{"text": "Zürich".encode(), "answer_start": 23}]}
    assert qa.predict_answers([encoded]) == qa.predict_answers([text])
    assert qa.evaluate_squad([encoded]) == qa.evaluate_squad([text])
    with pytest.raises(ValueError, match=r"'context' is bytes that are not UTF-8"):
        qa.predict_answers([{"question": "Who?", "context": "Zürich".encode("latin-1")}])


@pytest.mark.parametrize("flag", ["doc_stride", "max_query_length", "n_best_size", "max_answer_length"])
@pytest.mark.parametrize("value", [0, -3, 2.5, True])
def test_run_squad_flags_must_be_positive_whole_numbers(tiny_checkpoint, flag, value):
    with pytest.raises(ValueError, match=f"{flag} must be a positive whole number; got {value!r}"):
        kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16, **{flag: value})


def test_a_saved_answerer_takes_new_settings_and_refuses_unknown_ones(tiny_checkpoint, tmp_path):
    """from_preset on a saved task used to drop every task argument in silence, misspelt ones too."""
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16, doc_stride=5, max_query_length=8)
    qa.save_to_preset(str(tmp_path / "qa"))
    restored = kbz.BertQuestionAnswerer.from_preset(str(tmp_path / "qa"), doc_stride=4, n_best_size=3,
                                                    version_2_with_negative=True)
    assert (restored.doc_stride, restored.max_query_length, restored.n_best_size,
            restored.version_2_with_negative) == (4, 8, 3, True)
    for a, b in zip(restored.get_weights(), qa.get_weights()):
        np.testing.assert_array_equal(a, b)
    for task_cls in (kbz.BertQuestionAnswerer, kbz.Task):  # Task's: the saved class's arguments, found on loading
        with pytest.raises(TypeError, match=r"BertQuestionAnswerer.from_preset got unexpected keyword argument\(s\) "
                           r"\['zz_bogus'\]; it takes \['load_weights', 'sequence_length', 'dtype', 'backbone', "
                           r"'preprocessor', 'doc_stride'"):
            task_cls.from_preset(str(tmp_path / "qa"), doc_stride=4, zz_bogus=1)
    assert kbz.BertQuestionAnswerer.from_preset(str(tmp_path / "qa"), autocast=False).doc_stride == 5  # Keras' own


def test_a_saved_classifier_given_another_head_size_says_the_argument_is_why(tiny_checkpoint, tmp_path):
    """It said the weights did not fit and to "fix config.json or save the preset again", as of a damaged preset."""
    clf = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=16)
    saved_dir = str(tmp_path / "clf")
    clf.save_to_preset(saved_dir)
    way_out = (f"A saved task loads with its own head: leave those arguments out. For a new head on its fine-tuned "
               f"BERT: saved = BertClassifier.from_preset({saved_dir!r}), then BertClassifier(saved.backbone, "
               "saved.preprocessor, ")
    with pytest.raises(kbz.PresetError) as e:
        kbz.BertClassifier.from_preset(saved_dir, num_classes=3)
    assert str(e.value) == ("from_preset(num_classes=3) changes the saved BertClassifier's num_classes from 2 to 3: "
                            "the head saved in task.weights.h5 does not fit the changed BertClassifier. " + way_out
                            + "num_classes=3).") and "config.json" not in str(e.value)
    with pytest.raises(kbz.PresetError, match=re.escape(way_out + "label_names=['a', 'b', 'c'], num_classes=3).")):
        kbz.BertClassifier.from_preset(saved_dir, label_names=["a", "b", "c"])
    with pytest.raises(kbz.PresetError) as e:  # a bad value is no other head: no advice to build one
        kbz.BertClassifier.from_preset(saved_dir, problem_type="bogus")
    assert "problem_type" in str(e.value) and "For a new head" not in str(e.value)
    # The way out, as the message gives it: the fine-tuned BERT under a new head of 3 classes.
    saved = kbz.BertClassifier.from_preset(saved_dir)
    fresh = kbz.BertClassifier(saved.backbone, saved.preprocessor, label_names=["a", "b", "c"], num_classes=3)
    assert fresh.predict(["a text"], verbose=0).shape == (1, 3)
    for a, b in zip(fresh.backbone.get_weights(), clf.backbone.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_subclass_passing_its_arguments_on_takes_its_parents(tiny_checkpoint, tmp_path):
    """The refusal of unknown arguments reads every constructor up to Task's, not only the subclass' own."""
    @keras.saving.register_keras_serializable(package="tests")
    class Answerer(kbz.BertQuestionAnswerer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)

    qa = Answerer.from_preset(tiny_checkpoint, sequence_length=16, doc_stride=8)
    qa.save_to_preset(str(tmp_path / "qa"))
    assert Answerer.from_preset(str(tmp_path / "qa"), doc_stride=4).doc_stride == 4
    with pytest.raises(TypeError, match=r"Answerer.from_preset got unexpected keyword argument\(s\) \['doc_strid'\] "
                       r"\('doc_strid': did you mean 'doc_stride'\?\)"):
        Answerer.from_preset(tiny_checkpoint, sequence_length=16, doc_strid=4)


@pytest.mark.parametrize("task_cls, kwargs", [(kbz.BertQuestionAnswerer, {"doc_strid": 64}),
                                              (kbz.BertClassifier, {"num_classes": 2, "dropuot": 0.2}),
                                              (kbz.BertTokenClassifier, {"label_names": ["O", "B-X"], "lables": 1})])
def test_a_misspelt_task_argument_is_refused(tiny_checkpoint, task_cls, kwargs):
    """Keras' functional model ignored any keyword it does not know, so a misspelt one changed nothing."""
    misspelt = list(kwargs)[-1]
    known = {name: value for name, value in kwargs.items() if name != misspelt}
    task = task_cls.from_preset(tiny_checkpoint, sequence_length=16, **known)
    with pytest.raises(TypeError, match=rf"{task_cls.__name__} got unexpected keyword argument\(s\) \['{misspelt}'\]"):
        task_cls(backbone=task.backbone, preprocessor=task.preprocessor, **kwargs)
    with pytest.raises(TypeError, match=rf"{task_cls.__name__}.from_preset got unexpected keyword argument\(s\) "
                                        rf"\['{misspelt}'\] \('{misspelt}': did you mean "):
        task_cls.from_preset(tiny_checkpoint, sequence_length=16, **kwargs)


def test_from_presets_own_arguments_are_named_with_the_closest_one_for_a_misspelt_name(tiny_checkpoint):
    # seq_length (or run_classifier.py's max_seq_length) was listed beside the constructor's arguments only, where
    # from_preset's own sequence_length was not among them.
    for misspelt in ("seq_length", "max_seq_length"):
        with pytest.raises(TypeError, match=rf"\('{misspelt}': did you mean 'sequence_length'\?\); it takes "
                                            r"\['load_weights', 'sequence_length', 'dtype', 'backbone'"):
            kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, **{misspelt: 8})


@pytest.mark.parametrize("rounding", [0, None])
def test_tied_spans_go_to_the_earliest_candidate_in_graph_and_python(rounding):
    """run_squad sorts candidates stably by score: of tied spans, the first found (first window, first start)
    wins. Logits rounded to whole numbers tie often; all-zero logits tie everywhere, and the answer is then,
    by hand, each context's first piece (its first window's first max-context start, ending there)."""
    tokenizer = kbz.BertTokenizer(VOCAB)
    inputs, layout, (starts, ends), features = _graph_windows(tokenizer, stride=4)
    config = types.SimpleNamespace(n_best_size=20, max_answer_length=30, version_2_with_negative=False,
                                   null_score_diff_threshold=0.0)
    shape = features.inputs["token_ids"].shape
    rng = np.random.default_rng(1)
    logits = {name: (np.round(rng.normal(size=shape), rounding) if rounding is not None else np.zeros(shape))
              .astype(np.float32) for name in ("start_logits", "end_logits")}
    width = inputs["token_ids"].shape[1]
    graph = _decode_answers(tf.constant(QA_CONTEXTS), starts, ends, layout, inputs["padding_mask"],
                            {name: value[:, :width] for name, value in logits.items()}, config)
    for row, context in enumerate(QA_CONTEXTS):
        windows = np.flatnonzero(features.example_index == row)
        expected = kbz.BertQuestionAnswerer._best_answer(config, context, windows, features, logits)
        assert (graph["start"][row], graph["end"][row]) == (expected["start"], expected["end"])
        if rounding is None and context:
            first = context.split()[0]
            assert (expected["answer"], expected["start"]) == (first, context.index(first))


@pytest.mark.parametrize("text, reason", [
    ('{"data": [', "it is not valid JSON (Expecting value"),
    ("[" * 100_000, "it nests JSON arrays or objects deeper than Python reads"),  # was a bare RecursionError
    ('{"data": [], "n": ' + "9" * 5000 + "}", "it holds an integer of 5000 digits"),  # was int()'s advice
])
def test_a_file_that_is_no_squad_json_is_named(tmp_path, text, reason):
    path = tmp_path / "train.json"
    path.write_text(text)
    with pytest.raises(kbz.data.DataFormatError, match=re.escape(f"{path} is not a SQuAD-format file: {reason}")):
        read_squad(str(path))


def test_validation_split_holds_out_whole_contexts(tiny_checkpoint):
    """Keras' validation_split cuts at a position: a paragraph's questions fell on both sides, and the held-out
    ones were scored on a context whose answers the model had just learnt."""
    contexts = ["The Broncos won.", "Paris is in France.", "Water boils at 100 C."]
    questions = [(0, "Who won?"), (0, "Did they win?"), (1, "Where is Paris?"), (1, "Paris?"), (1, "Where?"),
                 (2, "At what?")]
    word = {0: "Broncos", 1: "France", 2: "100"}
    examples = [{"question": q, "context": contexts[c],
                 "answers": [{"text": word[c], "answer_start": contexts[c].index(word[c])}]} for c, q in questions]
    qa = kbz.BertQuestionAnswerer.from_preset(tiny_checkpoint, sequence_length=16)
    for given in (examples, _as_examples(examples)):
        # Keras' cut: ceil(6 * 0.6) = 4, inside context 1 (questions 2-4); the nearest cut keeping it whole is 5.
        held = qa._split_off(given, None, 0.4)[2][0]
        held_contexts = [e["context"] for e in held] if isinstance(held, list) else list(held.contexts)
        assert held_contexts == contexts[2:]
        assert len(qa._split_off(given, None, 0.6)[2][0]) == 4  # Keras' cut 3 moves to 2: context 0 kept
    with pytest.raises(ValueError, match="all 2 examples ask about one context, which is held out whole or not"):
        qa.fit(examples[:2], validation_split=0.5)
