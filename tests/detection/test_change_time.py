"""The change time: placed as close to the maximum-likelihood split as the data allow, never
pulled to the analysis window's edge by a change outside it, and a posterior interval that covers
the true change (detection/changepoint.py, detection/change_time.py).

Series are 1,440 historical, 24 analysis and 36 extended points (10-minute buckets: 10 days, 4 h,
6 h); steps are sized in MDE (FBDetect App. A.2, ``minimum_detectable_effect``) for the points
from the step to the end, in units of the noise's standard deviation.
"""

from __future__ import annotations

import numpy as np
import pytest

from regbot.datasets.fleet import FleetScenario, minimum_detectable_effect, simulate_fleet
from regbot.detection.change_time import (
    change_posterior,
    credible_span,
    density_interval,
    mass_between,
)
from regbot.detection.changepoint import detect_change_points, detect_window_changes
from regbot.detection.pipeline import find_change_candidates
from regbot.detection.presets import Threshold, Windows, WorkloadSettings
from regbot.detection.report import regression_entry
from regbot.detection.series_batch import SeriesBatch
from regbot.detection.stage_settings import ChangePointSettings, DetectionSettings, LongTermSettings

N, A, E = 1500, 1440, 1464
SHARE, SAMPLES = 0.01, 200_000


def mde_in_sigma(n_after: int) -> float:
    """App. A.2's MDE over the per-point noise (the binomial noise of a 1% share)."""
    sigma = np.sqrt(SHARE * (1 - SHARE) / SAMPLES)
    return minimum_detectable_effect(SHARE, SAMPLES, n_after) / sigma


def stepped(seed: int, positions: np.ndarray, sizes_mde: np.ndarray) -> np.ndarray:
    """Unit Gaussian noise with a step of ``sizes_mde`` MDE at ``positions`` (MDE for the points
    after the step, or after the window's start for a step before it)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, (len(positions), N))
    for row, (at, size) in enumerate(zip(positions, sizes_mde)):
        x[row, at:] += size * mde_in_sigma(N - max(int(at), A))
    return x


def window_search(x: np.ndarray, settings: ChangePointSettings = ChangePointSettings()):
    rows = len(x)
    return detect_window_changes(x, np.full(rows, N), np.full(rows, A), np.full(rows, E), settings)


def reported(points) -> np.ndarray:
    """What `regbot detect` turns into candidates: a significant increase in the window."""
    return (points.index >= 0) & (points.p_value < 0.01) & (points.mean_after > points.mean_before)


def covers(points, truth: np.ndarray) -> np.ndarray:
    return (points.interval_start <= truth) & (truth <= points.interval_end)


def test_placement_within_six_buckets_at_four_mde_and_more() -> None:
    rng = np.random.default_rng(40)
    rows = 400
    truth = rng.integers(A, E, rows)
    sizes = np.resize([4.0, 5.0, 7.0, 10.0], rows)
    points = window_search(stepped(41, truth, sizes))
    placed = reported(points) & (np.abs(points.index - truth) <= 6)
    assert placed.mean() >= 0.97
    assert placed[sizes == 10.0].all()


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_steps_just_after_the_window_start_are_placed_where_they_are(offset: int) -> None:
    rows = 100
    truth = np.full(rows, A + offset)
    points = window_search(stepped(50 + offset, truth, np.full(rows, 10.0)))
    assert reported(points).all()
    assert (np.abs(points.index - truth) <= 6).all()
    assert (points.index == truth).mean() >= 0.9
    assert covers(points, truth).mean() >= 0.95


def test_a_step_before_the_window_is_not_this_windows_regression() -> None:
    """A step 2 points before the window: the window-only search reports nearly all of them at
    the window's first point; the window search reports almost none, and whatever it reports
    is at the right time with an interval that holds the truth."""
    rows = 300
    truth = np.full(rows, A - 2)
    x = stepped(60, truth, np.full(rows, 10.0))
    old = detect_change_points(
        x, np.full(rows, N), search_start=np.full(rows, A), search_end=np.full(rows, E)
    )
    assert (reported(old) & (old.index == A)).mean() > 0.9  # the edge pull the issue reports
    points = window_search(x)
    found = reported(points)
    assert found.mean() <= 0.05
    assert (np.abs(points.index[found] - truth[found]) <= 6).all()
    assert covers(points, truth)[found].all()
    # why: the step is cut off the baseline as an older change, or its posterior lies outside
    cut = np.abs(points.segment_start - truth) <= 2
    assert (cut | (points.window_share < 0.05)).mean() >= 0.95
    # ten points before the window, at 4 MDE: almost never reported
    far = np.full(rows, A - 10)
    assert reported(window_search(stepped(61, far, np.full(rows, 4.0)))).mean() <= 0.06


def test_an_older_change_in_the_history_is_cut_from_the_baseline() -> None:
    """An older step (3σ, 200 points before the window) and a new one in the window: the new one
    is placed at its time, its baseline is the level after the older step, so its size is
    right; without the cut the baseline mixes both levels and the change looks 2.6σ larger."""
    rng = np.random.default_rng(70)
    rows = 200
    truth = rng.integers(A, E, rows)
    sizes = np.resize([4.0, 10.0], rows)
    x = stepped(71, truth, sizes)
    older = A - 200
    x[:, older:] += 3.0
    points = window_search(x)
    found = reported(points)
    assert found.mean() >= 0.97
    assert (np.abs(points.index - truth) <= 6)[found].mean() >= 0.97
    assert (np.abs(points.segment_start - older) <= 2).mean() >= 0.97
    planted = sizes * np.array([mde_in_sigma(N - t) for t in truth])
    error = (points.mean_after - points.mean_before - planted)[found]
    assert np.abs(np.median(error)) < 0.1
    uncut = window_search(x, ChangePointSettings(max_segment_cuts=0))
    assert np.median(uncut.mean_after - uncut.mean_before - planted) > 2.0


def test_noise_gives_no_candidate_beyond_the_nominal_rate() -> None:
    rng = np.random.default_rng(80)
    rows = 3000
    points = window_search(rng.normal(0, 1, (rows, N)))
    assert reported(points).mean() <= 0.01


def test_interval_covers_the_true_change_from_one_to_ten_mde() -> None:
    rng = np.random.default_rng(90)
    levels = [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0]
    rows = 150 * len(levels)
    truth = rng.integers(A, E, rows)
    sizes = np.repeat(levels, 150)
    points = window_search(stepped(91, truth, sizes))
    found = reported(points)
    width = points.interval_end - points.interval_start + 1
    for level in levels:
        chosen = found & (sizes == level)
        assert chosen.sum() >= 30, level
        assert covers(points, truth)[chosen].mean() >= 0.9, level
    assert np.median(width[found & (sizes == 10.0)]) <= 2
    assert np.median(width[found & (sizes == 4.0)]) <= 10


def test_fleet_candidates_carry_an_interval_that_covers_the_step() -> None:
    """Simulated gCPU fleet (binomial sampling under a diurnal load, server generations, seasonal
    rows): placement and coverage through `regbot detect`'s candidate search."""
    scenario = FleetScenario(
        n_series=1200,
        step_share=0.6,
        step_sizes_mde=(1.0, 1.5, 2.0, 4.0, 10.0),
        transient_share=0.05,
        creep_share=0.0,
        seasonal_peak_share=0.05,
    )
    series, events, bounds = simulate_fleet(scenario, seed=5)
    windows = Windows(
        bounds.analysis_start_s - bounds.historical_start_s,
        bounds.extended_start_s - bounds.analysis_start_s,
        bounds.end_s - bounds.extended_start_s,
    )
    settings = DetectionSettings(
        workload=WorkloadSettings(Threshold("absolute", 0.0), windows, 3600.0),
        long_term=LongTermSettings(enabled=False),
        workers=1,
    )
    batch = SeriesBatch.from_series(series)
    found = {c.series_id: c for c in find_change_candidates(batch, bounds, settings)}
    close_s = 6 * scenario.bucket_s
    near_large = []
    for size in scenario.step_sizes_mde:
        steps = [e for e in events if e.kind == "step" and e.size_in_mde == size]
        hits = [(e, found[e.series_id]) for e in steps if e.series_id in found]
        covered = [c.change_interval_s[0] <= e.start_s <= c.change_interval_s[1] for e, c in hits]
        assert np.mean(covered) >= 0.9, size
        if size >= 4.0:
            near = {e.series_id for e, c in hits if abs(c.change_time_s - e.start_s) <= close_s}
            near_large += [e.series_id in near for e in steps]
        for _, c in hits:
            low, high = c.change_interval_s
            assert low <= c.change_time_s <= high
    # a share of ~2 samples per bucket is Poisson-like, so even the ML split misses some
    assert np.mean(near_large) >= 0.97
    entry = regression_entry(next(iter(found.values()))).to_json()
    low, high = entry["change_time_interval"]
    assert low <= entry["change_time"] <= high


def test_posterior_of_hand_made_series() -> None:
    """A noiseless step is one position; a noisy one spreads, and a larger mass never gives a
    narrower interval; the posterior sums to 1 over the allowed positions."""
    x = np.array(
        [[0.0, 0, 0, 0, 0, 1, 1, 1, 1, 1], [0, 0.2, -0.1, 0.1, 0, 0.6, 0.3, 0.7, 0.4, 0.5]]
    )
    lengths = np.array([10, 10])
    points = detect_change_points(x, lengths, direction="both")
    assert points.index.tolist() == [5, 5]
    assert (points.interval_start[0], points.interval_end[0]) == (5, 5)
    centred = x - x.mean(axis=1, keepdims=True)
    p1 = np.concatenate([np.zeros((2, 1)), np.cumsum(centred, axis=1)], axis=1)
    p2 = np.concatenate([np.zeros((2, 1)), np.cumsum(centred**2, axis=1)], axis=1)
    zero, ten = np.zeros(2, np.int64), np.full(2, 10)
    posterior = change_posterior(p1, p2, zero, ten, zero, ten + 1, 3)
    assert posterior[0].sum(axis=1) == pytest.approx([1.0, 1.0])
    assert mass_between(posterior, np.full(2, 3), np.full(2, 8)) == pytest.approx([1.0, 1.0])
    assert posterior[0][0, 5] == pytest.approx(1.0)
    narrow = density_interval(posterior, points.index, 0.5)
    wide = density_interval(posterior, points.index, 0.99)
    assert wide[0][1] <= narrow[0][1] <= 5 <= narrow[1][1] <= wide[1][1]
    assert wide[1][1] - wide[0][1] >= 1


def test_interval_of_a_count_step_allows_for_the_larger_noise_after_it() -> None:
    """Sampled counts (Poisson, 0.5–2 a bucket) that rise 4–10×: the noise after the step is
    larger than before it. The interval (a noise scale per side) covers the true change in ≥ 95%
    of cases; the test's pooled scale alone makes zero-width intervals that miss more often."""
    rng = np.random.default_rng(7)
    rows = 600
    truth = rng.integers(A, E, rows)
    rate = rng.uniform(0.5, 2.0, rows)[:, None] * np.where(
        np.arange(N)[None, :] >= truth[:, None], np.resize([4.0, 6.0, 10.0], rows)[:, None], 1.0
    )
    x = rng.poisson(rate).astype(np.float64)
    points = window_search(x)
    found = reported(points)
    assert found.mean() >= 0.99
    separate = covers(points, truth)[found].mean()
    assert separate >= 0.95
    centred = x - x.mean(axis=1, keepdims=True)
    p1 = np.concatenate([np.zeros((rows, 1)), np.cumsum(centred, axis=1)], axis=1)
    p2 = np.concatenate([np.zeros((rows, 1)), np.cumsum(centred**2, axis=1)], axis=1)
    prior = np.full(rows, A - (E - A)), np.full(rows, E + (E - A) + 1)
    segment = points.segment_start, points.segment_end
    pooled = change_posterior(p1, p2, *segment, *prior, 3, "pooled")
    low, high = density_interval(pooled, points.index, 0.95)
    assert ((low <= truth) & (truth <= high))[found].mean() < separate - 0.03
    assert np.median((points.interval_end - points.interval_start)[found]) <= 2


def test_separate_scales_find_a_step_whose_noise_grows() -> None:
    """A quiet level then a noisy higher one: the separate-scale posterior puts its mass at the
    step; a point between the levels goes to the side whose noise it fits."""
    x = np.array([[0.0, 0.01, -0.01, 0.0, 0.01, -0.01, 0.0, 2.0, 0.8, 3.1, 1.2, 2.9, 1.0, 2.4]])
    centred = x - x.mean()
    p1 = np.concatenate([[[0.0]], np.cumsum(centred, axis=1)], axis=1)
    p2 = np.concatenate([[[0.0]], np.cumsum(centred**2, axis=1)], axis=1)
    lo, hi = np.array([0]), np.array([14])
    post, offset = change_posterior(p1, p2, lo, hi, lo, hi + 1, 3, "separate")
    assert post.sum() == pytest.approx(1.0)
    assert offset + post.argmax() == 7
    assert post[0, 7 - offset] >= 0.9


def test_credible_span_is_narrow_at_a_sharp_change_and_wide_without_one() -> None:
    rng = np.random.default_rng(12)
    x = rng.normal(0, 1, (3, 200))
    x[0, 120:] += 6.0  # sharp: the span holds 120 and little else
    x[1, 80:] -= 6.0  # a drop outside the range: the range's edge, nothing inside
    first, last = credible_span(x, 100, 150, 3, 0.99)
    assert first[0] <= 120 <= last[0] and last[0] - first[0] <= 4
    assert last[2] - first[2] >= 20  # no change: most of the range
    assert credible_span(x, 150, 150, 3, 0.99)[0].tolist() == [-1, -1, -1]
