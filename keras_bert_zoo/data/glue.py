"""GLUE's TSV files (as written by the GLUE download script)."""

import dataclasses
import os
import re

from keras_bert_zoo.data.classification_examples import ExampleBuilder
from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.utils.text_files import utf8_errors_named


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """Where a GLUE task keeps its columns. Column names refer to the header;
    integers are positions (CoLA's files have no header)."""

    text_a: object
    text_b: object
    label: object
    label_names: tuple
    header: bool = True

    @property
    def regression(self):
        return not self.label_names


# Label orders are google-research/bert's `get_labels()` (and GLUE's).
GLUE_TASKS = {
    "CoLA": GlueTask(3, None, 1, ("0", "1"), header=False),
    "SST-2": GlueTask("sentence", None, "label", ("0", "1")),
    "MRPC": GlueTask("#1 String", "#2 String", "Quality", ("0", "1")),
    "QQP": GlueTask("question1", "question2", "is_duplicate", ("0", "1")),
    "STS-B": GlueTask("sentence1", "sentence2", "score", ()),
    "MNLI": GlueTask("sentence1", "sentence2", "gold_label", ("contradiction", "entailment", "neutral")),
    "QNLI": GlueTask("question", "sentence", "label", ("entailment", "not_entailment")),
    "RTE": GlueTask("sentence1", "sentence2", "label", ("entailment", "not_entailment")),
    "WNLI": GlueTask("sentence1", "sentence2", "label", ("0", "1")),
}


def _spelling(name):
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def glue_task_named(name):
    """The GLUE task `name` spells, in any case, with or without its hyphen ("sst2", HF datasets' name, is
    "SST-2"), or None."""
    return next((task for task in GLUE_TASKS if _spelling(task) == _spelling(name)), None)


def infer_glue_task(path):
    """The GLUE task of a file from its folder name (glue_data/MRPC/train.tsv)."""
    return glue_task_named(os.path.basename(os.path.dirname(os.path.abspath(path))))


def read_glue(path, task=None, on_error="raise"):
    """Read a GLUE train/dev TSV into `ClassificationExamples`.

    Args:
        path: the .tsv file.
        task: `"MRPC"`, `"SST-2"`, `"CoLA"`, `"RTE"`, `"QQP"`, `"QNLI"`,
            `"MNLI"`, `"STS-B"` or `"WNLI"` (any case, the hyphen optional:
            `"sst2"`); by default the folder's name.
        on_error: `"raise"` on a bad row (naming file and line) or `"skip"`.

    Returns:
        `ClassificationExamples`: `clf.fit(read_glue(path))`, or
        `texts, labels = read_glue(path)`.

    Raises:
        DataFormatError: a missing column, an unknown label or empty text.
    """
    if task is None and infer_glue_task(path) is None:
        folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
        raise ValueError(f"{path}: which GLUE task it holds is not known, as its folder {folder!r} names none; pass "
                         f"task= (--glue_task on the command line) one of {sorted(GLUE_TASKS)}, or read it as a "
                         "table of named columns (read_csv; --format csv).")
    if task is not None and glue_task_named(task) is None:
        raise ValueError(f"Unknown GLUE task {task!r} for {path}; pass task= (--glue_task on the command line) one "
                         f"of {sorted(GLUE_TASKS)}.")
    task = glue_task_named(task) if task is not None else infer_glue_task(path)
    spec = GLUE_TASKS[task]
    builder = ExampleBuilder(path, spec.label_names or None, regression=spec.regression, on_error=on_error)
    # utf-8-sig: the official MRPC file starts with a byte-order mark.
    with utf8_errors_named(path), open(path, encoding="utf-8-sig") as f:
        lines = f.read().split("\n")
    while lines and not lines[-1].strip():  # blank lines at the end (an editor's) hold no example
        lines.pop()
    first_line = 1
    if not lines:
        raise DataFormatError(f"{path} is empty: a {task} file holds " + ("a header line, then " if spec.header else "")
                              + "one example per line.")
    if spec.header:
        header = lines[0].split("\t")
        columns = {}
        for role, name in (("text_a", spec.text_a), ("text_b", spec.text_b), ("label", spec.label)):
            if name is None:
                continue
            if name not in header:
                raise DataFormatError(f"{path}, line 1: the header has no column '{name}' ({task} needs it); found {header}.")
            columns[role] = header.index(name)
        lines, first_line = lines[1:], 2
    else:
        columns = {"text_a": spec.text_a, "label": spec.label}
        if spec.text_b is not None:
            columns["text_b"] = spec.text_b
    # Every row has the header's columns (or, without a header, the first
    # row's): a stray tab inside a text would shift the columns silently.
    needed = max(columns.values()) + 1
    expected = len(header) if spec.header else max(needed, len(lines[0].split("\t")) if lines else 0)
    for number, line in enumerate(lines, start=first_line):
        fields = line.split("\t")
        if len(fields) < needed:
            builder.fail(number, f"expected at least {needed} tab-separated columns, found {len(fields)}.")
            continue
        if len(fields) != expected:
            builder.fail(number, f"expected {expected} tab-separated columns (as line {first_line - 1 if spec.header else 1}), "
                         f"found {len(fields)}; does a text hold a tab?")
            continue
        texts = (fields[columns["text_a"]],) + ((fields[columns["text_b"]],) if "text_b" in columns else ())
        builder.add(number, texts, fields[columns["label"]])
    return builder.build()
