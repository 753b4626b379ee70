"""PairwiseDedup's groups (FBDetect §5.5.2) while a call runs: members' change times and
groups, the inverted index stack → groups behind the stack-overlap feature, and the cascade
containment of a caller's rise in its callee's stacks.

Complexity: stack overlap O(stacks of the candidate + hits); folding a block of scores
O(rows × members).
Design: docs/design/pairwise_dedup.md ("stack_overlap", "Cascades").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from regbot.detection.dedup_context import Group, GroupMember, StackShare, subroutine_of_series

__all__ = ["GroupState", "contained_share"]


def contained_share(caller: StackShare, callee: StackShare) -> float | None:
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


class GroupState:
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
            *(
                (g, stacks, own)
                for a in self.callers.get(sub, ())
                for g, stacks in self.rising.get(a, ())
            ),
            *((g, own, stacks) for g, stacks in self.below.get(sub, ())),
        ]
        for g, caller, callee in pairs:
            share = contained_share(caller, callee)
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
