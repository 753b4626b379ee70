"""SameRegressionMerger: one lasting change keeps one id over scheduled runs; a second change on
the same series is new only on evidence, judged against the level since the known change."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from factories import build_candidate

from regbot.detection.dedup import DedupSettings
from regbot.detection.dedup.same_regression import KnownRegression, merge_same_regressions
from regbot.detection.model import Candidate
from regbot.detection.pipeline import run_detection
from regbot.detection.presets import MinPoints, Threshold, Windows, WorkloadSettings
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import DetectionSettings
from regbot.profiles.model import Series

BUILD_S = 5 * 3600.0  # a build every five hours: far more than the 6-hour merge gap in 2 builds
GAP_S = 6 * 3600.0
SETTINGS = DedupSettings(merge_gap_s=GAP_S)  # merge_alpha 0.01, merge_min_points 3


def candidate(values: np.ndarray, change_index: int, series_id: str = "bench/a") -> Candidate:
    times = BUILD_S * np.arange(len(values), dtype=np.float64)
    windows = WindowBounds(0.0, times[change_index - 2], times[-6], times[-1])
    return build_candidate(
        series_id,
        values,
        change_index,
        times=times,
        windows=windows,
        kind="latency",
        llr=50.0,
        p_value=1e-6,
    )


def step_series(n: int, steps: dict[int, float], seed: int, sd: float = 0.005) -> np.ndarray:
    rng = np.random.default_rng(seed)
    level = np.ones(n)
    for at, size in steps.items():
        level[at:] *= 1.0 + size
    return 100.0 * level * (1.0 + rng.normal(0, sd, n))


def test_a_later_edge_of_a_known_step_is_the_same_regression() -> None:
    # The step of build 93 is still in the history; a later run finds "a change" at build 100.
    values = step_series(112, {93: 0.10}, seed=1)
    known = [KnownRegression("r-known", "bench/a", 93 * BUILD_S)]
    (kept,), merged = merge_same_regressions([candidate(values, 100)], known, SETTINGS)
    assert merged == []
    verdict = kept.verdicts["same_regression"]
    assert kept.regression_id == "r-known" and verdict.passed
    assert verdict.numbers["seen_before"] is True and verdict.numbers["significant"] is False
    assert verdict.numbers["points_since_known"] == 7 and verdict.numbers["points_after"] == 12
    assert verdict.numbers["p_value"] > 0.01


def test_a_second_step_is_new_and_judged_against_the_level_since_the_known_change() -> None:
    values = step_series(220, {93: 0.10, 200: 0.04}, seed=2)
    known = [KnownRegression("r-known", "bench/a", 93 * BUILD_S)]
    before = candidate(values, 200)
    (kept,), _ = merge_same_regressions([before], known, SETTINGS)
    verdict = kept.verdicts["same_regression"]
    assert kept.regression_id != "r-known" and verdict.numbers["seen_before"] is False
    assert verdict.numbers["significant"] is True and verdict.numbers["p_value"] < 1e-4
    # the baseline is the level since build 93 (~110), not the window's mix of ~100 and ~110
    assert abs(kept.mean_before - 110.0) < 0.5 < abs(before.mean_before - 110.0)
    assert verdict.numbers["window_mean_before"] == before.mean_before
    assert abs(kept.delta / kept.mean_before - 0.04) < 0.01


def test_too_few_points_since_the_known_change_is_no_evidence_of_a_new_one() -> None:
    values = step_series(110, {93: 0.10, 95: 0.10}, seed=3)
    known = [KnownRegression("r-known", "bench/a", 93 * BUILD_S)]
    (kept,), _ = merge_same_regressions([candidate(values, 95)], known, SETTINGS)
    assert kept.regression_id == "r-known"
    assert kept.verdicts["same_regression"].numbers["points_since_known"] == 2


def test_the_merge_level_and_fewest_points_come_from_the_dedup_settings() -> None:
    """``DedupSettings.merge_alpha`` and ``merge_min_points`` reach rule 3."""
    known = [KnownRegression("r-known", "bench/a", 93 * BUILD_S)]
    second = candidate(step_series(220, {93: 0.10, 200: 0.04}, seed=2), 200)
    strict = replace(SETTINGS, merge_alpha=1e-15)  # its p is ~1e-12
    (kept,), _ = merge_same_regressions([second], known, strict)
    numbers = kept.verdicts["same_regression"].numbers
    assert kept.regression_id == "r-known" and numbers["alpha"] == 1e-15
    assert numbers["significant"] is False
    two_since = candidate(step_series(110, {93: 0.10, 95: 0.10}, seed=3), 95)
    (kept,), _ = merge_same_regressions([two_since], known, replace(SETTINGS, merge_min_points=2))
    numbers = kept.verdicts["same_regression"].numbers
    assert numbers["points_since_known"] == 2 and numbers["p_value"] is not None


def test_heavy_tails_in_the_level_since_do_not_make_a_new_regression() -> None:
    rng = np.random.default_rng(4)
    values = step_series(140, {93: 0.10}, seed=4)
    values[96:128:4] += 40.0 * rng.random(8)  # outliers, mostly before the candidate's change
    known = [KnownRegression("r-known", "bench/a", 93 * BUILD_S)]
    (kept,), _ = merge_same_regressions([candidate(values, 128)], known, SETTINGS)
    assert kept.regression_id == "r-known"


def test_a_change_placed_before_a_known_one_that_fits_better_is_that_regression() -> None:
    values = step_series(140, {100: 0.10}, seed=5)
    known = [KnownRegression("r-known", "bench/a", 100 * BUILD_S)]
    (kept,), _ = merge_same_regressions([candidate(values, 96)], known, SETTINGS)
    numbers = kept.verdicts["same_regression"].numbers
    assert kept.regression_id == "r-known" and numbers["sse_known"] <= numbers["sse_own"]


def test_nearby_known_and_twins_keep_their_rules() -> None:
    values = step_series(120, {100: 0.10}, seed=6)
    known = [KnownRegression("r-near", "bench/a", 100 * BUILD_S + 3600.0)]
    first, second = candidate(values, 100), candidate(values, 101)
    kept, merged = merge_same_regressions([first, second], known, SETTINGS)
    assert [c.regression_id for c in kept] == ["r-near"]
    assert [c.regression_id for c in merged] == ["r-near"]
    assert merged[0].verdicts["same_regression"].passed is False


def test_scheduled_runs_report_a_lasting_step_once() -> None:
    """`detect --now` every 6 builds with the state kept: one id for the step of build 150,
    however many runs still have its old level in their history window."""
    rng = np.random.default_rng(7)
    gaps = rng.exponential(BUILD_S, 320).clip(600.0)
    times = np.cumsum(gaps)
    values = step_series(320, {150: 0.06}, seed=8, sd=0.004)
    series = [Series("bench/a", "latency", times, values)]
    windows = Windows(60.0, 60.0, 60.0, MinPoints(historical=120, analysis=6, extended=6))
    settings = DetectionSettings(
        workload=WorkloadSettings(Threshold("relative", 0.02), windows, 3600.0)
    )
    known: list[KnownRegression] = []
    latest: dict[str, float] = {}
    for now in range(140, 320, 6):
        result = run_detection(series, settings, float(times[now]))
        kept, _ = merge_same_regressions(result.reported, known, SETTINGS)
        for c in kept:
            if c.regression_id not in latest:
                known.append(KnownRegression(c.regression_id, c.series_id, c.change_time_s))
            latest[c.regression_id] = c.change_time_s
    assert len(latest) == 1  # seen again by every later run, under its first id
    (first,) = known
    assert abs(int(np.searchsorted(times, first.change_time_s)) - 150) <= 5


def test_a_known_change_placed_early_is_the_same_regression_found_where_it_happened() -> None:
    # An earlier run saw only the first points at the new level and placed the step at 146; the
    # data since says one step, at 150: the level between is the level before 146.
    values = step_series(170, {150: 0.06}, seed=9)
    known = [KnownRegression("r-early", "bench/a", 146 * BUILD_S)]
    (kept,), _ = merge_same_regressions([candidate(values, 150)], known, SETTINGS)
    numbers = kept.verdicts["same_regression"].numbers
    assert kept.regression_id == "r-early"
    assert numbers["significant"] is True and numbers["known_step_significant"] is False
    assert numbers["points_before_known"] == 146 and numbers["p_value_known_step"] > 0.01


def test_with_the_threshold_a_small_rise_above_the_level_since_is_no_new_regression() -> None:
    values = step_series(220, {93: 0.10, 200: 0.015}, seed=10, sd=0.002)
    known = [KnownRegression("r-known", "bench/a", 93 * BUILD_S)]
    (plain,), _ = merge_same_regressions([candidate(values, 200)], known, SETTINGS)
    assert plain.regression_id != "r-known"  # significant, and no threshold asked for
    (kept,), _ = merge_same_regressions(
        [candidate(values, 200)], known, SETTINGS, threshold=Threshold("relative", 0.02)
    )
    numbers = kept.verdicts["same_regression"].numbers
    assert kept.regression_id == "r-known" and numbers["significant"] is True
    assert 0.005 < numbers["measured_since_known"] < 0.02
