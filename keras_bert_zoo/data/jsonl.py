"""JSON-lines classification files (SciBERT's `{"text": ..., "label": ...}`)."""

import json
import re

from keras_bert_zoo.data.classification_examples import ExampleBuilder
from keras_bert_zoo.utils.text_files import untrusted_repr
from keras_bert_zoo.utils.text_files import utf8_errors_named


def read_jsonl(path, text_key="text", text_b_key=None, label_key="label", label_names=None, on_error="raise",
               multi_label=False, regression=False):
    """Read one JSON object per line into `ClassificationExamples`.

    Args:
        path: the file.
        text_key / text_b_key / label_key: the fields to read.
        label_names: the labels in id order; default: sorted labels found.
        on_error: `"raise"` (naming file and line) or `"skip"`.
        multi_label: a label is a list of names (`["sports", "politics"]`;
            `[]`: none), or names separated by commas; labels are multi-hot rows.
        regression: a label is a number (`3.8`, or `"3.8"`); labels are floats.
    """
    builder = ExampleBuilder(path, label_names, regression=regression, on_error=on_error, multi_label=multi_label)
    with utf8_errors_named(path), open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                builder.fail(number, f"not valid JSON ({e.msg}).")
                continue
            except RecursionError:
                builder.fail(number, "JSON nested deeper than Python's reader goes; a line holds one object of a "
                                     "text and a label.")
                continue
            except ValueError:  # json's other error: an integer of more digits than Python converts (4300)
                digits = max(re.findall(r"\d+", line), key=len, default="")
                builder.fail(number, f"a number of {len(digits)} digits ({digits[:12]}...), more than Python reads "
                                     "as an integer.")
                continue
            if not isinstance(row, dict):
                builder.fail(number, f"expected a JSON object {{...}}, found {type(row).__name__} {untrusted_repr(row)}.")
                continue
            keys = [k for k in (text_key, text_b_key, label_key) if k]
            missing = [k for k in keys if k not in row]
            if missing:
                builder.fail(number, f"missing field(s) {missing}; the row has {sorted(row)}.")
                continue
            texts = (row[text_key],) + ((row[text_b_key],) if text_b_key else ())
            builder.add(number, texts, row[label_key])
    return builder.build()
