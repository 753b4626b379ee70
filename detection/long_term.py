"""Long-term regression detector (FBDetect §5.3): slow creeps that no single step reveals.

Complexity: the screen is O(rows x width); the full detector is dominated by STL (see
``seasonality``) or the rolling median (O(n x window)); ``optimal_split`` is O(n).
Design: docs/design/long_term.md
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.ndimage import median_filter, uniform_filter1d
from scipy.stats import chi2, norm
from scipy.stats import t as student_t

from regbot.detection.model import Candidate, Verdict
from regbot.detection.phase_edges import edge_sums
from regbot.detection.presets import Threshold
from regbot.detection.ratios import relative_change
from regbot.detection.season_adjust import subtract_phase_profile
from regbot.detection.seasonality import (
    Decomposition,
    choose_period,
    decompose,
    decompose_many,
)
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import LongTermSettings, SeasonalitySettings
from regbot.detection.stages import Stage

__all__ = [
    "ROLLING_SHARE",
    "detect_long_term",
    "long_term_windows",
    "null_deltas",
    "optimal_split",
    "screen_long_term",
]

MAD_NORMAL = 1.4826
STAGE = Stage.LONG_TERM
ROLLING_SHARE = 0.05
MIN_BLOCKS = 5
SCREEN_MARGIN = 0.5
SCREEN_ROWS = 1024  # rows screened at once: their temporaries stay small enough to be reused
_ROUNDING = 1e-9  # 0.07 * 100 is 7.000000000000001: 7% of 100 points is 7 points, not 8


def optimal_split(values: np.ndarray) -> int:
    """The first index of the right segment of the best single split under the normal loss.

    Minimises ``SSE(values[:k]) + SSE(values[k:])`` over ``k`` in ``1 .. n-1`` (each side's sum
    of squared deviations from its own mean) — the exact dynamic-programming optimum for one
    change point, which for a single split is a scan. Prefix sums make it O(n); values are
    centred first to keep the sums small. Ties go to the smallest ``k``. Needs ``n >= 2``.
    """
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n < 2:
        raise ValueError(f"optimal_split needs at least 2 values, got {n}")
    x = x - x.mean()
    s1 = np.cumsum(x)
    s2 = np.cumsum(x * x)
    k = np.arange(1, n)
    left = s2[:-1] - s1[:-1] ** 2 / k
    right_sum = s1[-1] - s1[:-1]
    right = (s2[-1] - s2[:-1]) - right_sum**2 / (n - k)
    return int(np.argmin(left + right)) + 1


def ramp_start(times_s: np.ndarray, trend: np.ndarray) -> int:
    """Where a gradual rise begins: the knot ``k`` of the least-squares continuous "flat, then a
    straight line" fit ``trend ≈ a + b · max(0, t − t_k)`` (exact search over every knot; O(n²)
    with n the points of the long-term analysis and extended windows). §5.3 sets a gradual
    change's point "at the beginning of the TREND"; with regbot's multi-day long-term window
    the trend's first point would name a time days before the creep began, so regbot takes the
    beginning of the rise in it (0 when the whole segment is a line)."""
    t = np.asarray(times_s, dtype=np.float64)
    y = np.asarray(trend, dtype=np.float64)
    n = t.size
    if n < 3:
        return 0
    x = np.maximum(0.0, t[None, :] - t[: n - 2, None])  # (knots, n)
    xm = x.mean(axis=1, keepdims=True)
    ym = y.mean()
    sxx = ((x - xm) ** 2).sum(axis=1)
    sxy = ((x - xm) * (y - ym)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rss = ((y - ym) ** 2).sum() - np.where(sxx > 0, sxy**2 / sxx, 0.0)
        rss = np.where(sxy > 0, rss, np.inf)  # a rise, not a fall
    return int(np.argmin(rss)) if np.isfinite(rss).any() else 0


def _rolling_median(values: np.ndarray) -> np.ndarray:
    size = max(3, int(round(ROLLING_SHARE * len(values))))
    size += 1 - size % 2
    filtered: npt.NDArray[np.float64] = median_filter(values, size=size, mode="nearest")
    return filtered


def _rolling_mean(values: np.ndarray) -> np.ndarray:
    size = max(3, int(round(ROLLING_SHARE * len(values))))
    size += 1 - size % 2
    smoothed: npt.NDArray[np.float64] = uniform_filter1d(values, size=size, mode="nearest")
    return smoothed


def _edge_mean(x: np.ndarray, lo: int, hi: int, share: float, end: bool) -> float | None:
    """Mean of the first (``end=False``) or last ``share`` of ``x[lo:hi]``; None if empty."""
    count = hi - lo
    if count <= 0:
        return None
    k = max(1, int(math.ceil(share * count - _ROUNDING)))
    part = x[hi - k : hi] if end else x[lo : lo + k]
    return float(part.mean())


def _exceeds(delta: float, baseline: float, threshold: Threshold) -> bool:
    if threshold.mode == "relative":
        return delta > threshold.value * abs(baseline)
    return delta > threshold.value


def _line_rmse(times_s: np.ndarray, trend: np.ndarray) -> float:
    """RMSE of a least-squares line through the min-max normalised ``trend``."""
    span = float(np.ptp(trend))
    if len(trend) < 3 or span == 0:
        return 0.0
    y = (trend - trend.min()) / span
    x = times_s - times_s.mean()
    denom = float(np.dot(x, x))
    slope = float(np.dot(x, y - y.mean())) / denom if denom > 0 else 0.0
    fitted = y.mean() + slope * x
    return float(np.sqrt(np.mean((y - fitted) ** 2)))


def _edge_mean_sd(history: np.ndarray, edge_points: int, noise: float) -> tuple[float, int | None]:
    """The standard deviation of a mean of ``edge_points`` consecutive points and the degrees of
    freedom of its estimate (None: known, use the normal tail).

    The white-noise value ``noise / sqrt(edge_points)`` (``noise`` from the MAD of a thousand
    residuals: known) is used unless the history says the mean moves more: the spread of the
    means of its non-overlapping blocks of ``edge_points`` points (deseasonalised when STL ran)
    exceeds it significantly (its variance ratio above the 95th percentile of χ²(K−1)/(K−1), K
    blocks). A load's wander, a descendant's flips between levels or a slow weekly swing do
    that, and then the block spread is the standard deviation, with K − 1 degrees of freedom.
    With fewer than ``MIN_BLOCKS`` blocks the spread cannot be measured and the white-noise
    value stands."""
    floor = noise / math.sqrt(edge_points)
    blocks = len(history) // edge_points
    if blocks < MIN_BLOCKS:
        return floor, None
    means = history[len(history) - blocks * edge_points :].reshape(blocks, edge_points).mean(axis=1)
    spread = float(means.std(ddof=1))
    if floor > 0 and spread * spread <= floor * floor * chi2.ppf(0.95, blocks - 1) / (blocks - 1):
        return floor, None
    return max(spread, floor), blocks - 1


def long_term_windows(windows: WindowBounds, settings: LongTermSettings) -> WindowBounds:
    """The long-term detector's own windows: the run's extended window, an analysis window of
    ``settings.analysis_s`` before it (never shorter than the run's), and the history before
    that, from the run's historical start. FBDetect Table 1's long-term rows analyse days
    (AdServing long 9 d, CT-supply long 7 d) while the short-term rows analyse hours: a creep
    over a day and a half does not rise within a 4-hour analysis window, so the paper's
    BASELINE/CURRENT comparison needs the longer one. The history keeps at least a third of the
    run's span (a shorter analysis window is used when the data is short)."""
    span = windows.extended_start_s - windows.historical_start_s
    analysis_s = max(windows.extended_start_s - windows.analysis_start_s, settings.analysis_s)
    analysis_s = min(analysis_s, 2.0 * span / 3.0)
    analysis_start = min(windows.analysis_start_s, windows.extended_start_s - analysis_s)
    return WindowBounds(
        windows.historical_start_s, analysis_start, windows.extended_start_s, windows.end_s
    )


def null_deltas(trend: np.ndarray, a_lo: int, span: int, edge: int) -> np.ndarray:
    """How much the TREND rose over ``span`` points at earlier places in the history: the mean
    of its ``edge`` points ending at ``o`` minus the mean of the ``edge`` points starting at
    ``o - span``, for every end ``o`` up to ``a_lo`` (the start of the analysis window) stepped by
    ``max(1, span // 8)``. These are the rises a load term's wander, a weekly swing or noise
    make with no regression; empty when the history is shorter than ``span``. O(n)."""
    if a_lo < span or edge < 1:
        return np.empty(0)
    csum = np.concatenate(([0.0], np.cumsum(trend[:a_lo])))
    ends = np.arange(span, a_lo + 1, max(1, span // 8))
    current = (csum[ends] - csum[ends - edge]) / edge
    starts = ends - span
    baseline = (csum[starts + edge] - csum[starts]) / edge
    return current - baseline


@dataclass(frozen=True, slots=True)
class _Prepared:
    """One row's points cut to its long-term windows, their edges and its period (None: no
    significant one), before the trend is fitted."""

    series_id: str
    kind: str
    sign: float
    run_windows: WindowBounds
    windows: WindowBounds
    times: np.ndarray
    vals: np.ndarray
    a_lo: int
    e_lo: int
    period: int | None
    found: dict[str, object]


def _prepare(
    series_id: str,
    kind: str,
    times_s: np.ndarray,
    values: np.ndarray,
    sign: float,
    windows: WindowBounds,
    settings: LongTermSettings,
    seasonality: SeasonalitySettings,
) -> _Prepared | None:
    run_windows = windows
    windows = long_term_windows(windows, settings)
    times = np.asarray(times_s, dtype=np.float64)
    vals = np.asarray(values, dtype=np.float64)
    keep = (times >= windows.historical_start_s) & (times <= windows.end_s)
    times, vals = times[keep], vals[keep]
    n = len(times)
    a_lo = int(np.searchsorted(times, windows.analysis_start_s))
    has_extended = windows.end_s > windows.extended_start_s
    e_lo = int(np.searchsorted(times, windows.extended_start_s)) if has_extended else n
    if e_lo <= a_lo:
        return None
    period, found = choose_period(
        times[:a_lo], vals[:a_lo], seasonality.periods_s, seasonality.acf_alpha
    )
    return _Prepared(
        series_id, kind, sign, run_windows, windows, times, vals, a_lo, e_lo, period, found
    )


def detect_long_term(
    series_id: str,
    kind: str,
    times_s: np.ndarray,
    values: np.ndarray,
    sign: float,
    windows: WindowBounds,
    threshold: Threshold,
    settings: LongTermSettings,
    *,
    seasonality: SeasonalitySettings = SeasonalitySettings(),
) -> Candidate | None:
    """A long-term candidate for one series (oriented values, ascending times), or None.

    Points outside ``[historical_start_s, end_s]`` are dropped; the candidate holds the rest,
    and its ``change_index`` refers to them. None when the analysis window is empty or the rise
    does not exceed the threshold. ``seasonality`` supplies the periods and ACF level.
    """
    ready = _prepare(series_id, kind, times_s, values, sign, windows, settings, seasonality)
    if ready is None:
        return None
    fit = decompose(ready.times, ready.vals, ready.period) if ready.period is not None else None
    return _finish(ready, fit, threshold, settings)


def detect_long_term_rows(
    rows: list[tuple[str, str, np.ndarray, np.ndarray, float]],
    windows: WindowBounds,
    threshold: Threshold,
    settings: LongTermSettings,
    *,
    seasonality: SeasonalitySettings = SeasonalitySettings(),
) -> list[Candidate | None]:
    """``detect_long_term`` of each row ``(series_id, kind, times_s, values, sign)``, in order,
    with the STL fits of the rows that have a period made together (``decompose_many``, whose
    numbers for a row do not depend on the others): the same candidates, for less."""
    prepared = [
        _prepare(sid, kind, times, values, sign, windows, settings, seasonality)
        for sid, kind, times, values, sign in rows
    ]
    seasonal = [k for k, ready in enumerate(prepared) if ready is not None and ready.period]
    jobs = []
    for k in seasonal:
        ready = prepared[k]
        assert ready is not None and ready.period is not None
        jobs.append((ready.times, ready.vals, ready.period))
    fits: dict[int, Decomposition] = dict(zip(seasonal, decompose_many(jobs)))
    return [
        None if ready is None else _finish(ready, fits.get(k), threshold, settings)
        for k, ready in enumerate(prepared)
    ]


def _finish(
    ready: _Prepared, fit: Decomposition | None, threshold: Threshold, settings: LongTermSettings
) -> Candidate | None:
    series_id, kind, sign = ready.series_id, ready.kind, ready.sign
    run_windows, windows = ready.run_windows, ready.windows
    times, vals, a_lo, e_lo = ready.times, ready.vals, ready.a_lo, ready.e_lo
    found = ready.found
    n = len(times)
    if fit is not None:
        trend = fit.trend_at(times)
        deseasoned = vals - fit.seasonal_at(times)
        residual_all = deseasoned - trend
        method = "stl"
    else:
        trend = _rolling_median(vals)
        deseasoned = vals
        residual_all = vals - trend
        method = "rolling-median"
        history = residual_all[:a_lo]
        if a_lo and not np.median(np.abs(history - np.median(history))):
            # Discrete, sparse values (a share from a few samples per bucket): the median sits
            # on one of a few levels and jumps between them when a rate crosses a half, while
            # the noise below is measured on means. Its residuals have a zero MAD; the trend is
            # then the rolling mean of the same window.
            trend = _rolling_mean(vals)
            residual_all = vals - trend
            method = "rolling-mean"

    share = settings.edge_share
    starts = [_edge_mean(trend, 0, a_lo, share, False), _edge_mean(trend, a_lo, e_lo, share, False)]
    ends = [_edge_mean(trend, a_lo, e_lo, share, True), _edge_mean(trend, e_lo, n, share, True)]
    baseline = max(v for v in starts if v is not None)
    current = min(v for v in ends if v is not None)
    delta = current - baseline
    if not _exceeds(delta, baseline, threshold):
        return None
    # regbot's addition: the rise must also stand out of the noise of the edge means it compares
    # (FBDetect's rule is threshold-only, which on a sparsely sampled series reports noise).
    residual = residual_all[:a_lo]
    noise = MAD_NORMAL * float(np.median(np.abs(residual - np.median(residual)))) if a_lo else 0.0
    if method == "rolling-mean" and a_lo:
        # sparse counts are skewed (mostly nothing, now and then a few samples): the MAD sees
        # only the empty buckets, the standard deviation sees the spread a mean has
        noise = max(noise, float(residual.std()))
    edge_points = max(1, math.ceil(share * (e_lo - a_lo)))
    edge_sd, dof = _edge_mean_sd(deseasoned[:a_lo], edge_points, noise)
    standard_error = edge_sd * math.sqrt(2.0)
    z = delta / standard_error if standard_error > 0 else math.inf
    tail = norm.sf(z) if dof is None else student_t.sf(z, dof)
    p_value = float(tail) if math.isfinite(z) else 0.0
    if z <= settings.z:
        return None
    # regbot's second guard: the rise must exceed every rise of the same span the trend made
    # earlier in the history (the empirical null of wander), when the history holds any.
    span = n - a_lo
    nulls = null_deltas(trend, a_lo, span, edge_points)
    null_max = float(nulls.max()) if nulls.size else None
    if null_max is not None and delta <= null_max:
        return None

    segment = trend[a_lo:]
    rmse = _line_rmse(times[a_lo:], segment)
    gradual = rmse < settings.rmse_threshold
    change = a_lo + (ramp_start(times[a_lo:], segment) if gradual else optimal_split(segment))
    numbers: dict[str, object] = {
        "baseline": baseline,
        "current": current,
        "delta": delta,
        "relative_delta": relative_change(baseline, delta),
        "threshold": float(threshold.value),
        "threshold_mode": threshold.mode,
        "baseline_historical": starts[0],
        "baseline_analysis": starts[1],
        "current_analysis": ends[0],
        "current_extended": ends[1],
        "standard_error": standard_error,
        "edge_points": edge_points,
        "standard_error_from": "white noise" if dof is None else "history blocks",
        "degrees_of_freedom": dof,
        "white_noise_sd": noise,
        "p_value": p_value,
        "null_rises": int(nulls.size),
        "null_rise_max": null_max,
        "analysis_window": [windows.analysis_start_s, windows.extended_start_s],
        "z": z if math.isfinite(z) else None,
        "rmse": rmse,
        "rmse_threshold": float(settings.rmse_threshold),
        "gradual": bool(gradual),
        "trend": method,
        "period_s": found["period_s"],
        "period_points": found["period_points"],
        "acf": found["acf"],
    }
    shape = "gradual" if gradual else "step"
    verdict = Verdict(
        STAGE, True, f"{shape} long-term rise: trend {baseline:.6g} -> {current:.6g}", numbers
    )
    return Candidate(
        series_id=series_id,
        kind=kind,
        times_s=times,
        values=vals,
        sign=float(sign),
        change_index=change,
        change_time_s=float(times[change]),
        mean_before=float(vals[:change].mean()) if change > 0 else math.nan,
        mean_after=float(vals[change:].mean()),
        llr=math.nan,
        p_value=p_value,
        windows=run_windows,
        detector="long-term",
        verdicts={STAGE: verdict},
    )


def screen_long_term(
    batch_values: np.ndarray,
    batch_times: np.ndarray,
    lengths: np.ndarray,
    windows: WindowBounds,
    threshold: Threshold,
    edge_share: float,
    *,
    period_s: float = 86400.0,
    phase_buckets: int = 24,
    settings: LongTermSettings | None = None,
) -> np.ndarray:
    """(rows,) bool: rows that might pass ``detect_long_term`` (see docs/design/long_term.md).

    ``batch_values``/``batch_times`` are a ``SeriesBatch``'s padded (rows, width) arrays, row
    ``i`` valid on its first ``lengths[i]`` points. The cheap trend is the values minus a
    ``phase_buckets``-bucket profile of ``period_s`` estimated on the historical window; a row
    passes when CURRENT - BASELINE on its edge means exceeds half the threshold. Rows with an
    empty analysis window fail. Rows are screened ``SCREEN_ROWS`` at a time.
    """
    values = np.asarray(batch_values, dtype=np.float64)
    times = np.asarray(batch_times, dtype=np.float64)
    lengths = np.asarray(lengths)
    if settings is not None:
        windows = long_term_windows(windows, settings)
    indices: dict[tuple[int, int, bytes], np.ndarray] = {}  # shared by the chunks
    parts = [
        _screen_rows(
            values[lo : lo + SCREEN_ROWS],
            times[lo : lo + SCREEN_ROWS],
            lengths[lo : lo + SCREEN_ROWS],
            windows,
            threshold,
            edge_share,
            period_s,
            phase_buckets,
            indices,
        )
        for lo in range(0, len(values), SCREEN_ROWS)
    ]
    screened: npt.NDArray[np.bool_] = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
    return screened


def _edge_mask(mask: np.ndarray, share: float, end: bool) -> np.ndarray:
    """The first (``end=False``) or last ``share`` of each row's points under ``mask`` (at
    least one), as a mask of the same shape."""
    count = mask.sum(axis=1)
    k = np.maximum(1, np.ceil(share * count - _ROUNDING)).astype(np.int64)
    rank = np.cumsum(mask, axis=1) - 1  # position of each masked point within its window
    edge: np.ndarray = mask & ((rank >= (count - k)[:, None]) if end else (rank < k[:, None]))
    return edge


def _screen_rows(
    values: np.ndarray,
    times: np.ndarray,
    lengths: np.ndarray,
    windows: WindowBounds,
    threshold: Threshold,
    edge_share: float,
    period_s: float,
    phase_buckets: int,
    indices: dict[tuple[int, int, bytes], np.ndarray] | None = None,
) -> np.ndarray:
    """``screen_long_term`` of some rows (row by row: a row's answer is its own). Rows of one
    length on one time axis have the same windows: their masks are the first row's, and only
    the adjusted values at the windows' edges are computed (``phase_edges.edge_sums``, which
    keeps its bucket index in ``indices`` for the next chunk)."""
    width = values.shape[1]
    one_axis = len(values) > 1 and bool(np.all(lengths == lengths[0]))
    if one_axis and times.strides[0] != 0:  # a broadcast of one row is one axis already
        first = int(lengths[0])
        one_axis = bool(np.all(times[:, :first] == times[0, :first]))
    mask_times = times[:1] if one_axis else times
    mask_lengths = lengths[:1] if one_axis else lengths
    valid = np.arange(width)[None, :] < mask_lengths[:, None]
    valid &= (mask_times >= windows.historical_start_s) & (mask_times <= windows.end_s)
    historical = valid & (mask_times < windows.analysis_start_s)
    analysis = valid & (mask_times >= windows.analysis_start_s)
    if windows.end_s > windows.extended_start_s:
        analysis &= mask_times < windows.extended_start_s
    extended = valid & ~historical & ~analysis
    edges = [
        _edge_mask(mask, edge_share, end)
        for mask, end in (
            (historical, False),
            (analysis, False),
            (analysis, True),
            (extended, True),
        )
    ]
    if one_axis:  # the adjusted values at the edges only (``phase_edges``)
        totals = edge_sums(
            values,
            mask_times[0],
            valid[0],
            historical[0],
            [edge[0] for edge in edges],
            windows.historical_start_s,
            period_s,
            phase_buckets,
            indices,
        )
    else:
        adjusted = subtract_phase_profile(
            values,
            times,
            np.broadcast_to(valid, values.shape),
            np.broadcast_to(historical, values.shape),
            windows.historical_start_s,
            period_s,
            phase_buckets,
        )
        totals = [np.where(edge, adjusted, 0.0).sum(axis=1) for edge in edges]
    masks = (historical, analysis, analysis, extended)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = [
            np.where(mask.sum(axis=1) > 0, total / edge.sum(axis=1), np.nan)
            for mask, edge, total in zip(masks, edges, totals)
        ]
    baseline = np.fmax(means[0], means[1])
    current = np.fmin(means[2], means[3])
    delta = current - baseline
    if threshold.mode == "relative":
        limit = SCREEN_MARGIN * threshold.value * np.abs(baseline)
    else:
        limit = np.full(len(values), SCREEN_MARGIN * threshold.value)
    with np.errstate(invalid="ignore"):
        passed = delta > limit
    screened: npt.NDArray[np.bool_] = passed & analysis.any(axis=1)
    return screened
