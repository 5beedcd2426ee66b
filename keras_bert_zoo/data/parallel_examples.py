"""Slicing for example sets held as parallel lists (texts and labels, ...)."""

import dataclasses
import itertools
import numbers
import random


class ParallelExamples:
    """Mixin for dataclasses whose `_PARALLEL` fields are lists of equal length."""

    _PARALLEL = ()

    def __len__(self):
        return len(getattr(self, self._PARALLEL[0]))

    def _take(self, indices):
        return dataclasses.replace(self, **{f: [getattr(self, f)[i] for i in indices] for f in self._PARALLEL})

    def head(self, count):
        """The first `count` examples."""
        return self._take(range(min(_checked_count(count, "head"), len(self))))

    def sample(self, count, seed=0):
        """`count` examples drawn at random (seeded), in the order drawn: a subset that stands for the whole, where
        the first `count` of a file sorted by label are one class."""
        count = _checked_count(count, "sample")
        order = list(range(len(self)))
        random.Random(seed).shuffle(order)
        return self._take(order[:count])

    def split_groups(self):
        """Per example, the group it is held out with by `split` (each example its own, unless a subclass says)."""
        return range(len(self))

    def split(self, fraction, seed=0):
        """Split off `fraction` of a seeded shuffle: `(rest, held_out)`. The examples of one group
        (`split_groups`) fall on one side: the cut is at the group boundary nearest to `fraction`."""
        if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0 <= fraction <= 1:
            # 1.5 or -0.5 would slice from the wrong end: a held-out set of the wrong size, in silence.
            raise ValueError(f"split takes a fraction between 0 and 1 to hold out; got {fraction!r}.")
        groups = {}
        for index, group in enumerate(self.split_groups()):
            groups.setdefault(group, []).append(index)
        members = list(groups.values())
        random.Random(seed).shuffle(members)  # one example a group: the same shuffle as of the examples
        order = [index for group in members for index in group]
        target = len(order) - int(round(len(order) * fraction))
        cut = min(itertools.accumulate(map(len, members), initial=0), key=lambda boundary: abs(boundary - target))
        return self._take(order[:cut]), self._take(order[cut:])


class LabelledExamples(ParallelExamples):
    """Examples and their labels, as a reader returns them (`_PARALLEL` = x, y).

    They go whole into their task's `fit` and `evaluate`, or unpack into
    `(x, y)` as Keras takes them. `len()` counts the examples; iterating
    gives the two lists (a classifier's labels by name).

    Examples:
    >>> from keras_bert_zoo.data.classification_examples import ClassificationExamples
    >>> examples = ClassificationExamples(["good", "bad"], [1, 0], ["neg", "pos"])
    >>> texts, labels = examples
    >>> texts, labels, len(examples), examples.y
    (['good', 'bad'], ['pos', 'neg'], 2, ['pos', 'neg'])
    """

    @property
    def x(self):
        """The examples (texts, or sentences as word lists)."""
        return getattr(self, self._PARALLEL[0])

    @property
    def y(self):
        """Their labels."""
        return getattr(self, self._PARALLEL[1])

    def __iter__(self):
        return iter((self.x, self.y))


def _checked_count(count, method):
    # A negative count would slice from the end (sample(-1): all but one example), in silence.
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
        raise ValueError(f"{method} takes a whole number of examples, 0 or more; got {count!r}.")
    return int(count)
