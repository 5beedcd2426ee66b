"""The training batches a task's `fit` reads, logged as they are read: which examples it trained on, in what order."""

import tensorflow as tf

from keras_bert_zoo.tasks.task import Task

_keras_inputs = Task._keras_inputs


def logging_keras_inputs(fed):
    """A `Task._keras_inputs` that appends each training batch's token ids (an int32 array) to `fed` as it is
    read; set it on `Task` (monkeypatch.setattr(Task, "_keras_inputs", ...))."""
    def keras_inputs(self, *args, **kwargs):
        data, labels = _keras_inputs(self, *args, **kwargs)
        if not kwargs.get("shuffle"):  # not the training data
            return data, labels

        def log(ids):
            fed.append(ids.numpy())
            return ids

        return data.map(lambda x, *rest: ({**x, "token_ids": tf.ensure_shape(
            tf.py_function(log, [x["token_ids"]], tf.int32), x["token_ids"].shape)}, *rest)), labels

    return keras_inputs
