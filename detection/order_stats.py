"""The median, the median absolute deviation and a percentile of a 1-D sample as
``numpy.median`` and ``numpy.percentile`` (method "linear") compute them — the same partition,
the same mean of the two middle values, the same interpolation, NaN when the sample holds one —
without their generic-axis machinery, which costs more than the partition on short samples.

Complexity: O(n) (one partition).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mad", "median", "percentile", "percentile_positions"]


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


def percentile(values: np.ndarray, q: float) -> float:
    """``float(np.percentile(values, q))`` of a non-empty 1-D array, ``0 <= q <= 100``: the
    order statistics around the virtual index (n − 1)·q/100 and numpy's interpolation between
    them (from the lower one below a fraction of ½, from the upper one from ½ on)."""
    v = np.asarray(values, dtype=np.float64)
    index, below, above, kth = percentile_positions(v.size, q)
    part = np.partition(v, kth)
    if math.isnan(part[-1]):
        return math.nan
    a, b = float(part[below]), float(part[above])
    gamma = index - below
    diff = b - a
    if gamma >= 0.5:
        return b - diff * (1 - gamma)
    return a + diff * gamma


def percentile_positions(n: int, q: float) -> tuple[float, int, int, list[int]]:
    """Where numpy's "linear" percentile ``q`` of ``n`` values reads: the virtual index
    (n − 1)·q/100, the order statistics below and above it (-1: the last), and the ``kth`` to
    partition at (those, the first and the last, whose NaN check follows numpy's)."""
    index = (n - 1) * (q / 100)
    below = math.floor(index)
    above = below + 1
    if index >= n - 1:
        below = above = -1
    elif index < 0:
        below = above = 0
    return index, below, above, sorted({0, n - 1, below % n, above % n})
