"""SQuAD-format question answering files (SQuAD v1.1 / v2.0, COVID-QA)."""

import dataclasses
import numbers

from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.parallel_examples import ParallelExamples
from keras_bert_zoo.utils.text_files import check_bool_fields
from keras_bert_zoo.utils.text_files import loads_json
from keras_bert_zoo.utils.text_files import utf8_errors_named


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

    def __iter__(self):
        # Unlike the other readers' results, no (x, y): a question's answers are part of its example.
        raise TypeError("QAExamples do not unpack into (x, y): each question's answers are part of its example. "
                        "Pass them whole: qa.fit(read_squad(path)), qa.evaluate_squad(read_squad(path)); "
                        "examples.questions, .contexts and .answers hold the parts.")

    def split_groups(self):
        """`split` holds out whole contexts: a held-out question on a paragraph trained on (SQuAD asks several of
        each, COVID-QA dozens of each article) is scored on a text whose answers the model has learnt."""
        return self.contexts

    def check_unique_ids(self):
        """Refuse two questions of one id: SQuAD scores are keyed by id, so the two would be scored as one.
        `evaluate_squad` checks this, and `finetune` before it trains (a set to score after training)."""
        first = {}
        for index, example_id in enumerate(self.ids):
            if first.setdefault(example_id, index) != index:
                raise DataFormatError(
                    (f"{self.source}: " if self.source else "") + f"Examples {first[example_id]} and {index} have "
                    f"one id, {example_id!r}: give each question its own 'id' to score it (an example without one "
                    "takes its index).")


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


def checked_answer(context, text, answer_start, where):
    """The gold answer `(text, start)` after checking it against its context.

    The one check of SQuAD answers, for files and for examples given as
    dicts: the text must be found at `answer_start`, or near it (see
    `_locate`: off-by-a-few offsets and stray spaces are repaired).

    Args:
        context: the paragraph.
        text: the answer text.
        answer_start: its claimed character offset in `context`.
        where: how messages name the answer (file and JSON path, or
            example index and id).

    Returns:
        `((text, start), repaired)`; `repaired` is True when the answer was
        moved or stripped.

    Raises:
        DataFormatError: the text is not a non-empty string, the offset not
            an integer from 0, or the text is not near the offset.
    """
    if not isinstance(text, str) or not text.strip():
        raise DataFormatError(f"{where}: the answer text must be a non-empty string; found {text!r}.")
    if isinstance(answer_start, bool) or not isinstance(answer_start, numbers.Integral):
        raise DataFormatError(f"{where}: answer_start must be an integer character offset; found {answer_start!r}.")
    answer_start = int(answer_start)
    if answer_start < 0:  # Python's negative slices would find the text counted from the context's end
        raise DataFormatError(f"{where}: answer_start must be a character offset from 0; found {answer_start}.")
    found = _locate(context, text, answer_start)
    if found is None:
        raise DataFormatError(
            f"{where}: the answer {text!r} is not near answer_start={answer_start} in its "
            f"{len(context)}-character context. Fix answer_start (the answer's character offset in the "
            "context) or the answer text."
        )
    start, found_text = found
    return (found_text, start), (start, found_text) != (answer_start, text)


def _field(node, key, kind, path, where):
    """`node[key]` checked to be a `kind`; errors name the file and JSON path."""
    if not isinstance(node, dict):
        raise DataFormatError(f"{path}: {where} should be an object; found {type(node).__name__}.")
    if key not in node:
        raise DataFormatError(f"{path}: {where} has no '{key}' (SQuAD format: data[].paragraphs[].qas[]).")
    value = node[key]
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataFormatError(f"{path}: {where}.{key} should be {expected}; found {type(value).__name__} {value!r:.60}.")
    return value


def read_squad(path):
    """Read a SQuAD-format JSON file.

    Answers whose `answer_start` does not point at their text are looked for
    nearby and corrected (counted in `relocated`); an answer that cannot be
    found raises an error naming the question.

    Raises:
        DataFormatError: not JSON, a missing or mistyped field (naming the
            file and the JSON path, e.g. `data[0].paragraphs[2].qas[1].id`),
            or an answer not found in its context.
    """
    with utf8_errors_named(path), open(path, encoding="utf-8-sig") as f:
        text = f.read()
    try:
        document = loads_json(text, "it")
    except ValueError as e:
        raise DataFormatError(f"{path} is not a SQuAD-format file: {e}") from None
    data = _field(document, "data", list, path, "the top level")
    ids, questions, contexts, answers = [], [], [], []
    relocated = 0
    for a, article in enumerate(data):
        for p, paragraph in enumerate(_field(article, "paragraphs", list, path, f"data[{a}]")):
            where = f"data[{a}].paragraphs[{p}]"
            context = _field(paragraph, "context", str, path, where)
            for q, qa in enumerate(_field(paragraph, "qas", list, path, where)):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"
                qa_id = _field(qa, "id", (str, int), path, where)
                question = _field(qa, "question", str, path, where)
                # A string "false" would read as true, and the question's answers be dropped.
                check_bool_fields(qa, f"{path}: {where} (question {qa_id})", ("is_impossible",), DataFormatError)
                impossible = qa.get("is_impossible", False)
                gold = []
                for n, answer in enumerate([] if impossible else _field(qa, "answers", list, path, where)):
                    answer_path = f"{where}.answers[{n}]"
                    found, repaired = checked_answer(
                        context, _field(answer, "text", str, path, answer_path),
                        _field(answer, "answer_start", int, path, answer_path),
                        f"{path}: {answer_path}, question {qa_id}",
                    )
                    relocated += repaired
                    gold.append(found)
                if not gold and not impossible:
                    raise DataFormatError(
                        f"{path}: {where} (question {qa_id}) has no answer and is not marked is_impossible."
                    )
                ids.append(str(qa_id))
                questions.append(question)
                contexts.append(context)
                answers.append(gold)
    return QAExamples(ids, questions, contexts, answers, path, relocated)
