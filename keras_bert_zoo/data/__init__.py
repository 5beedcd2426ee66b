"""Readers of training and evaluation files, one per format."""

from keras_bert_zoo.data.conll import read_conll
from keras_bert_zoo.data.csv_reader import read_csv
from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.glue import read_glue
from keras_bert_zoo.data.jsonl import read_jsonl
from keras_bert_zoo.data.readers import read_classification
from keras_bert_zoo.data.squad import read_squad

__all__ = ["DataFormatError", "read_classification", "read_conll", "read_csv", "read_glue", "read_jsonl",
           "read_squad"]
