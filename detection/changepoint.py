"""Change-point detector (FBDetect §5.2.1): CUSUM and EM iterated to the most likely single mean
shift, then the likelihood-ratio chi-squared test. Vectorised over a whole batch of series.

For each series the iteration alternates two steps until the change point stops moving or the
budget (``max_iterations``) runs out, as Kats' CUSUMDetector (the implementation FBDetect's
reference [3] describes) does:

* M-step: given the change point k, the means before (``mu0``) and after (``mu1``);
* E-step: the new k is where the CUSUM of ``x - (mu0 + mu1) / 2`` is lowest (an increase makes
  the CUSUM fall before the change and rise after it).

The start is the CUSUM of ``x - mean(x)``. The test compares H0 (one mean) with H1 (one change
point) by the log-likelihood ratio of two Gaussian models, which in closed form is
``LLR = n·log(σ̃²/s²) + 2`` with σ̃² the variance under H0 and s² = RSS₁/(n−2) the pooled
variance under H1; ``p = P(χ²₂ > LLR)`` and the change is significant when ``p < alpha``.

Vectorisation: prefix sums of the (row-centred) values make every mean, CUSUM and RSS an O(1)
lookup, so one iteration over a chunk of rows is a few (rows × points) array operations;
ragged rows are handled by their lengths, and the change point may be confined to a per-row
index range (the analysis window). O(iterations × rows × points) time, O(chunk × points) memory.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.stats import chi2

from regbot.detection.model import ChangePoints, ChangePointSettings

CHUNK_ROWS = 2048

Direction = Literal["increase", "decrease", "both"]


def detect_change_points(
    values: np.ndarray,
    lengths: np.ndarray,
    settings: ChangePointSettings = ChangePointSettings(),
    *,
    search_start: np.ndarray | None = None,
    search_end: np.ndarray | None = None,
    direction: Direction = "increase",
) -> ChangePoints:
    """The most likely change point of every row, and its likelihood-ratio test.

    ``values`` is (n, T) with row i valid in ``[:lengths[i]]``; ``search_start``/``search_end``
    (per row, default the whole row) bound the change index k (first point after the change),
    which must also leave ``min_points_each_side`` points on both sides. ``direction`` chooses
    increases (regressions of oriented series), decreases, or both (the larger LLR wins, for
    general segmentation). Rows that cannot be tested get index -1 and p-value 1.
    """
    values = np.asarray(values, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    start = np.zeros(n, np.int64) if search_start is None else np.asarray(search_start, np.int64)
    end = lengths.copy() if search_end is None else np.asarray(search_end, np.int64)
    parts = [
        _detect_chunk(values[lo:hi], lengths[lo:hi], start[lo:hi], end[lo:hi], settings, direction)
        for lo, hi in _chunks(n)
    ]
    if not parts:
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
        return ChangePoints(empty_i, empty_f, empty_f, empty_f, empty_f, empty_i, np.zeros(0, bool))
    return ChangePoints(*(np.concatenate(column) for column in zip(*parts)))


def _chunks(n: int) -> list[tuple[int, int]]:
    return [(lo, min(n, lo + CHUNK_ROWS)) for lo in range(0, n, CHUNK_ROWS)]


def _detect_chunk(
    values: np.ndarray,
    lengths: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    settings: ChangePointSettings,
    direction: Direction,
) -> tuple[np.ndarray, ...]:
    if direction == "both":
        up = _detect_chunk(values, lengths, start, end, settings, "increase")
        down = _detect_chunk(values, lengths, start, end, settings, "decrease")
        take_down = down[3] > up[3]
        return tuple(np.where(take_down, d, u) for u, d in zip(up, down))
    m, width = values.shape
    positions = np.arange(width + 1)
    valid = positions[None, :width] < lengths[:, None]
    safe_len = np.maximum(lengths, 1)
    row_mean = np.where(valid, values, 0.0).sum(axis=1) / safe_len
    centred = np.where(valid, values - row_mean[:, None], 0.0)
    if direction == "decrease":
        centred = -centred
    # prefix sums with a leading zero: P1[:, k] = sum of the first k points
    p1 = np.zeros((m, width + 1))
    np.cumsum(centred, axis=1, out=p1[:, 1:])
    p2 = np.zeros((m, width + 1))
    np.cumsum(centred * centred, axis=1, out=p2[:, 1:])
    side = settings.min_points_each_side
    lo = np.maximum(start, side)
    hi = np.minimum(end, lengths - side + 1)  # k < hi
    allowed = (positions[None, :] >= lo[:, None]) & (positions[None, :] < hi[:, None])
    testable = allowed.any(axis=1)
    rows = np.arange(m)
    total = p1[rows, lengths]

    def lowest_cusum(level: np.ndarray) -> np.ndarray:
        score = p1 - positions[None, :] * level[:, None]
        return np.where(allowed, score, np.inf).argmin(axis=1)

    k = lowest_cusum(total / safe_len)
    iterations = np.zeros(m, np.int64)
    moving = testable.copy()
    for _ in range(settings.max_iterations):
        if not moving.any():
            break
        iterations += moving
        kk = np.maximum(k, 1)
        mu0 = p1[rows, kk] / kk
        mu1 = (total - p1[rows, kk]) / np.maximum(lengths - kk, 1)
        new_k = lowest_cusum((mu0 + mu1) / 2)
        moved = new_k != k
        k = np.where(moving, new_k, k)
        moving &= moved
    stable = testable & ~moving

    kk = np.clip(k, 1, np.maximum(lengths - 1, 1))
    n_before, n_after = kk.astype(np.float64), np.maximum(lengths - kk, 1).astype(np.float64)
    sum_before, sum_after = p1[rows, kk], total - p1[rows, kk]
    sq_before, sq_after = p2[rows, kk], p2[rows, lengths] - p2[rows, kk]
    mu0, mu1 = sum_before / n_before, sum_after / n_after
    rss1 = (sq_before - sum_before * mu0) + (sq_after - sum_after * mu1)
    var0 = (p2[rows, lengths] - total * total / safe_len) / safe_len  # σ̃², population variance
    llr = _log_likelihood_ratio(lengths.astype(np.float64), var0, np.maximum(rss1, 0.0))
    llr = np.where(testable, llr, 0.0)
    p_value = np.where(testable, chi2.sf(llr, 2), 1.0)
    sign = -1.0 if direction == "decrease" else 1.0
    mean_before = row_mean + sign * mu0
    mean_after = row_mean + sign * mu1
    index = np.where(testable, k, -1)
    return index, mean_before, mean_after, llr, p_value, iterations, stable


def _log_likelihood_ratio(n: np.ndarray, var0: np.ndarray, rss1: np.ndarray) -> np.ndarray:
    """-2·log(L0/L1) for Gaussian models: ``n·log(σ̃²/s²) + 2`` with ``s² = rss1/(n-2)``.

    A constant series has no change (LLR 0). A perfect step (s² = 0 with σ̃² > 0) takes
    s = 0.01·σ̃, as Kats does, which makes it decisively significant rather than infinite.
    The closed form dips just below 0 when the split explains nothing (s² > σ̃²); such values
    are clamped to 0 (p = 1).
    """
    scale = np.where(n > 2, rss1 / np.maximum(n - 2, 1), 0.0)
    perfect = (scale <= 0) & (var0 > 0)
    scale = np.where(perfect, var0 * 1e-4, scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = np.where(
            perfect,
            n * np.log(1e4) + n,  # the residual term vanishes when s is substituted
            n * np.log(var0 / scale) + 2.0,
        )
    return np.where((var0 > 0) & np.isfinite(llr), np.maximum(llr, 0.0), 0.0)
