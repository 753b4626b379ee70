"""The report's regression entries with their attribution (SPEC §4 ``candidates`` and
``confidence``; extras ``ranking``, ``attribution_notes`` and ``stack_paths``): what joins a
detection candidate to the attribution package's evidence, and an attribution result back to the
report's typed entries (:class:`regbot.report.model.RegressionEntry`,
:class:`regbot.report.model.SuspectCommit`).

Plain data in and out: the attribution package sees only :class:`RegressionEvidence`, the report
only frozen entries. O(regressions × ranked commits), plus one stack-path query per regression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from regbot.attribution.attribute import (
    DeployChanges,
    RegressionEvidence,
    attribute,
)
from regbot.attribution.model import Attribution, ScoredCommit
from regbot.attribution.settings import AttributionSettings
from regbot.attribution.signal_correlation import Signal
from regbot.attribution.stack_paths import heaviest_paths
from regbot.detection.dedup_context import subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.stages import Stage
from regbot.profiles.sample_index import SampleIndex
from regbot.report.model import RegressionEntry, Report, SuspectCommit

__all__ = [
    "RANKED_IN_REPORT",
    "attribute_entries",
    "attributed",
    "evidence_of",
    "share_ratio_of",
    "suspect_commit",
]

RANKED_IN_REPORT = 10  # the ranking kept for `regbot explain` beyond the named candidates


def suspect_commit(scored: ScoredCommit, rank: int) -> SuspectCommit:
    """One suspect commit in SPEC §4 form (scores to 6 decimals), with the author and the
    matched frames as extras."""
    commit = scored.commit
    return SuspectCommit(
        commit=commit.sha,
        pull_request=commit.pull_request,
        title=commit.title,
        score=round(scored.score, 6),
        gcpu_attribution=round(scored.parts.gcpu_attribution, 6),
        text_similarity=round(scored.parts.text_similarity, 6),
        correlation=round(scored.parts.correlation, 6),
        author=commit.author,
        matched=tuple(scored.matched),
        rank=rank,
    )


def _suspects(scored: Sequence[ScoredCommit]) -> tuple[SuspectCommit, ...]:
    return tuple(suspect_commit(s, i + 1) for i, s in enumerate(scored))


def share_ratio_of(candidate: Candidate) -> float:
    """The deploy's share inflation at the candidate's change, from its ``share_inflation``
    verdict: the common ratio when it was significantly above 1, else 1."""
    verdict = candidate.verdicts.get(Stage.SHARE_INFLATION)
    if verdict is None or "inflating" not in verdict.numbers:
        return 1.0
    ratio = verdict.numbers["ratio"]
    inflating = verdict.numbers["inflating"] is True
    return float(ratio) if inflating and isinstance(ratio, int | float) else 1.0


def evidence_of(candidate: Candidate) -> RegressionEvidence:
    """What attribution needs of a detection candidate: its series, subroutine, change time,
    windows, oriented points and the deploy's share inflation."""
    return RegressionEvidence(
        id=candidate.regression_id,
        series_id=candidate.series_id,
        kind=candidate.kind,
        subroutine=subroutine_of_series(candidate.series_id),
        change_time_s=candidate.change_time_s,
        window_start_s=candidate.windows.historical_start_s,
        window_end_s=candidate.windows.end_s,
        times_s=np.asarray(candidate.times_s, np.float64),
        values=np.asarray(candidate.values, np.float64),
        share_ratio=share_ratio_of(candidate),
    )


def attributed(
    entry: RegressionEntry, result: Attribution, index: SampleIndex | None, candidate: Candidate
) -> RegressionEntry:
    """One regression's entry with its attribution (SPEC §4 ``candidates`` and ``confidence``;
    extras: the wider ranking, notes, and the stack paths that carry it)."""
    sub = subroutine_of_series(candidate.series_id)
    paths = (
        heaviest_paths(index, sub, candidate.change_time_s, candidate.windows.end_s)
        if index is not None and sub is not None
        else []
    )
    return replace(
        entry,
        candidates=_suspects(result.candidates),
        confidence=result.confidence,
        ranking=_suspects(result.ranked[:RANKED_IN_REPORT]),
        attribution_notes=tuple(result.notes),
        stack_paths=tuple(tuple(p) for p in paths),
    )


def attribute_entries(
    report: Report,
    candidates: Mapping[str, Candidate],
    changes: DeployChanges,
    index: SampleIndex | None,
    signals: Sequence[Signal],
    settings: AttributionSettings,
) -> Report:
    """The report with each regression attributed to the deploy's commits; ``candidates`` maps
    every reported regression id to its detection candidate (the dedup representatives)."""
    entries = []
    for entry in report.regressions:
        candidate = candidates[entry.id]
        found = attribute(evidence_of(candidate), changes, index, signals, settings)
        entries.append(attributed(entry, found, index, candidate))
    return replace(report, regressions=tuple(entries))
