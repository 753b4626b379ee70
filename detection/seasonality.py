"""Seasonality detector (FBDetect §5.2.3): is a change point only the daily or weekly pattern?

Complexity: the period choice (``periods``: ACF) O(n log n); robust STL O(n · window) per pass,
16 × 2 passes, vectorised (``stl``) — a few ms for 1,000 ten-minute points with a daily period.
Design: docs/design/seasonality.md
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from regbot.detection.model import Candidate, Verdict
from regbot.detection.noise_shape import Statistic, level_of, noise_shape
from regbot.detection.order_stats import median
from regbot.detection.periods import (
    MIN_PERIOD_POINTS,
    PeriodMemo,
    choose_period,
    float_or_none,
    median_spacing_s,
    regular_grid,
    remembered_period,
)
from regbot.detection.stage_settings import SeasonalitySettings
from regbot.detection.stages import Stage
from regbot.detection.stl import stl_batch

__all__ = [
    "MIN_PERIOD_POINTS",
    "Decomposition",
    "PeriodMemo",
    "choose_period",
    "decompose",
    "decompose_many",
    "remembered_period",
    "seasonality_verdict",
    "stl_job",
]

STAGE = Stage.SEASONALITY
MAD_NORMAL = 1.4826


def _odd_at_least(x: float, low: int) -> int:
    n = max(int(math.ceil(x)), low)
    return n if n % 2 == 1 else n + 1


@dataclass(frozen=True, slots=True)
class Decomposition:
    """Robust STL of a series on its regular grid (``grid_s``, median spacing)."""

    grid_s: np.ndarray
    seasonal: np.ndarray
    trend: np.ndarray
    period_points: int

    def seasonal_at(self, times_s: np.ndarray) -> np.ndarray:
        """The seasonal component at ``times_s``; after the grid's end, the last fitted cycle
        repeats (periodic linear interpolation)."""
        times_s = np.asarray(times_s, dtype=np.float64)
        out: npt.NDArray[np.float64] = np.interp(times_s, self.grid_s, self.seasonal)
        later = times_s > self.grid_s[-1]
        if later.any():
            spacing = float(self.grid_s[1] - self.grid_s[0])
            cycle = slice(-self.period_points, None)
            out[later] = np.interp(
                times_s[later],
                self.grid_s[cycle],
                self.seasonal[cycle],
                period=self.period_points * spacing,
            )
        return out

    def trend_at(self, times_s: np.ndarray) -> np.ndarray:
        """The trend at ``times_s`` (held at the end values outside the grid)."""
        trend: npt.NDArray[np.float64] = np.interp(
            np.asarray(times_s, dtype=np.float64), self.grid_s, self.trend
        )
        return trend


def decompose(times_s: np.ndarray, values: np.ndarray, period_points: int) -> Decomposition:
    """Robust STL of ``values`` interpolated onto the median-spacing grid (docs/design/seasonality.md).
    Needs at least two periods of points; O(n · trend window) per pass."""
    return decompose_many([(times_s, values, period_points)])[0]


def decompose_many(jobs: list[tuple[np.ndarray, np.ndarray, int]]) -> list[Decomposition]:
    """``decompose`` of each (times_s, values, period_points), in order: the series of one grid
    length and period go through the vectorised STL together (``stl.stl_batch``, whose numbers
    for a series do not depend on the others). Raises ``ValueError`` as ``decompose`` would for
    the first job that cannot be decomposed."""
    grids = []
    for times_s, values, period_points in jobs:
        times_s = np.asarray(times_s, dtype=np.float64)
        spacing = median_spacing_s(times_s)
        grid = regular_grid(times_s, spacing) if spacing is not None else None
        if grid is None or len(grid) < 2 * period_points:
            raise ValueError(f"cannot decompose {len(times_s)} points with period {period_points}")
        grids.append((grid, np.interp(grid, times_s, np.asarray(values, dtype=np.float64))))
    groups: dict[tuple[int, int], list[int]] = {}
    for i, ((grid, _), (_, _, period_points)) in enumerate(zip(grids, jobs)):
        groups.setdefault((len(grid), period_points), []).append(i)
    out: list[Decomposition | None] = [None] * len(jobs)
    for (_, period_points), members in groups.items():
        for lo in range(0, len(members), STL_CHUNK):
            part = members[lo : lo + STL_CHUNK]
            seasonal, trend = _robust_stl(np.stack([grids[i][1] for i in part]), period_points)
            for row, i in enumerate(part):
                out[i] = Decomposition(grids[i][0], seasonal[row], trend[row], period_points)
    return [d for d in out if d is not None]


def _robust_stl(gridded: np.ndarray, period_points: int) -> tuple[np.ndarray, np.ndarray]:
    """(seasonal, trend) rows of statsmodels' robust ``STL`` with regbot's windows: seasonal 7,
    trend and low-pass as statsmodels' defaults would set them, jumps a tenth of each window."""
    seasonal_window = 7
    trend_window = _odd_at_least(1.5 * period_points / (1 - 1.5 / seasonal_window), 3)
    low_pass_window = _odd_at_least(period_points + 1, 3)
    return stl_batch(
        gridded,
        period_points,
        seasonal_window,
        trend_window,
        low_pass_window,
        robust=True,
        seasonal_jump=math.ceil(seasonal_window / 10),
        trend_jump=math.ceil(trend_window / 10),
        low_pass_jump=math.ceil(low_pass_window / 10),
    )


STL_CHUNK = 16  # series per vectorised STL call: enough to share the calls' overhead

STL_PERIODS = 7

# The standard error of a sample median is sqrt(pi/2) times that of the mean (Gaussian noise).
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)
WINSOR_SIGMAS = 4.0
MAX_LAG1 = 0.9  # autocorrelation cap for the effective-sample-size inflation


def residual_scale(residual: np.ndarray) -> tuple[float, float, float]:
    """(robust σ, lag-1 autocorrelation ρ, inflation) of the pre-change residuals.

    σ is the standard deviation of the residuals winsorised at ``WINSOR_SIGMAS`` (4) × 1.4826 ×
    MAD around their median: heavy tails and outliers do not inflate it, as they inflate a plain
    standard deviation, while the spread STL leaves in its residual (which is not normal: its
    MAD alone understates it by ~30%) still counts. Residuals that wander together (a fleet-wide
    load term the STL trend does not follow) make a level difference noisier than σ/√n: the
    standard error is multiplied by √((1 + ρ)/(1 − ρ)), the AR(1) effective-sample-size factor,
    ρ clipped to [0, 0.9]."""
    r = np.asarray(residual, dtype=np.float64)
    if r.size < 3:
        return 0.0, 0.0, 1.0
    centre = median(r)
    robust = MAD_NORMAL * median(np.abs(r - centre))
    clipped = np.clip(r, centre - WINSOR_SIGMAS * robust, centre + WINSOR_SIGMAS * robust)
    sigma = float(clipped.std())
    centred = r - r.mean()
    denom = float(centred @ centred)
    rho = float(centred[1:] @ centred[:-1]) / denom if denom > 0 else 0.0
    rho = min(max(rho, 0.0), MAX_LAG1)
    return sigma, rho, math.sqrt((1 + rho) / (1 - rho))


def _z_score(
    deseasonalised: np.ndarray,
    after: np.ndarray,
    before: np.ndarray,
    scale: float,
    statistic: Statistic,
) -> float | None:
    """The level shift after the change over its standard error.

    §5.2.3 normalises the median difference "by the standard deviation of the residual"; a
    difference of levels over n points has noise ``σ·√(1/n_after + 1/n_before)`` (times √(π/2)
    for medians), not σ, so regbot divides by that: with per-point σ every regression smaller
    than a few σ per point would count as seasonal whatever the number of points behind it. The
    level is the mean for normal noise and the median otherwise (``noise_shape``); ``scale``
    already carries the autocorrelation inflation. The paper's per-point pseudo z-score is
    reported beside it (``pseudo_z_*``).
    """
    n_after = int(np.count_nonzero(after))
    if not n_after:
        return None
    n_before = int(np.count_nonzero(before))
    difference = level_of(deseasonalised[after], statistic) - level_of(
        deseasonalised[before], statistic
    )
    if scale > 0:
        efficiency = 1.0 if statistic == "mean" else MEDIAN_EFFICIENCY
        return difference / (scale * efficiency * math.sqrt(1 / n_after + 1 / max(n_before, 1)))
    return 0.0 if difference == 0 else math.copysign(math.inf, difference)


def stl_job(
    candidate: Candidate, settings: SeasonalitySettings, memo: PeriodMemo | None = None
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """What ``seasonality_verdict`` decomposes for ``candidate`` — (times_s, values,
    period_points), the last ``STL_PERIODS`` periods before the change — or None when its
    history has no significant period; a batch of candidates decomposes them together
    (``decompose_many``) and hands each its fit."""
    times = np.asarray(candidate.times_s, dtype=np.float64)
    values = np.asarray(candidate.values, dtype=np.float64)
    change = int(candidate.change_index)
    period, _ = remembered_period(
        times[:change], values[:change], settings.periods_s, settings.acf_alpha, memo
    )
    if period is None:
        return None
    first = max(0, change - STL_PERIODS * period)
    return times[first:change], values[first:change], period


def seasonality_verdict(
    candidate: Candidate,
    settings: SeasonalitySettings,
    *,
    memo: PeriodMemo | None = None,
    fit: Decomposition | None = None,
) -> Verdict:
    """Keep (``passed=True``) a candidate whose change survives removing seasonality.

    Numbers: ``period_s``, ``period_points``, ``acf``, ``acf_bound`` (the chosen period),
    ``acf_tried`` (every period tried), ``z_analysis``, ``z_extended`` (None when that window
    has no post-change points), ``threshold``, ``residual_std``. ``memo``: the candidate's
    pre-change period choices already made (``remembered_period``); ``fit``: the
    decomposition of its ``stl_job``, already made.
    """
    times = np.asarray(candidate.times_s, dtype=np.float64)
    values = np.asarray(candidate.values, dtype=np.float64)
    change = int(candidate.change_index)
    period, found = remembered_period(
        times[:change], values[:change], settings.periods_s, settings.acf_alpha, memo
    )
    numbers: dict[str, object] = {
        "period_s": found["period_s"],
        "period_points": found["period_points"],
        "acf": found["acf"],
        "acf_bound": found["acf_bound"],
        "periods_tried_s": found["periods_tried_s"],
        "acf_tried": found["acf_tried"],
        "acf_bound_tried": found["acf_bound_tried"],
        "z_analysis": None,
        "z_extended": None,
        "threshold": float(settings.z_threshold),
        "residual_std": None,
    }
    if period is None:
        return Verdict(STAGE, True, "no significant seasonality", numbers)

    # STL sees the last STL_PERIODS periods before the change: enough cycles to estimate the
    # pattern, and STL's cost grows with its input (47 ms for 10 days of 10-minute points).
    first = max(0, change - STL_PERIODS * period)
    if fit is None:
        fit = decompose(times[first:change], values[first:change], period)
    deseasonalised = values - fit.seasonal_at(times)
    # Residual and baseline over the points STL fitted: before them, the trend is the fitted
    # one held flat, so the residual there would carry the series' slow wander as noise.
    residual = deseasonalised[first:change] - fit.trend_at(times[first:change])
    residual_std = float(np.std(residual))
    sigma, rho, inflation = residual_scale(residual)
    shape = noise_shape(residual)
    # A residual at rounding level (a noiseless series) must not turn rounding into a z-score.
    scale = sigma * inflation if sigma > 1e-12 * float(np.max(np.abs(values))) else 0.0
    before_median = median(deseasonalised[:change])
    index = np.arange(len(values))
    post = index >= change
    before = (index >= first) & ~post
    w = candidate.windows
    # A zero-length extended window (extended_s = 0) is empty; the point at end_s, if any,
    # then belongs to the analysis window.
    has_extended = w.end_s > w.extended_start_s
    analysis_end = w.extended_start_s if has_extended else math.nextafter(w.end_s, math.inf)
    in_analysis = (times >= w.analysis_start_s) & (times < analysis_end)
    in_extended = (times >= w.extended_start_s) & (times <= w.end_s) & has_extended
    statistic = shape.statistic
    z_analysis = _z_score(deseasonalised, post & in_analysis, before, scale, statistic)
    z_extended = _z_score(deseasonalised, post & in_extended, before, scale, statistic)
    z_post = _z_score(deseasonalised, post, before, scale, statistic)
    for name, window in (("analysis", in_analysis), ("extended", in_extended)):
        after = post & window
        numbers[f"pseudo_z_{name}"] = (
            float((median(deseasonalised[after]) - before_median) / residual_std)
            if after.any() and residual_std > 0
            else None
        )
    numbers.update(
        z_analysis=float_or_none(z_analysis) if z_analysis is not None else None,
        z_extended=float_or_none(z_extended) if z_extended is not None else None,
        z_post=float_or_none(z_post) if z_post is not None else None,
        residual_std=residual_std,
        residual_sigma_robust=sigma,
        residual_lag1=rho,
        se_inflation=inflation,
        **shape.numbers(),
    )
    tested = [z for z in (z_analysis, z_extended) if z is not None]
    if not tested:
        return Verdict(STAGE, True, "no points after the change to test", numbers)
    if all(z < settings.z_threshold for z in tested):
        shown = ", ".join(f"{z:.2f}" for z in tested)
        return Verdict(
            STAGE,
            False,
            f"explained by seasonality: z {shown} < {settings.z_threshold:g} without the season",
            numbers,
        )
    best = max(tested)
    return Verdict(
        STAGE,
        True,
        f"regression remains without the season: z {best:.2f} >= {settings.z_threshold:g}",
        numbers,
    )
