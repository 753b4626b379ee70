"""The per-row stages' shortcuts give each row what the general computation gives it, bit for
bit: phase profiles and spacings shared by rows on one time axis, the long-term screen in row
chunks, both directions' exact splits from one scan, and Brunner–Munzel without scipy's
wrappers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import brunnermunzel

from regbot.detection import changepoint, changepoint_split, long_term
from regbot.detection.long_term import screen_long_term
from regbot.detection.presets import Threshold
from regbot.detection.rank_tests import brunner_munzel_greater
from regbot.detection.season_adjust import adjust_for_season, subtract_phase_profile
from regbot.detection.series_batch import SeriesBatch, WindowBounds
from regbot.detection.stage_settings import ChangePointSettings
from regbot.profiles.model import Series

BUCKET_S = 600.0
T0_S = 1_700_000_000.0


def fleet(rows: int, points: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, times): rows on one ten-minute axis, some with a daily swing."""
    rng = np.random.default_rng(seed)
    t = T0_S + BUCKET_S * np.arange(points)
    swing = rng.uniform(0, 3, (rows, 1)) * (rng.random((rows, 1)) < 0.5)
    values = 10 + swing * np.sin(2 * np.pi * t / 86400.0) + rng.normal(0, 1, (rows, points))
    return values, np.broadcast_to(t, (rows, points)).copy()


def test_phase_profile_of_rows_on_one_axis_is_each_rows_own():
    values, times = fleet(40, 700, 1)
    valid = np.ones(values.shape, bool)
    valid[:, -5:] = False  # the same padding in every row: still one axis
    historical = valid & (times < times[0, 600])
    args = (T0_S, 86400.0, 48)
    together = subtract_phase_profile(values, times, valid, historical, *args)
    for row in range(len(values)):
        alone = subtract_phase_profile(
            values[row : row + 1], times[row : row + 1], valid[row : row + 1],
            historical[row : row + 1], *args,
        )  # fmt: skip
        assert np.array_equal(alone[0], together[row])


def test_adjust_for_season_on_one_axis_is_each_rows_own():
    values, times = fleet(30, 900, 2)
    series = [
        Series(f"s{i}", "gcpu", times[i].copy(), values[i].copy()) for i in range(len(values))
    ]
    batch = SeriesBatch.from_series(series)
    windows = WindowBounds(
        T0_S, T0_S + 800 * BUCKET_S, T0_S + 850 * BUCKET_S, T0_S + 900 * BUCKET_S
    )
    periods = (86400.0, 7 * 86400.0)
    together, chosen = adjust_for_season(batch, windows, periods, 0.01)
    assert 0 < chosen.sum() < len(values)
    for row in range(len(values)):
        alone, one = adjust_for_season(batch.rows(row, row + 1), windows, periods, 0.01)
        assert np.array_equal(alone[0], together[row]) and one[0] == chosen[row]


def test_screen_in_chunks_is_the_screen_of_each_row(monkeypatch: pytest.MonkeyPatch):
    values, times = fleet(50, 700, 3)
    values[::3, 620:] += 2.0
    lengths = np.full(len(values), 700)
    lengths[::7] = 650
    windows = WindowBounds(
        T0_S, T0_S + 600 * BUCKET_S, T0_S + 660 * BUCKET_S, T0_S + 700 * BUCKET_S
    )
    threshold = Threshold("absolute", 0.5)
    whole = screen_long_term(values, times, lengths, windows, threshold, 0.1)
    monkeypatch.setattr(long_term, "SCREEN_ROWS", 7)
    chunked = screen_long_term(values, times, lengths, windows, threshold, 0.1)
    assert np.array_equal(whole, chunked) and 0 < whole.sum() < len(values)
    for row in range(len(values)):  # alone: the row's own masks, not a shared axis's
        one = slice(row, row + 1)
        alone = screen_long_term(values[one], times[one], lengths[one], windows, threshold, 0.1)
        assert alone[0] == whole[row]


@pytest.mark.parametrize("seed", range(3))
def test_exact_splits_of_both_directions_from_one_scan(seed):
    rng = np.random.default_rng(seed)
    rows, width = 60, 300
    values = rng.normal(size=(rows, width))
    values[: rows // 2, 150:] += rng.uniform(-2, 2, (rows // 2, 1))
    values[::5] = np.round(values[::5])  # ties between positions
    values[7] = 1.0  # constant
    lengths = rng.integers(20, width + 1, rows)
    lengths[:10] = width
    _, p1, p2 = changepoint._prefix_sums(values, lengths)
    seg_lo = rng.integers(0, 10, rows)
    seg_hi = lengths.copy()
    start, end = seg_lo.copy(), np.minimum(seg_hi, rng.integers(5, width, rows))
    settings = ChangePointSettings()
    args = (p1, p2, seg_lo, seg_hi, start, end, settings)
    up = changepoint_split.split(*args, "increase", iterate=False)
    down = changepoint_split.split(*args, "decrease", iterate=False)
    both = changepoint_split.split(*args, "both", iterate=False)
    take_down = down[3] > up[3]
    for got, u, d in zip(both, up, down):
        assert np.array_equal(got, np.where(take_down, d, u))


def test_brunner_munzel_equals_scipy():
    rng = np.random.default_rng(4)
    for i in range(2000):
        x = rng.normal(size=int(rng.integers(1, 60))) + rng.uniform(-1, 1)
        y = rng.normal(size=int(rng.integers(1, 300)))
        if i % 3 == 0:
            x, y = np.round(x), np.round(y)
        if i % 7 == 0:
            x = np.full(x.size, 1.0)  # no rank spread: NaN, as scipy
        if i % 11 == 0:
            y[0] = np.nan
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = float(brunnermunzel(x, y, alternative="greater").pvalue)
            got = brunner_munzel_greater(x, y)
        assert got == ref or (np.isnan(got) and np.isnan(ref))
