"""The median and the median absolute deviation of a 1-D sample as ``numpy.median`` computes
them (the same partition, the same mean of the two middle values, NaN when the sample holds one),
without its generic-axis machinery, which costs more than the partition on short samples.

Complexity: O(n) (one partition).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mad", "median"]


def median(values: np.ndarray) -> float:
    """``float(np.median(values))`` of a 1-D array."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n == 0:
        return float(np.median(v))  # numpy's NaN and its warning
    half = n // 2
    if n % 2:
        part = np.partition(v, [half, n - 1])
        middle = part[half]
    else:
        part = np.partition(v, [half - 1, half, n - 1])
        middle = (part[half - 1] + part[half]) / 2  # np.mean of the two: their sum over 2
    if math.isnan(part[-1]):
        return math.nan
    return float(middle)


def mad(values: np.ndarray) -> float:
    """``float(np.median(np.abs(values - np.median(values))))`` of a 1-D array."""
    v = np.asarray(values, dtype=np.float64)
    return median(np.abs(v - median(v)))
