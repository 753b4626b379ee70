"""The went-away detector over a batch (``went_away_batch``) against the one-candidate reference
(``went_away_verdict``): the same verdicts, number for number, on seeded fleets of candidates
sharing time axes — seasonal and flat histories, steps, spikes, heavy tails, tied values,
constant series, short windows, irregular and duplicate timestamps, NaN — and each row-wise
building block against the one-series function it stands in for."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from factories import build_candidate

from regbot.detection import went_away_batch
from regbot.detection.acf import ELIDE_BYTES, acf_band, acf_band_rows, next_regular
from regbot.detection.model import Candidate
from regbot.detection.noise_shape import noise_shape
from regbot.detection.noise_shape_rows import noise_shapes
from regbot.detection.order_stats import mad, median, percentile
from regbot.detection.periods import PeriodMemo, choose_period, choose_periods, period_key
from regbot.detection.row_stats import row_mads, row_medians, row_percentiles
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import WentAwaySettings
from regbot.detection.went_away import went_away_verdict
from regbot.detection.went_away_batch import went_away_verdicts
from regbot.detection.went_away_levels import (
    deseasonalise,
    deseasonalise_rows,
    find_drop,
    find_drops,
)
from regbot.detection.went_away_trend import window_line, window_lines

STEP_S = 600.0
DAY = 144  # points of STEP_S
T0_S = 1_700_000_000.0
SETTINGS = WentAwaySettings()
KINDS = ("noise", "step", "daily", "daily step", "spike", "heavy", "ties", "flat", "trend")


def series(rng: np.random.Generator, kind: str, n: int, change: int) -> np.ndarray:
    """Oriented values of one ``kind`` (see ``KINDS``), the change at ``change``."""
    t = np.arange(n)
    values = 50.0 + rng.normal(0.0, 1.0, n)
    if kind in ("daily", "daily step"):
        values += rng.uniform(1.0, 5.0) * np.sin(2 * np.pi * t / DAY + rng.uniform(0, 6))
    if kind in ("step", "daily step", "heavy", "ties"):
        values[change:] += rng.uniform(0.5, 4.0)
    if kind == "spike":
        values[change : change + 4] += 6.0
    if kind == "heavy":
        values += rng.standard_t(2, n)
    if kind == "ties":
        values = np.round(values)
    if kind == "flat":
        values = np.full(n, 3.0)
        values[change:] = 3.0 + rng.integers(0, 2)
    if kind == "trend":
        values += np.linspace(0.0, rng.uniform(-3.0, 3.0), n)
    return values


def axis(rng: np.random.Generator, n: int, shape: str) -> np.ndarray:
    """Timestamps: a regular grid, a jittered one, one with gaps, or one with duplicates."""
    times = T0_S + STEP_S * np.arange(n, dtype=np.float64)
    if shape == "jitter":
        times += rng.uniform(-60.0, 60.0, n)
    elif shape == "gaps":
        times += STEP_S * np.cumsum(rng.random(n) < 0.05) * 3
    elif shape == "duplicates":
        times[1:][rng.random(n - 1) < 0.05] -= STEP_S
        times = np.maximum.accumulate(times)
    return np.sort(times)


def fleet(seed: int) -> list[Candidate]:
    """Groups of candidates on shared time axes (and a few on their own), in mixed order."""
    rng = np.random.default_rng(seed)
    out: list[Candidate] = []
    shapes = ("regular", "jitter", "gaps", "duplicates")
    for g in range(6):
        n = int(rng.choice([40, 300, 3 * DAY + 60, 9 * DAY + 60]))
        after = int(rng.choice([2, 3, 8, 30, min(n // 2, 540)]))
        change = n - after
        times = axis(rng, n, shapes[g % len(shapes)])
        analysis = float(times[max(0, change - 6)])
        windows = WindowBounds(float(times[0]), analysis, analysis + 24 * STEP_S, float(times[-1]))
        for r in range(int(rng.integers(1, 8))):
            kind = KINDS[int(rng.integers(len(KINDS)))]
            values = series(rng, kind, n, change)
            if r == 3:  # judged alone (a reader drops NaN points; the reference takes them)
                values[int(rng.integers(0, max(1, change - 10)))] = np.nan
            out.append(
                build_candidate(
                    f"{seed}-{g}-{r}-{kind}", values, change, times=times, windows=windows
                )
            )
    order = rng.permutation(len(out))
    return [out[i] for i in order]


@pytest.mark.parametrize("seed", range(12))
def test_a_batch_gives_each_candidate_its_own_verdict(seed: int) -> None:
    candidates = fleet(seed)
    memos: list[PeriodMemo] = [{} for _ in candidates]
    batch = went_away_verdicts(candidates, SETTINGS, memos)
    alone_memos: list[PeriodMemo] = [{} for _ in candidates]
    alone = [went_away_verdict(c, SETTINGS, memo=m) for c, m in zip(candidates, alone_memos)]
    assert batch == alone
    assert memos == alone_memos  # the period choices the seasonality stage reads next


def test_blocks_of_a_large_group_judge_as_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    candidates = fleet(4)
    whole = went_away_verdicts(candidates, SETTINGS)
    monkeypatch.setattr(went_away_batch, "GROUP_ROWS", 2)
    assert went_away_verdicts(candidates, SETTINGS) == whole


def test_the_fleets_cover_both_level_statistics_and_the_season() -> None:
    numbers = [v.numbers for seed in range(12) for v in went_away_verdicts(fleet(seed), SETTINGS)]
    judged = [n for n in numbers if not n["too_few_points"]]
    assert {n["level_statistic"] for n in judged} == {"mean", "median"}
    assert any(n["deseasonalised"] for n in judged)
    assert any(n["post_trend"] != "none" for n in judged)
    assert any(n["post_theil_sen_points"] == 500 for n in judged)
    assert any(n["too_few_points"] for n in numbers)


def test_memos_already_made_are_read_not_remade() -> None:
    candidates = fleet(3)
    memos: list[PeriodMemo] = [{} for _ in candidates]
    key = period_key(SETTINGS.periods_s, SETTINGS.acf_alpha)
    planted = (None, {"period_s": None})
    memos[0][key] = planted
    went_away_verdicts(candidates, SETTINGS, memos)
    assert memos[0][key] is planted


# --- the row-wise building blocks -------------------------------------------------------------


def rows(seed: int, count: int = 200) -> Iterator[np.ndarray]:
    """Seeded (rows, n) samples: normal, tied, with ±0, with a NaN, lengths 1..70."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        x = rng.normal(size=(int(rng.integers(1, 6)), int(rng.integers(1, 70))))
        if i % 3 == 0:
            x = np.round(x * 2) / 2
        if i % 5 == 0:
            x[x == 0] = -0.0
        if i % 7 == 0:
            x[0, int(rng.integers(x.shape[1]))] = np.nan
        yield x


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal floats, bit for bit (NaN equal to NaN, -0.0 not equal to 0.0)."""
    return bool(
        np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))
    )


def test_row_order_statistics_are_order_stats_row_by_row() -> None:
    for x in rows(0):
        assert same(row_medians(x), np.array([median(r) for r in x]))
        assert same(row_mads(x), np.array([mad(r) for r in x]))
        for q in (0.0, 10.0, 50.0, 90.0, 95.0, 100.0):
            assert same(row_percentiles(x, q), np.array([percentile(r, q) for r in x]))


@pytest.mark.parametrize("nobs", [20, 1441, 8000, 8190, 9000])
def test_acf_rows_are_acf_band_row_by_row(nobs: int) -> None:
    rng = np.random.default_rng(nobs)
    x = rng.normal(size=(3, nobs)) + np.sin(np.arange(nobs) / 9.0)
    coefficients, interval = acf_band_rows(x, 12, 0.01)
    for row, c, i in zip(x, coefficients, interval):
        expected_c, expected_i = acf_band(row, 12, 0.01)
        assert same(c, expected_c) and same(i, expected_i)


def test_the_elision_threshold_falls_between_the_acf_sizes_tested() -> None:
    assert next_regular(2 * 8000 + 1) * 16 < ELIDE_BYTES <= next_regular(2 * 8190 + 1) * 16


@pytest.mark.parametrize("shape", ["regular", "jitter", "gaps", "duplicates"])
def test_period_choices_are_choose_period_row_by_row(shape: str) -> None:
    rng = np.random.default_rng(7)
    n = 10 * DAY  # the ACF band finds a daily season in nine days or more
    times = axis(rng, n, shape)
    values = np.stack([series(rng, kind, n, n - 10) for kind in KINDS])
    choices = choose_periods(times, values, SETTINGS.periods_s, SETTINGS.acf_alpha)
    assert shape != "regular" or any(period is not None for period, _ in choices)
    for row, choice in zip(values, choices):
        assert choice == choose_period(times, row, SETTINGS.periods_s, SETTINGS.acf_alpha)


def test_noise_shapes_are_noise_shape_row_by_row() -> None:
    rng = np.random.default_rng(11)
    for n in (5, 19, 20, 21, 24, 25, 26, 300):
        x = np.stack([series(rng, kind, n, n // 2) for kind in KINDS])
        x[1, 2] = np.nan
        low, high = SETTINGS.normal_tail_ratio
        expected = [noise_shape(row, low=low, high=high) for row in x]
        assert repr(noise_shapes(x, low=low, high=high)) == repr(expected)  # NaN ratios too


def test_drops_and_window_lines_are_the_one_row_functions() -> None:
    rng = np.random.default_rng(5)
    for n in (3, 4, 9, 40, 61, 700):
        x = np.stack([series(rng, kind, n, n // 2) for kind in KINDS])
        times = axis(rng, n, "jitter")
        for min_after in (1, 3, n // 3 or 1):
            assert find_drops(x, min_after) == [find_drop(row, min_after) for row in x]
        statistics = [noise_shape(row).statistic for row in x]
        lines = window_lines("post", times, x, 0.01, statistics)
        assert lines == [window_line("post", times, r, 0.01, s) for r, s in zip(x, statistics)]


@pytest.mark.parametrize("shape", ["regular", "jitter"])
def test_deseasonalised_rows_are_deseasonalise_row_by_row(shape: str) -> None:
    rng = np.random.default_rng(13)
    n, change = 10 * DAY, 10 * DAY - 20
    times = axis(rng, n, shape)
    x = np.stack([series(rng, kind, n, change) for kind in KINDS])
    choices = choose_periods(times[:change], x[:, :change], SETTINGS.periods_s, SETTINGS.acf_alpha)
    values, numbers = deseasonalise_rows(times, x, change, choices)
    assert any(found["deseasonalised"] for found in numbers)
    for row, got, found in zip(x, values, numbers):
        expected, expected_numbers = deseasonalise(times, row, change, SETTINGS)
        assert same(got, expected) and found == expected_numbers
