"""A method traced once into a `tf.function`, kept beside its object."""

import functools
import weakref

import tensorflow as tf

_functions = weakref.WeakKeyDictionary()


def _call(reference, name, args):
    return getattr(reference(), name)(*args)


def traced_method(owner, name, depends_on=None):
    """`getattr(owner, name)` as a `tf.function` that serves any batch size:
    traced for each input structure at its first batch size, then once more
    for any other (`reduce_retracing`).

    Held beside the owner, not on it: Keras would save a `tf.function`
    attribute of a model into its SavedModels (it drops only its own
    train/test/predict functions there). The function refers to the owner
    weakly, so it does not keep the owner alive.

    Args:
        owner: the object whose method to trace.
        name: the method's name.
        depends_on: an object the traced graph captured (e.g. the owner's
            preprocessor): once the owner holds another, the method is
            traced again.

    Returns:
        A function that calls the `tf.function`.

    Examples:
    >>> class Doubler:
    ...     def double(self, x):
    ...         return 2 * x
    >>> doubler = Doubler()
    >>> double = traced_method(doubler, "double")
    >>> double(tf.constant([1, 2])).numpy().tolist()
    [2, 4]
    >>> traced_method(doubler, "double") is double
    True
    """
    functions = _functions.setdefault(owner, {})
    cached = functions.get(name)
    if cached is None or cached[0] is not depends_on:
        # The arguments travel as one tuple: generalizing over calls with different numbers of arguments (a
        # task's `preprocess(x)` and `preprocess(x, y)`) raises IndexError in TensorFlow (2.21). A partial, not
        # a lambda: TensorFlow counts traces per code object, and one lambda's would add up every owner's
        # traces into a "triggered tf.function retracing" warning.
        traced = tf.function(functools.partial(_call, weakref.ref(owner), name), reduce_retracing=True)

        def function(*args):
            return traced(args)

        cached = functions[name] = (depends_on, function)
    return cached[1]
