"""Went-away on levels: real steps of 1.5× the minimum detectable effect survive, transients and
short bursts in an upper mode do not, and the verdict says which level statistic judged."""

from __future__ import annotations

import numpy as np
import pytest
from factories import grid_candidate
from scipy.stats import t as student_t

from regbot.detection.model import Candidate
from regbot.detection.noise_shape import noise_shape, rolling_levels
from regbot.detection.stage_settings import WentAwaySettings
from regbot.detection.went_away import went_away_verdict
from regbot.detection.went_away_levels import find_drop

BUCKET_S = 600.0
T0_S = 1_700_000_000.0
N_HIST, N_ANALYSIS, N_EXTENDED = 1440, 24, 36
SETTINGS = WentAwaySettings()


def mde(sigma: float, n_after: int, alpha: float = 0.01) -> float:
    """FBDetect App. A.2: t_(1-α/2, n2-1) · σ / √n2."""
    return float(student_t.ppf(1 - alpha / 2, n_after - 1) * sigma / np.sqrt(n_after))


def candidate(values: np.ndarray, change: int) -> Candidate:
    return grid_candidate(
        values,
        change,
        n_hist=N_HIST,
        n_analysis=N_ANALYSIS,
        bucket_s=BUCKET_S,
        t0_s=T0_S,
        series_id="gcpu:Feed.rank",
        kind="gcpu",
    )


def test_lasting_steps_of_one_and_a_half_mde_are_kept():
    """300 seeded steps of 1.5× MDE anywhere in the analysis window, of those the change-point
    test finds (its LLR ≈ z² over χ²(2) at 1%: z > 3.03): went-away removes at most 2% (the
    issue's budget for all filters together)."""
    removed = found = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        change = N_HIST + int(rng.integers(0, N_ANALYSIS))
        n = N_HIST + N_ANALYSIS + N_EXTENDED
        values = 1.0 + 0.05 * rng.standard_normal(n)
        values[change:] += 1.5 * mde(0.05, n - change)
        before, after = values[:change], values[change:]
        z = (after.mean() - before.mean()) / (before.std() * np.sqrt(1 / change + 1 / after.size))
        if z < 3.03:
            continue
        found += 1
        removed += not went_away_verdict(candidate(values, change), SETTINGS).passed
    assert found > 200
    assert removed <= 0.02 * found, (removed, found)


@pytest.mark.parametrize("seed", range(3))
def test_small_real_step_beside_outliers_in_history_is_kept(seed):
    """A +2.5% level in a noisy history with outliers: the history's 95th percentile of points
    lies above the new level, its levels do not."""
    rng = np.random.default_rng(seed)
    n = N_HIST + N_ANALYSIS + N_EXTENDED
    values = 50.0 + 1.0 * rng.standard_normal(n)
    outliers = rng.choice(N_HIST, 110, replace=False)
    values[outliers] += rng.uniform(3, 8, 110)
    change = N_HIST + 4
    values[change:] += 1.25  # +2.5%
    verdict = went_away_verdict(candidate(values, change), SETTINGS)
    assert np.percentile(values[:N_HIST], 95) > np.percentile(values[change:], 90)
    assert verdict.passed, verdict.reason
    assert verdict.numbers["level_statistic"] == "median"  # outliers: heavy tails


@pytest.mark.parametrize("seed", range(20))
def test_transients_are_filtered(seed):
    rng = np.random.default_rng(100 + seed)
    n = N_HIST + N_ANALYSIS + N_EXTENDED
    values = 1.0 + 0.05 * rng.standard_normal(n)
    change = N_HIST + int(rng.integers(0, N_ANALYSIS - 12))
    length = int(rng.integers(2, 13))
    values[change : change + length] += rng.uniform(3, 10) * mde(0.05, n - change)
    verdict = went_away_verdict(candidate(values, change), SETTINGS)
    assert not verdict.passed, verdict.reason


def markov_levels(rng: np.random.Generator, n: int, levels: tuple[float, ...], stay: float):
    state, out = 0, np.empty(n)
    for i in range(n):
        if rng.random() > stay:
            state = int(rng.integers(0, len(levels)))
        out[i] = levels[state]
    return out


@pytest.mark.parametrize("seed", range(10))
def test_short_burst_in_the_upper_mode_of_a_bimodal_series_is_filtered(seed):
    """Benchmarks on shared hardware flip between levels; a burst of the upper mode after the
    change point is not a regression, and the verdict says medians judged it."""
    rng = np.random.default_rng(200 + seed)
    n = N_HIST + N_ANALYSIS + N_EXTENDED
    values = markov_levels(rng, n, (10.0, 11.0), 0.9) + 0.05 * rng.standard_normal(n)
    change = N_HIST + 5
    values[change:] = 10.0 + 0.05 * rng.standard_normal(n - change)
    values[change : change + 8] = 11.0 + 0.05 * rng.standard_normal(8)
    verdict = went_away_verdict(candidate(values, change), SETTINGS)
    assert verdict.numbers["noise"] == "not normal"
    assert verdict.numbers["level_statistic"] == "median"
    assert not verdict.passed, verdict.reason


def test_bimodal_series_that_moves_to_a_new_level_is_kept():
    rng = np.random.default_rng(7)
    n = N_HIST + N_ANALYSIS + N_EXTENDED
    values = markov_levels(rng, n, (10.0, 11.0), 0.9) + 0.05 * rng.standard_normal(n)
    change = N_HIST + 5
    values[change:] += 1.5
    assert went_away_verdict(candidate(values, change), SETTINGS).passed


def test_noise_shape_tells_normal_heavy_tailed_and_bimodal_apart():
    rng = np.random.default_rng(3)
    assert noise_shape(rng.standard_normal(1500)).normal
    assert not noise_shape(rng.standard_t(2, 1500)).normal
    assert not noise_shape(markov_levels(rng, 1500, (0.0, 1.0, 2.0), 0.8)).normal
    assert noise_shape(rng.standard_normal(10)).normal  # too few to tell


def test_rolling_levels_and_drop_on_hand_cases():
    v = np.array([1.0, 2.0, 3.0, 10.0])
    assert rolling_levels(v, 2, "mean").tolist() == [1.5, 2.5, 6.5]
    assert rolling_levels(v, 3, "median").tolist() == [2.0, 3.0]
    assert rolling_levels(v, 9, "mean").tolist() == [4.0]
    drop = find_drop(np.array([5.0, 5.1, 4.9, 1.0, 1.1, 0.9, 1.0]), 3)
    assert drop.index == 3 and drop.p_value < 0.01
    assert find_drop(np.array([1.0, 1.0, 2.0, 2.0, 2.0]), 2).index == 0  # only a rise
