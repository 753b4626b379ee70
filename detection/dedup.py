"""Deduplication after detection (FBDetect §5.1 steps 4–6, plus Table 3's SameRegressionMerger):
same-regression merge → SOMDedup → cost shift → PairwiseDedup, or, when the config says so, the
KDD'18 stack-trace deduplication in place of SOMDedup and PairwiseDedup.

Pure: candidates, what is known from earlier runs (regressions and groups, read from the state
store by the bot) and a ``DedupContext`` in; representatives, every removed candidate with the
verdict that removed it, the updated groups and the funnel out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

from regbot.detection.cost_shift import cost_shift_verdicts
from regbot.detection.model import (
    Candidate,
    CostShiftSettings,
    DedupContext,
    Group,
    PairwiseSettings,
    SomSettings,
    Verdict,
)
from regbot.detection.pairwise_dedup import pairwise_dedup
from regbot.detection.same_regression import KnownRegression, merge_same_regressions
from regbot.detection.som_dedup import som_dedup
from regbot.detection.stack_dedup import stack_dedup


@dataclass(frozen=True, slots=True)
class DedupSettings:
    """``method``: "fbdetect" (SOMDedup + cost shift + PairwiseDedup) or "kdd18" (cost shift, then
    the KDD'18 stack-trace deduplication); ``merge_gap_s``: change points of one series this
    close are one regression."""

    method: Literal["fbdetect", "kdd18"] = "fbdetect"
    merge_gap_s: float = 6 * 3600.0
    som: SomSettings = SomSettings()
    cost_shift: CostShiftSettings | None = CostShiftSettings()  # None: the stage is off
    pairwise: PairwiseSettings = PairwiseSettings()
    kdd18_bucket_s: float = 600.0


@dataclass(frozen=True, slots=True)
class DedupResult:
    """Representatives (one per group touched in this run), removed candidates with their
    verdicts, the groups after this run, each representative's duplicates, and the funnel
    counts of these stages."""

    representatives: list[Candidate]
    removed: list[Candidate]
    groups: list[Group]
    group_of: dict[str, str]
    duplicates: dict[str, list[str]]
    funnel: dict[str, int] = field(default_factory=dict)


def deduplicate(
    candidates: list[Candidate],
    context: DedupContext,
    known: list[KnownRegression],
    groups: list[Group],
    settings: DedupSettings = DedupSettings(),
) -> DedupResult:
    removed: list[Candidate] = []
    duplicates: dict[str, list[str]] = defaultdict(list)
    funnel: dict[str, int] = {}

    kept, merged = merge_same_regressions(candidates, known, settings.merge_gap_s)
    removed += merged  # a twin shares its regression's id: the same regression, not a duplicate
    funnel["after_same_regression_merge"] = len(kept)

    if settings.method == "fbdetect":
        judged = som_dedup(kept, context, settings.som)
        representative_of = {}
        for candidate in judged:
            verdict = candidate.verdicts["som_dedup"]
            if not verdict.passed:
                representative_of[candidate.series_id] = verdict.numbers.get("representative")
        by_series = {c.series_id: c for c in judged}
        kept = [c for c in judged if c.verdicts["som_dedup"].passed]
        for candidate in judged:
            if not candidate.verdicts["som_dedup"].passed:
                removed.append(candidate)
                rep = by_series.get(str(representative_of[candidate.series_id]))
                if rep is not None:
                    duplicates[rep.regression_id].append(candidate.regression_id)
    funnel["after_som_dedup"] = len(kept)

    if settings.cost_shift is not None:
        verdicts = cost_shift_verdicts(kept, context, settings.cost_shift)
        judged = [c.with_verdict(v) for c, v in zip(kept, verdicts)]
        kept = [c for c in judged if c.verdicts["cost_shift"].passed]
        removed += [c for c in judged if not c.verdicts["cost_shift"].passed]
    funnel["after_cost_shift"] = len(kept)

    group_of: dict[str, str] = {}
    if settings.method == "fbdetect":
        judged, groups = pairwise_dedup(
            kept, groups, context, settings.pairwise, regression_ids=[c.regression_id for c in kept]
        )
        representatives_of_groups = {g.id: g.members[0].regression_id for g in groups}
        for g in groups:
            for m in g.members:
                group_of[m.regression_id] = g.id
        kept = []
        for candidate in judged:
            verdict = candidate.verdicts["pairwise_dedup"]
            group_id = group_of.get(candidate.regression_id, candidate.regression_id)
            own_group = representatives_of_groups.get(group_id) == candidate.regression_id
            if verdict.passed or own_group:
                kept.append(candidate)
            else:
                removed.append(candidate)
                duplicates[representatives_of_groups.get(group_id, group_id)].append(
                    candidate.regression_id
                )
    else:
        judged = stack_dedup(kept, context, bucket_s=settings.kdd18_bucket_s)
        kept = [c for c in judged if c.verdicts["stack_dedup"].passed]
        removed += [c for c in judged if not c.verdicts["stack_dedup"].passed]
        for candidate in kept:
            group_of[candidate.regression_id] = candidate.regression_id
    funnel["after_pairwise_dedup"] = len(kept)

    for candidate in kept:
        group_of.setdefault(candidate.regression_id, candidate.regression_id)
    return DedupResult(kept, removed, groups, group_of, dict(duplicates), funnel)


def with_group_verdict(candidate: Candidate, group_id: str, duplicates: list[str]) -> Candidate:
    """Record the dedup group in the candidate's verdicts (shown by the report and `explain`)."""
    verdict = Verdict(
        "group", True, f"group {group_id}", {"group": group_id, "duplicates": duplicates}
    )
    return candidate.with_verdict(verdict)
