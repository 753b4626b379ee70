"""Builds the dedup stages' context from the sample store and the run's series (I/O stays here:
the detection package only sees the plain data)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from regbot.detection.dedup_context import DedupContext, StackShare, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds
from regbot.profiles.model import Series
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store

if TYPE_CHECKING:
    from regbot.bot.config import Config
    from regbot.bot.state import StateStore
    from regbot.detection.dedup import DedupResult


def open_profile_index(paths: Sequence[Path]) -> SampleIndex | None:
    """The sample store among the configured profile sources (a folder made by `regbot
    ingest`), as a query index; None when no store is configured."""
    for path in paths:
        if (path / "manifest.json").is_file():
            store = open_store(path)
            return SampleIndex.of_store(store)
    return None


def stack_rises(index: SampleIndex, windows: WindowBounds) -> np.ndarray:
    """Every stack's change of share across the run's analysis start: its share of the samples
    from the analysis start to the end minus its share over the historical window."""
    after = index.stack_weights(windows.analysis_start_s, windows.end_s)
    before = index.stack_weights(windows.historical_start_s, windows.analysis_start_s)
    total_after, total_before = float(after.sum()), float(before.sum())
    out = np.zeros(after.size)
    if total_after > 0:
        out += after / total_after
    if total_before > 0:
        out -= before / total_before
    return out


def build_dedup_context(
    candidates: Sequence[Candidate],
    series: Sequence[Series],
    index: SampleIndex | None,
    windows: WindowBounds,
    higher_is_better: frozenset[str],
    commit_subroutines: Mapping[str, frozenset[str]] | None = None,
    series_ids: Sequence[str] = (),
) -> DedupContext:
    """The series (oriented; ``series_ids``: every id of the run when ``series`` holds only
    those ``dedup_series_needed`` named), and for each candidate's subroutine its popularity over the
    windows, its upstream callers and the stack samples behind it in the analysis window (and
    those of the callers present on all of its stacks, the cost-shift callers domain)."""
    oriented = {
        s.id: (
            np.asarray(s.timestamps_s, np.float64),
            -np.asarray(s.values, np.float64)
            if s.kind in higher_is_better
            else np.asarray(s.values, np.float64),
        )
        for s in series
    }
    popularity: dict[str, float] = {}
    callers: dict[str, frozenset[str]] = {}
    stacks: dict[str, StackShare] = {}
    rises = None
    if index is not None:
        rises = stack_rises(index, windows)
        for candidate in candidates:
            sub = subroutine_of_series(candidate.series_id)
            if sub is None or sub in popularity:
                continue
            popularity[sub] = index.popularity(sub, windows.historical_start_s, windows.end_s)
            callers[sub] = frozenset(index.ancestors(sub))
            ids, weights = index.stack_share(sub, windows.analysis_start_s, windows.end_s)
            stacks[sub] = StackShare(ids, weights, rises[ids] if rises is not None else None)
            # The cost-shift stage's callers domain is the tightest caller on every one of the
            # subroutine's stacks; such a caller is usually flat (not a candidate), so its
            # samples are attached here. Callers on only some of the stacks are not needed.
            own = stacks[sub].stack_ids
            for caller in callers[sub] if len(own) else ():
                if caller not in stacks and index.stacks_with(caller)[own].all():
                    stacks[caller] = StackShare(
                        *index.stack_share(caller, windows.analysis_start_s, windows.end_s)
                    )
    return DedupContext(
        series=oriented,
        series_ids=tuple(series_ids),
        popularity=popularity,
        callers=callers,
        stacks=stacks,
        commit_subroutines=dict(commit_subroutines or {}),
    )


def dedup_series_needed(
    candidates: Sequence[Candidate],
    series_ids: Sequence[str],
    index: SampleIndex | None,
    windows: WindowBounds,
    config: Config,
) -> set[str]:
    """The series whose values the dedup stages can ask for, from ids alone: the candidates',
    their cost domains' members (callers from the sample store), and the fleet samples the
    share-inflation and shared-cause estimates take (``evenly_spaced`` over all ids)."""
    from regbot.detection.cost_domains import DomainIndex
    from regbot.detection.dedup.shared_cause import load_sample_ids
    from regbot.detection.share_inflation import ShareInflationSettings, inflation_sample_ids

    bare = build_dedup_context(
        candidates, [], index, windows, config.higher_is_better, series_ids=series_ids
    )
    domains = DomainIndex(bare, config.cost_shift)
    wanted = set(load_sample_ids(bare)) | set(inflation_sample_ids(bare, ShareInflationSettings()))
    for candidate in candidates:
        wanted |= domains.member_ids(candidate)
    return wanted


def deduplicate_against_state(
    candidates: list[Candidate],
    context: DedupContext,
    state: StateStore,
    historical_start_s: float,
    config: Config,
) -> DedupResult:
    """The dedup stages against what the state remembers: the regressions reported before (the
    same-regression merge) and the groups with a member recent enough for PairwiseDedup to join
    (a change at or after ``historical_start_s`` minus ``dedup.pairwise_max_gap``)."""
    since = historical_start_s - config.dedup.pairwise_max_gap_s
    from regbot.detection.dedup import deduplicate  # scikit-learn: only when dedup runs

    return deduplicate(
        candidates,
        context,
        state.known_regressions(),
        state.groups(since),
        config.dedup,
        config.cost_shift,
    )
