"""The detection pipeline on a simulated fleet: planted regressions found, false alarms filtered,
the funnel and the SPEC §4 report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from regbot.datasets.fleet import FleetScenario, simulate_fleet
from regbot.detection.pipeline import detect_in_windows, run_detection
from regbot.detection.presets import MinPoints, Threshold, Windows, WorkloadSettings
from regbot.detection.report import build_report, regression_id
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import DetectionSettings, LongTermSettings
from regbot.detection.stages import FUNNEL_KEYS
from regbot.profiles.model import Series
from regbot.profiles.series_files import read_series_files


def fleet_settings(bounds: WindowBounds, long_term: bool = False) -> DetectionSettings:
    windows = Windows(
        bounds.analysis_start_s - bounds.historical_start_s,
        bounds.extended_start_s - bounds.analysis_start_s,
        bounds.end_s - bounds.extended_start_s,
    )
    return DetectionSettings(
        workload=WorkloadSettings(Threshold("absolute", 0.0), windows, 3600.0),
        long_term=LongTermSettings(enabled=long_term),
    )


@pytest.fixture(scope="module")
def fleet_run():
    series, events, bounds = simulate_fleet(FleetScenario(n_series=1500, n_points=900), seed=3)
    result = detect_in_windows(series, fleet_settings(bounds), bounds)
    return series, events, bounds, result


def test_planted_steps_found_false_alarms_filtered(fleet_run) -> None:
    _, events, _, result = fleet_run
    reported = {c.series_id for c in result.reported}

    def share(kinds, min_size=0.0):
        chosen = [e for e in events if e.kind in kinds and e.size_in_mde >= min_size]
        return sum(e.series_id in reported for e in chosen) / len(chosen)

    assert share({"step"}, 3.0) >= 0.85
    assert share({"none"}) <= 0.005
    assert share({"transient_spike", "transient_dip"}) <= 0.05
    assert share({"seasonal_peak"}) <= 0.05


def test_funnel_only_narrows_and_verdicts_explain_every_removal(fleet_run) -> None:
    _, _, _, result = fleet_run
    funnel = result.funnel.to_json()
    assert list(funnel) == list(FUNNEL_KEYS)
    counts = [funnel[k] for k in FUNNEL_KEYS[1:5]]  # change points through the thresholds
    assert all(a >= b for a, b in zip(counts, counts[1:]))
    assert result.funnel.change_points == len(result.reported) + len(result.filtered)
    # the dedup stages write their own entries (detection.report.funnel_of), not the pipeline
    assert funnel["after_som_dedup"] == 0
    for candidate in result.filtered:
        assert any(not v.passed for v in candidate.verdicts.values())
    for candidate in result.reported:
        assert set(candidate.verdicts) == {"change_point", "went_away", "seasonality", "threshold"}
        assert candidate.verdicts["change_point"].numbers["test"] in ("likelihood_ratio", "rank")
        assert bounds_contain(candidate)


def bounds_contain(candidate) -> bool:
    w = candidate.windows
    return w.analysis_start_s <= candidate.change_time_s < w.extended_start_s


def test_report_follows_spec_and_ids_are_stable(fleet_run) -> None:
    series, _, bounds, result = fleet_run
    report = build_report(result, "test").to_json()
    assert set(report) >= {"regbot_version", "window", "funnel", "regressions"}
    assert report["window"]["analysis"] == [bounds.analysis_start_s, bounds.extended_start_s]
    entry = report["regressions"][0]
    assert set(entry) >= {
        "id",
        "series",
        "kind",
        "detector",
        "change_time",
        "before",
        "after",
        "delta",
        "relative_delta",
        "p_value",
        "group",
        "duplicates",
        "verdicts",
        "candidates",
        "confidence",
    }
    json.dumps(report, allow_nan=False)
    again = build_report(
        detect_in_windows(series, fleet_settings(bounds), bounds), "test"
    ).to_json()
    assert [r["id"] for r in again["regressions"]] == [r["id"] for r in report["regressions"]]
    assert entry["id"] == regression_id(entry["series"], entry["detector"], entry["change_time"])


def step_series(series_id: str, kind: str, level: float, step: float, seed: int) -> Series:
    rng = np.random.default_rng(seed)
    times = 1_700_000_000 + 3600.0 * np.arange(300)
    values = level + rng.normal(0, 1, 300)
    values[255:] += step  # inside the analysis window [240, 270)
    return Series(series_id, kind, times, values)


def test_throughput_drop_is_a_regression_with_negative_delta() -> None:
    series = [
        step_series("qps:web", "throughput", 100.0, -6.0, 1),
        step_series("cpu:web", "cpu", 50.0, -6.0, 2),
    ]
    settings = DetectionSettings(
        workload=WorkloadSettings(
            Threshold("relative", 0.01), Windows(240 * 3600.0, 30 * 3600.0, 30 * 3600.0), 3600
        )
    )
    report = build_report(run_detection(series, settings), "test").to_json()
    assert [r["series"] for r in report["regressions"]] == ["qps:web"]
    entry = report["regressions"][0]
    assert entry["delta"] < 0 and entry["after"] < entry["before"]
    assert entry["relative_delta"] == pytest.approx(-0.06, abs=0.02)


def test_threshold_filters_small_but_real_steps() -> None:
    series = [step_series("gcpu:f", "gcpu", 10.0, 5.0, 4)]
    windows = Windows(240 * 3600.0, 30 * 3600.0, 30 * 3600.0)
    loose = DetectionSettings(workload=WorkloadSettings(Threshold("absolute", 1.0), windows, 3600))
    strict = DetectionSettings(
        workload=WorkloadSettings(Threshold("absolute", 10.0), windows, 3600)
    )
    assert len(run_detection(series, loose).reported) == 1
    result = run_detection(series, strict)
    assert not result.reported and result.filtered[0].verdicts["threshold"].passed is False


def test_awkward_series_do_not_crash() -> None:
    t = 1_700_000_000 + 3600.0 * np.arange(300)
    series = [
        Series("gcpu:constant", "gcpu", t, np.full(300, 0.01)),
        Series("gcpu:short", "gcpu", t[-4:], np.array([1.0, 2.0, 3.0, 4.0])),
        Series("gcpu:empty", "gcpu", t[:0], np.zeros(0)),
        Series("gcpu:gappy", "gcpu", t[::7], np.random.default_rng(1).normal(0, 1, len(t[::7]))),
        Series("gcpu:old", "gcpu", t[:50] - 1e7, np.ones(50)),
    ]
    settings = DetectionSettings(
        workload=WorkloadSettings(
            Threshold("absolute", 0.0), Windows(240 * 3600.0, 30 * 3600.0, 30 * 3600.0), 3600
        )
    )
    result = run_detection(series, settings)
    assert result.funnel.series == 5
    assert not result.reported


# --- windows per series, and waiting for data ------------------------------------------------


def test_a_dense_fleet_keeps_fbdetects_windows(fleet_run) -> None:
    series, _, bounds, result = fleet_run
    use = result.window_use
    assert use.widened_series == 0 and use.earliest == bounds
    assert all(c.windows == bounds for c in result.reported + result.filtered)
    window = build_report(result, "test").to_json()["window"]
    assert window["historical"] == [bounds.historical_start_s, bounds.analysis_start_s]
    assert window["earliest"]["analysis"] == window["analysis"]
    held = int(((series[0].timestamps_s >= bounds.analysis_start_s)
                & (series[0].timestamps_s < bounds.extended_start_s)).sum())  # fmt: skip
    assert window["points"]["analysis"] == [held, held] and window["widened_series"] == 0


def test_each_window_reaches_back_to_its_minimum_of_points() -> None:
    times = 10.0 * np.arange(100)  # points at 0, 10, ..., 990
    bounds = WindowBounds(950.0, 970.0, 980.0, 990.0)
    need = Windows(20.0, 10.0, 10.0, MinPoints(historical=10, analysis=3, extended=4))
    # extended [980, 990] holds 2 points: it starts at the 4th last (960); the analysis window
    # keeps its 10 s, [950, 960) holds 1 point: it starts at the 3rd before 960 (930); the
    # historical window keeps its 20 s, [910, 930) holds 2: it starts 10 points before 930.
    assert bounds.for_series(times, need) == WindowBounds(830.0, 930.0, 960.0, 990.0)
    roomy = Windows(20.0, 10.0, 10.0, MinPoints(historical=2, analysis=1, extended=2))
    assert bounds.for_series(times, roomy) is bounds  # enough points: the run's own bounds
    few = bounds.for_series(times[:3], need)  # fewer points than asked: back to the first
    assert few.extended_start_s == 0.0 and few.end_s == 990.0
    assert bounds.for_series(times[:0], need) == bounds
    later = times + 5.0  # points after end_s do not count
    assert bounds.for_series(later, need).extended_start_s == 955.0


def per_build_series(n: int, step_at: int, size: float, seed: int) -> Series:
    """One point per build, builds at irregular times (mean gap 5 h, some long gaps)."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(5 * 3600.0, n).clip(600.0) + 2 * 86400.0 * (rng.random(n) < 0.03)
    values = 50.0 * (1.0 + rng.normal(0, 0.004, n))
    values[step_at:] *= 1.0 + size
    return Series("bench/query", "latency", 1_700_000_000 + np.cumsum(gaps), values)


def per_build_settings(minimum: MinPoints, extended_s: float = 60.0) -> DetectionSettings:
    windows = Windows(60.0, 60.0, extended_s, minimum)
    return DetectionSettings(workload=WorkloadSettings(Threshold("relative", 0.02), windows, 60))


def test_a_lasting_step_in_a_per_build_series_is_found_only_with_enough_points() -> None:
    series = per_build_series(300, step_at=290, size=0.05, seed=11)
    found = run_detection([series], per_build_settings(MinPoints(120, 6, 6)))
    (regression,) = found.reported
    assert int(np.searchsorted(series.timestamps_s, regression.change_time_s)) == 290
    assert regression.windows.historical_start_s == series.timestamps_s[300 - 132]
    window = build_report(found, "test").to_json()["window"]
    assert window["points"] == {"historical": [120, 120], "analysis": [6, 6], "extended": [6, 6]}
    assert window["widened_series"] == 1 and window["min_points"]["historical"] == 120
    assert window["earliest"]["analysis"][0] == series.timestamps_s[288]
    # a minute per window holds no build: nothing to compare without the minimum
    assert not run_detection([series], per_build_settings(MinPoints(1, 1, 1))).reported


def test_repeated_measurements_of_a_build_count_as_one_point(tmp_path) -> None:
    series = per_build_series(300, step_at=290, size=0.05, seed=12)
    rng = np.random.default_rng(13)
    rows = ["timestamp,series,value,kind"]
    for t, v in zip(series.timestamps_s, series.values):
        repeats = float(v) * (1.0 + rng.normal(0, 1e-3, 4))
        rows += [f"{t:.0f},bench/query,{float(r)!r},latency" for r in repeats]
    path = tmp_path / "builds.csv"
    path.write_text("\n".join(rows) + "\n")
    (read,) = read_series_files([path])  # the reader averages a build's repeats into one point
    assert len(read.timestamps_s) == 300
    result = run_detection([read], per_build_settings(MinPoints(120, 6, 6)))
    assert result.window_use.points["extended"] == (6, 6) and len(result.reported) == 1


def test_a_change_with_too_short_a_history_waits_for_data() -> None:
    short = per_build_series(40, step_at=30, size=0.08, seed=14)  # 28 points before analysis
    result = run_detection([short], per_build_settings(MinPoints(30, 6, 6)))
    assert not result.reported
    assert {c.detector for c in result.filtered} == {"short-term", "long-term"}
    for waiting in result.filtered:  # the long-term path waits too (its rise has no history)
        verdict = waiting.verdicts["enough_data"]
        assert not verdict.passed and verdict.reason.startswith("waiting for data")
        assert verdict.numbers["points_before"] == 28 and verdict.numbers["needed_before"] == 30
    longer = per_build_series(46, step_at=36, size=0.08, seed=14)
    assert len(run_detection([longer], per_build_settings(MinPoints(30, 6, 6))).reported) == 1


def test_a_change_at_the_very_end_waits_without_an_extended_window() -> None:
    series = per_build_series(200, step_at=196, size=0.10, seed=15)  # 4 points at the new level
    settings = per_build_settings(MinPoints(120, 12, 6), extended_s=0.0)
    result = run_detection([series], settings)
    assert not result.reported
    verdict = result.filtered[0].verdicts["enough_data"]
    assert verdict.numbers["points_after"] == 4 and verdict.numbers["needed_after"] == 12
    later = per_build_series(210, step_at=196, size=0.10, seed=15)
    assert len(run_detection([later], settings).reported) == 1
