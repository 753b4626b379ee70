"""The seasonal period of a history (FBDetect §5.2.3's ACF test), for one series or for many on
one time axis: the period of the largest significant autocorrelation among the periods tried,
on the points interpolated onto their median-spacing grid.

Complexity: O(n log n) per series (the ACF's FFT); ``choose_periods`` shares the grid of a
batch's common time axis and takes every row's ACF in one call (``acf.acf_band_rows``).
Design: docs/design/seasonality.md
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from regbot.detection.acf import acf_band, acf_band_rows
from regbot.detection.order_stats import median

__all__ = [
    "MAX_GRID_FACTOR",
    "MIN_PERIOD_POINTS",
    "PeriodChoice",
    "PeriodMemo",
    "PeriodNumbers",
    "choose_period",
    "choose_periods",
    "float_or_none",
    "median_spacing_s",
    "period_key",
    "regular_grid",
    "remembered_period",
]

MIN_PERIOD_POINTS = 4
MAX_GRID_FACTOR = 4

PeriodNumbers = dict[str, object]
PeriodChoice = tuple[int | None, PeriodNumbers]
# choose_period's answers for one candidate's pre-change points, by (periods_s, acf_alpha): the
# went-away and seasonality stages test the same points, so the second asks the first's answer
PeriodMemo = dict[tuple[tuple[float, ...], float], PeriodChoice]


def median_spacing_s(times_s: np.ndarray) -> float | None:
    """The median spacing of consecutive ``times_s``; None for fewer than two or no positive,
    finite median."""
    if len(times_s) < 2:
        return None
    spacing = median(np.diff(times_s))
    return spacing if spacing > 0 and math.isfinite(spacing) else None


def regular_grid(times_s: np.ndarray, spacing_s: float) -> np.ndarray | None:
    """Timestamps ``t0, t0 + spacing, ...`` up to the last timestamp; None if too many."""
    count = int(math.floor((times_s[-1] - times_s[0]) / spacing_s + 1e-9)) + 1
    if count > MAX_GRID_FACTOR * len(times_s):
        return None
    grid: npt.NDArray[np.float64] = times_s[0] + spacing_s * np.arange(count)
    return grid


def float_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _no_period(periods_s: tuple[float, ...]) -> PeriodNumbers:
    return {
        "spacing_s": None,
        "periods_tried_s": [float(p) for p in periods_s],
        "acf_tried": [None] * len(periods_s),
        "acf_bound_tried": [None] * len(periods_s),
        "period_s": None,
        "period_points": None,
        "acf": None,
        "acf_bound": None,
    }


def _lags(
    spacing_s: float, grid_points: int, periods_s: tuple[float, ...]
) -> tuple[list[int], list[bool]]:
    """Each period in points of the spacing, and whether the grid can test it (at least
    ``MIN_PERIOD_POINTS`` points, two full periods)."""
    lags = [int(round(p / spacing_s)) for p in periods_s]
    usable = [lag >= MIN_PERIOD_POINTS and grid_points >= 2 * lag for lag in lags]
    return lags, usable


def _decide(
    numbers: PeriodNumbers,
    coefficients: np.ndarray,
    interval: np.ndarray,
    lags: list[int],
    usable: list[bool],
    periods_s: tuple[float, ...],
) -> PeriodChoice:
    """The significant period with the largest ACF from one series' ACF and band, with its
    numbers filled in ``numbers``."""
    best: tuple[float, int] | None = None
    acf_tried: list[float | None] = []
    bound_tried: list[float | None] = []
    for i, (lag, ok) in enumerate(zip(lags, usable)):
        if not ok:
            acf_tried.append(None)
            bound_tried.append(None)
            continue
        value = float(coefficients[lag])
        # statsmodels' band is [acf - interval, acf + interval]; the bound is acf minus its
        # lower edge, as before
        bound = float(coefficients[lag] - (coefficients[lag] - interval[lag]))
        acf_tried.append(float_or_none(value))
        bound_tried.append(float_or_none(bound))
        if value > 0 and value > bound and (best is None or value > best[0]):
            best = (value, i)
    numbers["acf_tried"] = acf_tried
    numbers["acf_bound_tried"] = bound_tried
    if best is None:
        return None, numbers
    i = best[1]
    numbers.update(
        period_s=float(periods_s[i]),
        period_points=lags[i],
        acf=acf_tried[i],
        acf_bound=bound_tried[i],
    )
    return lags[i], numbers


def choose_period(
    times_s: np.ndarray, values: np.ndarray, periods_s: tuple[float, ...], acf_alpha: float
) -> PeriodChoice:
    """The seasonal period in points with the largest significant ACF, or None.

    ``times_s``/``values`` are the points to test (ascending times). Returns the period (in
    points of the median spacing) and the numbers compared: ``spacing_s``, the periods tried with
    their ``acf_tried``/``acf_bound_tried`` (None where a period was unusable: under
    ``MIN_PERIOD_POINTS`` points or fewer than two full periods), and for the chosen period
    ``period_s``, ``period_points``, ``acf``, ``acf_bound`` (all None when none is significant).
    """
    numbers = _no_period(periods_s)
    times_s = np.asarray(times_s, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    spacing = median_spacing_s(times_s)
    if spacing is None:
        return None, numbers
    numbers["spacing_s"] = spacing
    grid = regular_grid(times_s, spacing)
    if grid is None:
        return None, numbers
    lags, usable = _lags(spacing, len(grid), periods_s)
    gridded = np.interp(grid, times_s, values)
    if not any(usable) or not np.ptp(gridded) > 0:
        return None, numbers
    nlags = max(lag for lag, ok in zip(lags, usable) if ok)
    coefficients, interval = acf_band(gridded, nlags, acf_alpha)
    return _decide(numbers, coefficients, interval, lags, usable, periods_s)


def choose_periods(
    times_s: np.ndarray, values: np.ndarray, periods_s: tuple[float, ...], acf_alpha: float
) -> list[PeriodChoice]:
    """``choose_period(times_s, row, periods_s, acf_alpha)`` of each row of ``values`` (rows, n)
    on one time axis ``times_s`` (n,): the spacing, grid and lags are the axis' and computed
    once, the ACFs of all rows in one call. On a regular axis (the grid is the axis itself) the
    gridded values are the values (``np.interp`` returns a point's own value there)."""
    times_s = np.asarray(times_s, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    rows = len(values)
    choices: list[PeriodChoice] = [(None, _no_period(periods_s)) for _ in range(rows)]
    spacing = median_spacing_s(times_s)
    if spacing is None or not rows:
        return choices
    for _, numbers in choices:
        numbers["spacing_s"] = spacing
    grid = regular_grid(times_s, spacing)
    if grid is None:
        return choices
    lags, usable = _lags(spacing, len(grid), periods_s)
    if not any(usable):
        return choices
    if len(grid) == len(times_s) and np.array_equal(grid, times_s):
        gridded = values
    else:
        gridded = np.stack([np.interp(grid, times_s, row) for row in values])
    varying = np.flatnonzero(np.ptp(gridded, axis=1) > 0)
    if not varying.size:
        return choices
    nlags = max(lag for lag, ok in zip(lags, usable) if ok)
    coefficients, interval = acf_band_rows(gridded[varying], nlags, acf_alpha)
    for k, row in enumerate(varying.tolist()):
        numbers = choices[row][1]
        choices[row] = _decide(numbers, coefficients[k], interval[k], lags, usable, periods_s)
    return choices


def period_key(periods_s: tuple[float, ...], acf_alpha: float) -> tuple[tuple[float, ...], float]:
    """The key of ``choose_period``'s answer for these settings in a ``PeriodMemo``."""
    return tuple(float(p) for p in periods_s), float(acf_alpha)


def remembered_period(
    times_s: np.ndarray,
    values: np.ndarray,
    periods_s: tuple[float, ...],
    acf_alpha: float,
    memo: PeriodMemo | None,
) -> PeriodChoice:
    """``choose_period``, remembered in ``memo`` (which must belong to these very points) by its
    settings; without a memo, computed."""
    if memo is None:
        return choose_period(times_s, values, periods_s, acf_alpha)
    key = period_key(periods_s, acf_alpha)
    found = memo.get(key)
    if found is None:
        found = memo[key] = choose_period(times_s, values, periods_s, acf_alpha)
    return found
