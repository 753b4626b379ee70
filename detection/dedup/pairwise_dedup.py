"""PairwiseDedup (FBDetect §5.5.2): merge each new regression into the most similar group.

``pairwise_dedup`` compares each new candidate (a representative that survived SOMDedup and the
cost-shift filter), in input order, with every existing group — the past groups passed in and the
groups created earlier in the same call — and merges it into the best group its rules accept, or
starts a new group whose id is the candidate's regression id. The choices the paper leaves open:

* **Which groups.** A group is considered when at least one of its members changed within
  ``max_gap_s`` of the candidate; its feature scores use all of its members (a member whose
  series does not overlap the candidate's window simply has no correlation).
* **correlation** — evidence that one cause moved both series, not that they have one shape
  (two steps at one deploy always correlate): the correlation of their *residual noise*, each
  one's own step and the fleet's load removed, with its one-sided p-value from Fisher's z over
  Bartlett's effective number of points (``regbot.detection.dedup.shared_cause``; the load is
  estimated from ``DedupContext.series`` over the candidates' windows). A caller's gCPU holds
  every sample of its callee's, so its noise holds the callee's; a throughput or latency series
  driven by a gCPU series carries its noise too. The candidate's points are restricted to
  ``correlation_window`` (its analysis and extended windows plus an equal span before them); a
  member keeps the points of its own window (``member_of``); points are paired by nearest time
  within half a spacing (``paired_points``), so a later run is compared on the points the two
  windows share. Per group the member with the strongest evidence (largest z) counts, among its
  *anchors*: the representative, any member of the same series, and, for a gCPU candidate, a
  gCPU member whose noise it contains (its residual is the larger: it is the member's caller) —
  so an unrelated leaf does not join a group through the popular caller that joined it. A
  throughput or latency candidate may anchor on any member. The rule passes when r reaches its
  threshold (at least ``cross_kind_correlation`` when one side is not gCPU) and p is at most
  ``evidence_alpha`` over the members of the groups compared (family-wise). The verdict keeps
  r, z, p, its bound, the effective points, the member, and both deltas with standard errors.
* **text** — cosine similarity of TF-IDF vectors of character 2- and 3-grams of the series ids
  (the metric id: metric kind and subroutine), as the paper does for SOMDedup; sklearn's
  ``TfidfVectorizer(analyzer="char", ngram_range=(2, 3))`` fitted on the ids of this call (the
  candidates and every member). Maximum over members.
* **stack_overlap** — the overlap coefficient of the samples behind the two gCPUs ("the
  percentage of shared samples used for calculating two subroutines' gCPU"): the weight of the
  candidate's stacks (``DedupContext.stacks`` of its subroutine) that lie in the *union* of the
  members' stacks, over the smaller of the candidate's weight and the union's. A subroutine and
  any caller or callee of it score 1.0 (one's samples are all samples of the other) however much
  else the caller does; unrelated code scores 0. Weights are the candidate's own on the shared
  part (stacks from other runs may carry other weights), the union's weight is each of its stacks
  counted once (the first member's weight). None when the candidate is not a gCPU series or has
  no stacks, or when no
  member of the group has stacks. Stack ids are compared as they are: past members' stacks must
  come from the same stack table (the sample store's).
* **Rules.** ``combine="all"``: every rule that applies to the pair reaches its threshold, and at
  least one applies (a None score means the feature does not apply: stack overlap for a
  throughput series); ``"any"``: at least one rule reaches its threshold (None fails). No rules →
  never merge. Among accepted groups the highest
  aggregate score (sum of the available scores of the rules' features) wins, ties to the older
  group. A candidate not merged reports the best-scoring group it was compared with.
* **Order.** Candidates are placed callees first (``_callees_first``); the verdicts come back in
  input order. A slowed function then starts the group its callers join.
* **Cascades.** One slowed function raises every caller's gCPU by its own rise, and callers on
  different paths share no stack with each other (overlap 0) nor enough noise to pass the
  correlation rule: four callers of one slowed function would be four reports. The stacks say
  more: a caller's rise that lies on the stacks of its callee came from the callee. A gCPU
  candidate joins a group, whatever the rules, when for the candidate and a member, one a
  caller of the other (``DedupContext.callers``), at least ``cascade_containment`` (80%) of the
  caller's rise lies on the stacks it shares with the callee (``StackShare.rises``: each stack's
  change of share across the run's analysis start, known for this run's members): their net
  rise over itself plus the sum of the rises (falls count 0) of the caller's other stacks, so
  that a fall elsewhere cannot make room for the callee (shares sum to 1: the root's net
  change is always 0). Only the
  caller's rise is tested: a callee's rise always lies on a caller that is on all its stacks,
  so testing that way would merge every independent regression under ``main``; ``main``, whose
  rise two independent regressions share, joins neither of them. The verdict keeps the share.
* **Same regression.** A candidate whose regression id is already a member of a group merges
  into that group as an exact match (every score 1.0), whatever the rules and the gap, and adds
  no second member: re-running the same candidates against the returned groups changes nothing.

Complexity: O(new × members) feature computations, done in blocks of ``BLOCK_ROWS`` candidates
as matrix products — noise statistics per pair of distinct time axes (fleet buckets share one
axis; series with their own irregular timestamps cost one pairing per pair of axes), text as a
dense product over the common n-grams plus a sparse one over the rare — then one pass over the
candidates that keeps each group's best member per feature. Stack overlap uses an inverted
index stack → groups: O(stacks of the candidate + hits). Memory O(BLOCK_ROWS × members).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer

from regbot.detection.model import (
    Candidate,
    DedupContext,
    Group,
    GroupMember,
    PairwiseSettings,
    StackShare,
    Verdict,
    subroutine_of_series,
)
from regbot.detection.dedup.shared_cause import (
    LoadFactor,
    delta_with_se,
    load_over_windows,
    noise_of,
    pair_stats,
    paired_points,
)

__all__ = ["correlation_window", "member_of", "pairwise_dedup", "paired_points"]

STAGE = "pairwise_dedup"
FEATURES = ("correlation", "text", "stack_overlap")
BLOCK_ROWS = 256
DENSE_GRAM_SHARE = 0.01  # n-grams in more than 1% of the ids go to the dense product


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
    settings: PairwiseSettings,
    *,
    regression_ids: list[str],
) -> tuple[list[Candidate], list[Group]]:
    """Every candidate with a ``pairwise_dedup`` verdict (passed = starts a new group), in input
    order, and the updated groups: the given ones (with their new members) then the new ones.
    ``regression_ids[i]`` is candidate ``i``'s stable id, the id of the group it may start."""
    _validate(candidates, settings, regression_ids)
    order = _callees_first(candidates, context)
    if order != list(range(len(candidates))):
        judged, updated = pairwise_dedup(
            [candidates[k] for k in order],
            groups,
            context,
            settings,
            regression_ids=[regression_ids[k] for k in order],
        )
        back = {k: i for i, k in enumerate(order)}
        return [judged[back[k]] for k in range(len(candidates))], updated
    features = tuple(dict.fromkeys(rule.feature for rule in settings.rules))
    new = [member_of(c, rid, context) for c, rid in zip(candidates, regression_ids)]
    past = [member for group in groups for member in group.members]
    rows, n_past = past + new, len(past)
    scorers: dict[str, _TextSimilarity] = {}
    if "text" in features:
        scorers["text"] = _TextSimilarity([m.series_id for m in rows])
    evidence = None
    if "correlation" in features:
        evidence = _Evidence(
            past,
            candidates,
            groups,
            load_over_windows(
                [(c.windows.historical_start_s, c.windows.end_s) for c in candidates],
                context,
                settings.load_min_series,
            ),
            settings,
        )
    state = _GroupState(groups, capacity=len(rows), callers=context.callers)
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
    return sorted(range(len(candidates)), key=lambda k: below.get(subs[k], 0) if subs[k] else 0)


def _validate(
    candidates: Sequence[Candidate], settings: PairwiseSettings, regression_ids: Sequence[str]
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
    state: _GroupState,
    member: GroupMember,
    features: tuple[str, ...],
    settings: PairwiseSettings,
    best_rows: dict[str, np.ndarray],
    block: _EvidenceBlock | None,
    row: int,
) -> tuple[Verdict, int | None]:
    """The verdict for one candidate and the group index it joins (None: an exact match, which
    adds no member). A new group is created here."""
    exact = state.regression_group.get(member.regression_id)
    if exact is not None:
        scores = {f: 1.0 for f in features}
        return _verdict(False, state, exact, scores, settings, {}, exact=True, considered=1), None
    n_groups = len(state.ids)
    eligible = state.eligible(member.change_time_s, settings.max_gap_s)
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
        bound = settings.evidence_alpha / max(tested, 1)
        significant = block.p(row, n_groups) <= bound  # NaN compares False
        floor = np.where(block.both_gcpu(row, n_groups), 0.0, settings.cross_kind_correlation)
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
    accepted |= containment >= settings.cascade_containment  # NaN compares False
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
            {**evidence(g), "cascade_containment": _plain(containment[g])},
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
            "cascade_containment": _plain(containment[shown]) if shown is not None else None,
        },
        considered=considered,
        new_id=member.regression_id,
    )
    return verdict, state.create(member.regression_id)


def _scores(table: dict[str, np.ndarray], g: int) -> dict[str, float | None]:
    return {f: (None if np.isnan(v[g]) else float(v[g])) for f, v in table.items()}


def _verdict(
    merged_passed: bool,
    state: _GroupState,
    g: int | None,
    scores: dict[str, float | None],
    settings: PairwiseSettings,
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
        "max_gap_s": float(settings.max_gap_s),
        "groups_considered": considered,
    }
    if "correlation" in scores:
        numbers["evidence_alpha"] = float(settings.evidence_alpha)
        numbers["cross_kind_correlation"] = float(settings.cross_kind_correlation)
    if not merged_passed:
        return Verdict(STAGE, False, f"merged into group {group_id} ({representative})", numbers)
    if g is None:
        reason = f"new group {new_id}: no group changed within {settings.max_gap_s:g} s"
    else:
        reason = (
            f"new group {new_id}: the closest group {group_id} ({representative}) fails the rules"
        )
    return Verdict(STAGE, True, reason, numbers)


def _contained(caller: StackShare, callee: StackShare) -> float | None:
    """The share of the caller's rise that lies on the stacks it shares with its callee: their
    net rise over itself plus every rise of the caller's other stacks (a fall elsewhere does not
    offset a rise elsewhere: ``main``'s net change is 0 whatever moved under it). None when the
    shared stacks did not rise."""
    assert caller.rises is not None
    shared = np.isin(caller.stack_ids, callee.stack_ids, assume_unique=True)
    inside = float(caller.rises[shared].sum())
    if not inside > 0:
        return None
    outside = float(np.maximum(caller.rises[~shared], 0.0).sum())
    return inside / (inside + outside)


class _GroupState:
    """The groups while the call runs: members' change times and group indices as arrays, each
    member's column in the block score matrices, regression id → group, stack id → groups."""

    def __init__(
        self,
        groups: Sequence[Group],
        capacity: int,
        callers: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.callers = callers or {}
        # members whose stacks carry rises (this run's gCPU members): subroutine -> (group,
        # stacks); and each of their callers -> the members below it
        self.rising: dict[str, list[tuple[int, StackShare]]] = {}
        self.below: dict[str, list[tuple[int, StackShare]]] = {}
        self.ids = [g.id for g in groups]
        self.representative = [g.members[0].series_id if g.members else "" for g in groups]
        self.added: list[list[GroupMember]] = [[] for _ in groups]
        self.member_time = np.empty(capacity)
        self.member_group = np.empty(capacity, dtype=np.int64)
        self.member_column = np.empty(capacity, dtype=np.int64)
        self.count = 0
        self.regression_group: dict[str, int] = {}
        self.stack_groups: dict[int, set[int]] = {}
        self.has_stacks: list[bool] = [False] * len(groups)
        self.union_weight: list[float] = [0.0] * len(groups)  # weight of the group's stacks
        column = 0
        for g, group in enumerate(groups):
            for member in group.members:
                self._index(g, member, column)
                column += 1

    def _index(self, g: int, member: GroupMember, column: int) -> None:
        k = self.count
        self.member_time[k], self.member_group[k], self.member_column[k] = (
            member.change_time_s,
            g,
            column,
        )
        self.count += 1
        self.regression_group.setdefault(member.regression_id, g)
        sub = subroutine_of_series(member.series_id)
        if sub is not None and member.stacks is not None and member.stacks.rises is not None:
            self.rising.setdefault(sub, []).append((g, member.stacks))
            for caller in self.callers.get(sub, ()):
                self.below.setdefault(caller, []).append((g, member.stacks))
        if member.stacks is not None and len(member.stacks.stack_ids):
            self.has_stacks[g] = True
            stacks = member.stacks
            for stack, weight in zip(stacks.stack_ids.tolist(), stacks.weights.tolist()):
                holders = self.stack_groups.setdefault(stack, set())
                if g not in holders:
                    holders.add(g)
                    self.union_weight[g] += weight

    def create(self, group_id: str) -> int:
        """A new, still empty group (``add`` gives it its first member); its index."""
        self.ids.append(group_id)
        self.representative.append("")
        self.added.append([])
        self.has_stacks.append(False)
        self.union_weight.append(0.0)
        return len(self.ids) - 1

    def add(self, g: int, member: GroupMember, column: int) -> None:
        if not self.representative[g]:
            self.representative[g] = member.series_id
        self.added[g].append(member)
        self._index(g, member, column)

    def fold(self, pair: np.ndarray, block_rows: int) -> np.ndarray:
        """(block_rows, groups + block_rows): each group's best member score per row of a block
        score matrix (NaN: no score); the extra columns leave room for groups the block
        creates."""
        out = np.full((block_rows, len(self.ids) + block_rows), np.nan)
        if self.count:
            groups = self.member_group[: self.count]
            order = np.argsort(groups, kind="stable")
            sorted_groups = groups[order]
            starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
            columns = self.member_column[: self.count][order]
            out[:, sorted_groups[starts]] = np.fmax.reduceat(pair[:, columns], starts, axis=1)
        return out

    def argmax(self, score: np.ndarray, block_rows: int) -> np.ndarray:
        """(block_rows, groups + block_rows) int64: per row, each group's member column of the
        highest finite ``score`` (columns of ``score`` are member columns), -1 for none."""
        out = np.full((block_rows, len(self.ids) + block_rows), -1, dtype=np.int64)
        if not self.count:
            return out
        groups = self.member_group[: self.count]
        order = np.argsort(groups, kind="stable")
        sorted_groups = groups[order]
        starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
        columns = self.member_column[: self.count][order]
        values = np.where(np.isnan(score[:, columns]), -np.inf, score[:, columns])
        top = np.maximum.reduceat(values, starts, axis=1)
        segment = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, columns.size]))
        width = columns.size
        hit = (values == top[:, segment]) & np.isfinite(values)
        first = np.minimum.reduceat(np.where(hit, np.arange(width)[None, :], width), starts, axis=1)
        out[:, sorted_groups[starts]] = np.where(
            first < width, columns[np.minimum(first, width - 1)], -1
        )
        return out

    def member_counts(self, n_groups: int) -> np.ndarray:
        """(n_groups,) members per group."""
        return np.bincount(self.member_group[: self.count], minlength=n_groups)[:n_groups]

    def eligible(self, change_time_s: float, max_gap_s: float) -> np.ndarray:
        near = np.abs(self.member_time[: self.count] - change_time_s) <= max_gap_s
        out = np.zeros(len(self.ids), dtype=bool)
        out[self.member_group[: self.count][near]] = True
        return out

    def stack_overlap(self, stacks: StackShare | None) -> np.ndarray:
        """Per group, the overlap coefficient of the candidate's samples and the union of the
        group's: the weight they share over the smaller of the two weights (NaN: no stacks on
        either side). A subroutine and its caller score 1: every sample of the callee is one
        of the caller's, whatever else the caller does."""
        out = np.full(len(self.ids), np.nan)
        total = float(np.sum(stacks.weights)) if stacks is not None else 0.0
        if stacks is None or not total > 0:
            return out
        shared = np.zeros(len(self.ids))
        for stack, weight in zip(stacks.stack_ids.tolist(), stacks.weights.tolist()):
            for g in self.stack_groups.get(stack, ()):
                shared[g] += weight
        has = np.array(self.has_stacks, dtype=bool)
        smaller = np.minimum(total, np.asarray(self.union_weight))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[has] = np.where(smaller[has] > 0, shared[has] / smaller[has], np.nan)
        return out

    def cascade_containment(self, member: GroupMember) -> np.ndarray:
        """Per group, the largest share of a caller's rise that lies on its callee's stacks,
        the candidate and a member of the group being the two (NaN: no such pair)."""
        out = np.full(len(self.ids), np.nan)
        sub = subroutine_of_series(member.series_id)
        own = member.stacks
        if sub is None or own is None or own.rises is None:
            return out
        pairs = [  # (group, the caller's stacks, the callee's stacks)
            *((g, stacks, own) for a in self.callers.get(sub, ()) for g, stacks in self.rising.get(a, ())),
            *((g, own, stacks) for g, stacks in self.below.get(sub, ())),
        ]
        for g, caller, callee in pairs:
            share = _contained(caller, callee)
            if share is not None and not share <= out[g]:
                out[g] = share
        return out

    def groups(self, given: Sequence[Group]) -> list[Group]:
        out = [
            Group(g.id, g.members + tuple(self.added[k])) if self.added[k] else g
            for k, g in enumerate(given)
        ]
        out += [Group(self.ids[k], tuple(self.added[k])) for k in range(len(given), len(self.ids))]
        return out


class _Evidence:
    """The noise of every row — the past members (their stored windows), then the new
    candidates (their whole series in the run's windows, for the most points) — for the
    correlation feature: load-free residuals (``shared_cause.noise_of``), each row's residual
    scale, its delta with standard error, whether it is a gCPU series, and which member columns
    are their group's representative."""

    def __init__(
        self,
        past: Sequence[GroupMember],
        candidates: Sequence[Candidate],
        groups: Sequence[Group],
        load: LoadFactor | None,
        settings: PairwiseSettings,
    ) -> None:
        rows: list[GroupMember | Candidate] = [*past, *candidates]
        self.new = len(candidates)
        self.ids = [m.series_id for m in rows]
        self.rise_z = settings.rise_z
        self.noise = noise_of(
            [m.times_s for m in rows],
            [m.values for m in rows],
            [m.change_time_s for m in rows],
            load,
            settings.guard_points,
        )
        self.raw_sd = self.noise.raw_sd()
        self.gcpu = np.array([subroutine_of_series(s) is not None for s in self.ids])
        self.series = np.unique(self.ids, return_inverse=True)[1]
        self.is_representative = np.zeros(len(rows), dtype=bool)
        first = 0
        for group in groups:
            if group.members:
                self.is_representative[first] = True
            first += len(group.members)
        self.rises = [
            delta_with_se(m.values, int(np.searchsorted(m.times_s, m.change_time_s)))
            if isinstance(m, GroupMember)
            else delta_with_se(m.values, m.change_index)
            for m in rows
        ]

    def anchors(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """(rows, columns) bool: the member in the column may carry the evidence for the
        candidate in the row (module docstring, "correlation")."""
        contained = self.raw_sd[rows][:, None] > self.raw_sd[columns][None, :]
        return (
            (self.series[rows][:, None] == self.series[columns][None, :])
            | self.is_representative[columns][None, :]
            | ~self.gcpu[rows][:, None]
            | (self.gcpu[columns][None, :] & contained)
        )

    def rises_agree(self, rows: np.ndarray, columns: np.ndarray, r: np.ndarray) -> np.ndarray:
        """(rows, columns) bool: for two gCPU series, one cause can explain both rises. The
        upper series (the larger residual noise: the caller) holds ``share = r·sd_u/sd_l``
        (clipped to [0, 1]) of the lower one's samples, so a cause at or below the lower one
        raises the upper by ``share × Δ_lower``. A candidate *above* its member must have risen
        by at least that (less than ``rise_z`` standard errors short; more is allowed: other
        callees may add to it). A candidate *below* its member (it joins through the group's
        representative, its caller) must account for the caller's rise (within ``rise_z``
        standard errors both ways): a callee whose noise the regressed caller holds, while the
        caller rose through another callee, is a cause of its own, not this group's. Pairs
        with a non-gCPU side always agree (no common unit)."""
        delta = np.array([d for d, _ in self.rises])
        se = np.array([e for _, e in self.rises])
        sd = self.raw_sd
        row_upper = sd[rows][:, None] >= sd[columns][None, :]
        d_u = np.where(row_upper, delta[rows][:, None], delta[columns][None, :])
        d_l = np.where(row_upper, delta[columns][None, :], delta[rows][:, None])
        se_u = np.where(row_upper, se[rows][:, None], se[columns][None, :])
        se_l = np.where(row_upper, se[columns][None, :], se[rows][:, None])
        sd_u = np.maximum(sd[rows][:, None], sd[columns][None, :])
        sd_l = np.maximum(np.minimum(sd[rows][:, None], sd[columns][None, :]), 1e-300)
        with np.errstate(invalid="ignore"):
            share = np.clip(np.nan_to_num(r) * sd_u / sd_l, 0.0, 1.0)
            gap = d_u - share * d_l
            limit = self.rise_z * np.sqrt(se_u**2 + (share * se_l) ** 2)
            agree = np.where(row_upper, gap >= -limit, np.abs(gap) <= limit)
        both = self.gcpu[rows][:, None] & self.gcpu[columns][None, :]
        return ~both | agree

    def block(self, lo: int, hi: int, state: _GroupState) -> _EvidenceBlock:
        return _EvidenceBlock(self, lo, hi, state)


class _EvidenceBlock:
    """Rows ``lo:hi`` against every row before ``hi``: the noise statistics, and per row and
    group the member column with the strongest evidence (largest z among its anchors)."""

    def __init__(self, evidence: _Evidence, lo: int, hi: int, state: _GroupState) -> None:
        self.evidence, self.lo = evidence, lo
        self.stats = pair_stats(evidence.noise, range(lo, hi), range(hi))
        rows, columns = np.arange(lo, hi), np.arange(hi)
        anchored = evidence.anchors(rows, columns) & evidence.rises_agree(
            rows, columns, self.stats.r
        )
        self.score = np.where(anchored, self.stats.z, np.nan)
        self.best = state.argmax(self.score, hi - lo)

    def admit(self, row: int, group: int, column: int, starts_group: bool) -> None:
        """A new member (``column``) joined ``group`` at ``row``: later rows of the block may
        take their evidence from it."""
        self.evidence.is_representative[column] = starts_group
        later = np.arange(self.lo + row + 1, self.lo + self.score.shape[0])
        if later.size == 0:
            return
        one = np.array([column])
        anchored = (
            self.evidence.anchors(later, one)
            & self.evidence.rises_agree(later, one, self.stats.r[row + 1 :, column : column + 1])
        )[:, 0]
        new = np.where(anchored, self.stats.z[row + 1 :, column], np.nan)
        current = self.best[row + 1 :, group]
        at = np.arange(row + 1, row + 1 + later.size)
        held = np.where(current >= 0, self.score[at, np.maximum(current, 0)], np.nan)
        better = ~np.isnan(new) & (np.isnan(held) | (new > held))
        self.score[row + 1 :, column] = new
        self.best[row + 1 :, group] = np.where(better, column, current)

    def _take(self, values: np.ndarray, row: int, n_groups: int) -> np.ndarray:
        columns = self.best[row, :n_groups]
        return np.where(columns >= 0, values[row, np.maximum(columns, 0)], np.nan)

    def r(self, row: int, n_groups: int) -> np.ndarray:
        return self._take(self.stats.r, row, n_groups)

    def p(self, row: int, n_groups: int) -> np.ndarray:
        return self._take(self.stats.p, row, n_groups)

    def both_gcpu(self, row: int, n_groups: int) -> np.ndarray:
        columns = self.best[row, :n_groups]
        return self.evidence.gcpu[self.lo + row] & self.evidence.gcpu[np.maximum(columns, 0)]

    def numbers(self, row: int, group: int) -> dict[str, object]:
        """The evidence behind the group's correlation score, as plain numbers."""
        column = int(self.best[row, group])
        own = self.evidence.rises[self.lo + row]
        if column < 0:
            return {"correlation_member": None, "delta": _plain(own[0]), "delta_se": _plain(own[1])}
        other = self.evidence.rises[column]
        s = self.stats
        return {
            "correlation_member": self.evidence.ids[column],
            "correlation_z": _plain(s.z[row, column]),
            "correlation_p": _plain(s.p[row, column]),
            "correlation_points": _plain(s.n_eff[row, column]),
            "delta": _plain(own[0]),
            "delta_se": _plain(own[1]),
            "member_delta": _plain(other[0]),
            "member_delta_se": _plain(other[1]),
        }


def _plain(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None


class _TextSimilarity:
    """Cosine similarity of TF-IDF character 2–3-gram vectors of series ids (L2-normalised, so
    cosine = dot product): n-grams common to many ids in a dense product, the rest sparse."""

    def __init__(self, series_ids: Sequence[str]) -> None:
        unique = sorted(set(series_ids))
        index = {s: k for k, s in enumerate(unique)}
        self.row_id = np.array([index[s] for s in series_ids], dtype=np.int64)
        self.dense: np.ndarray | None = None
        self.rare: sparse.csr_matrix | None = None
        try:
            grams = TfidfVectorizer(analyzer="char", ngram_range=(2, 3)).fit_transform(unique)
        except ValueError:  # no id has two characters: no vocabulary, every similarity 0
            return
        grams = sparse.csr_matrix(grams)
        frequency = np.bincount(grams.indices, minlength=grams.shape[1])
        common = frequency > DENSE_GRAM_SHARE * len(unique)
        self.dense = grams[:, np.flatnonzero(common)].toarray()
        self.rare = sparse.csr_matrix(grams[:, np.flatnonzero(~common)])
        self.rare_t = sparse.csr_matrix(self.rare.T)

    def block(self, lo: int, hi: int, width: int) -> np.ndarray:
        """(hi - lo, width): similarity of the ids of rows ``lo:hi`` and rows ``0:width``."""
        ids, inverse = np.unique(self.row_id[lo:hi], return_inverse=True)
        similarity = np.zeros((len(ids), int(self.row_id.max(initial=-1)) + 1))
        if self.dense is not None and self.rare is not None:
            similarity += self.dense[ids] @ self.dense.T
            similarity += (self.rare[ids] @ self.rare_t).toarray()
        return np.clip(similarity[inverse][:, self.row_id[:width]], 0.0, 1.0)
