"""The order `fit` reads in-memory examples in: a shuffle of its own for each epoch, drawn from a seed and
the epoch's number (`EpochOrders`)."""

import math

import tensorflow as tf


class EpochOrders:
    """Row orders for the epochs `first_epoch` to `epochs - 1` of one `fit`,
    each a function of `(seed, epoch)` alone.

    A `Dataset.shuffle` that reshuffles on each pass draws pass `k`'s order
    from the passes before it in one process: a run resumed at epoch `k` from
    its backup read epoch `k` in the order of epoch 0, and an uninterrupted
    run's later orders never. Here epoch `k`'s order is the same in a
    resumed run, under any `tf.distribute` strategy, and on every worker of a
    cluster (given the same seed).

    Args:
        seed: the orders' seed, a whole number.
        first_epoch: the epoch the run starts at (the backup's count of
            epochs done, when it resumes).
        epochs: the run's last epoch + 1, as `fit`'s `epochs`.

    Examples:
    >>> orders = EpochOrders(seed=1, first_epoch=1, epochs=3)
    >>> ds = orders.batched_rows(count=5, batch_size=2)
    >>> batches = [rows.tolist() for rows in ds.as_numpy_iterator()]
    >>> len(batches)  # epochs 1 and 2, 3 batches each
    6
    >>> sorted(sum(batches[:3], []))  # epoch 1 reads each row once
    [0, 1, 2, 3, 4]
    """

    def __init__(self, seed, first_epoch=0, epochs=1):
        self.seed = int(seed)
        # A run with no epoch left (Keras then trains none) still gets one pass, so its Dataset is not empty.
        self.first_epoch = max(0, min(int(first_epoch), int(epochs) - 1))
        self.epochs = max(int(epochs), self.first_epoch + 1)

    @property
    def passes(self):
        return self.epochs - self.first_epoch

    def _order(self, epoch, count):
        seed = tf.stack([tf.constant(self.seed, tf.int64), tf.cast(epoch, tf.int64)])
        return tf.random.experimental.stateless_shuffle(tf.range(count, dtype=tf.int64), seed=seed)

    def batched_rows(self, count, batch_size):
        """The row numbers `0..count-1` of each epoch, in that epoch's order,
        batched within the epoch: a Dataset of `passes * ceil(count /
        batch_size)` batches, its cardinality known."""
        def epoch_batches(epoch):
            return tf.data.Dataset.from_tensor_slices(self._order(epoch, count)).batch(batch_size)

        batches = tf.data.Dataset.range(self.first_epoch, self.epochs).flat_map(epoch_batches)
        return batches.apply(tf.data.experimental.assert_cardinality(self.passes * math.ceil(count / batch_size)))
