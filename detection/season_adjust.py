"""Vectorised seasonal adjustment of a whole batch: find the significantly seasonal rows and take
their phase profile out, so a daily swing neither hides a small step from the change-point test
nor inflates its variance.

FBDetect tests for seasonality after the change-point detector (§5.2.3). On a seasonal series the
raw CUSUM/likelihood-ratio test loses most of its power: the daily swing inflates both variances
and the post-change mean depends on the time of day. regbot therefore locates and tests change
points on adjusted values for rows whose history is seasonal, and still runs the §5.2.3 STL
stage on the raw values of every candidate afterwards.

Seasonal rows: the lag-one-period autocorrelation of the historical points exceeds the
two-sided ``alpha`` bound ``z/√n`` (the white-noise band statsmodels' ``acf`` uses at the first
lag) and the history holds at least two periods. Profile: the mean of the historical points in
each of ``buckets`` phase buckets of the period, centred on zero (the level is kept). O(rows ×
points) per period tried.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
from scipy.stats import norm

from regbot.detection.series_batch import SeriesBatch, WindowBounds


def subtract_phase_profile(
    values: np.ndarray,
    times: np.ndarray,
    valid: np.ndarray,
    historical: np.ndarray,
    origin_s: float,
    period_s: float,
    buckets: int,
) -> np.ndarray:
    """``values`` minus each row's centred phase profile (mean of the historical points per
    phase bucket); rows with a bucket of fewer than 2 historical points are left as they are."""
    rows = len(values)
    phase = np.mod(np.where(valid, times, origin_s) - origin_s, period_s) / period_s
    bucket = np.minimum((phase * buckets).astype(np.int64), buckets - 1)
    index = (np.arange(rows)[:, None] * buckets + bucket)[historical]
    sums = np.bincount(index, weights=values[historical], minlength=rows * buckets)
    counts = np.bincount(index, minlength=rows * buckets)
    sums, counts = sums.reshape(rows, buckets), counts.reshape(rows, buckets)
    covered: npt.NDArray[np.bool_] = np.all(counts >= 2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        profile = sums / counts
    profile = np.where(covered[:, None], profile - profile.mean(axis=1, keepdims=True), 0.0)
    return values - np.take_along_axis(profile, bucket, axis=1)


def seasonal_rows(
    values: np.ndarray, historical: np.ndarray, lag: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """(rows,) bool and the autocorrelation at ``lag`` points of each row's historical points
    (rows are left-aligned, so historical points are a prefix of each row)."""
    n = historical.sum(axis=1)
    if lag < 1 or values.shape[1] <= lag:
        return np.zeros(len(values), bool), np.zeros(len(values))
    x = np.where(historical, values, 0.0)
    mean = x.sum(axis=1) / np.maximum(n, 1)
    centred = np.where(historical, values - mean[:, None], 0.0)
    pairs = historical[:, :-lag] & historical[:, lag:]
    numerator = np.where(pairs, centred[:, :-lag] * centred[:, lag:], 0.0).sum(axis=1)
    denominator = (centred * centred).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(denominator > 0, numerator / denominator, 0.0)
    bound = norm.ppf(1 - alpha / 2) / np.sqrt(np.maximum(n, 1))
    return (r > bound) & (n >= 2 * lag), r


def adjust_for_season(
    batch: SeriesBatch,
    windows: WindowBounds,
    periods_s: tuple[float, ...],
    alpha: float,
    buckets: int = 48,
) -> tuple[np.ndarray, np.ndarray]:
    """The batch's values with the phase profile of the strongest significant period removed
    from each seasonal row, and that (rows,) mask. Rows are grouped by their point spacing, so a
    fleet sharing one time axis is one vectorised pass per period."""
    values = batch.values
    valid = batch.valid
    historical = valid & (batch.times_s < windows.analysis_start_s)
    times = np.where(valid, batch.times_s, 0.0)
    diffs = np.where(valid[:, 1:] & valid[:, :-1], np.diff(times, axis=1), np.nan)
    with warnings.catch_warnings():  # rows with fewer than two points have no spacing (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        spacing = np.nanmedian(diffs, axis=1) if diffs.shape[1] else np.full(len(values), np.nan)
    best_r = np.zeros(len(values))
    best_period = np.zeros(len(values))
    for step in np.unique(spacing[np.isfinite(spacing) & (spacing > 0)]):
        rows = np.flatnonzero(spacing == step)
        for period_s in periods_s:
            lag = int(round(period_s / step))
            seasonal, r = seasonal_rows(values[rows], historical[rows], lag, alpha)
            better = seasonal & (r > best_r[rows])
            best_r[rows[better]] = r[better]
            best_period[rows[better]] = period_s
    adjusted = values
    chosen = best_period > 0
    if chosen.any():
        adjusted = values.copy()
        for period_s in np.unique(best_period[chosen]):
            rows = np.flatnonzero(best_period == period_s)
            adjusted[rows] = subtract_phase_profile(
                values[rows],
                times[rows],
                valid[rows],
                historical[rows],
                windows.historical_start_s,
                float(period_s),
                buckets,
            )
    return adjusted, chosen
