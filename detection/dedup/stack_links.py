"""SOMDedup's stack groups (FBDetect §5.5.1; regbot's addition): leaf-to-ancestor links among
the candidates of one batch through their stack samples, and the change each is credited with.

Complexity: one sparse product, O(Σ over stacks of (candidates holding it)²), then a pass over
the sharing pairs.
Design: docs/design/som_dedup.md ("Stack groups").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from regbot.detection.dedup_context import DedupContext, StackShare, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.stage_settings import SomSettings

__all__ = ["StackLinks", "stack_links"]


@dataclass(frozen=True, slots=True)
class StackLinks:
    """How the candidates of one batch hang together through their stack samples (docs/design/som_dedup.md,
    "Stack groups"). Per candidate: ``head``, the index of the candidate whose group
    it joins (itself for a head, -1 without stack samples); ``credited``, the change it is
    credited with in that group (its own delta for a head or without stacks; for an ancestor,
    its rise explained by its head, at most its own delta)."""

    head: np.ndarray
    credited: np.ndarray


def stack_links(
    candidates: Sequence[Candidate], context: DedupContext, settings: SomSettings
) -> StackLinks:
    """Leaf-to-ancestor links among ``candidates`` (docs/design/som_dedup.md, "Stack groups"); change
    points chain into one moment within ``settings.cascade_buckets`` buckets.

    One sparse product gives, for every pair sharing a stack, the weight of one's samples on
    stacks that also hold the other: O(Σ over stacks of (candidates holding it)²), then a pass
    over those pairs."""
    n = len(candidates)
    delta = np.array([c.delta for c in candidates], dtype=np.float64)
    head = np.full(n, -1, dtype=np.int64)
    credited = delta.copy()
    rows: list[int] = []
    shares: list[StackShare] = []
    for i, candidate in enumerate(candidates):
        sub = subroutine_of_series(candidate.series_id)
        share = context.stacks.get(sub) if sub is not None else None
        if share is not None and len(share.stack_ids) > 0:
            rows.append(i)
            shares.append(share)
    if not rows:
        return StackLinks(head, credited)
    head[rows] = rows
    ids = [np.asarray(s.stack_ids, dtype=np.int64) for s in shares]
    columns = np.unique(np.concatenate(ids))
    indptr = np.concatenate(([0], np.cumsum([len(i) for i in ids])))
    indices = np.searchsorted(columns, np.concatenate(ids))
    weights = np.concatenate([np.asarray(s.weights, dtype=np.float64) for s in shares])
    weighted = sparse.csr_matrix((weights, indices, indptr), shape=(len(rows), len(columns)))
    weighted.sum_duplicates()
    present = weighted.copy()
    present.data[:] = 1.0
    inside = (weighted @ present.T).tocoo()  # [a, b]: a's samples on stacks also holding b
    totals = np.asarray(weighted.sum(axis=1)).ravel()

    subs = [subroutine_of_series(candidates[i].series_id) or "" for i in rows]
    names = [candidates[i].series_id for i in rows]
    moment = _moments([candidates[i] for i in rows], inside, settings.cascade_buckets)

    def above(upper: int, lower: int) -> bool:
        """``upper`` is an ancestor of ``lower`` (positions in ``rows``)."""
        up = subs[upper] in context.callers.get(subs[lower], ())
        down = subs[lower] in context.callers.get(subs[upper], ())
        if up != down:
            return up
        return (totals[upper], names[upper]) > (totals[lower], names[lower])

    below_of: dict[int, list[tuple[int, float]]] = {}  # ancestor -> [(below, share inside)]
    for a, b, weight in zip(inside.row.tolist(), inside.col.tolist(), inside.data.tolist()):
        if a == b or weight <= 0 or moment[a] != moment[b] or not above(b, a):
            continue
        below_of.setdefault(b, []).append((a, weight / totals[a] if totals[a] > 0 else 0.0))
    local_delta = delta[rows]
    local_head: dict[int, tuple[int, float]] = {}  # ancestor -> (its head, head's rise inside)
    for upper, below in below_of.items():
        explained = [
            (abs(local_delta[upper] - e), -e, names[lower], lower, e)
            for lower, share in below
            if lower not in below_of
            for e in (max(local_delta[lower], 0.0) * share,)
        ]
        if explained:
            _, _, _, lower, e = min(explained)
            local_head[upper] = (lower, e)
            head[rows[upper]] = rows[lower]
    group = {k: local_head.get(k, (k, 0.0))[0] for k in range(len(rows))}
    below_sets = {upper: {lower for lower, _ in below} for upper, below in below_of.items()}
    for upper, (_, e) in local_head.items():
        below = below_of[upper]
        mine = [b for b, _ in below if group[b] == group[upper]]
        theirs = [(b, share) for b, share in below if group[b] != group[upper]]
        own = local_delta[upper]
        rises = shares[upper].rises
        if rises is not None:
            others = _rise_of_other_groups(upper, mine, theirs, ids, rises)
        else:
            others = _other_groups_inside(theirs, below_sets, local_delta)
        credited[rows[upper]] = _credited(own, others, e)
    return StackLinks(head, credited)


def _credited(own: float, others: float, head: float) -> float:
    """An ancestor's credited change (docs/design/som_dedup.md): its group's part of its rise (its rise
    less other groups', ``own − others``) when the part that is its own code's (that, less its
    head's rise seen inside it) is larger than the head's; else its head's rise seen inside it.
    Either at most its own delta."""
    mine = own - others
    return min(own, mine if mine - head > head else head)


def _rise_of_other_groups(
    upper: int,
    mine: list[int],
    theirs: list[tuple[int, float]],
    ids: list[np.ndarray],
    rises: np.ndarray,
) -> float:
    """The rise of an ancestor's samples that belongs to other groups, from the stacks' own
    rises (``StackShare.rises``): its stacks that hold a candidate below it of another group
    and none of its own group's (at least 0). Stacks holding its own group's candidates are
    that group's; stacks holding no candidate below are the ancestor's own code."""
    if not theirs:
        return 0.0
    own_ids = ids[upper]
    elsewhere = np.isin(own_ids, np.concatenate([ids[b] for b, _ in theirs]))
    if mine:
        elsewhere &= ~np.isin(own_ids, np.concatenate([ids[b] for b in mine]))
    return max(float(np.asarray(rises, dtype=np.float64)[elsewhere].sum()), 0.0)


def _other_groups_inside(
    theirs: list[tuple[int, float]], below_sets: dict[int, set[int]], delta: np.ndarray
) -> float:
    """Without the stacks' rises: the rises, seen inside an ancestor, of the nearest
    candidates below it of other groups (those not below another of them), each its rise (at
    least 0) times the share of its samples inside the ancestor."""
    members = {b for b, _ in theirs}
    deeper = set().union(*(below_sets.get(m, set()) & members for m in members))
    return sum(max(float(delta[b]), 0.0) * share for b, share in theirs if b not in deeper)


def _moments(
    candidates: Sequence[Candidate], inside: sparse.coo_matrix, cascade_buckets: int
) -> np.ndarray:
    """Per candidate, its moment: candidates connected through shared stacks (``inside``'s
    pattern, directly or through others) whose change points chain within ``cascade_buckets``
    buckets of each other (sorted by change time, a larger gap starts a new moment)."""
    k = len(candidates)
    _, component = connected_components(inside, directed=False)
    times = candidates[0].times_s
    spacing = float(np.median(np.diff(times))) if len(times) > 1 else 0.0
    tolerance = cascade_buckets * spacing
    change = np.array([c.change_time_s for c in candidates])
    order = np.lexsort((change, component))
    gap = np.diff(change[order]) > tolerance
    new_component = np.diff(component[order]) != 0
    starts = np.concatenate(([True], gap | new_component))
    moment = np.empty(k, dtype=np.int64)
    moment[order] = np.cumsum(starts) - 1
    return moment
