"""``noise_shape`` of each row of a batch of equal-length histories at once: the same rolling
median (``noise_shape.smooth_residuals``: one filter pass over the rows laid end to end), MAD
and standard deviation per row, in a few calls for the whole batch. Rows with a NaN are left to
``noise_shape`` itself (a NaN has no rank).

Complexity: O(rows × n × log SMOOTH_POINTS) for the filter, O(rows × n) for the rest.
"""

from __future__ import annotations

import numpy as np

from regbot.detection.noise_shape import (
    HIGH_RATIO,
    LOW_RATIO,
    MAD_NORMAL,
    MIN_POINTS,
    NoiseShape,
    noise_shape,
    smooth_residuals,
)
from regbot.detection.row_stats import row_mads

__all__ = ["noise_shapes"]


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
    residual = np.stack(smooth_residuals(list(v)))
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
