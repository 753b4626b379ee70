"""PairwiseDedup (FBDetect §5.5.2): merge each new regression into the most similar group.

Each new candidate (a representative that survived SOMDedup and the cost-shift filter) is
compared, callees first, with every existing group on the rules' features (correlation:
``pairwise_evidence``; text: ``pairwise_text``; stack overlap and cascades:
``pairwise_groups``), and merges into the best group its rules accept or starts a new one.

Complexity: O(new × members) feature computations, done in blocks of ``BLOCK_ROWS`` candidates
as matrix products, then one pass over the candidates that keeps each group's best member per
feature. Memory O(BLOCK_ROWS × members).
Design: docs/design/pairwise_dedup.md
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from regbot.detection.dedup.pairwise_evidence import (
    CorrelationEvidence,
    EvidenceBlock,
    finite_or_none,
)
from regbot.detection.dedup.pairwise_groups import GroupState
from regbot.detection.dedup.pairwise_text import TextSimilarity
from regbot.detection.dedup.shared_cause import load_over_windows
from regbot.detection.dedup_context import DedupContext, Group, GroupMember, subroutine_of_series
from regbot.detection.model import Candidate, Verdict
from regbot.detection.stage_settings import DedupSettings
from regbot.detection.stages import Stage

__all__ = ["correlation_window", "member_of", "pairwise_dedup"]

STAGE = Stage.PAIRWISE_DEDUP
FEATURES = ("correlation", "text", "stack_overlap")
BLOCK_ROWS = 256


def correlation_window(candidate: Candidate) -> tuple[float, float]:
    """``[start_s, end_s]`` compared by the correlation feature: the analysis and extended
    windows plus an equal span before them."""
    w = candidate.windows
    span = w.end_s - w.analysis_start_s
    return w.analysis_start_s - span, w.end_s


def member_of(candidate: Candidate, regression_id: str, context: DedupContext) -> GroupMember:
    """The group member a candidate becomes: its points in ``correlation_window`` and, for a
    gCPU series, its subroutine's stack share."""
    start_s, end_s = correlation_window(candidate)
    times = np.asarray(candidate.times_s, dtype=np.float64)
    keep = (times >= start_s) & (times <= end_s)
    subroutine = subroutine_of_series(candidate.series_id)
    stacks = context.stacks.get(subroutine) if subroutine is not None else None
    return GroupMember(
        regression_id,
        candidate.series_id,
        candidate.kind,
        float(candidate.change_time_s),
        times[keep],
        np.asarray(candidate.values, dtype=np.float64)[keep],
        stacks,
    )


def pairwise_dedup(
    candidates: list[Candidate],
    groups: list[Group],
    context: DedupContext,
    settings: DedupSettings,
    *,
    regression_ids: list[str],
) -> tuple[list[Candidate], list[Group]]:
    """Every candidate with a ``pairwise_dedup`` verdict (passed = starts a new group), in input
    order, and the updated groups: the given ones (with their new members) then the new ones.
    ``regression_ids[i]`` is candidate ``i``'s stable id, the id of the group it may start.
    ``settings``: the rules, how they combine and the gap (``rules``, ``combine``,
    ``pairwise_max_gap_s``) and the evidence (``pairwise``)."""
    _validate(candidates, settings, regression_ids)
    order = _callees_first(candidates, context)
    if order != list(range(len(candidates))):
        reordered, updated = pairwise_dedup(
            [candidates[k] for k in order],
            groups,
            context,
            settings,
            regression_ids=[regression_ids[k] for k in order],
        )
        back = {k: i for i, k in enumerate(order)}
        return [reordered[back[k]] for k in range(len(candidates))], updated
    features = tuple(dict.fromkeys(rule.feature for rule in settings.rules))
    new = [member_of(c, rid, context) for c, rid in zip(candidates, regression_ids)]
    past = [member for group in groups for member in group.members]
    rows, n_past = past + new, len(past)
    scorers: dict[str, TextSimilarity] = {}
    if "text" in features:
        scorers["text"] = TextSimilarity([m.series_id for m in rows])
    evidence = None
    if "correlation" in features:
        evidence = CorrelationEvidence(
            past,
            candidates,
            groups,
            load_over_windows(
                [(c.windows.historical_start_s, c.windows.end_s) for c in candidates],
                context,
                settings.pairwise.load_min_series,
            ),
            settings.pairwise,
        )
    state = GroupState(groups, capacity=len(rows), callers=context.callers)
    judged: list[Candidate] = []
    for a in range(0, len(candidates), BLOCK_ROWS):
        b = min(len(candidates), a + BLOCK_ROWS)
        pairs = {f: s.block(n_past + a, n_past + b, n_past + b) for f, s in scorers.items()}
        best = {f: state.fold(pair, b - a) for f, pair in pairs.items()}
        block = evidence.block(n_past + a, n_past + b, state) if evidence is not None else None
        for i in range(a, b):
            r, candidate, member = i - a, candidates[i], new[i]
            verdict, joined = _decide(
                state, member, features, settings, {f: m[r] for f, m in best.items()}, block, r
            )
            if joined is not None:
                starts_group = not state.representative[joined]
                state.add(joined, member, n_past + i)
                for f, pair in pairs.items():  # later rows of the block see the new member
                    np.fmax(
                        best[f][r + 1 :, joined],
                        pair[r + 1 :, n_past + i],
                        out=best[f][r + 1 :, joined],
                    )
                if block is not None:
                    block.admit(r, joined, n_past + i, starts_group)
            judged.append(candidate.with_verdict(verdict))
    return judged, state.groups(groups)


def _callees_first(candidates: Sequence[Candidate], context: DedupContext) -> list[int]:
    """The order candidates are placed in: a gCPU candidate after every candidate it calls
    (fewest candidates below it first; otherwise input order), so that a slowed function starts
    the group its callers' rises then join, and callers on different paths meet in it."""
    subs = [subroutine_of_series(c.series_id) for c in candidates]
    present = {s for s in subs if s is not None}
    below = dict.fromkeys(present, 0)
    for s in present:
        for caller in context.callers.get(s, ()):
            if caller in below and caller != s:
                below[caller] += 1

    def callees_below(k: int) -> int:
        sub = subs[k]
        return below.get(sub, 0) if sub else 0

    return sorted(range(len(candidates)), key=callees_below)


def _validate(
    candidates: Sequence[Candidate], settings: DedupSettings, regression_ids: Sequence[str]
) -> None:
    if len(regression_ids) != len(candidates):
        raise ValueError(
            f"regression_ids: expected one id per candidate ({len(candidates)}), "
            f"found {len(regression_ids)}"
        )
    if settings.combine not in ("all", "any"):
        raise ValueError(f"combine: expected 'all' or 'any', found {settings.combine!r}")
    for rule in settings.rules:
        if rule.feature not in FEATURES:
            raise ValueError(f"rules: expected a feature of {FEATURES}, found {rule.feature!r}")


def _decide(
    state: GroupState,
    member: GroupMember,
    features: tuple[str, ...],
    settings: DedupSettings,
    best_rows: dict[str, np.ndarray],
    block: EvidenceBlock | None,
    row: int,
) -> tuple[Verdict, int | None]:
    """The verdict for one candidate and the group index it joins (None: an exact match, which
    adds no member). A new group is created here."""
    exact = state.regression_group.get(member.regression_id)
    if exact is not None:
        scores: Mapping[str, float | None] = {f: 1.0 for f in features}
        return _verdict(False, state, exact, scores, settings, {}, exact=True, considered=1), None
    n_groups = len(state.ids)
    eligible = state.eligible(member.change_time_s, settings.pairwise_max_gap_s)
    table: dict[str, np.ndarray] = {}
    for f in features:
        if f == "stack_overlap":
            table[f] = state.stack_overlap(member.stacks)
        elif f == "correlation" and block is not None:
            table[f] = block.r(row, n_groups)
        else:
            table[f] = best_rows[f][:n_groups]
    significant = np.ones(n_groups, dtype=bool)
    floor = np.zeros(n_groups)
    bound = None
    if block is not None:
        tested = int(state.member_counts(n_groups)[eligible].sum()) * block.evidence.new
        bound = settings.pairwise.evidence_alpha / max(tested, 1)
        significant = block.p(row, n_groups) <= bound  # NaN compares False
        floor = np.where(
            block.both_gcpu(row, n_groups), 0.0, settings.pairwise.cross_kind_correlation
        )
    accepted = np.zeros(n_groups, dtype=bool)
    if settings.rules:
        scored = [~np.isnan(table[r.feature]) for r in settings.rules]
        passes = [
            (table[r.feature] >= np.maximum(r.threshold, floor)) & significant
            if r.feature == "correlation"
            else table[r.feature] >= r.threshold  # NaN compares False
            for r in settings.rules
        ]
        if settings.combine == "all":  # every rule that applies to the pair, and at least one
            accepted = np.logical_and.reduce([p | ~a for p, a in zip(passes, scored)])
            accepted &= np.logical_or.reduce(scored)
        else:  # any rule that applies
            accepted = np.logical_or.reduce(passes)
    containment = state.cascade_containment(member)[:n_groups]
    accepted |= containment >= settings.pairwise.cascade_containment  # NaN compares False
    accepted &= eligible
    aggregate = np.zeros(n_groups)
    for values in table.values():
        aggregate += np.where(np.isnan(values), 0.0, values)
    considered = int(eligible.sum())

    def evidence(g: int | None) -> dict[str, object]:
        if block is None or g is None:
            return {}
        return {**block.numbers(row, g), "correlation_p_bound": bound}

    if accepted.any():
        g = int(np.argmax(np.where(accepted, aggregate, -np.inf)))
        verdict = _verdict(
            False,
            state,
            g,
            _scores(table, g),
            settings,
            {**evidence(g), "cascade_containment": finite_or_none(containment[g])},
            considered=considered,
        )
        return verdict, g
    shown = int(np.argmax(np.where(eligible, aggregate, -np.inf))) if considered else None
    scores = _scores(table, shown) if shown is not None else {f: None for f in features}
    verdict = _verdict(
        True,
        state,
        shown,
        scores,
        settings,
        {
            **evidence(shown),
            "cascade_containment": finite_or_none(containment[shown])
            if shown is not None
            else None,
        },
        considered=considered,
        new_id=member.regression_id,
    )
    return verdict, state.create(member.regression_id)


def _scores(table: dict[str, np.ndarray], g: int) -> dict[str, float | None]:
    return {f: (None if np.isnan(v[g]) else float(v[g])) for f, v in table.items()}


def _verdict(
    merged_passed: bool,
    state: GroupState,
    g: int | None,
    scores: Mapping[str, float | None],
    settings: DedupSettings,
    evidence: dict[str, object],
    *,
    considered: int,
    exact: bool = False,
    new_id: str | None = None,
) -> Verdict:
    group_id = state.ids[g] if g is not None else None
    representative = state.representative[g] if g is not None else None
    available = [s for s in scores.values() if s is not None]
    numbers: dict[str, object] = {
        "group": group_id,
        "representative": representative,
        "exact_match": exact,
        **scores,
        **evidence,
        "aggregate": float(sum(available)) if available else None,
        "rules": [r.feature for r in settings.rules],
        "thresholds": [float(r.threshold) for r in settings.rules],
        "combine": settings.combine,
        "max_gap_s": float(settings.pairwise_max_gap_s),
        "groups_considered": considered,
    }
    if "correlation" in scores:
        numbers["evidence_alpha"] = float(settings.pairwise.evidence_alpha)
        numbers["cross_kind_correlation"] = float(settings.pairwise.cross_kind_correlation)
    if not merged_passed:
        return Verdict(STAGE, False, f"merged into group {group_id} ({representative})", numbers)
    if g is None:
        reason = f"new group {new_id}: no group changed within {settings.pairwise_max_gap_s:g} s"
    else:
        reason = (
            f"new group {new_id}: the closest group {group_id} ({representative}) fails the rules"
        )
    return Verdict(STAGE, True, reason, numbers)
