"""What the dedup and cost-shift stages (FBDetect §5.4–5.5) know beyond the candidates: the
run's series, popularity, callers and stack samples, and the dedup groups they keep."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "DedupContext",
    "Group",
    "GroupMember",
    "StackShare",
    "evenly_spaced",
    "subroutine_of_series",
]


def subroutine_of_series(series_id: str) -> str | None:
    """The subroutine a gCPU series measures (``gcpu:handle (app/views.py)`` → ``handle
    (app/views.py)``), or None for other series (throughput, latency...)."""
    return series_id[5:] if series_id.startswith("gcpu:") else None


def evenly_spaced(ids: list[str], count: int) -> list[str]:
    """At most ``count`` of the sorted ``ids``, evenly spaced (all of them when there are no
    more): the fleet samples the dedup stages estimate from, the same whichever of the run's
    series the context holds values for."""
    if len(ids) <= count:
        return ids
    picks = np.unique(np.linspace(0, len(ids) - 1, count).round().astype(int))
    return [ids[int(k)] for k in picks]


@dataclass(frozen=True, slots=True)
class StackShare:
    """The stack samples behind one subroutine's gCPU in the analysis window: sorted stack ids
    and their sample weights (from the sample store); ``rises``, when known, each stack's change
    of share across the run's deploy (its share of the samples after the analysis start minus
    its share before it), aligned with ``stack_ids``."""

    stack_ids: np.ndarray
    weights: np.ndarray
    rises: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class DedupContext:
    """What the dedup and cost-shift stages know beyond the candidates, as plain data the bot
    builds from the sample store, the series and attribution.

    ``series``: the run's series, id → (times, oriented values), for domain costs and
    correlations: every series, or, when the run read its series in partitions, those the
    stages ask for (the candidates, their cost domains' members, the fleet samples; the bot
    gathers them). ``series_ids``: every series id of the run when ``series`` holds only some
    (empty: the keys of ``series``). ``popularity``: subroutine → share of samples whose stack contains it
    (FBDetect's PopularityScore). ``callers``: subroutine → every subroutine seen above it on
    its stacks (its upstream-caller cost domain). ``stacks``: subroutine → its ``StackShare``
    (the candidates' and the callers present on all of a candidate's stacks). ``commit_subroutines``: commit →
    subroutines it modifies (the root-cause bitmap and the commit cost domain; `regbot run`
    supplies it from the deploy's commits, `regbot detect` has none). ``metadata``: series id → the
    metadata annotation of its frame, if any. ``memo``: what the run's stages work out once
    from this context and share (the fleet's load factor, ``shared_cause.load_over_windows``).
    """

    series: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    series_ids: tuple[str, ...] = ()
    popularity: Mapping[str, float] = field(default_factory=dict)
    callers: Mapping[str, frozenset[str]] = field(default_factory=dict)
    stacks: Mapping[str, StackShare] = field(default_factory=dict)
    commit_subroutines: Mapping[str, frozenset[str]] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    memo: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)

    def all_series_ids(self) -> tuple[str, ...]:
        """Every series id of the run (``series_ids``, else the keys of ``series``)."""
        return self.series_ids or tuple(self.series)


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One regression in a dedup group, with what PairwiseDedup compares: its series around the
    change (oriented values) and its stack share."""

    regression_id: str
    series_id: str
    kind: str
    change_time_s: float
    times_s: np.ndarray
    values: np.ndarray
    stacks: StackShare | None = None


@dataclass(frozen=True, slots=True)
class Group:
    """A dedup group: the first member is its representative; ``id`` is stable across runs."""

    id: str
    members: tuple[GroupMember, ...]
