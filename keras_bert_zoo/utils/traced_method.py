"""A method traced once into a `tf.function`, kept beside its object."""

import weakref

import tensorflow as tf

_functions = weakref.WeakKeyDictionary()


def traced_method(owner, name, depends_on=None):
    """`getattr(owner, name)` as a `tf.function`, traced once per input
    structure and then reused for any batch size (`reduce_retracing`).

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
        reference = weakref.ref(owner)
        # The arguments travel as one tuple: generalizing over calls with different numbers of arguments (a
        # task's `preprocess(x)` and `preprocess(x, y)`) raises IndexError in TensorFlow (2.21).
        traced = tf.function(lambda args: getattr(reference(), name)(*args), reduce_retracing=True)

        def function(*args):
            return traced(args)

        cached = functions[name] = (depends_on, function)
    return cached[1]
