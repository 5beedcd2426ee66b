"""Keras' sparse categorical cross-entropy, its softmax over a vocabulary fused into one pass."""

import keras
import tensorflow as tf

from keras_bert_zoo.layers import bert_encoder_layer
from keras_bert_zoo.layers import fused_ops


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class FusedSparseCategoricalCrossentropy(keras.losses.SparseCategoricalCrossentropy):
    """`keras.losses.SparseCategoricalCrossentropy` whose softmax and its
    gradient each run as one XLA-compiled pass on CPUs.

    The same arguments, values and config as Keras' loss. Made for the
    masked-LM head, whose softmax spans the whole vocabulary: there
    TensorFlow's kernel and its gradient's product took a fifth of a MiniLM
    pretraining step (see `fused_ops.sparse_softmax_cross_entropy`). With
    `from_logits=False`, an `ignore_class` or an `axis` other than the last,
    on a GPU, or where the fused ops are off (exports), it is Keras' loss
    unchanged. A label outside `[0, number of classes)` raises, as Keras'
    loss does on CPUs; inside an XLA-compiled step (`jit_compile=True`),
    where checks do not run, its row's loss is NaN, as Keras' is there. Its
    gradient is first-order: a gradient of the gradient with respect to the
    logits comes back `None`.

    Examples:
    >>> import numpy as np
    >>> loss = FusedSparseCategoricalCrossentropy(from_logits=True)
    >>> logits = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]], "float32")
    >>> labels = np.array([0, 2])
    >>> keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    >>> bool(abs(float(loss(labels, logits)) - float(keras_loss(labels, logits))) < 1e-6)
    True
    """

    def call(self, y_true, y_pred):
        if not self.from_logits or self.ignore_class is not None or self._fn_kwargs.get("axis", -1) != -1 \
                or not fused_ops.xla_fusion_enabled() or bert_encoder_layer.runs_on_gpu():
            return super().call(y_true, y_pred)
        logits = tf.convert_to_tensor(y_pred)
        labels = tf.convert_to_tensor(y_true)
        if labels.shape.rank == logits.shape.rank and labels.shape[-1] == 1:
            labels = tf.squeeze(labels, axis=-1)
        if not labels.shape.is_compatible_with(logits.shape[:-1]):
            return super().call(y_true, y_pred)  # Keras' error names the shapes
        labels = tf.cast(labels, tf.int32)
        classes = tf.shape(logits, out_type=tf.int32)[-1]
        # Checked here, where the error can name the labels; the fused pass itself only makes such a row NaN.
        with tf.control_dependencies([
            tf.debugging.assert_equal(tf.shape(labels), tf.shape(logits)[:-1], message=(
                "labels of a sparse categorical cross-entropy must have the logits' shape less its last axis")),
            tf.debugging.assert_non_negative(labels, message=(
                "labels of a sparse categorical cross-entropy must be class indices, >= 0")),
            tf.debugging.assert_less(labels, classes, message=(
                "labels of a sparse categorical cross-entropy must be below the number of classes (the logits' "
                "last axis)")),
        ]):
            labels = tf.identity(labels)
        return fused_ops.sparse_softmax_cross_entropy(logits, labels)
