"""Median, min and max of per-round figures and of per-round ratios."""

import statistics


def summary(values):
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)}


def round_ratios(numerators, denominators):
    """Ratios of figures taken in the same round, so that load shared by the
    round cancels: `summary` of `a[i] / b[i]`."""
    return summary([a / b for a, b in zip(numerators, denominators)])
