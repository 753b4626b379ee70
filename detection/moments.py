"""The mean, variance and standard deviation of a 1-D sample as ``ndarray.mean``, ``var`` and
``std`` compute them — the same pairwise sum, divided by the count; the deviations from that
mean squared and summed the same way, divided by the degrees of freedom; the square root —
without their generic-axis machinery, which costs more than the sums on a few hundred points.
A sample that is empty, not 1-D, or without degrees of freedom goes to numpy itself (its NaN
and its warning).

Complexity: O(n) (one or two sums).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mean", "std", "var"]


def mean(values: np.ndarray) -> float:
    """``float(values.mean())`` of a 1-D float64 array."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or not v.size:
        return float(v.mean())
    return float(np.add.reduce(v)) / v.size


def var(values: np.ndarray, ddof: int = 0) -> float:
    """``float(values.var(ddof=ddof))`` of a 1-D float64 array."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if v.ndim != 1 or not n or n - ddof <= 0:
        return float(v.var(ddof=ddof))
    deviations = v - np.add.reduce(v) / n
    np.square(deviations, out=deviations)
    return float(np.add.reduce(deviations)) / (n - ddof)


def std(values: np.ndarray, ddof: int = 0) -> float:
    """``float(values.std(ddof=ddof))`` of a 1-D float64 array."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or not v.size or v.size - ddof <= 0:
        return float(v.std(ddof=ddof))
    return math.sqrt(var(v, ddof))
