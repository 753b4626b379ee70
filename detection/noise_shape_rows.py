"""``noise_shape`` of each row of a batch of equal-length histories at once: the same rolling
median, MAD and standard deviation per row, in a few calls for the whole batch.

The rolling median of every row is one 1-D median filter over the rows laid end to end, each
padded at both ends with half a window of copies of its end values: a point's window then holds
exactly the values ``mode="nearest"`` gives it on its row alone, and a median is the same order
statistic of the same values whichever way the filter walks to it. Rows with a NaN are left to
``noise_shape`` itself (a NaN has no rank).

Complexity: O(rows × n × log SMOOTH_POINTS) for the filter, O(rows × n) for the rest.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import median_filter

from regbot.detection.noise_shape import (
    HIGH_RATIO,
    LOW_RATIO,
    MAD_NORMAL,
    MIN_POINTS,
    SMOOTH_POINTS,
    NoiseShape,
    noise_shape,
)
from regbot.detection.row_stats import row_mads

__all__ = ["noise_shapes", "smooth_residuals"]


def smooth_residuals(values: np.ndarray) -> np.ndarray:
    """(rows, n) ``noise_shape.smooth_residual`` of each row of ``values`` (rows, n ≥ 1), rows
    free of NaN."""
    v = np.asarray(values, dtype=np.float64)
    rows, n = v.shape
    size = min(SMOOTH_POINTS, n | 1)
    half = size // 2
    padded = np.concatenate(
        (np.repeat(v[:, :1], half, axis=1), v, np.repeat(v[:, -1:], half, axis=1)), axis=1
    )
    filtered = median_filter(padded.ravel(), size=size, mode="nearest")
    residual: np.ndarray = v - filtered.reshape(rows, n + 2 * half)[:, half : half + n]
    return residual


def noise_shapes(
    values: np.ndarray, *, low: float = LOW_RATIO, high: float = HIGH_RATIO
) -> list[NoiseShape]:
    """``noise_shape(row, low=low, high=high)`` of each row of ``values`` (rows, n)."""
    v = np.asarray(values, dtype=np.float64)
    rows, n = v.shape
    if n < MIN_POINTS:
        return [NoiseShape(True, None, "mean")] * rows
    finite = np.count_nonzero(np.isnan(v), axis=1) == 0
    flags: list[bool] = finite.tolist()
    shapes: list[NoiseShape] = [
        noise_shape(v[row], low=low, high=high) for row in np.flatnonzero(~finite).tolist()
    ]
    found = iter(shapes)
    if not finite.all():
        v = v[finite]
    residual = smooth_residuals(v)
    mads = row_mads(residual).tolist()
    sds = residual.std(axis=1).tolist()
    measured = iter(zip(mads, sds))
    out = []
    for ok in flags:
        if not ok:
            out.append(next(found))
            continue
        mad, sd = next(measured)
        if mad <= 0.0:
            normal = sd == 0.0
            out.append(NoiseShape(normal, None, "mean" if normal else "median"))
            continue
        ratio = sd / (MAD_NORMAL * mad)
        normal = low <= ratio <= high
        out.append(NoiseShape(normal, ratio, "mean" if normal else "median"))
    return out
