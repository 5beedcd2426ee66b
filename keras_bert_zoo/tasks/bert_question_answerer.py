"""Extractive question answering (SQuAD v1.1 / v2.0): start and end logits."""

import math

import keras
import numpy as np
import tensorflow as tf

from keras_bert_zoo.data.squad import QAExamples
from keras_bert_zoo.data.squad import checked_answer
from keras_bert_zoo.export.question_answerer_signatures import question_answerer_signatures
from keras_bert_zoo.metrics.squad_metrics import squad_scores
from keras_bert_zoo.preprocessing.question_answering_features import build_features
from keras_bert_zoo.preprocessing.question_lengths import DEFAULT_DOC_STRIDE
from keras_bert_zoo.preprocessing.question_lengths import DEFAULT_MAX_QUERY_LENGTH
from keras_bert_zoo.preprocessing.question_lengths import question_lengths
from keras_bert_zoo.tasks.task import Task
from keras_bert_zoo.tasks.task import checked_batch_size
from keras_bert_zoo.utils.whole_numbers import positive_whole_number
from keras_bert_zoo.tasks.task import _is_column_pair
from keras_bert_zoo.tasks.task import _packed_spec
from keras_bert_zoo.tasks.task import _rows_dataset
from keras_bert_zoo.tokenizers.text_inputs import check_text


def _answer_pairs(answers, where):
    """`(text, answer_start)` pairs from SQuAD's list of dicts, HF datasets'
    dict of lists (or arrays), or `(text, start)` tuples; one answer's dict alone is that answer (its keys were
    read as answers: "answer 0 is 'text'")."""
    if isinstance(answers, dict) and isinstance(answers.get("text"), (str, bytes)):
        answers = [answers]
    if isinstance(answers, dict) and isinstance(answers.get("text"), np.ndarray):
        answers = dict(answers, text=answers["text"].tolist())
    if isinstance(answers, dict) and not isinstance(answers.get("text"), (list, tuple)):
        raise ValueError(f"{where}: 'answers' is a dict of keys {sorted(map(str, answers))}; give "
                         "[{'text': ..., 'answer_start': ...}, ...], or HF datasets' {'text': [...], "
                         "'answer_start': [...]}.")
    if isinstance(answers, dict):
        starts = answers.get("answer_start", [] if not answers["text"] else None)
        if not isinstance(starts, (list, tuple, np.ndarray)) or len(starts) != len(answers["text"]):
            raise ValueError(f"{where}: 'answers' holds {len(answers['text'])} texts and answer_start {starts!r}; "
                             "give one answer_start (character offset) per text.")
        answers = [{"text": t, "answer_start": a} for t, a in zip(answers["text"], starts)]
    pairs = []
    for n, answer in enumerate(answers):
        if isinstance(answer, dict) and {"text", "answer_start"} <= set(answer):
            pairs.append((answer["text"], answer["answer_start"]))
        elif isinstance(answer, (tuple, list)) and len(answer) == 2:
            pairs.append(tuple(answer))
        else:
            raise ValueError(f"{where}: answer {n} is {answer!r}; give {{'text': ..., 'answer_start': ...}} "
                             "or (text, answer_start).")
    return pairs


def _given(answers):
    """An example's answers, [] for None (an array of answers has no truth value)."""
    return [] if answers is None else answers


def _question_and_context(example):
    """A `(question, context)` pair as the dict the examples are; anything else as it is."""
    if isinstance(example, (tuple, list)) and len(example) == 2 and all(isinstance(t, (str, bytes)) for t in example):
        return {"question": example[0], "context": example[1]}
    return example


def _as_examples(x, labelled=False):
    """QAExamples, or a list of `{"question", "context"[, "answers", "id"]}`
    dicts or `(question, context)` pairs, checked: texts are strings, and each
    answer is found in its context at `answer_start` (or near it, as
    `read_squad` repairs). `labelled`: examples to train on or score, where a
    dict's 'answer' for 'answers' is refused (it reads as no answer)."""
    if isinstance(x, QAExamples):
        return x
    if isinstance(x, dict):
        x = [x]
    if _is_column_pair(x):
        # Keras' form of two text inputs, as every task reads it: (questions, contexts). Its rows were read as
        # pairs: (["q1", "q2"], ["c1", "c2"]) asked q1 about the text "q2", in silence.
        if len(x[0]) != len(x[1]):
            raise ValueError(f"The two columns (questions, contexts) hold {len(x[0])} questions and {len(x[1])} "
                             "contexts; they must be of the same length.")
        x = list(zip(*x))
    ids, questions, contexts, answers = [], [], [], []
    relocated = 0
    for index, example in enumerate(map(_question_and_context, x)):
        if not isinstance(example, dict) or not {"question", "context"} <= set(example):
            found = sorted(map(str, example)) if isinstance(example, dict) else type(example).__name__
            raise ValueError(f"Example {index} is not a dict with 'question' and 'context' (found {found}), nor a "
                             "(question, context) pair." + (" One pair alone is a list of one: [(question, context)]."
                                                            if isinstance(example, (str, bytes)) else ""))
        # Another spelling of SQuAD's 'answers' was read as no answer: v1.1 then refused it as unanswered.
        misnamed = [key for key in map(str, example) if key.lower().startswith("answer") and key != "answers"]
        if labelled and misnamed and "answers" not in example:
            raise ValueError(f"QA example {index} has {misnamed[0]!r} but no 'answers': SQuAD's key for the gold "
                             "answers is 'answers': [{'text': ..., 'answer_start': <character offset>}, ...].")
        example_id = index if example.get("id") is None else example["id"]
        where = f"QA example {index} (id {example_id!r})"
        texts = {}
        for key in ("question", "context"):
            check_text(example[key], f"{where}: '{key}'")
            texts[key] = example[key].decode("utf-8") if isinstance(example[key], bytes) else example[key]
        gold = []
        for n, (text, start) in enumerate(_answer_pairs(_given(example.get("answers")), where)):
            if isinstance(text, bytes):
                check_text(text, f"{where}, answer {n}")
                text = text.decode("utf-8")
            found, repaired = checked_answer(texts["context"], text, start, f"{where}, answer {n}")
            gold.append(found)
            relocated += repaired
        ids.append(str(example_id))
        questions.append(texts["question"])
        contexts.append(texts["context"])
        answers.append(gold)
    return QAExamples(ids, questions, contexts, answers, relocated=relocated)


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertQuestionAnswerer(Task):
    """BERT for SQuAD: a dense layer gives each token a start and an end logit.

    Contexts longer than the window are read in strided windows
    (`doc_stride`), and each piece's prediction comes from the window where it
    has the most context, as google-research/bert's run_squad.py does.
    Answers are mapped back to the exact characters of the original context.

    Args:
        backbone: a `BertBackbone`.
        preprocessor: a `BertPreprocessor` (its tokenizer and
            `sequence_length`, i.e. `max_seq_length`, are used).
        doc_stride / max_query_length: run_squad.py's flags; None: its
            128 / 64, or fitted to a model whose positions leave its
            question no room for the context (see
            `preprocessing.question_lengths`). A question given that
            leaves no room is refused.
        n_best_size / max_answer_length: run_squad.py's flags (20 / 30).
        version_2_with_negative: SQuAD v2.0: may answer "" (no answer).
        null_score_diff_threshold: answer "" when the null score beats the
            best span by more than this (v2.0).

    Examples:
    >>> qa = BertQuestionAnswerer.from_preset("minilm_l6_h384_en_uncased",
    ...                                       sequence_length=64)
    >>> sorted(qa.predict_answers([{"question": "Who?", "context": "Ann ran."}])[0])
    ['answer', 'end', 'score', 'start']
    """

    default_sequence_length = 384
    uses_pooler = False
    takes_sample_weight = False
    input_forms = (
        "QA examples (kbz.data.read_squad's result, a list of {'question', 'context', 'answers'} dicts, or one "
        "such dict, or of (question, context) pairs to predict, or a tuple of two columns (questions, contexts)); or "
        "packed inputs (a dict of token_ids, segment_ids and padding_mask, with start/end labels as y, or a Dataset "
        "of them)"
    )
    default_learning_rate = 3e-5

    @property
    def output_layer(self):
        """The dense layer of the start and end logits (a fine-tuned checkpoint's head loads into it)."""
        return self.span_dense

    def __init__(self, backbone, preprocessor, doc_stride=None, max_query_length=None, n_best_size=20,
                 max_answer_length=30, version_2_with_negative=False, null_score_diff_threshold=0.0, **kwargs):
        n_best_size, max_answer_length = (positive_whole_number(value, name) for value, name in (
            (n_best_size, "n_best_size"), (max_answer_length, "max_answer_length")))
        # Kept as given: the config saves None for a fitted default, which fits again the length it is loaded at.
        given_lengths = {name: None if value is None else positive_whole_number(value, name) for name, value in (
            ("doc_stride", doc_stride), ("max_query_length", max_query_length))}
        doc_stride, max_query_length = given_lengths.values()
        if preprocessor is not None:  # else Task refuses it
            doc_stride, max_query_length = question_lengths(preprocessor.sequence_length, doc_stride, max_query_length)
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        # run_squad.py has no dropout before its span layer.
        self.span_dense = self.logits_layer(backbone, 2, name="span_logits")

        # === Functional Model ===
        inputs = self.backbone_inputs(backbone)
        logits = self.span_dense(backbone(inputs)["sequence_output"])
        outputs = {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self._given_lengths = given_lengths
        self.doc_stride = doc_stride
        self.max_query_length = max_query_length
        self.n_best_size = n_best_size
        self.max_answer_length = max_answer_length
        self.version_2_with_negative = version_2_with_negative
        self.null_score_diff_threshold = null_score_diff_threshold
        self.compile()

    def default_loss(self):
        return {
            "start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        }

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        # run_squad.py's loss: the mean of the start and end cross-entropies.
        kwargs.setdefault("loss_weights", {"start_logits": 0.5, "end_logits": 0.5})
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def features(self, examples, with_answers=False):
        """run_squad-style windows for `examples` (see `build_features`)."""
        return build_features(
            self.preprocessor.tokenizer, examples.questions, examples.contexts,
            [a[0] if a else None for a in examples.answers] if with_answers else None,
            max_seq_length=self.preprocessor.sequence_length, doc_stride=self.doc_stride,
            max_query_length=self.max_query_length,
        )

    def standardize_examples(self, x, y=None):
        """QA examples (`QAExamples`, question/context/answers dicts, or one
        such dict) become checked `QAExamples`; packed inputs pass as they are.

        In SQuAD v1.1 mode (`version_2_with_negative=False`) `fit` and
        `evaluate` refuse an example without an answer: it would teach
        "no answer"."""
        packed = (isinstance(x, dict) and not {"question", "context"} & set(x)
                  or isinstance(x, tf.data.Dataset) and _packed_spec(x.element_spec) is not None)
        if packed:
            return super().standardize_examples(x, y)
        if not isinstance(x, (QAExamples, dict, list, tuple)):
            raise TypeError(f"{type(self).__name__} takes {self.input_forms}; got {type(x).__name__}.")
        if y is not None:
            raise ValueError("QA examples hold their answers; pass them without y.")
        return _as_examples(x, labelled=True), None

    def _keras_inputs(self, x, y=None, batch_size=32, shuffle=False, labeled=True, sample_weight=None, **kwargs):
        # QA examples -> run_squad-style windows (packed inputs) and their start/end positions.
        batch_size = checked_batch_size(batch_size)
        x, y = self.standardize_examples(x, y)
        if not isinstance(x, QAExamples):
            return super()._keras_inputs(x, y, batch_size=batch_size, shuffle=shuffle, labeled=labeled,
                                         sample_weight=sample_weight, **kwargs)
        self._check_sample_weight_taken(x, sample_weight)
        if not labeled:
            return self.features(x).inputs, None
        features = self.features(self._labelled_examples(x), with_answers=True)
        labels = {"start_logits": features.start_positions, "end_logits": features.end_positions}
        return _rows_dataset((features.inputs, labels), len(features.start_positions), batch_size, shuffle), None

    def _labelled_examples(self, x):
        examples = _as_examples(x)
        if not len(examples):
            raise ValueError("No examples: the input list is empty.")
        if not self.version_2_with_negative:
            unanswered = [i for i, golds in enumerate(examples.answers) if not golds]
            if unanswered:
                raise ValueError(
                    f"QA example {unanswered[0]} (id {examples.ids[unanswered[0]]!r}) has no answer, but the model "
                    "is in SQuAD v1.1 mode. Give it an answer, drop it, or create the model with "
                    "version_2_with_negative=True (finetune --version_2_with_negative on the command line)."
                )
        return examples

    def predict_answers(self, x, batch_size=32):
        """Answers to raw questions: `[{"answer", "start", "end", "score"}]`.

        `x`: `{"question", "context"}` dicts (or one), `(question, context)`
        pairs, a tuple of two columns `(questions, contexts)`, or `QAExamples`.

        `start`/`end` are character offsets in the context; `score` is the
        probability of the answer among the n-best spans. An unanswerable
        prediction (v2.0) is `""` with start = end = -1.
        """
        examples = _as_examples(x)
        if not len(examples):
            return []
        features = self.features(examples)
        outputs = self.predict(features.inputs, batch_size=batch_size)
        results = []
        for index in range(len(examples)):
            windows = np.flatnonzero(features.example_index == index)
            results.append(self._best_answer(examples.contexts[index], windows, features, outputs))
        return results

    def _best_answer(self, context, windows, features, outputs):
        """run_squad.py's answer for one example from its windows' logits: the n best spans, their softmax
        score, SQuAD v2.0's null threshold.

        Graph twins: `question_answerer_signatures._span_candidates`, `_n_best`, `_answer_scores`,
        `_decode_answers`; parity: `tests/test_bert_question_answerer.py::test_graph_decoding_matches_best_answer`,
        `tests/test_serving_fuzz.py::test_n_best_per_example_matches_a_sort_per_example`.
        """
        candidates, null_score = [], math.inf
        for w in windows:
            # Padding positions are not tokens: they never enter the n-best.
            real = features.inputs["padding_mask"][w] > 0
            starts = np.where(real, outputs["start_logits"][w], -np.inf)
            ends = np.where(real, outputs["end_logits"][w], -np.inf)
            spans, best = features.char_spans[w], features.max_context[w]
            null_score = min(null_score, float(starts[0] + ends[0]))
            # Ties keep the earlier position (as `top_k` does), and the earlier candidate: run_squad's stable sort.
            top_starts = np.argsort(-starts, kind="stable")[: self.n_best_size]
            top_ends = np.argsort(-ends, kind="stable")[: self.n_best_size]
            for s in top_starts:
                if spans[s, 0] < 0 or not best[s]:
                    continue
                for e in top_ends:
                    if spans[e, 0] < 0 or e < s or e - s + 1 > self.max_answer_length:
                        continue
                    candidates.append((float(starts[s] + ends[e]), int(spans[s, 0]), int(spans[e, 1])))
        candidates = sorted(candidates, key=lambda c: c[0], reverse=True)[: self.n_best_size]
        if not candidates:
            return {"answer": "", "start": -1, "end": -1, "score": 1.0}
        if self.version_2_with_negative and null_score - candidates[0][0] > self.null_score_diff_threshold:
            # Probability of "no answer" against the best span.
            return {"answer": "", "start": -1, "end": -1,
                    "score": float(1.0 / (1.0 + math.exp(candidates[0][0] - null_score)))}
        scores = np.array([c[0] for c in candidates])
        probabilities = np.exp(scores - scores.max())
        probabilities /= probabilities.sum()
        _, start, end = candidates[0]
        return {"answer": context[start:end], "start": start, "end": end, "score": float(probabilities[0])}

    def evaluate_squad(self, x, batch_size=32):
        """Exact match and F1 (official SQuAD normalisation) on answered
        examples, keyed by their ids: each example needs its own."""
        examples = _as_examples(x, labelled=True)
        if not len(examples):
            raise ValueError("No examples: the input list is empty.")
        examples.check_unique_ids()
        predictions = self.predict_answers(examples, batch_size)
        return squad_scores(
            {i: p["answer"] for i, p in zip(examples.ids, predictions)},
            {i: [text for text, _ in golds] for i, golds in zip(examples.ids, examples.answers)},
        )

    def task_signatures(self, text_preprocessor):
        return question_answerer_signatures(self)

    def get_config(self):
        return {
            **super().get_config(),
            **self._given_lengths,
            "n_best_size": self.n_best_size,
            "max_answer_length": self.max_answer_length,
            "version_2_with_negative": self.version_2_with_negative,
            "null_score_diff_threshold": self.null_score_diff_threshold,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        # Saved before the defaults were fitted, a config holds run_squad.py's 128 / 64 whether they were given or
        # not; where they cannot fit its length they were not asked for, and are fitted instead of refused.
        saved = (config.get("doc_stride"), config.get("max_query_length"))
        if saved == (DEFAULT_DOC_STRIDE, DEFAULT_MAX_QUERY_LENGTH):
            length = _saved_sequence_length(config.get("preprocessor"))
            try:
                question_lengths(length, DEFAULT_DOC_STRIDE, DEFAULT_MAX_QUERY_LENGTH)
            except (TypeError, ValueError):
                config.update(doc_stride=None, max_query_length=None)
        return super().from_config(config)


def _saved_sequence_length(preprocessor):
    """The packed length a task's serialized or deserialized preprocessor holds."""
    if isinstance(preprocessor, dict):
        return preprocessor.get("config", {}).get("sequence_length")
    return getattr(preprocessor, "sequence_length", None)
