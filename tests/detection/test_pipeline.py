"""The detection pipeline on a simulated fleet: planted regressions found, false alarms filtered,
the funnel and the SPEC §4 report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from regbot.detection.model import DetectionSettings, LongTermSettings, WindowBounds
from regbot.detection.pipeline import FUNNEL_KEYS, detect_in_windows, run_detection
from regbot.detection.presets import Threshold, Windows, WorkloadSettings
from regbot.detection.report import build_report, regression_id
from regbot.detection.simulate import FleetScenario, simulate_fleet
from regbot.profiles.model import Series


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
    counts = [result.funnel[k] for k in FUNNEL_KEYS[:-1]]
    assert list(result.funnel) == list(FUNNEL_KEYS)
    assert all(a >= b for a, b in zip(counts[1:], counts[2:]))
    assert result.funnel["change_points"] == len(result.reported) + len(result.filtered)
    for candidate in result.filtered:
        assert any(not v.passed for v in candidate.verdicts.values())
    for candidate in result.reported:
        assert set(candidate.verdicts) == {"went_away", "seasonality", "threshold"}
        assert bounds_contain(candidate)


def bounds_contain(candidate) -> bool:
    w = candidate.windows
    return w.analysis_start_s <= candidate.change_time_s < w.extended_start_s


def test_report_follows_spec_and_ids_are_stable(fleet_run) -> None:
    series, _, bounds, result = fleet_run
    report = build_report(result, "test")
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
    again = build_report(detect_in_windows(series, fleet_settings(bounds), bounds), "test")
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
    report = build_report(run_detection(series, settings), "test")
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
    assert result.funnel["series"] == 5
    assert not result.reported
