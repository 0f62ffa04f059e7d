"""Statistics gate: robust outlier detection with the modified z-score (Iglewicz & Hoaglin).

M_i = 0.6745 (x_i - median) / MAD; |M_i| > 3.5 is an outlier. When MAD is 0 (more than half
the values identical) the mean absolute deviation stands in: M_i = (x_i - median) / (1.253314 *
MeanAD). When both are 0 every value equals the median and nothing is an outlier.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_GROUP_SIZE = 5
THRESHOLD = 3.5


@dataclass(frozen=True)
class Summary:
    median: float
    n: int
    mad: float


def summarize(values: Sequence[float]) -> Summary:
    """Median, count and median absolute deviation (unscaled) of `values` (non-empty)."""
    arr = np.asarray(values, dtype=float)
    median = float(np.median(arr))
    return Summary(median=median, n=len(arr), mad=float(np.median(np.abs(arr - median))))


def modified_z_scores(values: Sequence[float]) -> list[float]:
    arr = np.asarray(values, dtype=float)
    median = np.median(arr)
    deviations = arr - median
    mad = float(np.median(np.abs(deviations)))
    if mad > 0:
        return [float(z) for z in 0.6745 * deviations / mad]
    mean_ad = float(np.mean(np.abs(deviations)))
    if mean_ad > 0:
        return [float(z) for z in deviations / (1.253314 * mean_ad)]
    return [0.0] * len(arr)


def outlier_flags(values: Sequence[float]) -> list[float | None]:
    """For each value, its modified z-score if it is an outlier, else None.

    Groups smaller than MIN_GROUP_SIZE flag nothing: too few points to call anything unusual.
    """
    if len(values) < MIN_GROUP_SIZE:
        return [None] * len(values)
    return [z if abs(z) > THRESHOLD else None for z in modified_z_scores(values)]
