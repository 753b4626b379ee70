"""Interning of frames and stacks shared by every parser and the sample store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


class StackTable:
    """Frames and stacks, each stored once and named by a dense integer id.

    A stack is a tuple of frame ids, root first. The folded fast path, ``intern_folded``, keys a
    cache by the stack's text so that a line seen before costs one dictionary lookup and no split.
    Ids are stable: a frame or stack keeps its id for the life of the store.
    """

    __slots__ = ("frames", "_frame_ids", "stacks", "_stack_ids", "_folded_ids")

    def __init__(self) -> None:
        self.frames: list[str] = []
        self._frame_ids: dict[str, int] = {}
        self.stacks: list[tuple[int, ...]] = []
        self._stack_ids: dict[tuple[int, ...], int] = {}
        self._folded_ids: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.stacks)

    def intern_frame(self, text: str) -> int:
        frame_id = self._frame_ids.get(text)
        if frame_id is None:
            frame_id = self._frame_ids[text] = len(self.frames)
            self.frames.append(text)
        return frame_id

    def intern_stack_ids(self, frame_ids: tuple[int, ...]) -> int:
        stack_id = self._stack_ids.get(frame_ids)
        if stack_id is None:
            stack_id = self._stack_ids[frame_ids] = len(self.stacks)
            self.stacks.append(frame_ids)
        return stack_id

    def intern_stack(self, frames: Iterable[str]) -> int:
        """Id of the stack with these frame texts, root first."""
        intern = self.intern_frame
        return self.intern_stack_ids(tuple(intern(text) for text in frames))

    def intern_folded(self, stack_text: str) -> int:
        """Id of a folded stack written ``root;...;leaf`` (see ``profiles.folded.split_folded``)."""
        stack_id = self._folded_ids.get(stack_text)
        if stack_id is None:
            from regbot.profiles.folded import split_folded

            stack_id = self._folded_ids[stack_text] = self.intern_stack(split_folded(stack_text))
        return stack_id

    def extend(self, frames: Sequence[str], offsets: np.ndarray, frame_ids: np.ndarray) -> None:
        """Append stored frames and stacks (CSR form: ``frame_ids[offsets[i]:offsets[i+1]]``)."""
        for text in frames:
            self._frame_ids[text] = len(self.frames)
            self.frames.append(text)
        flat = frame_ids.tolist()
        bounds = offsets.tolist()
        for start, end in zip(bounds[:-1], bounds[1:]):
            key = tuple(flat[start:end])
            self._stack_ids[key] = len(self.stacks)
            self.stacks.append(key)

    def stacks_csr(self, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Stacks from id ``start`` on, as (offsets int64, frame ids int32) in CSR form."""
        chosen = self.stacks[start:]
        lengths = np.fromiter((len(s) for s in chosen), dtype=np.int64, count=len(chosen))
        offsets = np.zeros(len(chosen) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.fromiter(
            (f for stack in chosen for f in stack), dtype=np.int32, count=int(offsets[-1])
        )
        return offsets, flat
