"""Pick the reader for a classification file by its format."""

import os

from keras_bert_zoo.data.csv_reader import read_csv
from keras_bert_zoo.data.glue import infer_glue_task
from keras_bert_zoo.data.glue import read_glue
from keras_bert_zoo.data.jsonl import read_jsonl
from keras_bert_zoo.utils.text_files import utf8_errors_named

FORMATS = ("glue", "jsonl", "csv")


def guess_format(path):
    if infer_glue_task(path) and path.endswith(".tsv"):
        return "glue"
    with utf8_errors_named(path), open(path, encoding="utf-8-sig") as f:
        first = f.readline().lstrip()
    if first.startswith("{"):
        return "jsonl"
    if path.endswith((".csv", ".tsv")):
        return "csv"
    raise ValueError(
        f"Cannot tell the format of {path}: pass --format glue|jsonl|csv "
        "(GLUE TSVs are recognised inside a folder named after the task)."
    )


def read_classification(path, format=None, glue_task=None, text_column="text", text_b_column=None,
                        label_column="label", label_names=None, regression=False, on_error="raise",
                        multi_label=False):
    """Read a classification file (GLUE TSV, JSON lines or CSV); `multi_label`: see `read_csv` / `read_jsonl`."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such data file: {path}")
    format = format or guess_format(path)
    if format == "glue":
        if multi_label:
            raise ValueError(f"{path} is a GLUE TSV, with one label per example; multi-label examples are read "
                             "from CSV/TSV or JSON-lines files.")
        return read_glue(path, task=glue_task, on_error=on_error)
    if format == "jsonl":
        return read_jsonl(path, text_column, text_b_column, label_column, label_names, on_error=on_error,
                          multi_label=multi_label, regression=regression)
    if format == "csv":
        return read_csv(path, text_column, label_column, text_b_column, label_names, regression=regression,
                        on_error=on_error, multi_label=multi_label)
    raise ValueError(f"Unknown format '{format}'; expected one of {FORMATS}.")
