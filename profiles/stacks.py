"""Interning of frames and stacks shared by every parser and the sample store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from regbot.errors import InputError


@dataclass(frozen=True, slots=True)
class StackArrays:
    """Frames and stacks as arrays, what queries need: stack ``i`` is the frames
    ``stack_frames[offsets[i]:offsets[i + 1]]`` (ids into ``frames``), root first."""

    frames: list[str]
    offsets: npt.NDArray[np.int64]
    stack_frames: npt.NDArray[np.int32]


def check_csr(
    where: str, offsets: npt.NDArray[np.int64], flat: npt.NDArray[np.integer], n_frames: int
) -> None:
    """Refuse stacks in CSR form whose offsets do not run from 0 to ``len(flat)`` without going
    back, or whose frame ids are not below ``n_frames``."""
    if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(flat):
        raise InputError(where, f"stack offsets from 0 to {len(flat)}")
    if bool(np.any(offsets[1:] < offsets[:-1])):
        raise InputError(where, "stack offsets that never decrease")
    if len(flat) and (int(flat.min()) < 0 or int(flat.max()) >= n_frames):
        raise InputError(where, f"frame ids in [0, {n_frames})", int(flat.max()))


class _Ids(dict[str, int]):
    """text -> dense id; a missing text gets the next id (and is appended to ``order``) in C-speed
    ``map(ids.__getitem__, texts)`` loops."""

    __slots__ = ("order",)

    def __init__(self, order: list[str]) -> None:
        super().__init__()
        self.order = order

    def __missing__(self, key: str) -> int:
        value = self[key] = len(self.order)
        self.order.append(key)
        return value


class StackTable:
    """Frames and stacks, each stored once and named by a dense integer id.

    A stack is a tuple of frame ids, root first. The folded fast path, ``intern_folded``, keys a
    cache by the stack's text so that a line seen before costs one dictionary lookup and no split.
    Ids are stable: a frame or stack keeps its id for the life of the store.
    """

    __slots__ = ("frames", "_frame_ids", "stacks", "_stack_ids", "_folded_ids")

    def __init__(self) -> None:
        self.frames: list[str] = []
        self._frame_ids: _Ids = _Ids(self.frames)
        self.stacks: list[tuple[int, ...]] = []
        self._stack_ids: dict[tuple[int, ...], int] = {}
        self._folded_ids: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self.stacks)

    def intern_frame(self, text: str) -> int:
        return self._frame_ids[text]

    def intern_stack_ids(self, frame_ids: tuple[int, ...]) -> int:
        stack_id = self._stack_ids.get(frame_ids)
        if stack_id is None:
            stack_id = self._stack_ids[frame_ids] = len(self.stacks)
            self.stacks.append(frame_ids)
        return stack_id

    def intern_stack(self, frames: Iterable[str]) -> int:
        """Id of the stack with these frame texts, root first."""
        return self.intern_stack_ids(tuple(map(self._frame_ids.__getitem__, frames)))

    def intern_folded(self, stack_text: bytes) -> int:
        """Id of a folded stack written ``root;...;leaf`` in UTF-8 bytes (see
        ``profiles.folded.split_folded``); cached by its bytes, so a repeat costs one lookup."""
        stack_id = self._folded_ids.get(stack_text)
        if stack_id is None:
            from regbot.profiles.folded import split_folded

            text = stack_text.decode("utf-8", "surrogateescape")
            stack_id = self._folded_ids[stack_text] = self.intern_stack(split_folded(text))
        return stack_id

    def extend(
        self,
        frames: Sequence[str],
        offsets: npt.NDArray[np.integer],
        frame_ids: npt.NDArray[np.integer],
    ) -> None:
        """Append stored frames and stacks (CSR form: ``frame_ids[offsets[i]:offsets[i+1]]``)."""
        for text in frames:
            self._frame_ids[text]  # appends to self.frames
        flat = frame_ids.tolist()
        bounds = offsets.tolist()
        for start, end in zip(bounds[:-1], bounds[1:]):
            key = tuple(flat[start:end])
            self._stack_ids[key] = len(self.stacks)
            self.stacks.append(key)

    def arrays(self) -> StackArrays:
        """Every frame and stack, as arrays (a copy: later interning does not change it)."""
        offsets, flat = self.stacks_csr(0)
        return StackArrays(list(self.frames), offsets, flat)

    def stacks_csr(self, start: int = 0) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """Stacks from id ``start`` on, as (offsets int64, frame ids int32) in CSR form."""
        chosen = self.stacks[start:]
        lengths = np.fromiter((len(s) for s in chosen), dtype=np.int64, count=len(chosen))
        offsets = np.zeros(len(chosen) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.fromiter(
            (f for stack in chosen for f in stack), dtype=np.int32, count=int(offsets[-1])
        )
        return offsets, flat
