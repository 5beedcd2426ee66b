"""Exact match and F1 with the official SQuAD evaluation script's semantics."""

import collections
import re
import string

from keras_bert_zoo.metrics.scored_set_size import warn_if_too_few

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text):
    """Lower-case, drop punctuation and English articles, squeeze whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction, gold):
    """Token-overlap F1 of the normalised answers (v2.0: two empty answers score 1)."""
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not predicted or not expected:
        return float(predicted == expected)
    common = sum((collections.Counter(predicted) & collections.Counter(expected)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions, gold_answers):
    """Corpus EM and F1 (as percentages), each question scored against its best gold answer.

    Args:
        predictions: `{id: answer text}` ("" for no answer).
        gold_answers: `{id: [gold texts]}` (empty list: unanswerable).
    """
    if not gold_answers:
        raise ValueError("No gold answers to score against.")
    warn_if_too_few(len(gold_answers), noun="question")
    em_total = f1_total = 0.0
    for question_id, golds in gold_answers.items():
        golds = golds or [""]
        prediction = predictions.get(question_id, "")
        em_total += max(exact_match(prediction, g) for g in golds)
        f1_total += max(f1(prediction, g) for g in golds)
    n = len(gold_answers)
    return {"exact_match": 100.0 * em_total / n, "f1": 100.0 * f1_total / n, "total": n}
