"""Brunner–Munzel's test as ``scipy.stats.brunnermunzel(x, y, alternative="greater")``
(t distribution) computes it — its expressions, in its order, on the ranks scipy's ``rankdata``
gives — without the argument handling of its decorators, which costs more than the test on a
few hundred points. Samples with NaN, without points or not 1-D go to scipy itself.

The three rankings (the pooled sample's and each sample's own) come from one sort of the pooled
sample: each sample's points keep their order in it. A rank is scipy's average rank, the mean of
the 1-based positions of a run of equal values; every such rank is a whole or half number, held
exactly, so it is the same float however it is computed.

Complexity: O(n log n) (one sort).
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
    if x.ndim != 1 or y.ndim != 1 or not x.size or not y.size or _has_nan(x) or _has_nan(y):
        return float(stats.brunnermunzel(x, y, alternative="greater").pvalue)
    nx = x.shape[-1]
    ny = y.shape[-1]
    rankc, rankx, ranky = pooled_and_own_ranks(x, y)
    rankcx = rankc[..., 0:nx]
    rankcy = rankc[..., nx : nx + ny]
    rankcx_mean = np.mean(rankcx, axis=-1, keepdims=True)
    rankcy_mean = np.mean(rankcy, axis=-1, keepdims=True)
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


def pooled_and_own_ranks(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """``scipy.stats.rankdata`` of ``concat(x, y)``, of ``x`` and of ``y`` (1-D, no NaN), from
    one stable sort of the pooled sample."""
    nx = x.size
    pooled = np.concatenate((x, y))
    order = np.argsort(pooled, kind="stable")
    ordered = pooled[order]
    from_x = order < nx
    return (
        _average_ranks(ordered, order),
        _average_ranks(ordered[from_x], order[from_x]),
        _average_ranks(ordered[~from_x], order[~from_x] - nx),
    )


def _average_ranks(ordered: np.ndarray, where: np.ndarray) -> np.ndarray:
    """Average ranks of a sample given ascending as ``ordered``, the i-th of them from position
    ``where[i]`` of the sample: a run of equal values starting at (0-based) position s with c
    values all rank s + 1 + (c − 1)/2."""
    n = ordered.size
    starts_run = np.empty(n, bool)
    starts_run[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts_run[1:])
    starts = np.flatnonzero(starts_run)
    counts = np.empty_like(starts)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1])
    counts[-1] = n - starts[-1]
    ranks = np.empty(n)
    ranks[where] = np.repeat((starts + 1) + (counts - 1) / 2, counts)
    return ranks


def _has_nan(v: np.ndarray) -> bool:
    return bool(np.isnan(v).any())
