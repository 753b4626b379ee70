"""Queries over the sample store: totals, samples containing a subroutine, callers, popularity.

The index holds three sparse matrices built once from the store's records:

* ``counts``     buckets × stacks, the summed sample weight of each stack in each bucket;
* ``membership`` stacks × subroutines, 1 where the stack contains the subroutine at least once
  (a recursive subroutine counts once per sample, FBDetect §4);
* ``leaf``       stacks × subroutines, 1 for the stack's leaf (self time).

A time range is half-open, ``[start_s, end_s)`` in epoch seconds, over bucket start times; None
means unbounded. Names are subroutines (``handle (app/views.py)``, SPEC §2) or frames as written
(``handle (app/views.py:42)``); a name that is neither matches nothing. Each query costs one
slice of ``counts`` (cached per range) and one sparse product, O(records in range).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

import numpy as np
import numpy.typing as npt
from scipy import sparse

from regbot.profiles.model import subroutine_of
from regbot.profiles.stacks import StackArrays, StackTable
from regbot.profiles.store import SampleStore
from regbot.profiles.store_records import BucketCounts, Records


class SampleIndex:
    """Read-only queries over one snapshot of the store's records.

    Built from the stacks (a ``StackTable`` or its arrays) and the records (rows, or already as
    the buckets × stacks matrix); ``of_store`` takes both from a store without materialising its
    records as rows.
    """

    def __init__(self, table: StackTable | StackArrays, records: Records | BucketCounts) -> None:
        stacks = table.arrays() if isinstance(table, StackTable) else table
        self.frames: list[str] = stacks.frames
        self.offsets, self.stack_frames = stacks.offsets, stacks.stack_frames
        n_stacks = len(self.offsets) - 1
        if isinstance(records, BucketCounts):
            self.bucket_times_s = records.bucket_times_s
            self.counts = records.counts
        else:
            self.bucket_times_s, bucket_rows = np.unique(records.bucket_s, return_inverse=True)
            self.counts = sparse.csr_matrix(
                (records.weight, (bucket_rows.ravel(), records.stack)),
                shape=(len(self.bucket_times_s), n_stacks),
            )
        self.totals = np.asarray(self.counts.sum(axis=1)).ravel()
        sub_names = [subroutine_of(text) for text in self.frames]
        unique_subs, frame_sub = np.unique(np.array(sub_names, dtype=object), return_inverse=True)
        self.subroutines: list[str] = [str(s) for s in unique_subs]
        self.frame_subroutine: npt.NDArray[np.int64] = frame_sub.astype(np.int64).ravel()
        self._sub_ids = {name: i for i, name in enumerate(self.subroutines)}
        self._frame_ids = {text: i for i, text in enumerate(self.frames)}
        self._range_cache: dict[tuple[int, int], np.ndarray] = {}

    @classmethod
    def of_store(cls, store: SampleStore) -> SampleIndex:
        """The index over everything in ``store`` (committed and pending), its records read one
        batch at a time into the counts matrix."""
        return cls(store.stack_arrays(), store.bucket_counts())

    # -- structure ---------------------------------------------------------------------------
    @cached_property
    def stack_of_position(self) -> np.ndarray:
        """For each position in ``stack_frames``, the stack it belongs to."""
        lengths = np.diff(self.offsets)
        return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)

    @cached_property
    def membership(self) -> sparse.csr_matrix:
        subs = (
            self.frame_subroutine[self.stack_frames]
            if len(self.stack_frames)
            else np.zeros(0, np.int64)
        )
        matrix = sparse.csr_matrix(
            (np.ones(len(subs)), (self.stack_of_position, subs)),
            shape=(len(self.offsets) - 1, len(self.subroutines)),
        )
        matrix.sum_duplicates()
        matrix.data[:] = 1.0  # present at least once: recursion counts once per sample
        return matrix

    @cached_property
    def leaf(self) -> sparse.csr_matrix:
        lengths = np.diff(self.offsets)
        has_frames = np.flatnonzero(lengths > 0)
        leaf_subs = self.frame_subroutine[self.stack_frames[self.offsets[has_frames + 1] - 1]]
        return sparse.csr_matrix(
            (np.ones(len(has_frames)), (has_frames, leaf_subs)),
            shape=(len(self.offsets) - 1, len(self.subroutines)),
        )

    # -- ranges ------------------------------------------------------------------------------
    def bucket_range(
        self, start_s: float | None = None, end_s: float | None = None
    ) -> tuple[int, int]:
        first = 0 if start_s is None else int(np.searchsorted(self.bucket_times_s, start_s, "left"))
        last = (
            len(self.bucket_times_s)
            if end_s is None
            else int(np.searchsorted(self.bucket_times_s, end_s, "left"))
        )
        return first, max(first, last)

    def stack_weights(self, start_s: float | None = None, end_s: float | None = None) -> np.ndarray:
        """Sample weight of every stack summed over the range (dense, one entry per stack)."""
        key = self.bucket_range(start_s, end_s)
        cached = self._range_cache.get(key)
        if cached is None:
            first, last = key
            cached = np.asarray(self.counts[first:last].sum(axis=0)).ravel()
            if len(self._range_cache) > 8:
                self._range_cache.clear()
            self._range_cache[key] = cached
        return cached

    def subroutine_id(self, name: str) -> int | None:
        """The column of subroutine ``name`` (``self.subroutines``), None when absent."""
        return self._sub_ids.get(name)

    # -- queries -----------------------------------------------------------------------------
    def stacks_with(self, name: str) -> np.ndarray:
        """Boolean mask over stacks: those containing the subroutine (or the exact frame) ``name``."""
        n_stacks = len(self.offsets) - 1
        sub = self._sub_ids.get(name)
        if sub is not None:
            mask = np.zeros(n_stacks, dtype=bool)
            mask[self.membership[:, sub].nonzero()[0]] = True
            return mask
        frame = self._frame_ids.get(name)
        mask = np.zeros(n_stacks, dtype=bool)
        if frame is not None:
            mask[self.stack_of_position[self.stack_frames == frame]] = True
        return mask

    def total(self, start_s: float | None = None, end_s: float | None = None) -> float:
        first, last = self.bucket_range(start_s, end_s)
        return float(self.totals[first:last].sum())

    def samples_with(
        self, name: str, start_s: float | None = None, end_s: float | None = None
    ) -> float:
        return float(self.stack_weights(start_s, end_s)[self.stacks_with(name)].sum())

    def samples_with_any(
        self,
        name: str,
        others: Iterable[str],
        start_s: float | None = None,
        end_s: float | None = None,
    ) -> float:
        """Samples whose stack contains ``name`` and at least one of ``others`` (FBDetect Table 2's ℒ)."""
        any_other = np.zeros(len(self.offsets) - 1, dtype=bool)
        for other in others:
            any_other |= self.stacks_with(other)
        mask = self.stacks_with(name) & any_other
        return float(self.stack_weights(start_s, end_s)[mask].sum())

    def positions_of_any(self, names: Iterable[str]) -> np.ndarray:
        """Boolean mask over positions in ``stack_frames``: frames that are one of ``names``
        (subroutines, or frames as written)."""
        sub_mask = np.zeros(len(self.subroutines), dtype=bool)
        frame_mask = np.zeros(len(self.frames), dtype=bool)
        for name in names:
            sub = self._sub_ids.get(name)
            if sub is not None:
                sub_mask[sub] = True
            elif (frame := self._frame_ids.get(name)) is not None:
                frame_mask[frame] = True
        return sub_mask[self.frame_subroutine[self.stack_frames]] | frame_mask[self.stack_frames]

    def outermost_positions(self, name: str) -> np.ndarray:
        """Per stack, the position (in ``stack_frames``) of the outermost frame of ``name``;
        the largest int64 for stacks without it."""
        target = self._position_mask(name)
        outermost = np.full(len(self.offsets) - 1, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(outermost, self.stack_of_position[target], np.flatnonzero(target))
        return outermost

    def downstream_positions(self, name: str, others: Iterable[str]) -> np.ndarray:
        """Boolean mask over positions in ``stack_frames``: frames of ``others`` at or below
        ``name``'s outermost occurrence on their stack (``name`` itself, or what it transitively
        calls) whose function does not also appear above that occurrence on the same stack. A
        recursive call chain (``a → b → a``) makes ``a`` both ``b``'s caller and callee on one
        stack; there it is ``b``'s caller, not code ``b`` runs."""
        stacks = self.stack_of_position
        outermost = self.outermost_positions(name)
        positions = np.flatnonzero(self.positions_of_any(others))
        where = stacks[positions]
        subs = self.frame_subroutine[self.stack_frames[positions]]
        key = where.astype(np.int64) * (int(subs.max(initial=0)) + 1) + subs
        groups, inverse = np.unique(key, return_inverse=True)
        first = np.full(len(groups), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, inverse, positions)
        keep = (positions >= outermost[where]) & (first[inverse] >= outermost[where])
        mask = np.zeros(len(self.stack_frames), dtype=bool)
        mask[positions[keep]] = True
        return mask

    def stacks_with_any_below(self, name: str, others: Iterable[str]) -> np.ndarray:
        """Boolean mask over stacks: those holding a frame of ``others`` downstream of ``name``
        (``downstream_positions``: ``name`` itself or what it transitively calls, not a
        recursive caller)."""
        mask = np.zeros(len(self.offsets) - 1, dtype=bool)
        mask[self.stack_of_position[self.downstream_positions(name, others)]] = True
        return mask

    def share_of(
        self, mask: np.ndarray, start_s: float | None = None, end_s: float | None = None
    ) -> float:
        """The share of the range's samples whose stacks are in ``mask`` (0 for an empty range)."""
        total = self.total(start_s, end_s)
        return float(self.stack_weights(start_s, end_s)[mask].sum()) / total if total else 0.0

    def popularity(
        self, name: str, start_s: float | None = None, end_s: float | None = None
    ) -> float:
        """How often ``name`` appears in a random sample of the range: its inclusive share."""
        total = self.total(start_s, end_s)
        return self.samples_with(name, start_s, end_s) / total if total else 0.0

    def callers(
        self, name: str, start_s: float | None = None, end_s: float | None = None
    ) -> dict[str, float]:
        """Subroutines seen directly above ``name`` on its stacks, with the samples they carry.

        A sample with ``name`` under two different callers counts for both; under the same caller
        twice (recursion through it) once. Recursion of ``name`` into itself is not a caller.
        """
        target = self._position_mask(name)
        weights = self.stack_weights(start_s, end_s)
        positions = np.flatnonzero(target)
        stacks = self.stack_of_position[positions]
        not_root = positions > self.offsets[stacks]
        positions, stacks = positions[not_root], stacks[not_root]
        caller_subs = self.frame_subroutine[self.stack_frames[positions - 1]]
        target_subs = self.frame_subroutine[self.stack_frames[positions]]
        keep = (caller_subs != target_subs) & (weights[stacks] > 0)
        pairs = np.unique(np.stack([stacks[keep], caller_subs[keep]]), axis=1)
        if pairs.size == 0:
            return {}
        sums = np.bincount(pairs[1], weights=weights[pairs[0]], minlength=len(self.subroutines))
        return {self.subroutines[i]: float(sums[i]) for i in np.flatnonzero(sums)}

    def _position_mask(self, name: str) -> npt.NDArray[np.bool_]:
        sub = self._sub_ids.get(name)
        mask: npt.NDArray[np.bool_]
        if sub is not None:
            mask = self.frame_subroutine[self.stack_frames] == sub
        else:
            frame = self._frame_ids.get(name)
            mask = self.stack_frames == (frame if frame is not None else -1)
        return mask

    def ancestors(self, name: str) -> set[str]:
        """Every subroutine seen above ``name`` on a stack that contains it (any depth), itself
        excluded: its upstream callers, the cost domain of FBDetect §5.4."""
        target = self._position_mask(name)
        if not target.any():
            return set()
        stacks = self.stack_of_position
        deepest = np.full(len(self.offsets) - 1, -1, dtype=np.int64)
        np.maximum.at(deepest, stacks[target], np.flatnonzero(target))
        above = np.arange(len(self.stack_frames)) < deepest[stacks]
        subs = np.unique(self.frame_subroutine[self.stack_frames[above]])
        own = self.frame_subroutine[self.stack_frames[np.flatnonzero(target)[0]]]
        return {self.subroutines[i] for i in subs.tolist() if i != own}

    def stack_share(
        self, name: str, start_s: float | None = None, end_s: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The stacks containing ``name`` that carry samples in the range, and their weights:
        the samples behind its gCPU (sorted stack ids, float weights)."""
        weights = self.stack_weights(start_s, end_s)
        ids = np.flatnonzero(self.stacks_with(name) & (weights > 0))
        return ids.astype(np.int64), weights[ids]
