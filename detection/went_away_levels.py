"""Went-away detector's level terms (FBDetect §5.2.2): the noise of a level of the pre-change
points, the most likely drop after the change (RegressionGoneAway), and the pre-change season
removed before judging.

Complexity: O(n) per candidate (prefix sums, rolling levels), plus the seasonality test's ACF.
The ``*_rows``/``find_drops`` forms do the same for each row of a batch of candidates on one time
axis, each row's numbers those of the one-candidate form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regbot.detection.dist import chi2_sf
from regbot.detection.noise_shape import Statistic, rolling_levels
from regbot.detection.order_stats import mad
from regbot.detection.periods import PeriodChoice, PeriodMemo, remembered_period
from regbot.detection.stage_settings import WentAwaySettings

__all__ = [
    "Drop",
    "PreLevels",
    "deseasonalise",
    "deseasonalise_rows",
    "find_drop",
    "find_drops",
    "level_noise",
    "pre_points",
    "rolling_mean_sums",
    "rolling_means",
]

MAD_NORMAL = 1.4826  # MAD of a normal sample × 1.4826 estimates its standard deviation


def pre_points(mask: np.ndarray, pre: np.ndarray) -> np.ndarray:
    """The pre-change points (of the values being judged) under ``mask``, or all of them."""
    kept = pre[mask[: pre.size]]
    return kept if kept.size else pre


class PreLevels:
    """``rolling_levels`` of the pre-change points by window length, each length computed once
    (the went-away terms ask for the same lengths several times)."""

    def __init__(self, pre: np.ndarray, statistic: Statistic) -> None:
        self.pre = pre
        self.statistic: Statistic = statistic
        self._levels: dict[int, np.ndarray] = {}

    def of(self, m: int) -> np.ndarray:
        """``rolling_levels(pre, m, statistic)``."""
        found = self._levels.get(m)
        if found is None:
            found = self._levels[m] = rolling_levels(self.pre, m, self.statistic)
        return found

    def of_points(self, points: np.ndarray, m: int) -> np.ndarray:
        """``rolling_levels(points, m, statistic)`` of ``pre_points``' answer: the pre-change
        points themselves when it kept all of them."""
        if points.size == self.pre.size:
            return self.of(m)
        return rolling_levels(points, m, self.statistic)


def level_noise(
    pre: np.ndarray,
    m: int,
    floor: float = 0.0,
    statistic: Statistic = "mean",
    levels: PreLevels | None = None,
) -> float:
    """Robust standard deviation of an ``m``-point level (mean or median) of the pre-change
    points: 1.4826 × MAD of the levels of every window of ``m`` consecutive points
    (``rolling_levels``; autocorrelation and slow wander included), or 1.4826 × MAD(points) /
    √m when the history holds fewer than 8·m points (too few windows to read a spread from);
    never below ``floor``. ``levels``: the rolling levels of ``pre`` by ``statistic``, cached."""
    m = max(1, int(m))
    if len(pre) >= 8 * m:
        found = levels.of(m) if levels is not None else rolling_levels(pre, m, statistic)
        spread = MAD_NORMAL * mad(found)
    else:
        spread = MAD_NORMAL * mad(pre) / np.sqrt(m)
    return float(max(spread, floor))


@dataclass(frozen=True, slots=True)
class Drop:
    """The most likely downward shift inside the post-change points: ``index`` is the first
    point after it (0: none could be placed), ``llr`` its likelihood-ratio statistic,
    ``p_value`` (χ², 2 degrees of freedom, as the change-point test)."""

    index: int
    llr: float
    p_value: float


def find_drop(post: np.ndarray, min_after: int, min_before: int = 1) -> Drop:
    """The maximum-likelihood single downward mean shift in ``post`` (normal loss, exact search
    over every split with at least ``min_before`` points before and ``min_after`` after, prefix
    sums, O(n)), tested as the change-point stage tests a rise: LLR = n·log(σ̂₀²/σ̂₁²), χ²(2)."""
    v = np.asarray(post, dtype=np.float64)
    n = v.size
    if n < min_before + max(1, min_after):
        return Drop(0, 0.0, 1.0)
    csum = np.concatenate(([0.0], np.cumsum(v)))
    csq = np.concatenate(([0.0], np.cumsum(v * v)))
    j = np.arange(min_before, n - max(1, min_after) + 1)
    mean_a = csum[j] / j
    mean_b = (csum[n] - csum[j]) / (n - j)
    rss = (csq[j] - j * mean_a**2) + (csq[n] - csq[j] - (n - j) * mean_b**2)
    rss = np.where(mean_a > mean_b, rss, np.inf)
    best = int(np.argmin(rss))
    if not np.isfinite(rss[best]):
        return Drop(0, 0.0, 1.0)
    total = float(csq[n] - csum[n] ** 2 / n)
    tiny = np.finfo(float).tiny
    llr = float(n * np.log(max(total, tiny) / max(float(rss[best]), tiny)))
    return Drop(int(j[best]), llr, chi2_sf(llr, 2))


def deseasonalise(
    times_s: np.ndarray,
    values: np.ndarray,
    change_index: int,
    settings: WentAwaySettings,
    memo: PeriodMemo | None = None,
) -> tuple[np.ndarray, dict[str, object]]:
    """``values`` minus the daily (or weekly) profile of the pre-change history, when that history
    is significantly seasonal (``choose_period``: ACF at the period, as the seasonality stage
    tests it); otherwise ``values`` unchanged. The profile is the mean of the pre-change points in
    each of ``min(period_points, 48)`` phase buckets, centred on zero; a bucket with fewer than 2
    points leaves the series as it is.

    Why: FBDetect runs went-away before the seasonality stage, and on a seasonal series the
    "normal range" of the history spans the whole daily swing, so a step smaller than the swing
    would always look gone away. Judging the deseasonalised series keeps the went-away
    predicate's meaning (does the change last?) on such series; the seasonality stage still
    decides afterwards whether the change itself is seasonal. ``memo``: the period choices
    already made on these pre-change points (``seasonality.remembered_period``).
    """
    period, period_numbers = remembered_period(
        times_s[:change_index], values[:change_index], settings.periods_s, settings.acf_alpha, memo
    )
    period_s = period_numbers["period_s"]
    if period is None or not isinstance(period_s, float):  # a chosen period has its period_s
        return values, {"deseasonalised": False}
    buckets = int(min(period, 48))
    phase = np.mod(times_s - times_s[0], period_s) / period_s
    bucket = np.minimum((phase * buckets).astype(np.int64), buckets - 1)
    counts = np.bincount(bucket[:change_index], minlength=buckets)
    if (counts < 2).any():
        return values, {"deseasonalised": False}
    sums = np.bincount(bucket[:change_index], weights=values[:change_index], minlength=buckets)
    profile = sums / counts
    profile -= profile.mean()
    return values - profile[bucket], {"deseasonalised": True, "season_period_s": period_s}


def find_drops(post: np.ndarray, min_after: int, min_before: int = 1) -> list[Drop]:
    """``find_drop`` of each row of ``post`` (rows, n): the same prefix sums and split costs,
    row by row along the last axis."""
    v = np.asarray(post, dtype=np.float64)
    rows, n = v.shape
    if n < min_before + max(1, min_after):
        return [Drop(0, 0.0, 1.0)] * rows
    zero = np.zeros((rows, 1))
    csum = np.concatenate((zero, np.cumsum(v, axis=1)), axis=1)
    csq = np.concatenate((zero, np.cumsum(v * v, axis=1)), axis=1)
    j = np.arange(min_before, n - max(1, min_after) + 1)
    mean_a = csum[:, j] / j
    mean_b = (csum[:, n : n + 1] - csum[:, j]) / (n - j)
    rss = (csq[:, j] - j * mean_a**2) + (csq[:, n : n + 1] - csq[:, j] - (n - j) * mean_b**2)
    rss = np.where(mean_a > mean_b, rss, np.inf)
    best = np.argmin(rss, axis=1)
    best_rss = rss[np.arange(rows), best]
    tiny = np.finfo(float).tiny
    out = []
    for row, k in enumerate(best.tolist()):
        least = float(best_rss[row])
        if not np.isfinite(least):
            out.append(Drop(0, 0.0, 1.0))
            continue
        # a scalar's square is libm's pow, an array's a product: they can differ in the last bit
        total = float(csq[row, n] - csum[row, n] ** 2 / n)
        llr = float(n * np.log(max(total, tiny) / max(least, tiny)))
        out.append(Drop(int(j[k]), llr, chi2_sf(llr, 2)))
    return out


def rolling_mean_sums(values: np.ndarray) -> np.ndarray:
    """(rows, n + 1): each row's running sum from 0, the prefix sums ``rolling_levels`` takes
    its rolling means from (``rolling_means``)."""
    v = np.asarray(values, dtype=np.float64)
    sums: np.ndarray = np.concatenate((np.zeros((len(v), 1)), np.cumsum(v, axis=1)), axis=1)
    return sums


def rolling_means(sums: np.ndarray, m: int) -> np.ndarray:
    """``rolling_levels(row, m, "mean")`` of each row, from its ``rolling_mean_sums``."""
    m = max(1, min(int(m), sums.shape[1] - 1))
    means: np.ndarray = (sums[:, m:] - sums[:, :-m]) / m
    return means


def deseasonalise_rows(
    times_s: np.ndarray, values: np.ndarray, change_index: int, choices: list[PeriodChoice]
) -> tuple[np.ndarray, list[dict[str, object]]]:
    """``deseasonalise`` of each row of ``values`` (rows, n) on one time axis ``times_s`` (n,),
    given each row's period choice on its pre-change points: the rows of one period share their
    phase buckets; each row's bucket sums are its own (one ``bincount`` over the rows laid end
    to end adds each row's points in its own order)."""
    out = np.array(values, dtype=np.float64)
    numbers: list[dict[str, object]] = [{"deseasonalised": False} for _ in range(len(out))]
    by_period: dict[tuple[int, float], list[int]] = {}
    for row, (period, found) in enumerate(choices):
        period_s = found["period_s"]
        if period is not None and isinstance(period_s, float):
            by_period.setdefault((period, period_s), []).append(row)
    c = change_index
    for (period, period_s), members in by_period.items():
        buckets = int(min(period, 48))
        phase = np.mod(times_s - times_s[0], period_s) / period_s
        bucket = np.minimum((phase * buckets).astype(np.int64), buckets - 1)
        counts = np.bincount(bucket[:c], minlength=buckets)
        if (counts < 2).any():
            continue
        rows = np.asarray(members)
        index = (bucket[None, :c] + buckets * np.arange(rows.size)[:, None]).ravel()
        sums = np.bincount(index, weights=out[rows, :c].ravel(), minlength=rows.size * buckets)
        profile = sums.reshape(rows.size, buckets) / counts
        profile -= profile.mean(axis=1, keepdims=True)
        out[rows] = out[rows] - profile[:, bucket]
        for row in members:
            numbers[row] = {"deseasonalised": True, "season_period_s": period_s}
    return out, numbers
