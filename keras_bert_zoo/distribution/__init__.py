"""Choosing a `tf.distribute` strategy: TPU, local GPUs, several workers, or CPU."""

from keras_bert_zoo.distribution.get_strategy import check_global_batch_size
from keras_bert_zoo.distribution.get_strategy import get_strategy

__all__ = ["check_global_batch_size", "get_strategy"]
