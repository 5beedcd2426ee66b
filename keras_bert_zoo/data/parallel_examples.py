"""Slicing for example sets held as parallel lists (texts and labels, ...)."""

import dataclasses
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
        return self._take(range(min(count, len(self))))

    def split(self, fraction, seed=0):
        """Split off `fraction` of a seeded shuffle: `(rest, held_out)`."""
        order = list(range(len(self)))
        random.Random(seed).shuffle(order)
        cut = len(order) - int(round(len(order) * fraction))
        return self._take(order[:cut]), self._take(order[cut:])
