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

from regbot.detection.dist import norm_ppf
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
    phase bucket); rows with a bucket of fewer than 2 historical points are left as they are.
    Rows on one time axis (the same valid points at the same times: a fleet) share their phase
    buckets, computed once."""
    rows = len(values)
    shared = _shared_axis(times, valid)
    if shared is None:
        bucket = _phase_bucket(np.where(valid, times, origin_s), origin_s, period_s, buckets)
    else:
        row = np.where(valid[0], shared, origin_s)
        bucket = _phase_bucket(row, origin_s, period_s, buckets)[None, :]
    index = (np.arange(rows)[:, None] * buckets + bucket)[historical]
    sums = np.bincount(index, weights=values[historical], minlength=rows * buckets)
    counts = np.bincount(index, minlength=rows * buckets)
    sums, counts = sums.reshape(rows, buckets), counts.reshape(rows, buckets)
    covered: npt.NDArray[np.bool_] = np.all(counts >= 2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        profile = sums / counts
    profile = np.where(covered[:, None], profile - profile.mean(axis=1, keepdims=True), 0.0)
    if shared is not None:
        out: npt.NDArray[np.float64] = values - profile[:, bucket[0]]
        return out
    return values - np.take_along_axis(profile, bucket, axis=1)


def _phase_bucket(times: np.ndarray, origin_s: float, period_s: float, buckets: int) -> np.ndarray:
    phase = np.mod(times - origin_s, period_s) / period_s
    bucket: npt.NDArray[np.int64] = np.minimum((phase * buckets).astype(np.int64), buckets - 1)
    return bucket


def _shared_axis(times: np.ndarray, valid: np.ndarray) -> np.ndarray | None:
    """The first row's timestamps when every row has the same valid points at the same times
    (their phase buckets are then the same); else None."""
    if len(times) < 2 or not np.array_equal(valid, np.broadcast_to(valid[0], valid.shape)):
        return None
    if not np.all((times == times[0]) | ~valid[0]):
        return None
    first: npt.NDArray[np.float64] = times[0]
    return first


def seasonal_rows(
    values: np.ndarray, historical: np.ndarray, lag: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """(rows,) bool and the autocorrelation at ``lag`` points of each row's historical points
    (rows are left-aligned, so historical points are a prefix of each row)."""
    return _Centred(values, historical).seasonal(lag, alpha)


class _Centred:
    """Each row's historical points centred on their mean, and their sum of squares: what the
    autocorrelation at every lag divides by, computed once for all the periods tried."""

    def __init__(self, values: np.ndarray, historical: np.ndarray) -> None:
        self.historical = historical
        self.n = historical.sum(axis=1)
        self.width = values.shape[1]
        x = np.where(historical, values, 0.0)
        mean = x.sum(axis=1) / np.maximum(self.n, 1)
        self.centred = np.where(historical, values - mean[:, None], 0.0)
        self.denominator = (self.centred * self.centred).sum(axis=1)

    def seasonal(self, lag: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        rows = len(self.n)
        if lag < 1 or self.width <= lag:
            return np.zeros(rows, bool), np.zeros(rows)
        centred, historical = self.centred, self.historical
        pairs = historical[:, :-lag] & historical[:, lag:]
        numerator = np.where(pairs, centred[:, :-lag] * centred[:, lag:], 0.0).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where(self.denominator > 0, numerator / self.denominator, 0.0)
        bound = norm_ppf(1 - alpha / 2) / np.sqrt(np.maximum(self.n, 1))
        return (r > bound) & (self.n >= 2 * lag), r


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
    spacing = _spacing(times, valid, _shared_axis(batch.times_s, valid) is not None)
    best_r = np.zeros(len(values))
    best_period = np.zeros(len(values))
    for step in np.unique(spacing[np.isfinite(spacing) & (spacing > 0)]):
        rows = np.flatnonzero(spacing == step)
        every = len(rows) == len(values)  # then values[rows] is values
        centred = _Centred(
            values if every else values[rows], historical if every else historical[rows]
        )
        for period_s in periods_s:
            lag = int(round(period_s / step))
            seasonal, r = centred.seasonal(lag, alpha)
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


def _spacing(times: np.ndarray, valid: np.ndarray, shared: bool) -> np.ndarray:
    """(rows,) median spacing of each row's consecutive valid points (NaN for fewer than two);
    rows on one time axis share the first row's."""
    rows = len(times)
    if shared:  # the first row's, computed as for the whole batch
        times, valid = times[:1], valid[:1]
    diffs = np.where(valid[:, 1:] & valid[:, :-1], np.diff(times, axis=1), np.nan)
    with warnings.catch_warnings():  # rows with fewer than two points have no spacing (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        spacing = np.nanmedian(diffs, axis=1) if diffs.shape[1] else np.full(len(times), np.nan)
    out: npt.NDArray[np.float64] = np.broadcast_to(spacing, rows).copy() if shared else spacing
    return out
