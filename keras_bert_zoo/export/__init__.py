"""SavedModel exports for TensorFlow Serving that take raw text."""

from keras_bert_zoo.export.batching_parameters import batching_parameters
from keras_bert_zoo.export.export_for_serving import export_for_serving
from keras_bert_zoo.export.export_for_serving import load_export
from keras_bert_zoo.export.export_for_serving import serving_signatures

__all__ = ["batching_parameters", "export_for_serving", "load_export", "serving_signatures"]
