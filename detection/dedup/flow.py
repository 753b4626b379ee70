"""Deduplication after detection (FBDetect §5.1 steps 4–6, plus Table 3's SameRegressionMerger):
share inflation → same-regression merge → SOMDedup → cost shift → PairwiseDedup, or, when the
config says so, the KDD'18 stack-trace deduplication in place of SOMDedup and PairwiseDedup.

Share inflation (``regbot.detection.share_inflation``) comes first: a gCPU share that rose only
because the deploy made the rest of the service cheaper is no regression, and removed before the
groups form it can never represent one that holds a real regression.

The cost-shift check runs on SOMDedup's representatives (the paper's order: the fast step
first). When it removes a representative, the rest of its group is judged by the same check:
members that are cost shifts themselves go; the others join the standing group whose leaf now
explains their rise, if any, or elect the next representative of their group by the same
ImportanceScore rule (``_cost_shift_stage``). A genuine regression is never removed only for
sharing a group with a cost shift.

Pure: candidates, what is known from earlier runs (regressions and groups, read from the state
store by the bot) and a ``DedupContext`` in; representatives, every removed candidate with the
verdict that removed it, the updated groups and the funnel out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from regbot.detection.cost_shift import cost_shift_verdicts
from regbot.detection.dedup.pairwise_dedup import pairwise_dedup
from regbot.detection.dedup.same_regression import KnownRegression, merge_same_regressions
from regbot.detection.dedup.som_dedup import joined_verdict, reelect, rehome, som_dedup
from regbot.detection.dedup.stack_dedup import stack_dedup
from regbot.detection.dedup_context import DedupContext, Group
from regbot.detection.model import Candidate, Verdict
from regbot.detection.share_inflation import ShareInflationSettings, share_inflation_verdicts
from regbot.detection.stage_settings import CostShiftSettings, DedupSettings, SomSettings
from regbot.detection.stages import Stage


@dataclass(frozen=True, slots=True)
class DedupResult:
    """Representatives (one per group touched in this run), removed candidates with their
    verdicts, the groups after this run, each representative's duplicates, and the funnel
    counts of these stages (each stage's own entry, by the stage registry)."""

    representatives: list[Candidate]
    removed: list[Candidate]
    groups: list[Group]
    group_of: dict[str, str]
    duplicates: dict[str, list[str]]
    funnel: dict[Stage, int] = field(default_factory=dict)


def deduplicate(
    candidates: list[Candidate],
    context: DedupContext,
    known: list[KnownRegression],
    groups: list[Group],
    settings: DedupSettings = DedupSettings(),
    cost_shift: CostShiftSettings = CostShiftSettings(),
) -> DedupResult:
    """The stages of the module docstring over this run's candidates: ``settings`` for the
    merge, SOMDedup, PairwiseDedup or KDD'18 (``regbot.yml``'s ``dedup:``), ``cost_shift`` for
    share inflation and the cost-shift check (``cost_shift:``)."""
    removed: list[Candidate] = []
    duplicates: dict[str, list[str]] = defaultdict(list)
    funnel: dict[Stage, int] = {}

    if cost_shift.share_inflation:
        inflation = ShareInflationSettings(alpha=cost_shift.inflation_alpha)
        verdicts = share_inflation_verdicts(candidates, context, inflation)
        judged = [c.with_verdict(v) for c, v in zip(candidates, verdicts, strict=True)]
        candidates = [c for c in judged if c.verdicts[Stage.SHARE_INFLATION].passed]
        removed += [c for c in judged if not c.verdicts[Stage.SHARE_INFLATION].passed]
    funnel[Stage.SHARE_INFLATION] = len(candidates)

    kept, merged = merge_same_regressions(candidates, known, settings)
    removed += merged  # a twin shares its regression's id: the same regression, not a duplicate
    funnel[Stage.SAME_REGRESSION] = len(kept)

    members_of: dict[str, list[Candidate]] = {}  # representative's series -> its duplicates
    if settings.method == "fbdetect":
        judged = som_dedup(kept, context, settings.som, settings.seed)
        kept = [c for c in judged if c.verdicts[Stage.SOM_DEDUP].passed]
        for candidate in judged:
            verdict = candidate.verdicts[Stage.SOM_DEDUP]
            if not verdict.passed:
                into = str(verdict.numbers.get("representative"))
                members_of.setdefault(into, []).append(candidate)
    funnel[Stage.SOM_DEDUP] = len(kept)

    if cost_shift.enabled:
        kept, shifted = _cost_shift_stage(kept, members_of, context, cost_shift, settings.som)
        removed += shifted
    funnel[Stage.COST_SHIFT] = len(kept)
    by_series = {c.series_id: c for c in kept}
    for into, members in members_of.items():
        removed += members
        if into in by_series:
            duplicates[by_series[into].regression_id] += [c.regression_id for c in members]

    group_of: dict[str, str] = {}
    if settings.method == "fbdetect":
        judged, groups = pairwise_dedup(
            kept, groups, context, settings, regression_ids=[c.regression_id for c in kept]
        )
        representatives_of_groups = {g.id: g.members[0].regression_id for g in groups}
        for g in groups:
            for m in g.members:
                group_of[m.regression_id] = g.id
        kept = []
        for candidate in judged:
            verdict = candidate.verdicts[Stage.PAIRWISE_DEDUP]
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
        judged = stack_dedup(kept, context, settings)
        kept = [c for c in judged if c.verdicts[Stage.STACK_DEDUP].passed]
        removed += [c for c in judged if not c.verdicts[Stage.STACK_DEDUP].passed]
        for candidate in kept:
            group_of[candidate.regression_id] = candidate.regression_id
    funnel[Stage.PAIRWISE_DEDUP if settings.method == "fbdetect" else Stage.STACK_DEDUP] = len(kept)

    for candidate in kept:
        group_of.setdefault(candidate.regression_id, candidate.regression_id)
    return DedupResult(kept, removed, groups, group_of, dict(duplicates), funnel)


def _cost_shift_stage(
    representatives: list[Candidate],
    members_of: dict[str, list[Candidate]],
    context: DedupContext,
    cost_shift: CostShiftSettings,
    som: SomSettings,
) -> tuple[list[Candidate], list[Candidate]]:
    """§5.4 on the SOMDedup representatives: (kept, removed). ``members_of`` (representative's
    series → its SOM duplicates) is updated in place.

    A representative removed as a cost shift does not take its group with it: the group was
    formed by where its members sit on the map and in the stacks, not by what each one is, so
    its members are judged by the same check. Those that are cost shifts themselves are removed
    by it (their ``som_dedup`` verdict says the group was re-evaluated and passes, so that the
    cost-shift verdict is what removed them). The others (*orphans*) are placed again without
    the cost shifts (``rehome``): a cost shift moved cost inside its domain and explains no
    ancestor's rise, so an orphan whose rise a leaf of a standing group now explains joins that
    group as a duplicate of its representative (which stands: it passed the check). The orphans
    left elect the next representative of their former group by the same ImportanceScore rule
    among themselves (``reelect``), the rest being its duplicates. Every orphan passed the
    check, so one round suffices."""
    verdicts = cost_shift_verdicts(representatives, context, cost_shift)
    judged = [c.with_verdict(v) for c, v in zip(representatives, verdicts)]
    kept = [c for c in judged if c.verdicts[Stage.COST_SHIFT].passed]
    removed = [c for c in judged if not c.verdicts[Stage.COST_SHIFT].passed]
    orphans = [m for r in removed for m in members_of.get(r.series_id, ())]
    if not orphans:
        return kept, removed
    orphan_verdicts = cost_shift_verdicts(orphans, context, cost_shift)
    judged_orphans = {m.series_id: m.with_verdict(v) for m, v in zip(orphans, orphan_verdicts)}
    genuine_of: dict[str, list[Candidate]] = {}
    for former in list(removed):
        group = [judged_orphans[m.series_id] for m in members_of.pop(former.series_id, ())]
        for member in group:
            if not member.verdicts[Stage.COST_SHIFT].passed:
                removed.append(member.with_verdict(_regrouped(member, former.series_id)))
        genuine_of[former.series_id] = [m for m in group if m.verdicts[Stage.COST_SHIFT].passed]
    standing = list(kept)
    genuine = [m for members in genuine_of.values() for m in members]
    standing_groups = [[r, *members_of.get(r.series_id, ())] for r in standing]
    homes = rehome(genuine, standing_groups, context, som)
    home_of = {m.series_id: home for m, home in zip(genuine, homes)}
    order = {c.series_id: i for i, c in enumerate(representatives + orphans)}
    for former_id, members in genuine_of.items():
        left = []
        for member in members:
            home = home_of[member.series_id]
            if home < 0:
                left.append(member)
                continue
            representative = standing[home]
            verdict = joined_verdict(member, representative, former_id)
            members_of.setdefault(representative.series_id, []).append(member.with_verdict(verdict))
        if left:
            elected = reelect(left, context, som, former_id)
            representative = next(c for c in elected if c.verdicts[Stage.SOM_DEDUP].passed)
            kept.append(representative)
            members_of[representative.series_id] = [
                c for c in elected if not c.verdicts[Stage.SOM_DEDUP].passed
            ]
    kept.sort(key=lambda c: order[c.series_id])
    return kept, removed


def _regrouped(member: Candidate, former: str) -> Verdict:
    """The ``som_dedup`` verdict of a group member that is a cost shift itself."""
    previous = member.verdicts.get(Stage.SOM_DEDUP)
    cell = previous.numbers.get("cell") if previous is not None else None
    return Verdict(
        Stage.SOM_DEDUP,
        True,
        f"group re-evaluated after its representative {former} was removed as a cost shift",
        {"cell": cell, "former_representative": former},
    )
