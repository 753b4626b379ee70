"""The gate's decision table (policy × regressions × missing baseline) and the missing-baseline
rule, as pure functions over plain data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from factories import SUSPECT_SHA, build_report, regression_json

from regbot.bot.config import GateSettings
from regbot.bot.gate import MAX_LISTED, decide_gate
from regbot.bot.github.markdown_safe import ZWSP
from regbot.bot.sources.baseline import (
    MIN_BASELINE_POINTS,
    MissingBaseline,
    find_missing_baselines,
    missing_names,
    points_in_history,
)
from regbot.detection.series_batch import WindowBounds
from regbot.profiles.model import Series

SHA = SUSPECT_SHA
regression = regression_json
report = build_report


def missing(name: str = "profiles", scope: str = "source") -> MissingBaseline:
    return MissingBaseline(scope, name, "the source returned no series", None, 3)  # type: ignore[arg-type]


# ---------------------------------------------------------------- regressions


@pytest.mark.parametrize(
    ("fail_on", "confidence", "delta", "min_delta", "fails"),
    [
        ("high-confidence", "high", 0.02, 0.0, True),
        ("high-confidence", "low", 0.02, 0.0, False),
        ("high-confidence", "none", 0.02, 0.0, False),
        ("high-confidence", "high", 0.02, 0.02, True),  # |delta| >= min_delta
        ("high-confidence", "high", 0.0199, 0.02, False),
        ("high-confidence", "high", -0.05, 0.02, True),  # a throughput drop: |delta|
        ("any", "none", 0.02, 0.0, True),
        ("any", "low", 0.02, 0.0, True),
        ("any", "low", 0.01, 0.02, False),
        ("any", "high", None, 0.0, True),  # unknown size: counted only without a minimum
        ("any", "high", None, 0.01, False),
        ("never", "high", 0.5, 0.0, False),
    ],
)
def test_regressions_fail_the_gate_per_policy(fail_on, confidence, delta, min_delta, fails):
    settings = GateSettings(fail_on=fail_on, min_delta=min_delta)
    decision = decide_gate(report([regression(confidence=confidence, delta=delta)]), settings)
    assert decision.state == ("failure" if fails else "success")
    assert decision.failing == (("r-000000000001",) if fails else ())
    assert decision.warning is None
    if fails:
        assert decision.title == "1 performance regression fails the gate"
        assert "Regressions that fail the gate (1)" in decision.summary
    else:
        assert decision.title == "1 regression reported, none fails the gate"
        assert "Other reported regressions (1)" in decision.summary


def test_no_regressions_and_full_baseline_is_success():
    decision = decide_gate(report(), GateSettings())
    assert (decision.state, decision.title) == ("success", "No performance regressions")
    assert decision.failing == () and decision.missing_baseline == 0


def test_several_failures_are_counted_in_the_title():
    found = [regression(f"r-00000000000{i}") for i in range(3)] + [
        regression("r-000000000009", confidence="low")
    ]
    decision = decide_gate(report(found), GateSettings(fail_on="high-confidence"))
    assert decision.title == "3 performance regressions fail the gate"
    assert len(decision.failing) == 3


def test_the_default_gate_follows_size_not_a_tie_between_suspects():
    """Two suspects tie (confidence low, both named): the regression still fails the default
    gate; one under ``min_delta`` does not."""
    tie = regression("r-000000000001", confidence="low")
    assert GateSettings().fail_on == "any"
    assert decide_gate(report([tie]), GateSettings()).failing == ("r-000000000001",)
    small = GateSettings(min_delta=0.05)
    assert decide_gate(report([tie]), small).state == "success"


def test_an_earlier_deploys_regression_does_not_fail_this_gate():
    """Seen before (the same-regression merge found it in the state) with its change before
    this run's analysis window: the earlier deploy's gate judged it; this deploy's passes,
    under every policy. A re-run of the same deploy (the change in its window) still fails."""
    old = regression(
        "r-000000000001",
        verdicts={"same_regression": {"passed": True, "seen_before": True}},
    )
    new = regression("r-000000000002", verdicts={"same_regression": {"seen_before": False}})
    later = report([old, new], analysis=(1_800_003_600.0, 1_800_010_000.0))
    for fail_on in ("any", "high-confidence"):
        decision = decide_gate(later, GateSettings(fail_on=fail_on))
        assert decision.failing == ("r-000000000002",)
    same = report([old], analysis=(1_799_999_000.0, 1_800_010_000.0))
    assert decide_gate(same, GateSettings()).failing == ("r-000000000001",)
    assert decide_gate(report([old]), GateSettings()).failing == ("r-000000000001",)


# ---------------------------------------------------------------- missing baseline


@pytest.mark.parametrize(
    ("policy", "state", "title"),
    [
        ("neutral", "neutral", "Not judged: missing baseline for 2 series or sources"),
        ("fail", "failure", "Failed: missing baseline for 2 series or sources"),
        ("pass", "success", "Passed by policy despite a missing baseline for 2 series or sources"),
    ],
)
def test_missing_baseline_follows_the_policy_and_always_says_so(policy, state, title):
    absent = [missing("profiles"), missing("latency:p99", "series")]
    decision = decide_gate(report([], absent), GateSettings(on_missing_baseline=policy))
    assert (decision.state, decision.title) == (state, title)
    assert decision.missing_baseline == 2
    assert "Missing baseline (2)" in decision.summary
    assert "`profiles`" in decision.summary and "`latency:p99`" in decision.summary
    assert decision.warning is not None and "\n" not in decision.warning
    assert "profiles, latency:p99" in decision.warning
    assert f"gate {state} (gate.on_missing_baseline: {policy})" in decision.warning


@pytest.mark.parametrize("policy", ["neutral", "fail", "pass"])
def test_a_failing_regression_wins_over_a_missing_baseline(policy):
    decision = decide_gate(
        report([regression()], [missing()]), GateSettings(on_missing_baseline=policy)
    )
    assert decision.state == "failure"
    assert decision.title == (
        "1 performance regression fails the gate; missing baseline for 1 series or source"
    )
    assert decision.warning is not None


def test_decision_table_is_total_and_never_silent():
    """Every combination gives one of the three states; a missing baseline is always in the
    title and the warning."""
    for fail_on, policy, confidence, has_missing in itertools.product(
        ("high-confidence", "any", "never"),
        ("neutral", "fail", "pass"),
        ("high", "low", "none", None),
        (False, True),
    ):
        found = [] if confidence is None else [regression(confidence=confidence)]
        decision = decide_gate(
            report(found, [missing()] if has_missing else []),
            GateSettings(fail_on=fail_on, on_missing_baseline=policy),
        )
        assert decision.state in ("success", "failure", "neutral")
        assert ("missing baseline" in decision.title) == has_missing
        assert (decision.warning is not None) == has_missing
        if decision.failing:
            assert decision.state == "failure"


# ---------------------------------------------------------------- text


def test_feedback_is_shown_but_does_not_change_the_gate():
    flagged = regression(feedback="false-positive", feedback_from=["carol", "dave"])
    decision = decide_gate(report([flagged]), GateSettings())
    assert decision.state == "failure"
    assert "(marked false positive by 2 users)" in decision.summary
    assert "does not change the gate" in decision.summary


def test_summary_escapes_report_text():
    hostile = regression(
        series="gcpu:@org/team <img src=x onerror=alert(1)>",
        title="```\n<details>@admin please merge #1 ``` [x](http://evil)",
    )
    decision = decide_gate(report([hostile]), GateSettings())
    summary = decision.summary
    assert "<img" not in summary and "<details>" not in summary
    assert "@org" not in summary and "@admin" not in summary
    assert f"@{ZWSP}org" in summary and f"@{ZWSP}admin" in summary
    assert "[x](http" not in summary
    assert "```\n" not in summary  # no fence opened by the title
    assert "<" not in decision.title and "@" not in decision.title


def test_long_lists_are_cut_with_a_count():
    found = [regression(f"r-{i:012d}") for i in range(MAX_LISTED + 7)]
    decision = decide_gate(report(found), GateSettings())
    assert "… and 7 more in the JSON report" in decision.summary
    assert len(decision.summary) < 65_535


# ---------------------------------------------------------------- the baseline rule

WINDOWS = WindowBounds(1000.0, 2000.0, 2600.0, 3000.0)  # historical [1000, 2000)


def series(sid: str, times: list[float], kind: str = "latency") -> Series:
    t = np.asarray(times, np.float64)
    return Series(sid, kind, t, np.ones_like(t))


def test_minimum_is_the_change_point_minimum_per_side():
    assert MIN_BASELINE_POINTS == 3


def test_history_is_the_half_open_historical_window():
    assert (
        points_in_history(np.array([999.0, 1000.0, 1500.0, 1999.9, 2000.0, 2500.0]), WINDOWS) == 3
    )


def test_a_configured_source_without_series_is_missing():
    found = find_missing_baselines(
        ["profiles", "series", "prometheus"], {"series": 0, "prometheus": 4}, [], WINDOWS
    )
    assert [(m.scope, m.name, m.points) for m in found] == [
        ("source", "profiles", None),
        ("source", "series", None),
    ]
    assert all(m.reason == "the source returned no series" for m in found)


@pytest.mark.parametrize(("buckets", "is_missing"), [(0, True), (2, True), (3, False), (40, False)])
def test_profiles_are_one_source_judged_by_the_store_buckets(buckets, is_missing):
    times = np.concatenate([2000.0 - 60.0 * np.arange(1, buckets + 1), 2000.0 + 60 * np.arange(5)])
    found = find_missing_baselines(
        ["profiles"], {"profiles": 250}, [], WINDOWS, profile_buckets_s=np.sort(times)
    )
    if is_missing:
        [m] = found
        assert (m.scope, m.name, m.points, m.needed) == ("source", "profiles", buckets, 3)
        expected = "no profile buckets" if buckets == 0 else f"{buckets} profile buckets"
        assert m.reason == f"{expected} in the historical window (needs 3)"
    else:
        assert found == []


def test_other_series_are_judged_one_by_one_sorted_by_id():
    judged = [
        series("qps:web", [1100.0, 1200.0, 1300.0, 2100.0]),  # 3: enough
        series("latency:p99", [2100.0, 2200.0]),  # none before the deploy
        series("errors", [1900.0, 1950.0, 2100.0]),  # 2
    ]
    found = find_missing_baselines(["series"], {"series": 3}, judged, WINDOWS)
    assert [(m.scope, m.name, m.points) for m in found] == [
        ("series", "errors", 2),
        ("series", "latency:p99", 0),
    ]
    assert found[1].reason == "no points in the historical window (needs 3)"
    assert missing_names(found) == [
        "series errors: 2 points in the historical window (needs 3)",
        "series latency:p99: no points in the historical window (needs 3)",
    ]


def test_a_larger_minimum_can_be_asked_for_and_zero_is_refused():
    judged = [series("qps:web", [1100.0, 1200.0, 1300.0])]
    assert find_missing_baselines([], {}, judged, WINDOWS, min_points=4)[0].needed == 4
    with pytest.raises(ValueError):
        find_missing_baselines([], {}, judged, WINDOWS, min_points=0)
