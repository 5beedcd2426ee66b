"""Readers of training and evaluation files, one per format.

The names below load on first use: the readers of text files are plain
Python, so the command line reads (and refuses) a data file before
TensorFlow starts; the pretraining records' readers and writers import it.
"""

import importlib

_EXPORTS = {
    "DataFormatError": "keras_bert_zoo.data.errors",
    "pretraining_batches": "keras_bert_zoo.data.pretraining_records",
    "read_classification": "keras_bert_zoo.data.readers",
    "read_conll": "keras_bert_zoo.data.conll",
    "read_csv": "keras_bert_zoo.data.csv_reader",
    "read_documents": "keras_bert_zoo.data.pretraining_corpus",
    "read_glue": "keras_bert_zoo.data.glue",
    "read_jsonl": "keras_bert_zoo.data.jsonl",
    "read_pretraining_records": "keras_bert_zoo.data.pretraining_records",
    "read_squad": "keras_bert_zoo.data.squad",
    "write_pretraining_records": "keras_bert_zoo.data.pretraining_records",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'keras_bert_zoo.data' has no attribute '{name}'")


def __dir__():
    return sorted([*globals(), *_EXPORTS])
