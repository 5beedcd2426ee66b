"""Work around keras-team/keras#20585: `fit` under MultiWorkerMirroredStrategy.

Keras 3 breaks twice there. Before training it builds the model from the
first batch, reducing the whole nested batch in one `strategy.reduce` call,
which collective ops cannot do for a dict; and after each step it reduces the
scalar logs with `axis=0`, which a scalar does not have. The model only needs
shapes to build, so it is built from the local replica's slice; and scalar
logs are averaged over replicas with `axis=None`. Both fixes apply only under
MultiWorkerMirroredStrategy, where Keras fails without them.
"""

import tensorflow as tf
from keras.src import tree
from keras.src.backend.tensorflow import trainer as tf_trainer


def _reduce_scalar_logs_across_workers():
    original = tf_trainer.reduce_per_replica
    if getattr(original, "fixes_multi_worker_scalars", False):
        return

    def reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
            def reduce(value):
                if isinstance(value, tf.distribute.DistributedValues):
                    rank = strategy.experimental_local_results(value)[0].shape.rank
                    return strategy.reduce("MEAN", value, axis=None if rank == 0 else 0)
                return value

            return tree.map_structure(reduce, values)
        return original(values, strategy, reduction)

    reduce_per_replica.fixes_multi_worker_scalars = True
    tf_trainer.reduce_per_replica = reduce_per_replica


class MultiWorkerBuildMixin:
    """Mixed into keras_bert_zoo models so `fit` works with several workers."""

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        strategy = getattr(self, "_distribute_strategy", None)
        if iterator is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
        _reduce_scalar_logs_across_workers()
        for _, _, it in iterator:
            batch = next(it)
            data_batch = tree.map_structure(lambda value: strategy.experimental_local_results(value)[0], batch)
            break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)
