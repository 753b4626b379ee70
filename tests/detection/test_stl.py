"""The vectorised STL against statsmodels' ``STL`` (the reference it re-implements): the same
decomposition to rounding (the loess fits sum in another order), over lengths that are and are not
whole periods, jumps, robust and plain fits; and each series' numbers independent of its batch."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.tsa.seasonal import STL

from regbot.detection.seasonality import decompose, decompose_many
from regbot.detection.stl import stl_batch

TOLERANCE = 1e-11  # of the series' largest |value|; observed: about 1e-14


def odd_at_least(x: float, low: int) -> int:
    n = max(int(math.ceil(x)), low)
    return n if n % 2 == 1 else n + 1


def series(rng: np.random.Generator, rows: int, n: int, period: int) -> np.ndarray:
    """Daily swings of random size, Student-t noise (outliers for the robustness weights), a
    random walk, one spike."""
    t = np.arange(n)
    y = (
        np.sin(2 * np.pi * t / period)[None, :] * rng.uniform(0.5, 3, (rows, 1))
        + rng.standard_t(3, (rows, n))
        + np.cumsum(rng.normal(0, 0.05, (rows, n)), axis=1)
    )
    y[0, n // 3] += 40.0
    return y


CASES = [
    # (n, period, seasonal, robust): whole periods, ragged last cycle, a window longer than the
    # cycle-subseries, windows with jumps, a short series
    (1008, 144, 7, True),
    (1000, 144, 7, True),
    (1500, 144, 7, True),
    (168, 24, 7, True),
    (49, 24, 7, True),
    (300, 7, 13, True),
    (700, 100, 9, False),
    (61, 12, 25, True),
]


@pytest.mark.parametrize(("n", "period", "seasonal", "robust"), CASES)
def test_stl_batch_matches_statsmodels(n, period, seasonal, robust):
    rng = np.random.default_rng(n + period)
    y = series(rng, 4, n, period)
    trend = odd_at_least(1.5 * period / (1 - 1.5 / seasonal), 3)
    low_pass = odd_at_least(period + 1, 3)
    jumps = {
        "seasonal_jump": math.ceil(seasonal / 10),
        "trend_jump": math.ceil(trend / 10),
        "low_pass_jump": math.ceil(low_pass / 10),
    }
    got_seasonal, got_trend = stl_batch(
        y, period, seasonal, trend, low_pass, robust=robust, **jumps
    )
    for row in range(len(y)):
        ref = STL(
            y[row], period=period, seasonal=seasonal, trend=trend, low_pass=low_pass,
            robust=robust, **jumps,
        ).fit()  # fmt: skip
        scale = float(np.max(np.abs(y[row])))
        assert np.max(np.abs(got_seasonal[row] - ref.seasonal)) <= TOLERANCE * scale
        assert np.max(np.abs(got_trend[row] - ref.trend)) <= TOLERANCE * scale


@pytest.mark.parametrize(("n", "period"), [(1008, 144), (1500, 144), (61, 12)])
def test_each_series_numbers_do_not_depend_on_its_batch(n, period):
    rng = np.random.default_rng(5)
    y = series(rng, 9, n, period)
    windows = (
        period,
        7,
        odd_at_least(1.5 * period / (1 - 1.5 / 7), 3),
        odd_at_least(period + 1, 3),
    )
    jumps = {"seasonal_jump": 1, "trend_jump": 3, "low_pass_jump": 2}
    together = stl_batch(y, *windows, **jumps)
    for row in (0, 4, 8):
        alone = stl_batch(y[row : row + 1], *windows, **jumps)
        pair = stl_batch(y[[row, 0]], *windows, **jumps)
        for part in (0, 1):
            assert np.array_equal(alone[part][0], together[part][row])
            assert np.array_equal(pair[part][0], together[part][row])


def test_decompose_many_is_decompose_of_each():
    rng = np.random.default_rng(8)
    hour = 3600.0
    jobs = []
    for n, period in ((24 * 9, 24), (24 * 7, 24), (24 * 9, 24), (12 * 5, 12)):
        times = 1.7e9 + hour * np.arange(n)
        jobs.append((times, series(rng, 1, n, period)[0], period))
    many = decompose_many(jobs)
    for job, fit in zip(jobs, many):
        one = decompose(*job)
        assert np.array_equal(one.grid_s, fit.grid_s) and one.period_points == fit.period_points
        assert np.array_equal(one.seasonal, fit.seasonal)
        assert np.array_equal(one.trend, fit.trend)
    with pytest.raises(ValueError, match="cannot decompose"):
        decompose_many([*jobs, (jobs[0][0][:30], jobs[0][1][:30], 24)])
