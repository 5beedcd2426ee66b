"""Run in a child process by tests/test_serving_fuzz.py: fire a seeded battery
of hostile requests at every signature of real exports, and log each outcome.

Usage: python -m tests.serving_fuzz_runner EXPORTS.json LOG.jsonl
EXPORTS.json: {"exports": {name: version directory}, "max_sequence_length": the backbones' positions}.
LOG.jsonl gets one line per case, written before the case runs ({"case", "started": true}) and
after it ({"case", "expected", "words", "outcome", "problems", "detail"}), so a process that dies
names its last case.

Two guards are fuzzed:
- "eager/...": the loaded signature's concrete function (what a Python client calls).
  TF refuses a wrong dtype or rank here before anything runs.
- "graph/...": the MetaGraph's signature tensors fed straight through a v1 Session's
  C API, as TF Serving's C++ runs them, so nothing outside the graph checks shapes.

`outcome` is "ok" (and `problems` lists what is malformed in the outputs, if anything)
or the error's class name (and `detail` its message); `expected` and `words` are what it should be.
"""

import json
import os
import random
import sys
import time

import numpy as np

SEED = 8


def _words(rng, count):
    vocabulary = ["the", "cat", "sat", "Ann", "ran", "BRCA1", "aspirin", "Zürich", "on", "mat", ",", ".", "(", "!"]
    return " ".join(rng.choice(vocabulary) for _ in range(count))


def _random_bytes(rng, count, longest):
    return [bytes(rng.randrange(256) for _ in range(rng.randrange(longest))) for _ in range(count)]


def text_battery(rng):
    """Requests for one `[batch]` string column: name -> list of texts (str or bytes)."""
    return {
        "batch_0": [],
        "batch_1": ["The cat sat on the mat."],
        "batch_1000": [_words(rng, rng.randrange(1, 12)) for _ in range(1000)],
        "empty": ["", ""],
        "whitespace": [" ", "\t\n\r  ", "\u3000\u00a0\u2028\u2029"],
        "text_100k_chars": [_words(rng, 20_000)[:100_000], "short"],
        "special_token_literals": ["[MASK]", "[CLS]", "[SEP]", "[PAD]", "[UNK]", "[CLS][SEP][PAD][UNK][MASK]"],
        "masks_beyond_the_window": ["[MASK] " * 300, "[MASK]" * 100 + " the cat"],
        "no_mask": ["nothing to fill here"],
        "broken_mask_literals": ["[MASK", "MASK]", "[[MASK]]", "[mask]", "[ MASK ]"],
        "random_bytes": _random_bytes(rng, 40, 300),
        "invalid_utf8": [b"\xff", b"\xfe\xff", b"\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80",
                         b"\xed\xa0\x80\xed\xb0\x80", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80",
                         b"a\x00b", b"\x00" * 50, b"caf\xc3", b"\xe2\x82"],
        "control_characters": ["".join(map(chr, range(32))) + "\x7f\x85\u200b\u200e\u202e\ufeff\ufffd"],
        "scripts": ["مرحبا بالعالم", "שלום עולם", "北京大学的学生", "東京タワー", "한국어 문장",
                    "👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽", "e\u0301\u0301\u0301\u0301 Z\u0334\u0321\u0327\u031b\u0317\u0317",
                    "\U0010ffff\U000e0001 \ud7ff"],
        "word_longer_than_the_tokenizer_reads": ["a" * 5000 + " b", "x" * 100_000],
        "punctuation_storm": ["!" * 20_000, "(" * 3000 + ")" * 3000],
        # Texts with windows nothing is read from (none at all, or inside a word of more pieces than the window)
        # between those with words, and a 5,000-character CJK run (a word per ideograph).
        "windows_with_nothing_to_read": ["", "ab" * 45 + " the cat", "\x01\x02\x7f", " \t", "北京大学的学生" * 715,
                                         "the cat"],
        "only_windows_with_nothing_to_read": ["", " ", "\x01\u200b\ufeff", "\x00\x00"],
    }


def question_battery(rng):
    """Requests for `answer`: name -> (questions, contexts)."""
    context = "Ann ran to the park. The cat sat on the mat."
    return {
        "batch_0": ([], []),
        "batch_1": (["Who ran?"], [context]),
        # One long context among many short ones: memory must follow the pieces sent, not batch x longest.
        "batch_300_one_long": ([_words(rng, 4) + "?" for _ in range(300)],
                               [_words(rng, rng.randrange(1, 60)) for _ in range(299)] + [_words(rng, 10_000)]),
        "empty_question": ([""], [context]),
        "empty_context": (["Who ran?"], [""]),
        "both_empty": (["", " "], ["", "\t"]),
        "question_longer_than_the_window": ([_words(rng, 400)], [context]),
        "context_50k_chars": (["Who ran?", "Who sat?"], [_words(rng, 10_000)[:50_000], context]),
        "special_token_literals": (["[CLS] [SEP]", "[MASK]"], ["[SEP] [PAD] [UNK]", "[CLS]" * 100]),
        "random_bytes": (_random_bytes(rng, 20, 200), _random_bytes(rng, 20, 400)),
        "invalid_utf8": ([b"\xff\xfe", b"\xed\xa0\x80"], [b"Ann \xc0\xaf ran \xff.", b"\xe2\x82 cat \x00 sat"]),
        "scripts": (["誰が走った？", "مَن؟"], ["アンは公園へ走った。", "e\u0301\u0301 👩‍👩‍👧 مرحبا"]),
    }


def _as_array(values):
    return np.array([v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v for v in values], dtype=object)


_REFUSED = "InvalidArgumentError"
# A wrong dtype is refused by the function's call frame (eager) or the session (graph).
_WRONG_DTYPE = r"(expected to be a {0} tensor but is a|Expects arg\[\d\] to be {0} but) (int32|float)"


def _wrong_rank(names, shape):
    return rf"Shape of tensor \S*({'|'.join(names)})\S* {shape} is not compatible with expected shape"


def string_cases(inputs, rng):
    """`(case, {input: array}, expected outcome, words of the error)` for a
    signature with string inputs."""
    cases = []
    if inputs == ["context", "question"]:
        for name, (questions, contexts) in question_battery(rng).items():
            cases.append((name, {"question": _as_array(questions), "context": _as_array(contexts)}, "ok", ""))
        cases.append(("batch_mismatch", {"question": _as_array(["a", "b"]), "context": _as_array(["c"])},
                      _REFUSED, "context must hold one string per string of question"))
    else:
        for name, texts in text_battery(rng).items():
            # The second column of a pair gets other texts of the same batch size.
            cases.append((name, {column: _as_array(texts if i == 0 else texts[::-1]) for i, column in
                                 enumerate(inputs)}, "ok", ""))
        if len(inputs) == 2:
            for name, texts in {"batch_mismatch": ["a", "b"], "batch_mismatch_empty": []}.items():
                cases.append((name, {"text": _as_array(texts), "text_b": _as_array(["c"])}, _REFUSED,
                              "text_b must hold one string per string of text"))
    # A client may send any rank or dtype; TF Serving passes it on.
    for name, value, words in [
        ("rank_0", np.array(b"the cat", dtype=object), _wrong_rank(inputs, r"\[\]")),
        ("rank_2", _as_array(["a", "b", "c", "d"]).reshape(2, 2), _wrong_rank(inputs, r"\[2,2\]")),
        ("int_values", np.array([1, 2], np.int32), _WRONG_DTYPE.format("string")),
        ("float_values", np.array([1.5], np.float32), _WRONG_DTYPE.format("string")),
    ]:
        cases.append((name, {column: value for column in inputs}, _REFUSED, words))
    return cases


def ids_cases(inputs, vocabulary_size, max_positions):
    """`(case, {input: array}, expected outcome, words of the error)` for `predict_ids`."""
    def request(token_ids, **overrides):
        token_ids = np.array(token_ids, np.int32)
        arrays = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                  "padding_mask": np.ones_like(token_ids), "mask_positions": np.zeros((len(token_ids), 1), np.int32)}
        arrays.update({k: np.array(v, np.int32) for k, v in overrides.items()})
        return {name: arrays[name] for name in inputs}

    cases = [
        ("valid", request([[2, 5, 6, 3], [2, 7, 3, 0]], padding_mask=[[1, 1, 1, 1], [1, 1, 1, 0]]), "ok", ""),
        ("batch_0", request(np.zeros((0, 4))), "ok", ""),
        ("no_tokens", request(np.zeros((2, 0))), _REFUSED, r"token_ids must hold at least one token per row \(\[CLS\]\)"),
        ("token_id_too_large", request([[2, vocabulary_size, 3]]), _REFUSED,
         f"token_ids must be < the vocabulary size, {vocabulary_size}"),
        ("token_id_negative", request([[2, -1, 3]]), _REFUSED, "token_ids must be >= 0"),
        ("segment_id_out_of_range", request([[2, 5, 3]], segment_ids=[[0, 7, 0]]), _REFUSED,
         "segment_ids must be < the number of segments, 2"),
        ("longer_than_the_position_table", request(np.full((1, max_positions + 1), 5)), _REFUSED,
         f"token_ids are longer than the {max_positions} positions of the model"),
        ("shapes_differ", request([[2, 5, 3]], padding_mask=[[1, 1]]), _REFUSED,
         "padding_mask must have the shape of token_ids"),
        ("rank_1", {name: np.array([2, 3], np.int32) for name in inputs}, _REFUSED,
         _wrong_rank(inputs, r"\[2\]")),
        ("float_values", {name: np.ones((1, 2), np.float32) for name in inputs}, _REFUSED,
         _WRONG_DTYPE.format("int32")),
    ]
    if "mask_positions" in inputs:
        cases.append(("mask_position_outside_the_text", request([[2, 4, 3]], mask_positions=[[9]]), _REFUSED,
                      "mask_positions must be < the length of token_ids"))
        cases.append(("mask_positions_batch_differs", request([[2, 4, 3]], mask_positions=[[1], [1]]), _REFUSED,
                      "mask_positions must have a row per row of token_ids"))
    return cases


class Checker:
    """What a well-formed answer of each signature looks like."""

    def __init__(self, path):
        read = lambda name: open(os.path.join(path, "assets", name), encoding="utf-8").read().split("\n")[:-1]
        self.vocabulary = read("vocab.txt")
        self.labels = read("labels.txt") if os.path.exists(os.path.join(path, "assets", "labels.txt")) else []
        self.entity_types = {label.split("-", 1)[-1] for label in self.labels if label != "O"}

    @staticmethod
    def _clean(values):
        # The signatures read invalid UTF-8 as U+FFFD, one per maximal bad subpart, as Python does.
        return [t.decode("utf-8", "replace") for t in values]

    def problems(self, signature, inputs, outputs):
        batch = len(next(iter(inputs.values())))
        found = [f"{name} has {len(value)} rows for a batch of {batch}" for name, value in outputs.items()
                 if len(value) != batch]
        for name, value in outputs.items():
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                found.append(f"{name} is not finite")
        if found or batch == 0:
            return found
        check = getattr(self, "_" + signature.replace("serving_default", "").rstrip("_"), None)
        return found + (check(inputs, outputs) if check else [])

    def _probabilities(self, outputs):
        p = outputs["probabilities"]
        found = [] if np.allclose(p.sum(-1), 1.0, atol=1e-4) and (p >= 0).all() else ["probabilities do not sum to 1"]
        if not (np.argmax(p, -1) == outputs["label_ids"]).all():
            found.append("label_ids are not the most probable classes")
        if [s.decode() for s in outputs["labels"]] != [self.labels[i] for i in outputs["label_ids"]]:
            found.append("labels do not name label_ids")
        return found

    def _classify(self, inputs, outputs):
        return self._probabilities(outputs)

    _classify_pairs = _classify

    def _embed(self, inputs, outputs):
        return [] if outputs["pooled_output"].ndim == 2 and np.abs(outputs["pooled_output"]).max() <= 1 else [
            "pooled_output is not a tanh vector per text"]

    def _predict_ids(self, inputs, outputs):
        return []

    def _entities(self, inputs, outputs):
        found = []
        texts = self._clean(inputs["text"])
        for row, text in enumerate(texts):
            count = outputs["entity_count"][row]
            if not 0 <= count <= outputs["start"].shape[1]:
                found.append(f"row {row}: entity_count {count}")
                continue
            for column in range(count):
                start, end = outputs["start"][row, column], outputs["end"][row, column]
                if not 0 <= start < end <= len(text):
                    found.append(f"row {row}: span {start}..{end} outside a text of {len(text)} characters")
                elif outputs["entity_text"][row, column].decode() != text[start:end]:
                    found.append(f"row {row}: entity_text is not the text's characters {start}..{end}")
                if outputs["entity_label"][row, column].decode() not in self.entity_types:
                    found.append(f"row {row}: unknown entity_label")
                if not 0 < outputs["score"][row, column] <= 1:
                    found.append(f"row {row}: score {outputs['score'][row, column]}")
            if (outputs["start"][row, count:] != -1).any() or any(outputs["entity_text"][row, count:]):
                found.append(f"row {row}: padding beyond entity_count is not empty")
        return found

    def _answer(self, inputs, outputs):
        found = []
        for row, context in enumerate(self._clean(inputs["context"])):
            start, end, answer = outputs["start"][row], outputs["end"][row], outputs["answer"][row].decode()
            if (start, end) == (-1, -1):
                found += [] if answer == "" else [f"row {row}: no span but answer {answer!r}"]
            elif not 0 <= start <= end <= len(context) or answer != context[start:end]:
                found.append(f"row {row}: answer {answer!r} is not the context's characters {start}..{end}")
            if not 0 <= outputs["score"][row] <= 1:
                found.append(f"row {row}: score {outputs['score'][row]}")
        return found

    def _fill_mask(self, inputs, outputs):
        found = []
        ids, scores, tokens = outputs["top_token_ids"], outputs["top_scores"], outputs["top_tokens"]
        for row, count in enumerate(outputs["mask_count"]):
            if not 0 <= count <= ids.shape[1]:
                found.append(f"row {row}: mask_count {count}")
                continue
            real_scores = scores[row, :count]
            if ((real_scores < 0) | (real_scores > 1)).any() or (np.diff(real_scores, axis=-1) > 1e-7).any():
                found.append(f"row {row}: top_scores are not probabilities, likeliest first")
            if [[t.decode() for t in mask] for mask in tokens[row, :count]] != [
                    [self.vocabulary[i] for i in mask] for mask in ids[row, :count]]:
                found.append(f"row {row}: top_tokens do not name top_token_ids")
            if scores[row, count:].any() or ids[row, count:].any() or tokens[row, count:].astype(bool).any():
                found.append(f"row {row}: padding beyond mask_count is not empty")
        return found

    _fill_mask_pairs = _fill_mask


class Log:
    def __init__(self, path):
        self.file = open(path, "w", encoding="utf-8")

    def write(self, **entry):
        self.file.write(json.dumps(entry) + "\n")
        self.file.flush()


def _message(error):
    """The error's own words: TF's graph errors put them after a traceback of the tracing code."""
    text = getattr(error, "message", None) or str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("File ", "Detected at node", "Graph execution error"))
              and not line.endswith(":")]
    return " | ".join(useful)[-600:]


def _outcome(run, case, expected, words, checker, signature, inputs, log):
    log.write(case=case, started=True)
    entry = {"case": case, "expected": expected, "words": words}
    began = time.perf_counter()
    try:
        outputs = run(inputs)
    except Exception as error:  # noqa: BLE001 (every error class is the result)
        log.write(**entry, outcome=type(error).__name__, problems=[], detail=_message(error),
                  seconds=time.perf_counter() - began)
        return
    log.write(**entry, outcome="ok", problems=checker.problems(signature, inputs, outputs), detail="",
              seconds=time.perf_counter() - began)


def _string_inputs(function):
    specs = function.structured_input_signature[1]
    return sorted(specs), all(spec.dtype.name == "string" for spec in specs.values())


def fuzz_eager(exports, max_positions, log):
    import tensorflow as tf

    from keras_bert_zoo.export import load_export

    for export, path in sorted(exports.items()):
        loaded, checker = load_export(path), Checker(path)
        vocabulary_size = len(checker.vocabulary)
        for signature in sorted(loaded.signatures):
            function = loaded.signatures[signature]
            inputs, strings = _string_inputs(function)
            rng = random.Random(f"{SEED}/{signature}")
            cases = string_cases(inputs, rng) if strings else ids_cases(inputs, vocabulary_size, max_positions)

            def run(arrays, function=function):
                return {k: v.numpy() for k, v in function(**{k: tf.constant(v) for k, v in arrays.items()}).items()}

            for case, arrays, expected, words in cases:
                _outcome(run, f"eager/{export}/{signature}/{case}", expected, words, checker, signature, arrays, log)


def fuzz_graph(exports, max_positions, log):
    """Below the model server's own validation: feed the signature's tensors directly."""
    import tensorflow as tf

    for export, path in sorted(exports.items()):
        checker = Checker(path)
        with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
            meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], path)
            for signature, definition in sorted(meta_graph.signature_def.items()):
                if signature.startswith("__"):  # the loader's own init op, not a signature
                    continue
                inputs = sorted(definition.inputs)
                strings = all(definition.inputs[k].dtype == tf.string.as_datatype_enum for k in inputs)
                feeds = {k: graph.get_tensor_by_name(definition.inputs[k].name) for k in inputs}
                names = sorted(definition.outputs)
                fetches = [graph.get_tensor_by_name(definition.outputs[k].name)._as_tf_output() for k in names]

                def run(arrays, feeds=feeds, fetches=fetches, names=names):
                    # The C API, as TF Serving calls it: no Python check of the fed shapes.
                    values = session._call_tf_sessionrun(
                        None, {feeds[k]._as_tf_output(): v for k, v in arrays.items()}, fetches, [], None)
                    return dict(zip(names, values))

                rng = random.Random(f"{SEED}/{signature}")
                if strings:
                    cases = [c for c in string_cases(inputs, rng)
                             if c[0] in {"batch_1", "invalid_utf8", "batch_mismatch", "rank_0", "rank_2",
                                         "int_values"}]
                else:
                    cases = [c for c in ids_cases(inputs, len(checker.vocabulary), max_positions)
                             if c[0] in {"valid", "token_id_too_large", "shapes_differ", "rank_1"}]
                for case, arrays, expected, words in cases:
                    _outcome(run, f"graph/{export}/{signature}/{case}", expected, words, checker, signature, arrays,
                             log)


def main(exports_path, log_path):
    request = json.load(open(exports_path))
    log = Log(log_path)
    fuzz_eager(request["exports"], request["max_sequence_length"], log)
    fuzz_graph(request["exports"], request["max_sequence_length"], log)
    log.write(case="done", started=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
