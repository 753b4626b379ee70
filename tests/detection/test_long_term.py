"""Long-term detector (FBDetect §5.3) and its vectorised screen on seeded synthetic series."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest

from regbot.detection.long_term import detect_long_term, optimal_split, screen_long_term
from regbot.detection.presets import Threshold
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import LongTermSettings

HOUR_S = 3600.0
HISTORY = 10 * 24  # points (hours)
ANALYSIS = 48
EXTENDED = 12
SETTINGS = LongTermSettings()
ABSOLUTE = Threshold("absolute", 0.5)
WINDOWS = WindowBounds(
    0.0, HISTORY * HOUR_S, (HISTORY + ANALYSIS) * HOUR_S, (HISTORY + ANALYSIS + EXTENDED) * HOUR_S
)


def series(
    seed: int,
    *,
    creep: float = 0.0,
    step_at: int | None = None,
    amplitude: float = 0.0,
    noise: float = 0.1,
    level: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Hourly points over the three windows: ``level`` + daily sine + noise, plus a linear
    ``creep`` over the analysis window (held in the extended window) and/or a step of 1.0 at
    index ``step_at``."""
    rng = np.random.default_rng(seed)
    n = HISTORY + ANALYSIS + EXTENDED
    i = np.arange(n)
    values = level + amplitude * np.sin(2 * np.pi * i / 24) + rng.normal(0.0, noise, n)
    values += creep * np.clip((i - HISTORY) / ANALYSIS, 0.0, 1.0)
    if step_at is not None:
        values[step_at:] += 1.0
    return i * HOUR_S, values


def detect(times: np.ndarray, values: np.ndarray, threshold: Threshold = ABSOLUTE):
    return detect_long_term("s", "gcpu", times, values, 1.0, WINDOWS, threshold, SETTINGS)


@pytest.mark.parametrize("amplitude", [0.0, 0.5])
def test_gradual_creep_is_found_where_it_begins(amplitude: float) -> None:
    candidate = detect(*series(0, creep=1.0, amplitude=amplitude))
    assert candidate is not None
    assert candidate.detector == "long-term"
    assert abs(candidate.change_index - HISTORY) <= 6  # the ramp starts at the analysis start
    assert abs(candidate.change_time_s - WINDOWS.analysis_start_s) <= 6 * HOUR_S
    verdict = candidate.verdicts["long_term"]
    assert verdict.passed
    numbers = json.loads(json.dumps(verdict.numbers, allow_nan=False))
    assert numbers["gradual"] is True
    assert numbers["rmse"] < SETTINGS.rmse_threshold
    assert numbers["delta"] == pytest.approx(numbers["current"] - numbers["baseline"])
    assert numbers["delta"] > ABSOLUTE.value
    assert numbers["trend"] == ("stl" if amplitude else "rolling-median")
    assert numbers["period_points"] == (24 if amplitude else None)
    assert math.isnan(candidate.llr) and 0.0 <= candidate.p_value < 1e-3
    assert candidate.mean_after > candidate.mean_before


@pytest.mark.parametrize("seed", range(10))
def test_step_is_located_by_the_optimal_split(seed: int) -> None:
    step_at = HISTORY + 20
    candidate = detect(*series(seed, step_at=step_at))
    assert candidate is not None
    assert candidate.verdicts["long_term"].numbers["gradual"] is False
    assert abs(candidate.change_index - step_at) <= 2
    assert candidate.delta == pytest.approx(1.0, abs=0.15)


@pytest.mark.parametrize("seed", range(10))
def test_flat_series_is_not_reported(seed: int) -> None:
    assert detect(*series(seed)) is None
    assert detect(*series(seed, amplitude=0.5)) is None


def test_creep_below_the_threshold_is_not_reported() -> None:
    assert all(detect(*series(seed, creep=0.3)) is None for seed in range(10))


def test_relative_threshold() -> None:
    relative = Threshold("relative", 0.05)
    found = detect(*series(1, creep=1.0, level=10.0), relative)  # ~8% of 10
    assert found is not None
    numbers = found.verdicts["long_term"].numbers
    assert numbers["threshold_mode"] == "relative"
    assert numbers["relative_delta"] > 0.05
    assert numbers["relative_delta"] == pytest.approx(numbers["delta"] / numbers["baseline"])
    assert detect(*series(1, creep=1.0, level=100.0), relative) is None  # ~0.8% of 100


def test_empty_analysis_window_and_empty_extended_window() -> None:
    times, values = series(2, creep=1.0)
    assert detect(times[:HISTORY], values[:HISTORY]) is None
    no_extended = WindowBounds(
        0.0, WINDOWS.analysis_start_s, WINDOWS.extended_start_s, WINDOWS.extended_start_s
    )
    candidate = detect_long_term("s", "gcpu", times, values, 1.0, no_extended, ABSOLUTE, SETTINGS)
    assert candidate is not None
    assert candidate.verdicts["long_term"].numbers["current_extended"] is None
    # Points after end_s are dropped; the one at end_s joins the (closed) analysis window.
    assert len(candidate.times_s) == HISTORY + ANALYSIS + 1


def brute_force_split(values: np.ndarray) -> int:
    costs = [
        ((values[:k] - values[:k].mean()) ** 2).sum()
        + ((values[k:] - values[k:].mean()) ** 2).sum()
        for k in range(1, len(values))
    ]
    return int(np.argmin(costs)) + 1


def test_optimal_split_matches_brute_force_on_200_seeded_arrays() -> None:
    rng = np.random.default_rng(42)
    for _ in range(200):
        n = int(rng.integers(2, 80))
        values = rng.normal(0.0, 1.0, n) + rng.normal(0.0, 3.0) * (np.arange(n) >= rng.integers(n))
        assert optimal_split(values) == brute_force_split(values)


def test_optimal_split_hand_made_cases() -> None:
    assert optimal_split(np.array([0.0, 0.0, 0.0, 5.0, 5.0])) == 3
    assert optimal_split(np.array([1e9 + 1, 1e9 + 1, 1e9 + 2, 1e9 + 2])) == 2
    assert optimal_split(np.array([3.0, 7.0])) == 1
    with pytest.raises(ValueError, match="at least 2"):
        optimal_split(np.array([1.0]))


def batch(rows: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
    width = max(len(t) for t, _ in rows)
    times = np.full((len(rows), width), np.inf)
    values = np.zeros((len(rows), width))
    for i, (t, v) in enumerate(rows):
        times[i, : len(t)], values[i, : len(v)] = t, v
    return values, times, np.array([len(t) for t, _ in rows])


@pytest.mark.parametrize("amplitude", [0.0, 1.0])
def test_screen_never_rejects_a_creep_the_full_detector_finds(amplitude: float) -> None:
    rows = [
        series(seed, creep=creep, amplitude=amplitude) for seed in range(50) for creep in (0.7, 1.0)
    ]
    keep = screen_long_term(*batch(rows), WINDOWS, ABSOLUTE, SETTINGS.edge_share)
    found = np.array([detect(t, v) is not None for t, v in rows])
    assert found.sum() >= 60  # not vacuous
    assert not np.any(found & ~keep)


@pytest.mark.parametrize("amplitude", [0.0, 1.0])
def test_screen_rejects_flat_series(amplitude: float) -> None:
    rows = [series(seed, amplitude=amplitude) for seed in range(100)]
    keep = screen_long_term(*batch(rows), WINDOWS, ABSOLUTE, SETTINGS.edge_share)
    assert not keep.any()


def test_screen_respects_lengths_padding_and_relative_thresholds() -> None:
    creep = series(3, creep=1.0, level=10.0)
    short = (creep[0][:HISTORY], creep[1][:HISTORY])  # no analysis window: cannot pass
    values, times, lengths = batch([creep, short, series(4, level=10.0)])
    relative = Threshold("relative", 0.05)
    keep = screen_long_term(values, times, lengths, WINDOWS, relative, SETTINGS.edge_share)
    assert keep.tolist() == [True, False, False]
    values[1, HISTORY:] = 1e6  # garbage beyond the row's length is never read
    times[1, HISTORY:] = creep[0][HISTORY:]
    keep = screen_long_term(values, times, lengths, WINDOWS, relative, SETTINGS.edge_share)
    assert keep.tolist() == [True, False, False]


def test_a_rise_within_the_noise_is_not_reported_whatever_the_threshold() -> None:
    """The significance guard: with a tiny threshold, flat noisy series rise by chance between
    edges, and only a real creep stands out of the edge means' noise."""
    tiny = Threshold("absolute", 1e-9)
    flat = [detect(*series(seed, noise=0.5), tiny) for seed in range(40)]
    assert sum(c is not None for c in flat) <= 1
    creep = detect(*series(1, creep=3.0, noise=0.5), tiny)
    assert creep is not None
    n = creep.verdicts["long_term"].numbers
    assert n["z"] is not None and n["z"] > SETTINGS.z


FLEET_BUCKET_S = 600.0
FLEET_WINDOWS = WindowBounds(
    0.0, 1440 * FLEET_BUCKET_S, 1464 * FLEET_BUCKET_S, 1500 * FLEET_BUCKET_S
)


def wandering(seed: int) -> np.ndarray:
    """1,500 ten-minute points: a slow AR(1) load term plus white noise."""
    rng = np.random.default_rng(seed)
    load = np.zeros(1500)
    for i in range(1, 1500):
        load[i] = 0.995 * load[i - 1] + 0.004 * rng.standard_normal()
    return 1.0 + load + 0.05 * rng.standard_normal(1500)


def test_creep_over_a_day_and_a_half_is_found_beyond_the_four_hour_window() -> None:
    """A creep that began 36 hours before the end of the data hardly rises within a 4-hour
    analysis window; the long-term detector's own 2-day window sees all of it."""
    times = np.arange(1500) * FLEET_BUCKET_S
    found = 0
    for seed in range(10):
        values = wandering(seed)
        start = 1500 - 216
        values += 0.3 * np.clip((np.arange(1500) - start) / 180, 0.0, 1.0)
        candidate = detect_long_term(
            "s", "gcpu", times, values, 1.0, FLEET_WINDOWS, Threshold("absolute", 0.05), SETTINGS
        )
        if candidate is not None:
            found += 1
            # gradual: where the ramp begins; else §5.3's optimal split, inside the ramp
            assert start - 60 <= candidate.change_index <= start + 180  # wander blurs the start
            assert candidate.verdicts["long_term"].numbers["null_rise_max"] is not None
    assert found >= 9


def test_load_wander_is_not_a_long_term_regression() -> None:
    """Quiet series whose level wanders with a load term: the rise must beat every rise of the
    same span earlier in the history."""
    times = np.arange(1500) * FLEET_BUCKET_S
    reported = sum(
        detect_long_term(
            "s",
            "gcpu",
            times,
            wandering(100 + seed),
            1.0,
            FLEET_WINDOWS,
            Threshold("absolute", 0.0),
            SETTINGS,
        )
        is not None
        for seed in range(40)
    )
    assert reported <= 2


def flipped(seed: int, gap: float = 0.1) -> np.ndarray:
    """A callee's flips carried up into a caller: over the history, a level that flips by
    ``gap`` every ~60 points (ten-minute points: stays of ~10 hours); in the long-term analysis
    window, 80 points at the lower level and then the upper one to the end. White noise 0.05."""
    rng = np.random.default_rng(seed)
    a_lo = 1500 - 36 - 288
    state = np.zeros(1500)
    level = 0.0
    for i in range(1, a_lo):
        if rng.random() < 1 / 60:
            level = 1.0 - level
        state[i] = level
    state[a_lo + 80 :] = 1.0
    return 1.0 + gap * state + 0.05 * rng.standard_normal(1500)


def test_flips_carried_up_a_call_tree_are_not_a_creep() -> None:
    """The edge means' standard error is measured on the history's blocks. A flipping series'
    last stay rises by ~10 white-noise standard errors, but its blocks moved as much before:
    the error comes from the blocks (Student t), and the p-value is nowhere near a discovery
    among the run's series. (``z = 0`` lets the rise past the z guard to show the p-value; the
    earlier-rises guard stops most seeds anyway.)"""
    times = np.arange(1500) * FLEET_BUCKET_S
    settings = LongTermSettings(z=0.0)
    found = [
        detect_long_term(
            "s",
            "gcpu",
            times,
            flipped(seed),
            1.0,
            FLEET_WINDOWS,
            Threshold("absolute", 0.0),
            settings,
        )
        for seed in range(60)
    ]
    found = [c for c in found if c is not None]
    assert found
    for candidate in found:
        numbers = candidate.verdicts["long_term"].numbers
        white_se = numbers["white_noise_sd"] * math.sqrt(2.0 / numbers["edge_points"])
        assert numbers["delta"] / white_se > 5  # white noise alone would call it a creep
        assert numbers["standard_error_from"] == "history blocks"
        assert numbers["degrees_of_freedom"] >= 4
        assert candidate.p_value > 0.01


def test_a_creep_on_white_noise_has_a_normal_p_value_from_the_white_noise_error() -> None:
    times = np.arange(1500) * FLEET_BUCKET_S
    rng = np.random.default_rng(5)
    values = 1.0 + 0.05 * rng.standard_normal(1500)
    values += 0.1 * np.clip((np.arange(1500) - (1500 - 216)) / 180, 0.0, 1.0)
    found = detect_long_term(
        "s", "gcpu", times, values, 1.0, FLEET_WINDOWS, Threshold("absolute", 0.01), SETTINGS
    )
    assert found is not None
    n = found.verdicts["long_term"].numbers
    assert n["standard_error_from"] == "white noise" and n["degrees_of_freedom"] is None
    assert found.p_value == pytest.approx(NormalDist().cdf(-n["z"]), rel=1e-6)
    assert found.p_value < 1e-6


def sparse_share(seed: int, rate_after: float) -> tuple[np.ndarray, np.ndarray]:
    """A tiny gCPU share made of a few samples per bucket: Poisson counts out of 500 samples,
    mostly zero, at 0.5 per hour, creeping over the analysis window to ``rate_after`` (held in
    the extended window)."""
    rng = np.random.default_rng(seed)
    i = np.arange(HISTORY + ANALYSIS + EXTENDED)
    rate = 0.5 + (rate_after - 0.5) * np.clip((i - HISTORY) / ANALYSIS, 0.0, 1.0)
    return i * HOUR_S, rng.poisson(rate) / 500.0


def test_sparse_counts_use_a_mean_trend_and_their_own_spread() -> None:
    """On a share of a few samples per bucket the rolling median jumps between levels and the
    MAD is zero: no seed of an unchanged series is reported, and a creep to six times the rate
    is."""
    threshold = Threshold("absolute", 0.0001)
    quiet = [detect(*sparse_share(seed, 0.5), threshold) for seed in range(40)]
    assert sum(c is not None for c in quiet) <= 1
    found = [detect(*sparse_share(seed, 3.0), threshold) for seed in range(10)]
    assert sum(c is not None for c in found) >= 9
    assert {c.verdicts["long_term"].numbers["trend"] for c in found if c} == {"rolling-mean"}
