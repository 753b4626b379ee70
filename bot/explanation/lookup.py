"""Finding a regression in the stored runs: ids known to the state, a query resolved to one id
(exact, prefix, or a close match suggested), and where each detection of it ended (reported,
merged, filtered)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from rapidfuzz import fuzz, process

from regbot.bot.explanation.model import (
    DEDUP_STAGES,
    PIPELINE_STAGES,
    SHORT_TERM_STAGES,
    SUGGESTIONS,
    Finding,
    Status,
)
from regbot.bot.state import StoredRegression
from regbot.detection.dedup_context import Group
from regbot.errors import InputError


def report_entries(report: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
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
            for entry in report_entries(report, key):
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
        for entry in report_entries(report, key):
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
            for entry in report_entries(report, key):
                som = _verdicts(entry).get("som_dedup", {})
                if entry.get("series") == series and som.get("passed") and entry["id"] != rid:
                    return str(entry["id"])
    return None


def _finding_in(
    report: Mapping[str, object], rid: str, groups: Mapping[str, Group]
) -> tuple[Mapping[str, object], Status] | None:
    for entry in report_entries(report, "regressions"):
        if entry["id"] == rid:
            return entry, Status("reported")
    filtered = [e for e in report_entries(report, "filtered") if e["id"] == rid]
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


def finite_or_none(value: object) -> float | None:
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
            stored.entry.to_json(),
            Status("reported"),
            runs=len(reports),
            first_seen_s=seen[0],
            last_seen_s=seen[1],
        )
    return None
