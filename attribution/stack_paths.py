"""The stack paths that carry a subroutine's samples: what a developer reads to see where a
regression lives (PR comments, ``regbot explain``) and what the regression's text document is
made of (FBDetect §5.6 puts its stack traces in the regression's feature vector)."""

from __future__ import annotations

import numpy as np

from regbot.profiles.model import subroutine_of
from regbot.profiles.sample_index import SampleIndex


def heaviest_paths(
    index: SampleIndex,
    name: str,
    start_s: float | None = None,
    end_s: float | None = None,
    limit: int = 3,
) -> list[list[str]]:
    """Up to ``limit`` stacks containing ``name`` with the most samples in the range, heaviest
    first (ties by stack id), each as its frames root first, as the profiler wrote them."""
    weights = index.stack_weights(start_s, end_s)
    ids = np.flatnonzero(index.stacks_with(name) & (weights > 0))
    if len(ids) == 0:
        return []
    order = ids[np.lexsort((ids, -weights[ids]))][:limit]
    return [
        [index.frames[f] for f in index.stack_frames[index.offsets[s] : index.offsets[s + 1]]]
        for s in order.tolist()
    ]


def path_to(frames: list[str], name: str) -> list[str]:
    """The part of one stack from its root down to the outermost frame of ``name``."""
    for position, frame in enumerate(frames):
        if frame == name or subroutine_of(frame) == name:
            return frames[: position + 1]
    return frames
