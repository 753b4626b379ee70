"""Brunner–Munzel's test as ``scipy.stats.brunnermunzel(x, y, alternative="greater")``
(t distribution) computes it — its expressions, in its order, on scipy's own ranks — without the
argument handling of its decorators, which costs more than the test on a few hundred points.
Samples with NaN or without points go to scipy itself.

Complexity: O(n log n) (three rankings).
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

__all__ = ["brunner_munzel_greater"]


def brunner_munzel_greater(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided p-value that ``x`` tends to exceed ``y``: ``float(brunnermunzel(x, y,
    alternative="greater").pvalue)`` (NaN where the degrees of freedom are 0/0)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size == 0 or y.size == 0 or np.isnan(x).any() or np.isnan(y).any():
        return float(stats.brunnermunzel(x, y, alternative="greater").pvalue)
    nx = x.shape[-1]
    ny = y.shape[-1]
    rankc = stats.rankdata(np.concat((x, y), axis=-1), axis=-1)
    rankcx = rankc[..., 0:nx]
    rankcy = rankc[..., nx : nx + ny]
    rankcx_mean = np.mean(rankcx, axis=-1, keepdims=True)
    rankcy_mean = np.mean(rankcy, axis=-1, keepdims=True)
    rankx = stats.rankdata(x, axis=-1)
    ranky = stats.rankdata(y, axis=-1)
    rankx_mean = np.mean(rankx, axis=-1, keepdims=True)
    ranky_mean = np.mean(ranky, axis=-1, keepdims=True)
    temp_x = rankcx - rankx - rankcx_mean + rankx_mean
    sx = np.vecdot(temp_x, temp_x)  # over the last axis
    sx /= nx - 1
    temp_y = rankcy - ranky - rankcy_mean + ranky_mean
    sy = np.vecdot(temp_y, temp_y)
    sy /= ny - 1
    wbfn = nx * ny * (np.squeeze(rankcy_mean, axis=-1) - np.squeeze(rankcx_mean, axis=-1))
    wbfn /= (nx + ny) * np.sqrt(nx * sx + ny * sy)
    df_numer = np.pow(nx * sx + ny * sy, 2.0)
    df_denom = np.pow(nx * sx, 2.0) / (nx - 1)
    df_denom += np.pow(ny * sy, 2.0) / (ny - 1)
    df = df_numer / df_denom
    # scipy: the t distribution's sf at −wbfn, stdtr(df, −(−wbfn)); negation is exact
    return float(special.stdtr(df, wbfn))
