"""`fit`'s order of in-memory examples: each epoch's a function of the seed and the epoch's number."""

import pytest

from keras_bert_zoo.utils.epoch_orders import EpochOrders


def _epochs(orders, count, batch_size):
    """The Dataset's batches, grouped by epoch."""
    batches = [rows.tolist() for rows in orders.batched_rows(count, batch_size).as_numpy_iterator()]
    per_epoch = -(-count // batch_size)
    assert len(batches) == orders.passes * per_epoch
    return [batches[i:i + per_epoch] for i in range(0, len(batches), per_epoch)]


@pytest.mark.parametrize("count, batch_size", [(10, 3), (7, 7), (1, 4)])
def test_each_epoch_reads_every_row_once_in_batches_within_the_epoch(count, batch_size):
    for epoch in _epochs(EpochOrders(seed=7, epochs=4), count, batch_size):
        assert sorted(sum(epoch, [])) == list(range(count))
        assert [len(batch) for batch in epoch] == [min(batch_size, count - start) for start in range(0, count, batch_size)]


def test_a_run_that_starts_at_a_later_epoch_reads_the_orders_a_whole_run_reads_there():
    whole = _epochs(EpochOrders(seed=7, epochs=5), 50, 8)
    assert len({str(epoch) for epoch in whole}) == 5  # an order of its own each epoch
    assert _epochs(EpochOrders(seed=7, first_epoch=3, epochs=5), 50, 8) == whole[3:]
    assert _epochs(EpochOrders(seed=7, epochs=5), 50, 8) == whole  # the same seed, the same orders
    assert _epochs(EpochOrders(seed=8, epochs=5), 50, 8) != whole



def test_a_run_with_no_epoch_left_still_has_one_pass():
    assert EpochOrders(seed=1, first_epoch=5, epochs=5).passes == 1  # Keras then trains none


@pytest.mark.slow
def test_fit_seeded_by_tensorflow_alone_reads_its_examples_in_one_order_again(tiny_checkpoint, monkeypatch):
    """`tf.random.set_seed` fixed the order of the Dataset.shuffle that EpochOrders replaced: it still does."""
    import tensorflow as tf

    import keras_bert_zoo as kbz
    from keras_bert_zoo.tasks.task import Task
    from tests.fed_batches import logging_keras_inputs

    fed = []
    monkeypatch.setattr(Task, "_keras_inputs", logging_keras_inputs(fed))
    task = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=8)
    task.compile(learning_rate=1e-4)
    words = "all work and no play makes jack a dull boy".split()
    texts = [f"{a} {b}" for a in words[:3] for b in words[3:6]]

    def order(seed):
        tf.random.set_seed(seed)
        fed[:] = []
        task.fit(texts, [i % 2 for i in range(9)], batch_size=3, epochs=2, verbose=0)
        assert len(fed) == 6
        return [batch.tobytes() for batch in fed]

    first = order(1)
    assert first[:3] != first[3:]
    assert order(1) == first and order(2) != first
