"""Readers of training and evaluation files, one per format."""

from keras_bert_zoo.data.conll import read_conll
from keras_bert_zoo.data.csv_reader import read_csv
from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.glue import read_glue
from keras_bert_zoo.data.jsonl import read_jsonl
from keras_bert_zoo.data.pretraining_corpus import read_documents
from keras_bert_zoo.data.pretraining_records import pretraining_batches
from keras_bert_zoo.data.pretraining_records import read_pretraining_records
from keras_bert_zoo.data.pretraining_records import write_pretraining_records
from keras_bert_zoo.data.readers import read_classification
from keras_bert_zoo.data.squad import read_squad

__all__ = ["DataFormatError", "pretraining_batches", "read_classification", "read_conll", "read_csv",
           "read_documents", "read_glue", "read_jsonl", "read_pretraining_records", "read_squad",
           "write_pretraining_records"]
