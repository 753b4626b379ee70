"""Went-away detector's trend terms (FBDetect §5.2.2): SAX letters for NewPattern, and the
Mann–Kendall test with a Theil–Sen line for LastingTrend.

Complexity: SAX is linear; Mann–Kendall O(n²) vectorised (``kendall``; scipy's O(n log n)
count past ``kendall.PAIRWISE_MAX`` points); Theil–Sen (O(m²) in its input) sees at most
``THEIL_SEN_MAX_POINTS`` points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from regbot.detection.kendall import PAIRWISE_MAX, kendall_test, mann_kendall_counts, tie_terms
from regbot.detection.noise_shape import Statistic, level_of

__all__ = [
    "MannKendall",
    "WindowLine",
    "mann_kendall",
    "sax_letters",
    "theil_sen",
    "valid_letters",
    "window_line",
]

THEIL_SEN_MAX_POINTS = 500


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
