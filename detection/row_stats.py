"""Order statistics of each row of a 2-D sample, as ``order_stats`` computes them on the row
alone: the same partition (numpy's introselect, run on each row with the same ``kth``), the
same mean of the two middle values, the same interpolation, NaN for a row that holds one. A
batch of equal-length samples pays one call instead of one per sample.

Also ``numpy.median`` of each row in a working copy (``row_medians_in_place``) and
``numpy.nanmedian`` of each row (``nan_row_medians``) with the same bits, without numpy's
extra copies or its per-row loop.

Complexity: O(rows × n) (one partition of each row); ``nan_row_medians`` O(rows × n log n).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from regbot.detection.order_stats import percentile_positions

__all__ = ["nan_row_medians", "row_mads", "row_medians", "row_medians_in_place", "row_percentiles"]

FloatArray = npt.NDArray[np.float64]


def row_medians(values: np.ndarray) -> FloatArray:
    """(rows,) ``order_stats.median`` of each row of ``values`` (rows, n ≥ 1)."""
    x = np.asarray(values, dtype=np.float64)
    n = x.shape[1]
    half = n // 2
    if n % 2:
        part = np.partition(x, [half, n - 1], axis=1)
        middle: FloatArray = part[:, half]
    else:
        part = np.partition(x, [half - 1, half, n - 1], axis=1)
        middle = (part[:, half - 1] + part[:, half]) / 2
    return np.where(np.isnan(part[:, -1]), math.nan, middle)


def row_mads(values: np.ndarray) -> FloatArray:
    """(rows,) ``order_stats.mad`` of each row of ``values`` (rows, n ≥ 1).

    The cheapest selection does here: an order statistic is one value whichever algorithm
    finds it, but for the sign of a zero (-0.0 and 0.0 compare equal), and the MAD cannot show
    that sign — its inner median is subtracted (``x − (±0)`` is ``x`` but for a zero ``x``,
    whose absolute value is 0.0 either way) and its outer median is of absolute values."""
    x = np.asarray(values, dtype=np.float64)
    return _row_middles(np.abs(x - _row_middles(x)[:, None]))


def _row_middles(x: FloatArray) -> FloatArray:
    """Each row's median, up to the sign of a zero: one partition at the upper middle, the
    lower middle (even n) the largest value before it; NaN for a row holding one."""
    n = x.shape[1]
    half = n // 2
    part = np.partition(x, half, axis=1)
    middle: FloatArray = part[:, half]
    if not n % 2:
        middle = (part[:, :half].max(axis=1) + middle) / 2
    return np.where(np.isnan(x).any(axis=1), math.nan, middle)


def row_percentiles(values: np.ndarray, q: float) -> FloatArray:
    """(rows,) ``order_stats.percentile(row, q)`` of each row of ``values`` (rows, n ≥ 1),
    ``0 <= q <= 100``."""
    x = np.asarray(values, dtype=np.float64)
    index, below, above, kth = percentile_positions(x.shape[1], q)
    part = np.partition(x, kth, axis=1)
    a, b = part[:, below], part[:, above]
    gamma = index - below
    diff = b - a
    out: FloatArray = b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma
    return np.where(np.isnan(part[:, -1]), math.nan, out)


def row_medians_in_place(work: np.ndarray) -> np.ndarray:
    """``np.median(work, axis=1)`` of a NaN-free 2-D array, reordering each row of ``work``: one
    partition at the upper middle; for an even length the lower middle is the largest value
    left of it."""
    n = work.shape[1]
    half = n // 2
    work.partition(half, axis=1)
    upper = work[:, half].copy()
    if n % 2:
        return upper
    lower = work[:, :half].max(axis=1)
    return np.asarray((lower + upper) / 2)


def nan_row_medians(values: np.ndarray) -> np.ndarray:
    """``np.nanmedian(values, axis=1)``: each row's median over its non-NaN values, NaN for a
    row without any (numpy's all-NaN warning is not raised). Rows are sorted (NaN last) and
    the middle values read at each row's own count."""
    a = np.sort(np.asarray(values, dtype=np.float64), axis=1)
    count = a.shape[1] - np.isnan(a).sum(axis=1)
    rows = np.arange(a.shape[0])
    lo = a[rows, np.maximum((count - 1) // 2, 0)] if a.shape[1] else np.full(len(rows), np.nan)
    hi = a[rows, np.minimum(count // 2, max(a.shape[1] - 1, 0))] if a.shape[1] else lo
    middle = np.where(count % 2 == 1, hi, (lo + hi) / 2)
    return np.where(count > 0, middle, np.nan)
