"""Detection, then dedup over a profiled service with planted cascades (the real sample store
behind the gCPU series), then a second run against the state store."""

from __future__ import annotations

from pathlib import Path

import pytest
from cascade_runs import run_once

from regbot.bot.state import open_state
from regbot.datasets.cascades import simulate_cascades
from regbot.detection.report import build_report


@pytest.mark.parametrize("seed", range(12))
def test_a_cascade_has_one_representative_and_it_is_the_leaf(seed: int) -> None:
    """A leaf regression echoing into its 1-12 callers and into the service's throughput."""
    svc = simulate_cascades(seed, depth=2 + seed, changes=1)
    result, dedup = run_once(svc)
    leaf = f"gcpu:{svc.changes[0].subroutine}"
    assert len(result.reported) >= 2  # the cascade was detected: leaf, callers, throughput
    # At threshold 0 a chance false positive on an unrelated series may stand beside it (it
    # shares no stacks, so it is its own group); the cascade itself has one representative.
    cascade = {f"gcpu:{sub}" for sub in svc.changes[0].callers} | {leaf, "qps:service"}
    assert [c.series_id for c in dedup.representatives if c.series_id in cascade] == [leaf]
    representative = next(c for c in dedup.representatives if c.series_id == leaf)
    group = dedup.group_of[representative.regression_id]
    rid = next(c.regression_id for c in dedup.removed if c.series_id == "qps:service")
    assert dedup.group_of[rid] == group
    assert rid in dedup.duplicates[representative.regression_id]


@pytest.mark.parametrize("seed", range(20))
def test_deep_cascades_collapse_to_their_deepest_detected_member(seed: int) -> None:
    """1-20 callers. At threshold 0 over thousands of series, detection also reports a few
    unrelated series (false positives, kept apart: they share no stacks) and may miss the leaf
    itself; the cascade's detected members must still be one group, represented by the
    deepest of them."""
    svc = simulate_cascades(seed, depth=2 + seed, changes=1)
    result, dedup = run_once(svc)
    change = svc.changes[0]
    rank = {f"gcpu:{sub}": i for i, sub in enumerate((*change.callers, change.subroutine))}
    members = [c for c in result.reported if c.series_id in rank]
    deepest = max(members, key=lambda c: rank[c.series_id]).series_id
    cascade_reps = [c.series_id for c in dedup.representatives if c.series_id in rank]
    assert cascade_reps == [deepest]


@pytest.mark.parametrize("seed", range(12))
def test_independent_changes_are_never_merged(seed: int) -> None:
    svc = simulate_cascades(100 + seed, depth=3 + seed % 8, changes=2)
    result, dedup = run_once(svc)
    owner = {}
    for n, change in enumerate(svc.changes):
        for sub in (change.subroutine, *change.callers):
            owner[f"gcpu:{sub}"] = n
    series_of = {c.regression_id: c.series_id for c in result.reported}
    members: dict[str, set[int]] = {}
    for rid, gid in dedup.group_of.items():
        if series_of.get(rid) in owner:
            members.setdefault(gid, set()).add(owner[series_of[rid]])
    assert all(len(changes) == 1 for changes in members.values())
    gcpu_reps = {c.series_id for c in dedup.representatives if c.series_id.startswith("gcpu:")}
    assert gcpu_reps == {f"gcpu:{c.subroutine}" for c in svc.changes}


def test_rerunning_the_same_window_keeps_ids_and_groups(tmp_path: Path) -> None:
    svc = simulate_cascades(7, depth=5, changes=2)
    with open_state(tmp_path / "state.db") as state:
        result, first = run_once(svc, state.known_regressions(), state.groups())
        report = build_report(result, "test", first)
        state.record_run(1.0, report, first.groups)
    with open_state(tmp_path / "state.db") as state:
        known, groups = state.known_regressions(), state.groups()
        result, second = run_once(svc, known, groups)
        again = build_report(result, "test", second)
        state.record_run(2.0, again, second.groups)
        assert len(state.groups()) == len(groups)
    assert [r.id for r in again.regressions] == [r.id for r in report.regressions]
    assert [r.group for r in again.regressions] == [r.group for r in report.regressions]
    assert {g.id for g in second.groups} == {g.id for g in first.groups}
    assert all(c.verdicts["same_regression"].numbers["seen_before"] for c in second.representatives)
