"""The explanation of one regression assembled from the state (its findings, group, member series
and merged duplicates), and its JSON form for `regbot explain --json`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from regbot.bot.explanation.lookup import find_regression, first_failure
from regbot.bot.explanation.model import (
    Explanation,
    Finding,
    GroupView,
    MemberSeries,
    MergedDuplicate,
)
from regbot.bot.state import StoredRegression
from regbot.detection.dedup_context import Group
from regbot.errors import InputError
from regbot.report.model import RegressionEntry, Report
from regbot.report.plain import JSONValue, json_plain


def _direction(kind: str, entry: RegressionEntry | None, higher_is_better: frozenset[str]) -> float:
    """+1 when stored (oriented) values read as the series' own values, -1 when they are negated:
    from the entry's delta when it has one (a regression's oriented delta is always positive, so a
    negative delta means a higher-is-better series), else from the kind."""
    delta = entry.delta if entry is not None else None
    if delta is not None and delta != 0:
        return -1.0 if delta < 0 else 1.0
    return -1.0 if kind in higher_is_better else 1.0


def _member_series(
    group: Group,
    position: int,
    entry: RegressionEntry | None,
    higher_is_better: frozenset[str],
) -> MemberSeries:
    m = group.members[position]
    sign = _direction(m.kind, entry, higher_is_better)
    return MemberSeries(
        regression_id=m.regression_id,
        series_id=m.series_id,
        kind=m.kind,
        change_time_s=float(m.change_time_s),
        times_s=np.asarray(m.times_s, np.float64),
        values=sign * np.asarray(m.values, np.float64),
        stack_count=len(m.stacks.stack_ids) if m.stacks is not None else 0,
        representative=position == 0,
    )


def _stored_series(
    rid: str,
    groups: Sequence[Group],
    entry: RegressionEntry | None,
    higher_is_better: frozenset[str],
) -> MemberSeries | None:
    for group in groups:
        for position, member in enumerate(group.members):
            if member.regression_id == rid:
                return _member_series(group, position, entry, higher_is_better)
    return None


def _group_of(subject: Finding, groups: Sequence[Group]) -> Group | None:
    """The stored group holding the subject as a member, else the one its entry names."""
    for group in groups:
        if any(m.regression_id == subject.id for m in group.members):
            return group
    named = subject.entry.group if subject.entry is not None else None
    return next((g for g in groups if g.id == named), None)


def _merged_duplicates(
    subject: Finding, reports: Sequence[Report], stored_members: set[str]
) -> tuple[MergedDuplicate, ...]:
    if subject.entry is None:
        return ()
    filtered = reports[subject.run - 1].filtered if subject.run is not None else ()
    by_id = {e.id: e for e in filtered}
    merged = []
    for rid in subject.entry.duplicates:
        if rid in stored_members:
            continue
        entry = by_id.get(rid)
        failure = first_failure(entry) if entry is not None else None
        merged.append(
            MergedDuplicate(
                regression_id=rid,
                series_id=entry.series if entry is not None else None,
                change_time_s=entry.change_time_s if entry is not None else None,
                stage=failure[0] if failure is not None else None,
                reason=failure[1].reason if failure is not None else None,
            )
        )
    return tuple(merged)


def build_explanation(
    query: str,
    rid: str,
    reports: Sequence[Report],
    stored: Callable[[str], StoredRegression | None],
    groups: Sequence[Group],
    higher_is_better: frozenset[str],
) -> Explanation:
    """Everything about ``rid`` (a resolved id) from the state's reports, regressions and
    groups."""
    by_id = {g.id: g for g in groups}
    regression = find_regression(rid, reports, stored(rid), by_id)
    if regression is None:
        raise InputError("REGRESSION_ID", "a regression id held by a stored report", rid)
    representative = None
    if regression.status.kind == "duplicate" and regression.status.representative is not None:
        rep_id = regression.status.representative
        representative = find_regression(rep_id, reports, stored(rep_id), by_id)
    subject = representative or regression
    group = _group_of(subject, groups)
    entries = {regression.id: regression.entry, subject.id: subject.entry}
    members: tuple[MemberSeries, ...] = ()
    if group is not None:
        members = tuple(
            _member_series(group, i, entries.get(m.regression_id), higher_is_better)
            for i, m in enumerate(group.members)
        )
    group_view = GroupView(
        id=group.id
        if group is not None
        else (subject.entry.group if subject.entry is not None else subject.id),
        members=members,
        merged=_merged_duplicates(subject, reports, {m.regression_id for m in members}),
    )
    return Explanation(
        query=query,
        regression=regression,
        representative=representative,
        group=group_view,
        series=_stored_series(subject.id, groups, subject.entry, higher_is_better),
        regression_series=(
            _stored_series(rid, groups, regression.entry, higher_is_better)
            if representative is not None
            else None
        ),
    )


def _finding_json(finding: Finding) -> dict[str, object]:
    entry = finding.entry
    return {
        "entry": entry.to_json() if entry is not None else {"id": finding.id},
        "status": {
            "kind": finding.status.kind,
            "text": finding.status.describe(),
            "stage": finding.status.stage,
            "reason": finding.status.reason,
            "representative": finding.status.representative,
        },
        "window": finding.window.to_json() if finding.window is not None else None,
        "deploy": finding.deploy.to_json() if finding.deploy is not None else None,
        "funnel": finding.funnel.to_json() if finding.funnel is not None else None,
        "run": finding.run,
        "runs": finding.runs,
        "first_seen": finding.first_seen_s,
        "last_seen": finding.last_seen_s,
    }


def _member_json(member: MemberSeries) -> dict[str, object]:
    return {
        "regression_id": member.regression_id,
        "series": member.series_id,
        "kind": member.kind,
        "change_time": member.change_time_s,
        "representative": member.representative,
        "stack_count": member.stack_count,
        "times": member.times_s,
        "values": member.values,
    }


def explanation_json(explanation: Explanation) -> dict[str, JSONValue]:
    """One JSON object for scripts: the regression asked for (entry, status, the window, deploy
    and funnel of its report), its representative when it is a duplicate, and the group with
    each stored member's series (values in the series' own direction)."""
    group = explanation.group
    plain = json_plain(
        {
            "query": explanation.query,
            "id": explanation.regression.id,
            **_finding_json(explanation.regression),
            "representative": (
                _finding_json(explanation.representative)
                if explanation.representative is not None
                else None
            ),
            "group": {
                "id": group.id,
                "members": [_member_json(m) for m in group.members],
                "merged_duplicates": [
                    {
                        "regression_id": d.regression_id,
                        "series": d.series_id,
                        "change_time": d.change_time_s,
                        "stage": d.stage,
                        "reason": d.reason,
                    }
                    for d in group.merged
                ],
            },
        }
    )
    assert isinstance(plain, dict)  # json_plain keeps a mapping a mapping
    return plain
