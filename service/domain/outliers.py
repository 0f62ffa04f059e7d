"""Statistics gate: robust outlier detection with the modified z-score (Iglewicz & Hoaglin).

M_i = 0.6745 (x_i - median) / MAD; |M_i| > 3.5 is an outlier. When MAD is 0 (more than half
the values identical) the mean absolute deviation stands in: M_i = (x_i - median) / (1.253314 *
MeanAD). When both are 0 every value equals the median and nothing is an outlier.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from service.domain.vocabulary import Measurement

MIN_GROUP_SIZE = 5
THRESHOLD = 3.5


@dataclass(frozen=True)
class GroupStats:
    """Robust statistics of a group: what a new value is judged against."""

    n: int
    median: float
    mad: float
    mean_ad: float


def median_of_sorted(ordered: Sequence[float]) -> float:
    """The median of already sorted values: the middle one, or the mean of the two middle ones
    (bit for bit what numpy.median returns; it costs ~20 us per call on a short list, and the
    statistics step takes several medians per group)."""
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def summarize(values: Sequence[float]) -> Measurement:
    """Median, count and median absolute deviation (unscaled) of `values` (non-empty)."""
    ordered = sorted(map(float, values))
    median = median_of_sorted(ordered)
    mad = median_of_sorted(sorted([abs(v - median) for v in ordered]))
    return Measurement(median=median, n=len(ordered), mad=mad)


def group_stats(values: Sequence[float]) -> GroupStats:
    if not values:
        return GroupStats(0, 0.0, 0.0, 0.0)
    floats = [float(v) for v in values]
    median = median_of_sorted(sorted(floats))
    deviations = [abs(v - median) for v in floats]  # in the given order: np.mean sums pairwise
    # Spreads below float rounding of the median are rounding, not spread: call them 0.
    noise_floor = 1e-9 * abs(median)
    mad, mean_ad = median_of_sorted(sorted(deviations)), float(np.mean(deviations))
    return GroupStats(
        len(floats),
        median,
        mad if mad > noise_floor else 0.0,
        mean_ad if mean_ad > noise_floor else 0.0,
    )


def z_score(value: float, stats: GroupStats) -> float:
    deviation = value - stats.median
    if stats.mad > 0:
        return 0.6745 * deviation / stats.mad
    if stats.mean_ad > 0:
        return deviation / (1.253314 * stats.mean_ad)
    return 0.0


def modified_z_scores(values: Sequence[float]) -> list[float]:
    stats = group_stats(values)
    return [z_score(v, stats) for v in values]


def flag(value: float, stats: GroupStats) -> float | None:
    """The value's modified z-score if it is an outlier of a group with `stats`, else None."""
    if stats.n < MIN_GROUP_SIZE:
        return None
    z = z_score(value, stats)
    return z if abs(z) > THRESHOLD else None


def outlier_flags(values: Sequence[float]) -> list[float | None]:
    """For each value, its modified z-score if it is an outlier, else None.

    Groups smaller than MIN_GROUP_SIZE flag nothing: too few points to call anything unusual.
    """
    stats = group_stats(values)
    return [flag(v, stats) for v in values]
