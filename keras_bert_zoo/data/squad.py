"""SQuAD-format question answering files (SQuAD v1.1 / v2.0, COVID-QA)."""

import dataclasses
import json

from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.parallel_examples import ParallelExamples


@dataclasses.dataclass
class QAExamples(ParallelExamples):
    """Extractive QA examples.

    Attributes:
        ids: question ids (strings).
        questions: question texts.
        contexts: the paragraph of each question.
        answers: per question, the gold answers as `(text, char_start)`
            (empty for an unanswerable v2.0 question).
        source: the file they came from.
    """

    ids: list
    questions: list
    contexts: list
    answers: list
    source: str = ""
    relocated: int = 0

    _PARALLEL = ("ids", "questions", "contexts", "answers")


def _locate(context, text, start, window=64):
    """`(start, text)` of the answer in `context` nearest to `start`, or None.

    Some annotations (COVID-QA's) have `answer_start` off by a few
    characters, or a stray space around the answer; the answer (stripped if
    need be) is searched for near where it claims to be.
    """
    for candidate in dict.fromkeys((text, text.strip())):
        if not candidate:
            continue
        if context[start : start + len(candidate)] == candidate:
            return start, candidate
        positions = []
        position = context.find(candidate, max(0, start - window))
        while position != -1 and position <= start + window:
            positions.append(position)
            position = context.find(candidate, position + 1)
        if positions:
            return min(positions, key=lambda p: abs(p - start)), candidate
    return None


def read_squad(path):
    """Read a SQuAD-format JSON file.

    Answers whose `answer_start` does not point at their text are looked for
    nearby and corrected (counted in `relocated`); an answer that cannot be
    found raises an error naming the question.
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)["data"]
    except (json.JSONDecodeError, KeyError) as e:
        raise DataFormatError(f"{path} is not a SQuAD-format file ({e}).") from e
    ids, questions, contexts, answers = [], [], [], []
    relocated = 0
    for article in data:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                gold = []
                for answer in [] if qa.get("is_impossible") else qa.get("answers", []):
                    found = _locate(context, answer["text"], int(answer["answer_start"]))
                    if found is None:
                        raise DataFormatError(
                            f"{path}: question {qa['id']}: the answer {answer['text']!r} is not near "
                            f"answer_start={answer['answer_start']} in its context."
                        )
                    relocated += found != (int(answer["answer_start"]), answer["text"])
                    gold.append(found[::-1])
                if not gold and not qa.get("is_impossible", False):
                    raise DataFormatError(f"{path}: question {qa['id']} has no answer and is not marked impossible.")
                ids.append(str(qa["id"]))
                questions.append(qa["question"])
                contexts.append(context)
                answers.append(gold)
    return QAExamples(ids, questions, contexts, answers, path, relocated)
