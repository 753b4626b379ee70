"""SOMDedup's groups (regbot's rule on top of FBDetect §5.5.1): a SOM cell merges only
candidates that evidence says one cause moved.

Complexity: noise statistics (``shared_cause.pair_stats``) only within a cell, between its
members and its candidates without stack samples: O(Σ over cells of members × loose × points).
Design: docs/design/cause_groups.md
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from regbot.detection.dedup.shared_cause import (
    LoadFactor,
    PairStats,
    delta_with_se,
    noise_of,
    pair_stats,
)
from regbot.detection.dedup_context import DedupContext, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.stage_settings import SomSettings

__all__ = ["CauseGroups", "cause_groups"]


@dataclass(frozen=True, slots=True)
class CauseGroups:
    """Per candidate: ``labels`` (one int per group: the index of a stack head or of a leaf),
    ``credited`` (the change credited in its group) and ``numbers`` (the evidence, plain JSON
    values; empty for a candidate judged by stacks alone)."""

    labels: np.ndarray
    credited: np.ndarray
    numbers: list[dict[str, object]]


def cause_groups(
    candidates: Sequence[Candidate],
    cells: np.ndarray,
    head: np.ndarray,
    credited: np.ndarray,
    context: DedupContext,
    settings: SomSettings,
    load: LoadFactor | None,
    tolerance_s: float,
) -> CauseGroups:
    """Groups of one kind's candidates (docs/design/cause_groups.md); ``head``/``credited`` are the stack
    links (head -1: no stacks)."""
    n = len(candidates)
    labels = np.where(head >= 0, head, np.arange(n)).astype(np.int64)
    credited = np.asarray(credited, dtype=np.float64).copy()
    numbers: list[dict[str, object]] = [
        {"evidence": "stacks"} if head[i] >= 0 and head[i] != i else {} for i in range(n)
    ]
    cells = np.asarray(cells, dtype=np.int64)
    loose_cells = {int(cells[i]) for i in range(n) if head[i] < 0}
    tested = [i for i in range(n) if int(cells[i]) in loose_cells]
    if not tested:
        return CauseGroups(labels, credited, numbers)
    noise = noise_of(
        [candidates[i].times_s for i in tested],
        [candidates[i].values for i in tested],
        [candidates[i].change_time_s for i in tested],
        load,
        settings.guard_points,
    )
    row_of = {i: k for k, i in enumerate(tested)}
    raw_sd = noise.raw_sd()
    spread = {i: raw_sd[row_of[i]] for i in tested}
    rise = {
        i: (candidates[i].delta, delta_with_se(candidates[i].values, candidates[i].change_index)[1])
        for i in tested
    }
    gcpu = all(subroutine_of_series(c.series_id) is not None for c in candidates)
    every: list[_CellPairs] = []
    in_cell: dict[int, list[int]] = {}
    for i in tested:
        in_cell.setdefault(int(cells[i]), []).append(i)
    for cell in sorted(loose_cells):
        members = in_cell[cell]
        loose = [i for i in members if head[i] < 0]
        stats = pair_stats(noise, [row_of[i] for i in members], [row_of[i] for i in loose])
        every.append(_CellPairs(candidates, members, loose, stats, tolerance_s, settings, gcpu))
    pairs_tested = sum(c.pairs for c in every)
    for cell_pairs in every:
        cell_pairs.decide(settings.evidence_alpha / max(pairs_tested, 1), pairs_tested)
        members, loose = cell_pairs.members, cell_pairs.loose
        if gcpu:
            _leaves_and_ancestors(
                cell_pairs,
                candidates,
                head,
                labels,
                credited,
                numbers,
                spread,
                rise,
                context,
                settings,
            )
        else:
            _stars(cell_pairs, candidates, labels, numbers, rise)
        member_labels = labels[members]
        heading = np.isin(loose, member_labels)
        for u, labelled in zip(loose, heading.tolist()):
            if not numbers[u]:
                led = labelled and bool(
                    np.count_nonzero(member_labels == u) > (1 if labels[u] == u else 0)
                )
                why = "heads its group" if led else "no edge in the cell"
                numbers[u] = cell_pairs.apart(u, rise, why)
    return CauseGroups(labels, credited, numbers)


class _CellPairs:
    """The pairs of one cell: rows are ``members``, columns ``loose`` (those without stacks);
    ``edge`` marks pairs of one moment whose noise evidence passes."""

    def __init__(
        self,
        candidates: Sequence[Candidate],
        members: list[int],
        loose: list[int],
        stats: PairStats,
        tolerance_s: float,
        settings: SomSettings,
        gcpu: bool,
    ) -> None:
        self.candidates, self.members, self.loose, self.stats = candidates, members, loose, stats
        self.row = {i: k for k, i in enumerate(members)}
        self.column = {i: k for k, i in enumerate(loose)}
        change = np.array([candidates[i].change_time_s for i in members])
        loose_change = change[[self.row[i] for i in loose]]
        same = np.array(members)[:, None] == np.array(loose)[None, :]
        moment = (np.abs(change[:, None] - loose_change[None, :]) <= tolerance_s) & ~same
        self.tested = moment & np.isfinite(stats.p)
        both_loose = np.isin(np.array(members), np.array(loose))
        twice = int((self.tested & both_loose[:, None]).sum())
        self.pairs = int(self.tested.sum()) - twice // 2
        self.floor = settings.min_noise_correlation if gcpu else settings.min_cross_correlation
        self.bound, self.family = 0.0, self.pairs
        self.edge = np.zeros_like(self.tested)

    def decide(self, bound: float, family: int) -> None:
        """Edges at p ≤ ``bound`` (``family``: the pairs tested across the kind's cells)."""
        self.bound, self.family = bound, family
        self.edge = self.tested & (self.stats.p <= bound) & (self.stats.r >= self.floor)

    def edges_of(self, u: int) -> list[int]:
        """The members with an edge to loose ``u``, in member order."""
        return [self.members[k] for k in np.flatnonzero(self.edge[:, self.column[u]])]

    def numbers(self, u: int, x: int, rise: dict[int, tuple[float, float]]) -> dict[str, object]:
        """The pair (``x`` a member, ``u`` loose) as plain numbers."""
        k, j = self.row[x], self.column[u]
        s = self.stats
        return {
            "with": self.candidates[x].series_id,
            "noise_correlation": _plain(s.r[k, j]),
            "noise_z": _plain(s.z[k, j]),
            "noise_p": _plain(s.p[k, j]),
            "noise_p_bound": float(self.bound),
            "min_noise_correlation": float(self.floor),
            "pairs_tested": self.family,
            "noise_points": _plain(s.points[k, j]),
            "effective_points": _plain(s.n_eff[k, j]),
            "delta": _plain(rise[u][0]),
            "delta_se": _plain(rise[u][1]),
            "other_delta": _plain(rise[x][0]),
            "other_delta_se": _plain(rise[x][1]),
        }

    def apart(self, u: int, rise: dict[int, tuple[float, float]], why: str) -> dict[str, object]:
        """Numbers of a loose candidate left apart: its strongest tested pair, and why."""
        j = self.column[u]
        z = np.where(self.tested[:, j], self.stats.z[:, j], -np.inf)
        if not np.isfinite(z).any():
            return {"evidence": "none", "apart": "no candidate of the same moment in the cell"}
        x = self.members[int(np.argmax(z))]
        return {"evidence": "none", "apart": why, **self.numbers(u, x, rise)}


def _leaves_and_ancestors(
    pairs: _CellPairs,
    candidates: Sequence[Candidate],
    head: np.ndarray,
    labels: np.ndarray,
    credited: np.ndarray,
    numbers: list[dict[str, object]],
    spread: dict[int, float],
    rise: dict[int, tuple[float, float]],
    context: DedupContext,
    settings: SomSettings,
) -> None:
    def above(upper: int, lower: int) -> bool:
        sub_up = subroutine_of_series(candidates[upper].series_id) or ""
        sub_low = subroutine_of_series(candidates[lower].series_id) or ""
        up = sub_up in context.callers.get(sub_low, ())
        down = sub_low in context.callers.get(sub_up, ())
        if up != down:
            return up
        return (spread[upper], candidates[upper].series_id) > (
            spread[lower],
            candidates[lower].series_id,
        )

    below = {u: [x for x in pairs.edges_of(u) if x != u and above(u, x)] for u in pairs.loose}
    ancestors = {u for u, xs in below.items() if xs}
    s = pairs.stats
    for u in pairs.loose:
        if u not in ancestors:
            continue
        lowers = [x for x in below[u] if head[x] >= 0 or x not in ancestors]
        if not lowers:
            numbers[u] = pairs.apart(u, rise, "only other ancestors below it")
            continue
        j = pairs.column[u]
        explained = []
        for x in lowers:
            k = pairs.row[x]
            share = float(np.clip(s.slope[k, j], 0.0, 1.0))
            e = share * max(rise[x][0], 0.0)
            e_var = (share * rise[x][1]) ** 2 + (max(rise[x][0], 0.0) * s.slope_se[k, j]) ** 2
            explained.append((abs(rise[u][0] - e), -e, candidates[x].series_id, x, e, share, e_var))
        total = sum(t[4] for t in explained)
        total_se = float(np.sqrt(rise[u][1] ** 2 + sum(t[6] for t in explained)))
        excess_z = (rise[u][0] - total) / total_se if total_se > 0 else float("inf")
        _, _, _, x, e, share, _ = min(explained)
        detail = {
            **pairs.numbers(u, x, rise),
            "share": share,
            "explained_rise": e,
            "explained_by_all_below": total,
            "excess_rise_z": _plain(excess_z),
            "rise_z": float(settings.rise_z),
        }
        if not excess_z <= settings.rise_z:
            numbers[u] = {
                "evidence": "none",
                "apart": "its rise exceeds what the candidates below it explain",
                **detail,
            }
            continue
        labels[u] = labels[x]
        credited[u] = min(rise[u][0], e)
        numbers[u] = {"evidence": "noise", **detail}


def _stars(
    pairs: _CellPairs,
    candidates: Sequence[Candidate],
    labels: np.ndarray,
    numbers: list[dict[str, object]],
    rise: dict[int, tuple[float, float]],
) -> None:
    def significance(i: int) -> float:
        delta, se = rise[i]
        return abs(delta) / se if se > 0 else float("inf")

    order = sorted(pairs.loose, key=lambda i: (-significance(i), candidates[i].series_id))
    heads: list[int] = []
    head_rows = np.empty(len(order), dtype=np.int64)  # pairs.row of each head, in order
    for u in order:
        j = pairs.column[u]
        linked = [heads[k] for k in np.flatnonzero(pairs.edge[head_rows[: len(heads)], j])]
        if not linked:
            head_rows[len(heads)] = pairs.row[u]
            heads.append(u)
            continue
        h = max(linked, key=lambda h: (pairs.stats.z[pairs.row[h], j], -h))
        labels[u] = labels[h]
        numbers[u] = {"evidence": "noise", **pairs.numbers(u, h, rise)}


def _plain(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None
