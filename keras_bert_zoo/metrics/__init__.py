"""The figures each field reports, computed as its official scripts do."""

from keras_bert_zoo.metrics.classification_metrics import classification_report
from keras_bert_zoo.metrics.classification_metrics import multi_label_report
from keras_bert_zoo.metrics.classification_metrics import regression_report
from keras_bert_zoo.metrics.conlleval import entity_scores
from keras_bert_zoo.metrics.squad_metrics import squad_scores

__all__ = ["classification_report", "entity_scores", "multi_label_report", "regression_report", "squad_scores"]
