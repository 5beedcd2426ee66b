"""CSV / TSV files with named columns."""

import csv

from keras_bert_zoo.data.classification_examples import ExampleBuilder
from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.glue import GLUE_TASKS
from keras_bert_zoo.utils.text_files import utf8_errors_named


def read_csv(path, text_column, label_column, text_b_column=None, label_names=None, delimiter=None,
             regression=False, on_error="raise", multi_label=False):
    """Read a CSV (or TSV, by extension) with a header into `ClassificationExamples`.

    Args:
        path: the file.
        text_column / text_b_column / label_column: header names.
        label_names: the labels in id order; default: sorted labels found.
        delimiter: default `,`, or tab for `.tsv`.
        regression: parse labels as numbers.
        multi_label: a label field holds any number of names, separated by
            commas ("sports,politics"; empty: none); labels are multi-hot rows.
        on_error: `"raise"` (naming file and line) or `"skip"`.
    """
    delimiter = delimiter or ("\t" if path.endswith(".tsv") else ",")
    builder = ExampleBuilder(path, label_names, regression=regression, on_error=on_error, multi_label=multi_label)
    with utf8_errors_named(path), open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        wanted = [c for c in (text_column, text_b_column, label_column) if c]
        missing = [c for c in wanted if c not in (reader.fieldnames or [])]
        if missing:
            raise DataFormatError(
                f"{path}, line 1: no column(s) {missing} in the header {reader.fieldnames}. "
                "Name the columns with text_column / text_b_column / label_column." + _glue_hint(reader.fieldnames)
            )
        for row in reader:
            # DictReader files surplus fields under None and fills missing ones with None.
            if None in row or None in row.values():
                found = len(row) - 1 + len(row[None]) if None in row else sum(v is not None for v in row.values())
                builder.fail(reader.line_num, f"{found} fields but the header has {len(reader.fieldnames)}. "
                             "Quote fields that hold the delimiter.")
                continue
            texts = (row[text_column],) + ((row[text_b_column],) if text_b_column else ())
            builder.add(reader.line_num, texts, row[label_column])
    return builder.build()


def _glue_hint(header):
    """A header that is a GLUE task's is read by `read_glue`: say so."""
    tasks = [name for name, task in GLUE_TASKS.items()
             if task.header and {task.text_a, task.label} <= set(header or [])]
    if not tasks:
        return ""
    return (f" The header is GLUE's ({' or '.join(tasks)}): read it with read_glue "
            f"(command line: --glue_task {tasks[0]}).")
