"""`regbot explain REGRESSION_ID`: everything the state store knows about one regression.

What it reads (read only: the SQLite file is opened with ``mode=ro``, so explaining never
creates, migrates or locks the state a running job writes):

* the stored reports (``StateStore.reports()``): each run's whole SPEC §4 report, whose
  ``regressions`` and ``filtered`` entries carry every stage's verdict with its numbers, the
  attribution (``candidates``, ``ranking``, ``attribution_notes``, ``stack_paths``), the window
  and the deploy;
* the dedup groups (``StateStore.groups()``): each member's series around its change (stored
  oriented: higher is worse) and its stack share;
* the regressions table (``StateStore.regression(id)``): when a regression was first and last
  seen, and its entry when no stored report holds it any more.

Which entry is shown: the newest report holding the id. Within one report an entry listed in
``regressions`` wins over ``filtered`` ones (a same-regression twin shares its regression's id);
among ``filtered`` entries with that id the one a stage other than ``same_regression`` removed
wins. A filtered entry is a *duplicate* when a representative of the same report lists it in
``duplicates``, or when the stage that removed it merged it (``som_dedup`` names the
representative's series, ``pairwise_dedup`` its group, whose first stored member is the
representative). A duplicate is explained with its own verdicts and then its representative in
full (attribution is only run on representatives).

Settings: the detection and dedup constants in force (``settings_in_force``) close the view
and the ``settings`` key of ``--json``: those of the config explain reads, the stages' own
defaults where it says nothing (a stored report does not record its run's settings).

Ids: the exact id, else a unique prefix (with or without the ``r-``), matched without regard to
case. An unknown id lists the closest known ids (rapidfuzz ratio).
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from rapidfuzz import fuzz, process
from rich.console import Console

from regbot.bot.config import Config, load_config
from regbot.bot.detection_settings import dedup_settings, detection_settings
from regbot.bot.state import StateStore, StoredRegression
from regbot.detection.model import Group
from regbot.errors import InputError

# Every stage a report entry's verdicts may hold, in the order the pipeline runs them: the
# short-term filters (or the long-term detector), then the dedup stages (``stack_dedup`` is the
# KDD'18 alternative to SOMDedup + PairwiseDedup), then the group the entry ended in.
PIPELINE_STAGES = (
    "enough_data",
    "change_point",
    "went_away",
    "seasonality",
    "threshold",
    "long_term",
    "same_regression",
    "som_dedup",
    "cost_shift",
    "stack_dedup",
    "pairwise_dedup",
    "group",
)
SHORT_TERM_STAGES = ("went_away", "seasonality", "threshold")
DEDUP_STAGES = ("same_regression", "som_dedup", "cost_shift", "pairwise_dedup")
SUGGESTIONS = 5

StatusKind = Literal["reported", "filtered", "duplicate"]


@dataclass(frozen=True, slots=True)
class Status:
    """Where a regression ended: reported, removed by ``stage`` (with the stage's reason), or
    merged as a duplicate of ``representative`` (a regression id) by ``stage``."""

    kind: StatusKind
    stage: str | None = None
    reason: str | None = None
    representative: str | None = None

    def describe(self) -> str:
        if self.kind == "reported":
            return "reported"
        if self.kind == "filtered":
            return f"filtered by {self.stage}"
        merged = f" (merged by {self.stage})" if self.stage else ""
        return f"duplicate of {self.representative}{merged}"


@dataclass(frozen=True, slots=True)
class Finding:
    """One regression as the newest stored report holding it shows it: its SPEC §4 entry, its
    status, and that report's window, deploy and funnel (None when no stored report holds it and
    the entry comes from the regressions table). ``run`` is the report's position among the
    stored runs (1 = oldest) out of ``runs``."""

    entry: Mapping[str, object]
    status: Status
    window: Mapping[str, object] | None = None
    deploy: Mapping[str, object] | None = None
    funnel: Mapping[str, object] | None = None
    run: int | None = None
    runs: int = 0
    first_seen_s: float | None = None
    last_seen_s: float | None = None

    @property
    def id(self) -> str:
        return str(self.entry.get("id", ""))


@dataclass(frozen=True, slots=True)
class MemberSeries:
    """A dedup group member as stored, with its values in the series' own direction (a
    throughput drop goes down) and how many stacks its stack share holds."""

    regression_id: str
    series_id: str
    kind: str
    change_time_s: float
    times_s: np.ndarray
    values: np.ndarray
    stack_count: int
    representative: bool


@dataclass(frozen=True, slots=True)
class MergedDuplicate:
    """A duplicate merged into the subject in its run but not kept as a stored group member
    (SOMDedup's duplicates are not): what the report says of it."""

    regression_id: str
    series_id: str | None
    change_time_s: float | None
    stage: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class GroupView:
    """The subject's dedup group: its stored members (representative first) and the duplicates
    merged into the subject that are not stored members."""

    id: str
    members: tuple[MemberSeries, ...]
    merged: tuple[MergedDuplicate, ...]


@dataclass(frozen=True, slots=True)
class Explanation:
    """What `regbot explain` shows: the regression asked for, its representative when it is a
    duplicate (the ``subject`` is the representative then, else the regression itself), the
    subject's group, and the stored series of both (None when not stored: only regressions
    that reach pairwise dedup keep their series)."""

    query: str
    regression: Finding
    representative: Finding | None
    group: GroupView
    series: MemberSeries | None
    regression_series: MemberSeries | None

    @property
    def subject(self) -> Finding:
        return self.representative or self.regression


# --- finding a regression -----------------------------------------------------------------


def _entries(report: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    listed = report.get(key)
    if not isinstance(listed, list):
        return []
    return [e for e in listed if isinstance(e, Mapping) and isinstance(e.get("id"), str)]


def _verdicts(entry: Mapping[str, object]) -> Mapping[str, Mapping[str, object]]:
    verdicts = entry.get("verdicts")
    if not isinstance(verdicts, Mapping):
        return {}
    return {str(k): v for k, v in verdicts.items() if isinstance(v, Mapping)}


def ordered_verdicts(entry: Mapping[str, object]) -> list[tuple[str, Mapping[str, object]]]:
    """The entry's verdicts in pipeline order; stages unknown here follow in stored order."""
    verdicts = _verdicts(entry)
    known = [(s, verdicts[s]) for s in PIPELINE_STAGES if s in verdicts]
    return known + [(s, v) for s, v in verdicts.items() if s not in PIPELINE_STAGES]


def first_failure(entry: Mapping[str, object]) -> tuple[str, Mapping[str, object]] | None:
    """The first stage (pipeline order) whose verdict did not pass, with that verdict."""
    for stage, verdict in ordered_verdicts(entry):
        if verdict.get("passed") is False:
            return stage, verdict
    return None


def stages_not_reached(entry: Mapping[str, object]) -> list[str]:
    """The stages after the one that removed ``entry`` which it would have gone through (the
    short-term filters only for the short-term detector; ``long_term`` only for long-term)."""
    failure = first_failure(entry)
    if failure is None:
        return []
    detector = entry.get("detector")
    path = (
        ("long_term", *DEDUP_STAGES)
        if detector == "long-term"
        else (*SHORT_TERM_STAGES, *DEDUP_STAGES)
    )
    if failure[0] not in path:
        return []
    present = _verdicts(entry)
    return [s for s in path[path.index(failure[0]) + 1 :] if s not in present]


def known_ids(reports: Sequence[Mapping[str, object]], stored: Sequence[str]) -> list[str]:
    """Every regression id the state knows: listed, filtered or named as a duplicate in a
    stored report, or in the regressions table."""
    ids = set(stored)
    for report in reports:
        for key in ("regressions", "filtered"):
            for entry in _entries(report, key):
                ids.add(str(entry["id"]))
                duplicates = entry.get("duplicates")
                if isinstance(duplicates, list):
                    ids.update(d for d in duplicates if isinstance(d, str))
    return sorted(ids)


def resolve_id(query: str, ids: Sequence[str], state: Path) -> str:
    """The id ``query`` names: itself, else the one id it is a prefix of (``r-`` optional, case
    ignored). InputError for an ambiguous prefix (listing the matches) or an unknown id
    (listing up to five closest ids)."""
    wanted = query.strip().lower()
    if wanted in ids:
        return wanted
    if query in ids:
        return query
    prefixes = {wanted, f"r-{wanted}"} if wanted else set()
    matches = sorted({i for i in ids for p in prefixes if i.lower().startswith(p)})
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        shown = ", ".join(matches[:SUGGESTIONS]) + (", …" if len(matches) > SUGGESTIONS else "")
        raise InputError(
            "REGRESSION_ID",
            f"a prefix of exactly one regression id (it matches {len(matches)}: {shown})",
            query,
        )
    if not ids:
        raise InputError(
            "REGRESSION_ID", f"a regression id known to {state} (the state holds none yet)", query
        )
    closest = process.extract(wanted, list(ids), scorer=fuzz.ratio, limit=SUGGESTIONS)
    names = ", ".join(name for name, _, _ in closest)
    raise InputError("REGRESSION_ID", f"a regression id known to {state} (closest: {names})", query)


def _owner_of(report: Mapping[str, object], rid: str) -> str | None:
    """The entry of ``report`` that lists ``rid`` among its duplicates (listed ones first)."""
    for key in ("regressions", "filtered"):
        for entry in _entries(report, key):
            duplicates = entry.get("duplicates")
            if entry["id"] != rid and isinstance(duplicates, list) and rid in duplicates:
                return str(entry["id"])
    return None


def _merging_representative(
    report: Mapping[str, object],
    stage: str,
    verdict: Mapping[str, object],
    groups: Mapping[str, Group],
    rid: str,
) -> str | None:
    """The representative a merging stage names, as a regression id: SOMDedup names a series
    (the same report's entry of that series whose SOM verdict passed), PairwiseDedup a group
    (its first stored member)."""
    if stage == "pairwise_dedup":
        group = groups.get(str(verdict.get("group")))
        if group is not None and group.members and group.members[0].regression_id != rid:
            return group.members[0].regression_id
    if stage == "som_dedup":
        series = verdict.get("representative")
        for key in ("regressions", "filtered"):
            for entry in _entries(report, key):
                som = _verdicts(entry).get("som_dedup", {})
                if entry.get("series") == series and som.get("passed") and entry["id"] != rid:
                    return str(entry["id"])
    return None


def _finding_in(
    report: Mapping[str, object], rid: str, groups: Mapping[str, Group]
) -> tuple[Mapping[str, object], Status] | None:
    for entry in _entries(report, "regressions"):
        if entry["id"] == rid:
            return entry, Status("reported")
    filtered = [e for e in _entries(report, "filtered") if e["id"] == rid]
    owner = _owner_of(report, rid)
    if not filtered:
        if owner is None:
            return None
        return {"id": rid}, Status("duplicate", None, None, owner)
    filtered.sort(key=lambda e: (first_failure(e) or ("", {}))[0] == "same_regression")
    entry = filtered[0]
    stage, verdict = first_failure(entry) or (None, {})
    reason = str(verdict["reason"]) if verdict.get("reason") is not None else None
    if owner is None and stage is not None:
        owner = _merging_representative(report, stage, verdict, groups, rid)
    if owner is not None:
        return entry, Status("duplicate", stage, reason, owner)
    return entry, Status("filtered", stage, reason)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def find_regression(
    rid: str,
    reports: Sequence[Mapping[str, object]],
    stored: StoredRegression | None,
    groups: Mapping[str, Group],
) -> Finding | None:
    """``rid`` in the newest report holding it, else its regressions-table entry (reported)."""
    seen = (stored.first_seen_s, stored.last_seen_s) if stored is not None else (None, None)
    for position in range(len(reports) - 1, -1, -1):
        report = reports[position]
        found = _finding_in(report, rid, groups)
        if found is None:
            continue
        entry, status = found
        window, deploy, funnel = (report.get(k) for k in ("window", "deploy", "funnel"))
        return Finding(
            entry=entry,
            status=status,
            window=window if isinstance(window, Mapping) else None,
            deploy=deploy if isinstance(deploy, Mapping) else None,
            funnel=funnel if isinstance(funnel, Mapping) else None,
            run=position + 1,
            runs=len(reports),
            first_seen_s=seen[0],
            last_seen_s=seen[1],
        )
    if stored is not None:
        return Finding(
            stored.entry,
            Status("reported"),
            runs=len(reports),
            first_seen_s=seen[0],
            last_seen_s=seen[1],
        )
    return None


# --- the group and the series --------------------------------------------------------------


def _direction(
    kind: str, entry: Mapping[str, object] | None, higher_is_better: frozenset[str]
) -> float:
    """+1 when stored (oriented) values read as the series' own values, -1 when they are negated:
    from the entry's delta when it has one (a regression's oriented delta is always positive, so a
    negative delta means a higher-is-better series), else from the kind."""
    delta = _number(entry.get("delta")) if entry is not None else None
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
    by_id = {str(e["id"]): e for e in _entries(report, "filtered")}
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
                change_time_s=_number(entry.get("change_time")),
                stage=stage,
                reason=str(verdict["reason"]) if verdict.get("reason") is not None else None,
            )
        )
    return tuple(merged)


def build_explanation(
    query: str,
    rid: str,
    reports: Sequence[Mapping[str, object]],
    stored: Callable[[str], StoredRegression | None],
    groups: Sequence[Group],
    higher_is_better: frozenset[str],
) -> Explanation:
    """Everything about ``rid`` (a resolved id) from the state's reports, regressions and groups."""
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


# --- JSON -----------------------------------------------------------------------------------


def _plain(value: object) -> object:
    """JSON-ready: numpy arrays and tuples as lists, non-finite numbers as null."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


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
    return _plain(
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


# --- the command ----------------------------------------------------------------------------


def explain_config(args: argparse.Namespace) -> Config:
    """The config explain reads: ``-c``, else ``regbot.yml`` in the current directory, unless
    only ``--state`` is given (then the defaults hold). The state is ``--state``, else the
    config's ``state`` (default ``.regbot/state.db``)."""
    return load_config(args.config) if args.config is not None or args.state is None else Config()


def settings_in_force(config: Config) -> dict[str, object]:
    """The detection and dedup constants of ``config`` as the stages get them (their own
    defaults where the file says nothing): ``detection.change_point``, ``detection.fleet_load``
    and the dedup stages' settings (``cost_shift`` None when off). ``source``: the file read
    (None: no file, the defaults). A stored report does not record its run's settings, so these
    are the ones the config gives now."""
    detection = detection_settings(config)
    source = config.source if config.source and Path(config.source).is_file() else None
    return _plain(
        {
            "source": source,
            "detection": {
                "change_point": asdict(detection.change_point),
                "fleet_load": asdict(detection.fleet_load),
            },
            "dedup": asdict(dedup_settings(config)),
        }
    )  # type: ignore[return-value]


def open_state_read_only(path: Path) -> StateStore:
    """The state database at ``path`` opened read only (SQLite ``mode=ro``)."""
    if not path.is_file():
        raise InputError(
            f"no state at {path}",
            "the state of an earlier `regbot run` or `regbot detect` (run one first)",
        )
    try:
        connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise InputError(
            str(path), "a readable regbot state database (SQLite)", str(error)
        ) from None
    return StateStore(connection, path)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from regbot.bot.views.explain import (  # the view imports this module
        explain_renderables,
        settings_renderables,
    )

    config = explain_config(args)
    path = Path(args.state if args.state is not None else config.state)
    try:
        with open_state_read_only(path) as state:
            reports = state.reports()
            ids = known_ids(reports, [k.id for k in state.known_regressions()])
            rid = resolve_id(args.regression_id, ids, path)
            explanation = build_explanation(
                args.regression_id,
                rid,
                reports,
                state.regression,
                state.groups(),
                config.higher_is_better,
            )
    except (sqlite3.Error, json.JSONDecodeError) as error:
        raise InputError(str(path), "a regbot state database (SQLite)", str(error)) from None
    settings = settings_in_force(config)
    if args.json:
        payload = {**explanation_json(explanation), "settings": settings}
        out.out(json.dumps(payload, indent=2, allow_nan=False), highlight=False)
        return 0
    for renderable in [*explain_renderables(explanation), *settings_renderables(settings)]:
        out.print(renderable)
    return 0
