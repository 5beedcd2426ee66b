"""traced_method: one tf.function per object and method, for any batch size and argument count."""

import gc
import weakref

import tensorflow as tf

from keras_bert_zoo.utils.traced_method import traced_method


class Scaler:
    def __init__(self, factor):
        self.factor = factor
        self.traces = 0

    def scale(self, x, y=None):
        self.traces += 1  # Python runs only while TensorFlow traces
        return self.factor * x if y is None else self.factor * x + y


def test_calls_of_any_batch_size_and_argument_count_reuse_their_traces():
    scaler = Scaler(2)
    function = traced_method(scaler, "scale")
    assert function(tf.constant([1, 2])).numpy().tolist() == [2, 4]
    # Another count of arguments between two batch sizes: TensorFlow's generalization of the varargs form
    # raised IndexError here.
    assert function(tf.constant([1, 2]), tf.constant([1, 1])).numpy().tolist() == [3, 5]
    assert function(tf.constant([1, 2, 3])).numpy().tolist() == [2, 4, 6]
    assert function(tf.constant([1, 2, 3]), tf.constant([0, 0, 1])).numpy().tolist() == [2, 4, 7]
    warmed_up = scaler.traces
    for n in (1, 4, 7):
        assert function(tf.range(n)).numpy().tolist() == [2 * i for i in range(n)]
        assert function(tf.range(n), tf.ones(n, tf.int32)).numpy().tolist() == [2 * i + 1 for i in range(n)]
    assert scaler.traces == warmed_up
    assert traced_method(scaler, "scale") is function


def test_another_dependency_traces_again():
    scaler = Scaler(2)
    function = traced_method(scaler, "scale", depends_on=scaler.factor)
    assert function(tf.constant([1])).numpy().tolist() == [2]
    scaler.factor = 3  # the traced graph holds the old factor; the new one asks for another trace
    assert traced_method(scaler, "scale", depends_on=scaler.factor)(tf.constant([1])).numpy().tolist() == [3]


def test_the_function_does_not_keep_its_owner_alive():
    scaler = Scaler(2)
    traced_method(scaler, "scale")(tf.constant([1]))
    reference = weakref.ref(scaler)
    del scaler
    gc.collect()
    assert reference() is None


def test_many_owners_do_not_add_up_to_a_retracing_warning(caplog, monkeypatch):
    """Each owner's function counts its own traces: one code object for them all made TensorFlow warn of
    "triggered tf.function retracing" once a few tasks had each traced their two batch shapes."""
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    # A fresh tally: TensorFlow warns twice per process at most, so earlier tests could hide the warning.
    monkeypatch.setattr(polymorphic_function, "_frequent_tracing_detector_manager",
                        polymorphic_function._FrequentTracingDetectorManager())
    scalers = [Scaler(factor) for factor in range(6)]
    for scaler in scalers:
        for n in (1, 2, 3):
            assert traced_method(scaler, "scale")(tf.range(n)).numpy().tolist() == [scaler.factor * i for i in range(n)]
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
