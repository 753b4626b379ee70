"""Splitting a tie by lines: when two commits of a deploy modified the same function F and F is
the deepest modified frame on a regressed stack, which of them made F's lines cost more.

Each line's rise is split along its chain of loop headers in proportion to each level's growth
in log ratio, and every level's part goes to the commit that last changed that line; the tie
stands (None) when the tied commits' lines own less than half of the rise.

Design: docs/design/attribution_line_credit.md
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from regbot.attribution.deploy_lines import DeployLines, FileLines
from regbot.profiles.model import parse_frame
from regbot.profiles.sample_index import SampleIndex

_OWNED_FLOOR = 0.5  # the tied commits' lines must own at least this part of the lines' rise


@dataclass(frozen=True, slots=True)
class LineEvidence:
    """What splitting ties by lines needs: the deploy's line facts, the repository path of each
    profile subroutine the deploy modified, and the sha of each change (by index)."""

    deploy: DeployLines
    paths: Mapping[str, str]
    shas: Sequence[str]


@dataclass(frozen=True, slots=True)
class _Windows:
    start_s: float  # max(since_s, the before window's start)
    change_s: float
    end_s: float
    ratio: float


def tie_weights(
    index: SampleIndex,
    stacks: np.ndarray,
    positions: np.ndarray,
    subroutine: str,
    tied: Sequence[int],
    window: tuple[float, float, float],
    share_ratio: float,
    evidence: LineEvidence,
) -> list[float] | None:
    """Weights of the ``tied`` changes (indices into ``evidence.shas``) for the rise of
    ``stacks`` (a mask), on each of which the tied frame of ``subroutine`` stands at
    ``positions[stack]``; None when lines do not decide (design file). ``window`` is the
    before window's start, the change time and the after window's end."""
    path = evidence.paths.get(subroutine)
    lines = evidence.deploy.files.get(path) if path is not None else None
    if lines is None:
        return None
    start_s, change_s, end_s = window
    w = _Windows(max(start_s, evidence.deploy.since_s), change_s, end_s, share_ratio)
    if w.start_s >= w.change_s:
        return None
    shares = _shares(index, w)
    if shares is None:
        return None
    before, after = shares
    ids = np.flatnonzero(stacks)
    on_line = _line_shares(index, ids, positions[ids], before, after, lines)
    own_lines = _line_shares(index, *_self_positions(index, subroutine), before, after, lines)
    owned = _owned_by_line(on_line, own_lines, lines, w.ratio)
    rises = sum(max(0.0, a - w.ratio * b) for b, a in on_line.values())
    credit = [owned.get(evidence.shas[k], 0.0) for k in tied]
    if rises <= 0 or sum(credit) < _OWNED_FLOOR * rises:
        return None
    return [c / sum(credit) for c in credit]


def _shares(index: SampleIndex, w: _Windows) -> tuple[np.ndarray, np.ndarray] | None:
    total_before = index.total(w.start_s, w.change_s)
    total_after = index.total(w.change_s, w.end_s)
    if total_before <= 0 or total_after <= 0:
        return None
    return (
        index.stack_weights(w.start_s, w.change_s) / total_before,
        index.stack_weights(w.change_s, w.end_s) / total_after,
    )


def _self_positions(index: SampleIndex, subroutine: str) -> tuple[np.ndarray, np.ndarray]:
    """The stacks whose leaf frame is ``subroutine``, and those leaves' positions."""
    lengths = np.diff(index.offsets)
    stacks = np.flatnonzero(lengths > 0)
    leaves = index.offsets[stacks + 1] - 1
    wanted = index.subroutine_id(subroutine)
    if wanted is None:
        return stacks[:0], leaves[:0]
    keep = index.frame_subroutine[index.stack_frames[leaves]] == wanted
    return stacks[keep], leaves[keep]


def _line_shares(
    index: SampleIndex,
    stacks: np.ndarray,
    positions: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    lines: FileLines,
) -> dict[int, tuple[float, float]]:
    """Deploy line → (before share, after share) of the frames at ``positions`` of ``stacks``:
    before-window lines are the previous deploy's, mapped to the deploy's (dropped when the line
    is gone); a line of a loop header counts as the header's first line."""
    out: dict[int, list[float]] = {}
    frames = index.stack_frames[positions]
    for frame in np.unique(frames):
        line = parse_frame(index.frames[frame]).line
        if line is None:
            continue
        on = stacks[frames == frame]
        b, a = float(before[on].sum()), float(after[on].sum())
        mapped = lines.from_previous.get(line)
        if b > 0 and mapped is not None:
            out.setdefault(lines.header.get(mapped, mapped), [0.0, 0.0])[0] += b
        if a > 0:
            out.setdefault(lines.header.get(line, line), [0.0, 0.0])[1] += a
    return {line: (b, a) for line, (b, a) in out.items()}


def _owned_by_line(
    on_line: Mapping[int, tuple[float, float]],
    own_lines: Mapping[int, tuple[float, float]],
    lines: FileLines,
    ratio: float,
) -> dict[str, float]:
    """Sha → the part of the lines' rise its edited levels own (design file)."""
    headers = set(lines.header.values())
    outside = [
        v for line, v in own_lines.items() if line not in lines.loops and line not in headers
    ]
    b_out = sum(b for b, _ in outside)
    a_out = sum(a for _, a in outside)
    rho_out = a_out / (ratio * b_out) if b_out > 0 and a_out > 0 else 1.0
    owned: dict[str, float] = {}
    for line, (b, a) in on_line.items():
        rise = a - ratio * b
        if rise <= 0:
            continue
        if b <= 0:  # new code: its editor's
            _give(owned, [lines.owner.get(line)], rise)
            continue
        chain = [line, *lines.loops.get(line, ())]
        rho: list[float | None] = [a / (ratio * b)]
        for header in chain[1:]:
            hb, ha = own_lines.get(header, (0.0, 0.0))
            rho.append(ha / (ratio * hb) if hb > 0 and ha > 0 else None)
        measured = [(j, r) for j, r in enumerate(rho) if r is not None]
        parts: list[tuple[float, list[int]]] = []
        for k, (j, inner) in enumerate(measured):
            outer = measured[k + 1][1] if k + 1 < len(measured) else rho_out
            stop = measured[k + 1][0] if k + 1 < len(measured) else len(chain)
            parts.append((max(0.0, math.log(inner / outer)), chain[j:stop]))
        total = sum(p for p, _ in parts)
        if total <= 0:
            continue
        for part, levels in parts:
            _give(owned, [lines.owner.get(level) for level in levels], rise * part / total)
    return owned


def _give(owned: dict[str, float], owners: Sequence[str | None], amount: float) -> None:
    """``amount`` shared equally by the levels' owners (levels nobody edited keep none)."""
    named = [o for o in owners if o is not None]
    for sha in named:
        owned[sha] = owned.get(sha, 0.0) + amount / len(named)
