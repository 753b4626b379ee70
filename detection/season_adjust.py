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

from regbot.detection.changepoint_split import row_blocks
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
    (their phase buckets are then the same); else None. A broadcast of one row (a fleet's
    ``SeriesBatch.times_s``) holds the same times in every row by construction."""
    if len(times) < 2 or not np.array_equal(valid, np.broadcast_to(valid[0], valid.shape)):
        return None
    if times.strides[0] != 0 and not np.all((times == times[0]) | ~valid[0]):
        return None
    first: npt.NDArray[np.float64] = times[0]
    return first


def seasonal_rows(
    values: np.ndarray, historical: np.ndarray, lag: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """(rows,) bool and the autocorrelation at ``lag`` points of each row's historical points
    (rows are left-aligned, so historical points are a prefix of each row)."""
    n, (r,) = autocorrelations(values, historical, [lag])
    return _significant(r, n, lag, alpha, values.shape[1]), r


def autocorrelations(
    values: np.ndarray, historical: np.ndarray, lags: list[int], rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(n, r): each row's number of historical points and (lags, rows) the autocorrelation of
    its historical points at each of ``lags`` (0 for a lag outside ``[1, width)`` or a row
    without spread). ``rows``: the rows of ``values``/``historical`` to use, default all.

    The historical points are centred on their mean once for all the lags; the rows are done
    in blocks (``changepoint_split.row_blocks``) whose temporaries stay in cache, each row's
    sums being those of the whole array at once (the same reductions along the row).
    O(rows × points × lags)."""
    count = len(historical) if rows is None else len(rows)
    width = values.shape[1]
    n = np.empty(count, np.int64)
    r = np.zeros((len(lags), count))
    for a, b in row_blocks(count, width):
        at = slice(a, b) if rows is None else rows[a:b]
        h, v = historical[at], values[at]
        n[a:b] = h.sum(axis=1)
        mean = np.where(h, v, 0.0).sum(axis=1) / np.maximum(n[a:b], 1)
        centred = np.where(h, v - mean[:, None], 0.0)
        denominator = (centred * centred).sum(axis=1)
        for i, lag in enumerate(lags):
            if lag < 1 or width <= lag:
                continue
            pairs = h[:, :-lag] & h[:, lag:]
            numerator = np.where(pairs, centred[:, :-lag] * centred[:, lag:], 0.0).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                r[i, a:b] = np.where(denominator > 0, numerator / denominator, 0.0)
    return n, r


def _significant(r: np.ndarray, n: np.ndarray, lag: int, alpha: float, width: int) -> np.ndarray:
    """Rows whose autocorrelation ``r`` at ``lag`` exceeds the two-sided ``alpha`` white-noise
    bound ``z/√n``, with at least two periods of history (none for a lag outside ``[1,
    width)``)."""
    if lag < 1 or width <= lag:
        return np.zeros(len(n), bool)
    bound = norm_ppf(1 - alpha / 2) / np.sqrt(np.maximum(n, 1))
    seasonal: npt.NDArray[np.bool_] = (r > bound) & (n >= 2 * lag)
    return seasonal


def adjust_for_season(
    batch: SeriesBatch,
    windows: WindowBounds,
    periods_s: tuple[float, ...],
    alpha: float,
    buckets: int = 48,
    *,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The batch's values with the phase profile of the strongest significant period removed
    from each seasonal row, and that (rows,) mask. Rows are grouped by their point spacing, so a
    fleet sharing one time axis is one vectorised pass over its rows for all the periods.
    ``out``: an array of the values' shape to hold the adjusted values when a row is seasonal
    (default a new one); with no seasonal row the batch's own values are returned."""
    values = batch.values
    valid = batch.valid
    historical = valid & (batch.times_s < windows.analysis_start_s)
    shared = _shared_axis(batch.times_s, valid) is not None
    spacing = _spacing(batch.times_s, valid, shared)
    best_r = np.zeros(len(values))
    best_period = np.zeros(len(values))
    for step in np.unique(spacing[np.isfinite(spacing) & (spacing > 0)]):
        rows = np.flatnonzero(spacing == step)
        every = len(rows) == len(values)  # then values[rows] is values
        lags = [int(round(period_s / step)) for period_s in periods_s]
        n, r_of = autocorrelations(values, historical, lags, None if every else rows)
        for period_s, lag, r in zip(periods_s, lags, r_of):
            seasonal = _significant(r, n, lag, alpha, values.shape[1])
            better = seasonal & (r > best_r[rows])
            best_r[rows[better]] = r[better]
            best_period[rows[better]] = period_s
    adjusted = values
    chosen = best_period > 0
    if chosen.any():
        adjusted = values.copy() if out is None else out
        if out is not None:
            np.copyto(out, values)
        for period_s in np.unique(best_period[chosen]):
            rows = np.flatnonzero(best_period == period_s)
            adjusted[rows] = subtract_phase_profile(
                values[rows],
                _times_of(batch.times_s, valid, rows, shared),
                valid[rows],
                historical[rows],
                windows.historical_start_s,
                float(period_s),
                buckets,
            )
    return adjusted, chosen


def _times_of(times: np.ndarray, valid: np.ndarray, rows: np.ndarray, shared: bool) -> np.ndarray:
    """``rows``' timestamps with 0 for their padding; on a shared time axis, one row's
    broadcast (every row's is the same)."""
    if not shared:
        out: npt.NDArray[np.float64] = np.where(valid[rows], times[rows], 0.0)
        return out
    one = np.where(valid[0], times[0], 0.0)
    return np.broadcast_to(one, (len(rows), len(one)))


def _spacing(times: np.ndarray, valid: np.ndarray, shared: bool) -> np.ndarray:
    """(rows,) median spacing of each row's consecutive valid points (NaN for fewer than two);
    rows on one time axis share the first row's. ``times`` may hold anything at padding."""
    rows = len(times)
    if shared:  # the first row's, computed as for the whole batch
        times, valid = times[:1], valid[:1]
    with np.errstate(invalid="ignore"):  # padding minus padding, masked
        steps = np.diff(times, axis=1)
    diffs = np.where(valid[:, 1:] & valid[:, :-1], steps, np.nan)
    with warnings.catch_warnings():  # rows with fewer than two points have no spacing (NaN)
        warnings.simplefilter("ignore", RuntimeWarning)
        spacing = np.nanmedian(diffs, axis=1) if diffs.shape[1] else np.full(len(times), np.nan)
    out: npt.NDArray[np.float64] = np.broadcast_to(spacing, rows).copy() if shared else spacing
    return out
