"""Went-away detector's trend terms (FBDetect §5.2.2): SAX letters for NewPattern, and the
Mann–Kendall test with a Theil–Sen line for LastingTrend.

Complexity: SAX is linear; Mann–Kendall O(n²) vectorised (``kendall``; scipy's O(n log n)
count past ``kendall.PAIRWISE_MAX`` points); Theil–Sen (O(m²) in its input) sees at most
``THEIL_SEN_MAX_POINTS`` points. The ``*_rows``/``window_lines`` forms do the same for each
row of a batch of windows on one time axis, each row's numbers those of the one-window form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy import stats

from regbot.detection.kendall import PAIRWISE_MAX, kendall_test, mann_kendall_counts, tie_terms
from regbot.detection.noise_shape import Statistic, level_of
from regbot.detection.row_stats import row_medians

__all__ = [
    "MannKendall",
    "WindowLine",
    "mann_kendall",
    "sax_letters",
    "sax_letters_rows",
    "theil_sen",
    "valid_letters",
    "valid_letters_rows",
    "window_line",
    "window_lines",
]

THEIL_SEN_MAX_POINTS = 500
PAIR_BLOCK = 1 << 21  # pair differences held at once by ``window_lines`` (16 MiB)


def sax_letters(values: np.ndarray, lo: float, hi: float, n_buckets: int) -> np.ndarray:
    """SAX letter (0..n_buckets-1) of each value: equal-width buckets over ``[lo, hi]``.

    Bucket ``k`` is ``[lo + k·w, lo + (k+1)·w)`` with ``w = (hi - lo) / n_buckets``; the last
    bucket also holds ``hi``, and values outside ``[lo, hi]`` are clipped into the first or last
    bucket. A degenerate range (``hi <= lo``, e.g. a constant series) gives all letters 0.
    Shape of ``values`` is kept; int64 result. O(n).
    """
    v = np.asarray(values, dtype=np.float64)
    if not hi > lo:
        return np.zeros(v.shape, dtype=np.int64)
    width = (hi - lo) / n_buckets
    return np.clip(np.floor((v - lo) / width), 0, n_buckets - 1).astype(np.int64)


def valid_letters(letters: np.ndarray, n_buckets: int, share: float) -> np.ndarray:
    """(n_buckets,) bool: letter ``k`` is valid when it holds at least ``share`` of ``letters``
    (and at least one point). No letters → nothing is valid. O(n + n_buckets)."""
    ls = np.asarray(letters, dtype=np.int64).ravel()
    if ls.size == 0:
        return np.zeros(n_buckets, dtype=bool)
    counts = np.bincount(ls, minlength=n_buckets)[:n_buckets]
    # The relative slack keeps "exactly X%" valid despite rounding in share × size.
    return (counts > 0) & (counts >= share * ls.size * (1.0 - 1e-12))


@dataclass(frozen=True, slots=True)
class MannKendall:
    """Mann–Kendall trend test of values against time order: ``s`` is MK's S (concordant minus
    discordant pairs), ``tau`` Kendall's tau-b, ``p_value`` two-sided; ``direction`` is the sign
    of ``tau`` when ``p_value < alpha``, else "none"."""

    s: int
    tau: float
    p_value: float
    direction: Literal["up", "down", "none"]


def mann_kendall(values: np.ndarray, alpha: float) -> MannKendall:
    """Mann–Kendall as Kendall's tau of ``values`` against their index: scipy's numbers
    (``kendall``: the same integers and expressions, without scipy's per-call overhead).

    scipy's test uses the exact null distribution for small tie-free samples and otherwise the
    normal approximation with MK's tie-corrected variance of S (no continuity correction).
    S is recovered from tau-b: ``S = tau · sqrt(n0 · (n0 - n_ties))``, time having no ties.
    Fewer than 3 points or a constant series: no trend (S = 0, tau = 0, p = 1).
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n < 3:
        return MannKendall(0, 0.0, 1.0, "none")
    spread = np.ptp(v)
    if spread == 0:
        return MannKendall(0, 0.0, 1.0, "none")
    if n > PAIRWISE_MAX or not np.isfinite(spread):  # scipy's own count (and its NaN handling)
        res = stats.kendalltau(np.arange(n), v)
        tau, p = float(res.statistic), float(res.pvalue)
        n_ties = tie_terms(v)[0]
    else:
        s_exact, n_ties, tie_variance = mann_kendall_counts(v)
        test = kendall_test(n, s_exact, n_ties, tie_variance)
        tau, p = test.tau, test.p_value
    return _mann_kendall(n, n_ties, tau, p, alpha)


def _mann_kendall(n: int, n_ties: int, tau: float, p: float, alpha: float) -> MannKendall:
    n0 = n * (n - 1) / 2
    s = int(round(tau * math.sqrt(n0 * (n0 - n_ties))))
    direction: Literal["up", "down", "none"] = "none"
    if p < alpha:
        direction = "up" if tau > 0 else "down"
    return MannKendall(s, tau, p, direction)


def theil_sen(ys: np.ndarray, xs: np.ndarray) -> tuple[float, float]:
    """(slope, intercept) of Theil–Sen as ``scipy.stats.theilslopes`` computes them (median of
    the pairwise slopes; intercept median(y) − slope · median(x)), without its confidence
    interval. O(m²)."""
    y = np.asarray(ys, dtype=np.float64)
    x = np.asarray(xs, dtype=np.float64)
    deltax = x[:, np.newaxis] - x
    deltay = y[:, np.newaxis] - y
    ahead = deltax > 0
    slopes = deltay[ahead] / deltax[ahead]
    slope = np.median(slopes)
    return float(slope), float(np.median(y) - slope * np.median(x))


@dataclass(frozen=True, slots=True)
class WindowLine:
    """A window's level line: Theil–Sen when Mann–Kendall finds a trend, else flat at its level
    (mean or median, by the noise shape)."""

    name: str
    trend: MannKendall
    slope_per_s: float
    intercept: float  # level at the window's first point
    end_level: float  # the line at the window's last point
    points: int
    theil_sen_points: int


def window_line(
    name: str, times_s: np.ndarray, values: np.ndarray, alpha: float, statistic: Statistic
) -> WindowLine:
    trend = mann_kendall(values, alpha)
    x = times_s - times_s[0]
    used = 0
    if trend.direction == "none":
        slope, intercept = 0.0, level_of(values, statistic)
    else:
        xs, ys = x, values
        if x.size > THEIL_SEN_MAX_POINTS:  # evenly strided subsample keeps Theil–Sen O(1) here
            idx = np.unique(
                np.linspace(0, x.size - 1, THEIL_SEN_MAX_POINTS).round().astype(np.int64)
            )
            xs, ys = x[idx], values[idx]
        slope, intercept = theil_sen(ys, xs)
        used = int(xs.size)
    return WindowLine(name, trend, slope, intercept, intercept + slope * float(x[-1]), x.size, used)


def sax_letters_rows(
    values: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_buckets: int
) -> np.ndarray:
    """``sax_letters(row, lo[row], hi[row], n_buckets)`` of each row of ``values`` (rows, n)."""
    v = np.asarray(values, dtype=np.float64)
    spread = hi > lo
    width = (hi - lo) / n_buckets
    with np.errstate(invalid="ignore", divide="ignore"):
        letters = np.clip(np.floor((v - lo[:, None]) / width[:, None]), 0, n_buckets - 1)
    return np.where(spread[:, None], letters, 0.0).astype(np.int64)


def valid_letters_rows(letters: np.ndarray, n_buckets: int, share: float) -> np.ndarray:
    """(rows, n_buckets) ``valid_letters`` of each row of ``letters`` (rows, n), letters in
    ``0 .. n_buckets - 1``."""
    rows, n = letters.shape
    if n == 0:
        return np.zeros((rows, n_buckets), dtype=bool)
    index = (letters + n_buckets * np.arange(rows)[:, None]).ravel()
    counts = np.bincount(index, minlength=rows * n_buckets).reshape(rows, n_buckets)
    valid: np.ndarray = (counts > 0) & (counts >= share * n * (1.0 - 1e-12))
    return valid


@lru_cache(maxsize=64)
def _pair_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j), i < j, of ``n`` points, in ``mann_kendall_counts``' order."""
    i, j = np.triu_indices(n, 1)
    return i, j


def _mann_kendall_rows(values: np.ndarray, alpha: float) -> list[MannKendall]:
    """``mann_kendall`` of each row of ``values`` (rows, n): the pairs' signs of a block of rows
    counted at once; rows scipy would count (long or non-finite) and tied rows' tie terms as
    ``mann_kendall`` computes them."""
    v = np.asarray(values, dtype=np.float64)
    rows, n = v.shape
    if n < 3:
        return [MannKendall(0, 0.0, 1.0, "none")] * rows
    spread = np.ptp(v, axis=1)
    out: list[MannKendall | None] = [None] * rows
    counted = []
    for row in range(rows):
        if spread[row] == 0:
            out[row] = MannKendall(0, 0.0, 1.0, "none")
        elif n > PAIRWISE_MAX or not np.isfinite(spread[row]):
            out[row] = mann_kendall(v[row], alpha)
        else:
            counted.append(row)
    i, j = _pair_index(n)
    block = max(1, PAIR_BLOCK // max(1, i.size))
    for lo in range(0, len(counted), block):
        part = counted[lo : lo + block]
        later = v[part][:, j] - v[part][:, i]  # v[j] − v[i], i < j
        ups = np.count_nonzero(later > 0, axis=1).tolist()
        downs = np.count_nonzero(later < 0, axis=1).tolist()
        tied = [row for row, up, down in zip(part, ups, downs) if up + down < i.size]
        variances = dict(zip(tied, _tie_variances(v[tied]))) if tied else {}
        for row, up, down in zip(part, ups, downs):
            ties = i.size - up - down
            test = kendall_test(n, up - down, ties, variances.get(row, 0))
            out[row] = _mann_kendall(n, ties, test.tau, test.p_value, alpha)
    return [trend for trend in out if trend is not None]


def _tie_variances(values: np.ndarray) -> list[int]:
    """``tie_terms(row)[1]`` (Σ t(t−1)(2t+5) over the groups of ``t`` equal values) of each
    row of ``values`` (rows, n), finite: the groups are the runs of each sorted row, and every
    term and partial sum is an integer well inside a float's exact range."""
    ordered = np.sort(values, axis=1)
    rows, n = ordered.shape
    start = np.ones((rows, n), dtype=bool)
    start[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    first = np.flatnonzero(start.ravel())
    count = np.diff(np.append(first, rows * n))
    terms = np.where(count > 1, count * (count - 1.0) * (2 * count + 5), 0.0)
    return [int(x) for x in np.bincount(first // n, weights=terms, minlength=rows).tolist()]


def _theil_sen_rows(ys: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``theil_sen(row, xs)`` of each row of ``ys`` (rows, m), as (slopes, intercepts)."""
    y = np.asarray(ys, dtype=np.float64)
    x = np.asarray(xs, dtype=np.float64)
    deltax = x[:, np.newaxis] - x
    ahead = deltax > 0
    step = deltax[ahead]
    slopes = np.empty(len(y))
    block = max(1, PAIR_BLOCK // max(1, x.size * x.size))
    for lo in range(0, len(y), block):
        part = y[lo : lo + block]
        deltay = part[:, :, np.newaxis] - part[:, np.newaxis, :]
        slopes[lo : lo + block] = np.median(deltay[:, ahead] / step, axis=1)
    intercepts = np.median(y, axis=1) - slopes * np.median(x)
    return slopes, intercepts


def window_lines(
    name: str,
    times_s: np.ndarray,
    values: np.ndarray,
    alpha: float,
    statistics: list[Statistic],
    means: np.ndarray | None = None,
) -> list[WindowLine]:
    """``window_line(name, times_s, row, alpha, statistics[row])`` of each row of ``values``
    (rows, m) on one time axis ``times_s`` (m,); ``means``: each row's mean, when known."""
    v = np.asarray(values, dtype=np.float64)
    trends = _mann_kendall_rows(v, alpha)
    x = times_s - times_s[0]
    if means is None:
        means = v.mean(axis=1)
    flat = [row for row, trend in enumerate(trends) if trend.direction == "none"]
    medians = [row for row in flat if statistics[row] == "median"]
    levels = means.copy()
    if medians:
        levels[medians] = row_medians(v[medians])
    sloped = [row for row, trend in enumerate(trends) if trend.direction != "none"]
    slopes = np.zeros(len(v))
    intercepts = levels
    used = 0
    if sloped:
        xs, ys = x, v[sloped]
        if x.size > THEIL_SEN_MAX_POINTS:  # evenly strided subsample keeps Theil–Sen O(1) here
            idx = np.unique(
                np.linspace(0, x.size - 1, THEIL_SEN_MAX_POINTS).round().astype(np.int64)
            )
            xs, ys = x[idx], ys[:, idx]
        slopes[sloped], intercepts[sloped] = _theil_sen_rows(ys, xs)
        used = int(xs.size)
    end = float(x[-1])
    return [
        WindowLine(
            name,
            trend,
            float(slopes[row]),
            float(intercepts[row]),
            float(intercepts[row] + slopes[row] * end),
            x.size,
            used if trend.direction != "none" else 0,
        )
        for row, trend in enumerate(trends)
    ]
