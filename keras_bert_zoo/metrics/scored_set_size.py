"""A warning when a held-out set is too small for its scores to mean anything."""

import warnings


def warn_if_too_few(count, classes=1, noun="example"):
    """Warn once (per scoring) when `count` scored items are one alone, or fewer than the `classes` that macro
    scores average over (a class with no example scores 0): the figures are still returned."""
    if count >= max(classes, 2):
        return
    fewer = f", fewer than the {classes} classes" if count < classes else ""
    warnings.warn(f"Scoring {count} {noun}{'' if count == 1 else 's'}{fewer}: scores on so few say little about "
                  "the model; score a larger held-out set.", stacklevel=3)
