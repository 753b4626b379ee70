"""Finding a regression in the stored runs: ids known to the state, a query resolved to one id
(exact, prefix, or a close match suggested), and where each detection of it ended (reported,
merged, filtered). Reads the typed reports (``regbot.report``) the state decodes once."""

from __future__ import annotations

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
from regbot.detection.stages import Stage
from regbot.errors import InputError
from regbot.report.model import RegressionEntry, Report, VerdictEntry


def ordered_verdicts(entry: RegressionEntry) -> list[tuple[str, VerdictEntry]]:
    """The entry's verdicts in pipeline order; stages unknown here follow in stored order."""
    verdicts = entry.verdicts
    known = [(s, verdicts[s]) for s in PIPELINE_STAGES if s in verdicts]
    return known + [(str(s), v) for s, v in verdicts.items() if s not in PIPELINE_STAGES]


def first_failure(entry: RegressionEntry) -> tuple[str, VerdictEntry] | None:
    """The first stage (pipeline order) whose verdict did not pass, with that verdict."""
    for stage, verdict in ordered_verdicts(entry):
        if not verdict.passed:
            return stage, verdict
    return None


def stages_not_reached(entry: RegressionEntry) -> list[str]:
    """The stages after the one that removed ``entry`` which it would have gone through (the
    short-term filters only for the short-term detector; ``long_term`` only for long-term)."""
    failure = first_failure(entry)
    if failure is None:
        return []
    path: tuple[str, ...] = (
        (Stage.LONG_TERM, *DEDUP_STAGES)
        if entry.detector == "long-term"
        else (*SHORT_TERM_STAGES, *DEDUP_STAGES)
    )
    if failure[0] not in path:
        return []
    return [s for s in path[path.index(failure[0]) + 1 :] if s not in entry.verdicts]


def known_ids(reports: Sequence[Report], stored: Sequence[str]) -> list[str]:
    """Every regression id the state knows: listed, filtered or named as a duplicate in a
    stored report, or in the regressions table."""
    ids = set(stored)
    for report in reports:
        for entry in (*report.regressions, *report.filtered):
            ids.add(entry.id)
            ids.update(entry.duplicates)
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


def _owner_of(report: Report, rid: str) -> str | None:
    """The entry of ``report`` that lists ``rid`` among its duplicates (listed ones first)."""
    for entry in (*report.regressions, *report.filtered):
        if entry.id != rid and rid in entry.duplicates:
            return entry.id
    return None


def _merging_representative(
    report: Report, stage: str, verdict: VerdictEntry, groups: Mapping[str, Group], rid: str
) -> str | None:
    """The representative a merging stage names, as a regression id: SOMDedup names a series
    (the same report's entry of that series whose SOM verdict passed), PairwiseDedup a group
    (its first stored member)."""
    if stage == Stage.PAIRWISE_DEDUP:
        group = groups.get(str(verdict.numbers.get("group")))
        if group is not None and group.members and group.members[0].regression_id != rid:
            return group.members[0].regression_id
    if stage == Stage.SOM_DEDUP:
        series = verdict.numbers.get("representative")
        for entry in (*report.regressions, *report.filtered):
            som = entry.verdicts.get(Stage.SOM_DEDUP)
            if entry.series == series and som is not None and som.passed and entry.id != rid:
                return entry.id
    return None


def _finding_in(
    report: Report, rid: str, groups: Mapping[str, Group]
) -> tuple[RegressionEntry | None, Status] | None:
    for entry in report.regressions:
        if entry.id == rid:
            return entry, Status("reported")
    filtered = [e for e in report.filtered if e.id == rid]
    owner = _owner_of(report, rid)
    if not filtered:
        if owner is None:
            return None
        return None, Status("duplicate", None, None, owner)
    filtered.sort(key=lambda e: (first_failure(e) or ("", None))[0] == Stage.SAME_REGRESSION)
    found = filtered[0]
    failure = first_failure(found)
    stage = failure[0] if failure is not None else None
    reason = failure[1].reason if failure is not None else None
    if owner is None and failure is not None:
        owner = _merging_representative(report, failure[0], failure[1], groups, rid)
    if owner is not None:
        return found, Status("duplicate", stage, reason, owner)
    return found, Status("filtered", stage, reason)


def find_regression(
    rid: str,
    reports: Sequence[Report],
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
        return Finding(
            id=rid,
            entry=entry,
            status=status,
            window=report.window,
            deploy=report.deploy,
            funnel=report.funnel,
            run=position + 1,
            runs=len(reports),
            first_seen_s=seen[0],
            last_seen_s=seen[1],
        )
    if stored is not None:
        return Finding(
            id=rid,
            entry=stored.entry,
            status=Status("reported"),
            runs=len(reports),
            first_seen_s=seen[0],
            last_seen_s=seen[1],
        )
    return None
