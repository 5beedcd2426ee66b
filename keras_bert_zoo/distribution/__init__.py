"""Choosing a `tf.distribute` strategy: TPU, local GPUs, several workers, or CPU."""

from keras_bert_zoo.distribution.get_strategy import get_strategy

__all__ = ["get_strategy"]
