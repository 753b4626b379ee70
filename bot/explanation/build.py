"""The explanation of one regression assembled from the state (its findings, group, member series
and merged duplicates), and its JSON form for `regbot explain --json`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from regbot.bot.explanation.lookup import (
    find_regression,
    finite_or_none,
    first_failure,
    report_entries,
)
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
from regbot.report.model import Report
from regbot.report.plain import json_plain


def _direction(
    kind: str, entry: Mapping[str, object] | None, higher_is_better: frozenset[str]
) -> float:
    """+1 when stored (oriented) values read as the series' own values, -1 when they are negated:
    from the entry's delta when it has one (a regression's oriented delta is always positive, so a
    negative delta means a higher-is-better series), else from the kind."""
    delta = finite_or_none(entry.get("delta")) if entry is not None else None
    if delta is not None and delta != 0:
        return -1.0 if delta < 0 else 1.0
    return -1.0 if kind in higher_is_better else 1.0


def _member_series(
    group: Group,
    position: int,
    entry: Mapping[str, object] | None,
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
    rid: str, groups: Sequence[Group], entry: Mapping[str, object], higher_is_better: frozenset[str]
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
    named = subject.entry.get("group")
    return next((g for g in groups if g.id == named), None)


def _merged_duplicates(
    subject: Finding, reports: Sequence[Mapping[str, object]], stored_members: set[str]
) -> tuple[MergedDuplicate, ...]:
    duplicates = subject.entry.get("duplicates")
    if not isinstance(duplicates, list):
        return ()
    report = reports[subject.run - 1] if subject.run is not None else {}
    by_id = {str(e["id"]): e for e in report_entries(report, "filtered")}
    merged = []
    for rid in duplicates:
        if not isinstance(rid, str) or rid in stored_members:
            continue
        entry = by_id.get(rid, {})
        stage, verdict = first_failure(entry) or (None, {})
        series = entry.get("series")
        merged.append(
            MergedDuplicate(
                regression_id=rid,
                series_id=series if isinstance(series, str) else None,
                change_time_s=finite_or_none(entry.get("change_time")),
                stage=stage,
                reason=str(verdict["reason"]) if verdict.get("reason") is not None else None,
            )
        )
    return tuple(merged)


def build_explanation(
    query: str,
    rid: str,
    typed_reports: Sequence[Report],
    stored: Callable[[str], StoredRegression | None],
    groups: Sequence[Group],
    higher_is_better: frozenset[str],
) -> Explanation:
    """Everything about ``rid`` (a resolved id) from the state's reports, regressions and groups.
    The explanation reads entries in their JSON form (``Report.to_json``)."""
    by_id = {g.id: g for g in groups}
    reports = [r.to_json() for r in typed_reports]
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
        id=group.id if group is not None else str(subject.entry.get("group") or subject.id),
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
    return {
        "entry": finding.entry,
        "status": {
            "kind": finding.status.kind,
            "text": finding.status.describe(),
            "stage": finding.status.stage,
            "reason": finding.status.reason,
            "representative": finding.status.representative,
        },
        "window": finding.window,
        "deploy": finding.deploy,
        "funnel": finding.funnel,
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


def explanation_json(explanation: Explanation) -> dict[str, object]:
    """One JSON object for scripts: the regression asked for (entry, status, the window, deploy
    and funnel of its report), its representative when it is a duplicate, and the group with
    each stored member's series (values in the series' own direction)."""
    group = explanation.group
    return json_plain(
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
    )  # type: ignore[return-value]
