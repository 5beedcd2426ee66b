"""SQuAD / COVID-QA reading and the official EM / F1 semantics."""

import json

import pytest

from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.squad import read_squad
from keras_bert_zoo.metrics.squad_metrics import f1
from keras_bert_zoo.metrics.squad_metrics import normalize_answer
from keras_bert_zoo.metrics.squad_metrics import squad_scores
from tests.conftest import shared_path


def test_squad_sample():
    data = read_squad(shared_path("squad", "dev-v1.1-sample-articles0-2.json"))
    assert len(data) == 1169 and data.relocated == 0
    assert data.answers[0][0] == ("Denver Broncos", 177)
    assert all(c[s:s + len(t)] == t for c, golds in zip(data.contexts, data.answers) for t, s in golds)


def test_covid_qa_offsets_are_repaired():
    data = read_squad(shared_path("qa", "covid_qa", "train_docs0-77.json"))
    # SOURCES.md: 144 of the 1021 answer_start values do not point at the answer.
    assert len(data) == 1021 and data.relocated == 144
    assert all(c[s:s + len(t)] == t for c, golds in zip(data.contexts, data.answers) for t, s in golds)


def test_split_holds_out_whole_contexts(tmp_path):
    """A split by question held out questions whose paragraph was trained on (every one of the 102 COVID-QA
    questions `finetune --task qa` held out): whole contexts go to one side, as near the fraction as they allow."""
    sizes = {"alpha": 3, "beta": 1, "gamma": 2, "delta": 4}
    paragraphs = [{"context": f"{name} text", "qas": [
        {"id": f"{name}{q}", "question": "?", "answers": [{"text": name, "answer_start": 0}]} for q in range(count)]}
        for name, count in sizes.items()]
    path = tmp_path / "four.json"
    path.write_text(json.dumps({"data": [{"paragraphs": paragraphs}]}))
    data = read_squad(str(path))
    for seed in range(6):
        rest, held_out = data.split(0.3, seed=seed)
        assert not set(rest.contexts) & set(held_out.contexts)
        assert sorted(rest.ids + held_out.ids) == sorted(data.ids)
        # Each side is its contexts' questions, all of them.
        assert len(held_out) == sum(sizes[c.split()[0]] for c in set(held_out.contexts))
        # 3 of 10 questions asked: a boundary between contexts of at most 4 lies within 2 of it.
        assert abs(len(held_out) - 3) <= 2
    assert data.split(0.3, seed=1) == data.split(0.3, seed=1)
    assert [len(part) for part in data.split(0.0)] == [10, 0] and [len(part) for part in data.split(1.0)] == [0, 10]
    covid = read_squad(shared_path("qa", "covid_qa", "train_docs0-77.json"))
    rest, held_out = covid.split(0.1, seed=0)
    assert not set(rest.contexts) & set(held_out.contexts) and len(rest) + len(held_out) == len(covid)
    assert 0 < len(held_out) < 2 * 102


def test_qa_examples_say_they_do_not_unpack(tmp_path):
    """The other readers' results unpack into (x, y); a SQuAD result failed with Python's "cannot unpack
    non-iterable QAExamples object" (or, as qa.fit(*examples), "argument after * must be an iterable")."""
    data = read_squad(shared_path("squad", "dev-v1.1-sample-articles0-2.json")).head(2)
    message = r"QAExamples do not unpack into \(x, y\): .* Pass them whole: qa\.fit\(read_squad\(path\)\)"
    with pytest.raises(TypeError, match=message):
        x, y = data
    with pytest.raises(TypeError, match=message):
        print(*data)
    assert len(data) == 2 and data.split(0.5, seed=0)[1].head(1).ids[0] in data.ids  # slicing is untouched


def test_answer_not_in_context_is_an_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "abc def", "qas": [
        {"id": "q1", "question": "?", "answers": [{"text": "xyz", "answer_start": 0}]}]}]}]}))
    with pytest.raises(DataFormatError, match="question q1: the answer 'xyz' is not near answer_start=0"):
        read_squad(str(path))


def test_official_normalisation_and_scores():
    assert normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert normalize_answer("an apple, a pear") == "apple pear"
    # Hand-computed: 2 common tokens, precision 2/3, recall 2/2 -> F1 0.8.
    assert f1("the Denver Broncos team", "Denver Broncos") == pytest.approx(0.8)
    scores = squad_scores({"a": "Denver Broncos", "b": "Carolina", "c": ""},
                          {"a": ["denver broncos."], "b": ["Carolina Panthers", "Panthers"], "c": []})
    # a: EM 1 F1 1; b: EM 0, F1 max(2*1*0.5/1.5, 0) = 2/3; c: unanswerable and empty -> 1, 1.
    assert scores["exact_match"] == pytest.approx(200 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3 + 1) / 3)
    # One question is too few to mean anything: scored, with one warning naming the count.
    with pytest.warns(UserWarning) as caught:
        assert squad_scores({"a": "Carolina"}, {"a": ["Carolina"]})["f1"] == 100.0
    assert [str(w.message) for w in caught] == [
        "Scoring 1 question: scores on so few say little about the model; score a larger held-out set."]


def test_is_impossible_must_be_true_or_false(tmp_path):
    """A string "false" (a converted spreadsheet's) read as true: the question's answers were dropped in silence."""
    qa = {"id": "q1", "question": "Who won?", "is_impossible": "false",
          "answers": [{"text": "The Broncos", "answer_start": 0}]}
    path = tmp_path / "v2.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "The Broncos won.", "qas": [qa]}]}]}))
    with pytest.raises(DataFormatError, match=r"v2.json: data\[0\].paragraphs\[0\].qas\[0\] \(question q1\): "
                                              r"'is_impossible' is 'false', not true or false\."):
        read_squad(str(path))
    qa["is_impossible"] = False
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "The Broncos won.", "qas": [qa]}]}]}))
    assert read_squad(str(path)).answers == [[("The Broncos", 0)]]
