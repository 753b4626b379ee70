"""Subroutine gCPU attribution (FBDetect §5.6): the fraction of a regression in subroutine B's
gCPU that the samples touched by one change carry, ℒ/ℛ (FBDetect's Table 2: ℛ = 0.05,
ℒ = 0.04, 80%).

Scopes ``"stack"`` (the paper's), ``"downstream"`` and ``"informative"`` (regbot's default)
choose which modified frames count; a stack's samples go to the change whose counted frame is
deepest on it (ties split by lines when the profile has them); every rise is measured against
the deploy's share inflation; the part is clipped to [0, 1] and None when ℛ ≤ 0.

Design: docs/design/attribution_gcpu_attribution.md
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from regbot.attribution.line_credit import LineEvidence, tie_weights
from regbot.attribution.settings import Scope
from regbot.profiles.sample_index import SampleIndex

_NOTHING = 1e-12  # a share difference below this is rounding, not a rise


@dataclass(frozen=True, slots=True)
class TimeSplit:
    """Before ``[before_start_s, change_s)`` and after ``[change_s, after_end_s)`` the change,
    over bucket start times."""

    before_start_s: float
    change_s: float
    after_end_s: float


@dataclass(frozen=True, slots=True)
class AttributedShare:
    """ℛ (B's rise), ℒ (the change's samples' rise) and the part ℒ/ℛ clipped to [0, 1]."""

    regression: float
    attributed: float
    fraction: float | None


def _rise(index: SampleIndex, mask: np.ndarray, split: TimeSplit, ratio: float = 1.0) -> float:
    after = index.share_of(mask, split.change_s, split.after_end_s)
    before = index.share_of(mask, split.before_start_s, split.change_s)
    return after - ratio * before


def attributed_shares(
    index: SampleIndex,
    subroutine: str,
    modified_per_change: Sequence[Collection[str]],
    split: TimeSplit,
    scope: Scope = "informative",
    share_ratio: float = 1.0,
    lines: LineEvidence | None = None,
) -> list[AttributedShare]:
    """ℒ/ℛ of each of a deploy's changes for a regression in ``subroutine`` (each change given
    by the profile subroutines it modified). A stack on which several changes modified counted
    frames goes to the change(s) whose frame is deepest (see the design file).
    ``share_ratio``: the deploy's common ratio of unmoved shares (share inflation), taken out of
    every rise (see the design file). ``lines``: the deploy's line facts, which split ties
    on one frame (None: tied changes each keep the tied stacks' rise)."""
    with_b = index.stacks_with(subroutine)
    regression = _rise(index, with_b, split, share_ratio)
    attributed = _owned_rises(
        index, subroutine, with_b, modified_per_change, split, scope, share_ratio, lines
    )
    if scope == "informative":
        attributed = _caller_claims(
            index, subroutine, with_b, modified_per_change, split, attributed, share_ratio
        )
        if not any(a > 0 for a in attributed):
            # No change touched B, its callees or a caller that separates its rise: the callers
            # on every one of B's stacks are all that is left, and the deepest of them takes it.
            attributed = _owned_rises(
                index, subroutine, with_b, modified_per_change, split, "stack", share_ratio, lines
            )
            attributed = _caller_claims(
                index, subroutine, with_b, modified_per_change, split, attributed, share_ratio
            )
    shares = []
    for a in attributed:
        fraction = float(np.clip(a / regression, 0, 1)) if regression > 0 else None
        shares.append(AttributedShare(regression, a, fraction))
    return shares


def _owned_rises(
    index: SampleIndex,
    subroutine: str | None,
    with_b: np.ndarray,
    modified_per_change: Sequence[Collection[str]],
    split: TimeSplit,
    scope: Scope,
    share_ratio: float = 1.0,
    lines: LineEvidence | None = None,
) -> list[float]:
    """Each change's rise over the stacks it owns: those where its counted frame is deepest
    (ties on one frame split by ``lines`` when given)."""
    depths = [
        _deepest_counted(index, subroutine, with_b, modified, split, scope)
        for modified in modified_per_change
    ]
    if not depths:
        return []
    best = np.max(depths, axis=0)
    owns = np.array(
        [
            (depth >= 0) & (depth == best) & bool(modified)
            for modified, depth in zip(modified_per_change, depths, strict=True)
        ]
    )
    rises = [_rise(index, own, split, share_ratio) for own in owns]
    if lines is not None:
        rises = _split_ties(index, owns, best, rises, split, share_ratio, lines)
    return rises


def _split_ties(
    index: SampleIndex,
    owns: np.ndarray,
    best: np.ndarray,
    rises: list[float],
    split: TimeSplit,
    share_ratio: float,
    lines: LineEvidence,
) -> list[float]:
    """``rises`` with each tie on one frame (the same changes tied on stacks where the same
    subroutine is the deepest counted frame) split by the tied frame's lines; a tie the lines
    do not decide stands."""
    tied = np.flatnonzero(owns.sum(axis=0) >= 2)
    if not len(tied):
        return rises
    subs = index.frame_subroutine[index.stack_frames[best[tied]]]
    patterns = np.packbits(owns[:, tied], axis=0)
    keys = np.vstack([subs[None, :].astype(np.int64), patterns.astype(np.int64)]).T
    out = list(rises)
    window = (split.before_start_s, split.change_s, split.after_end_s)
    for key in np.unique(keys, axis=0):
        group = np.zeros(owns.shape[1], dtype=bool)
        group[tied[(keys == key).all(axis=1)]] = True
        changes = [int(k) for k in np.flatnonzero(owns[:, group][:, 0])]
        weights = tie_weights(
            index,
            group,
            best,
            index.subroutines[int(key[0])],
            changes,
            window,
            share_ratio,
            lines,
        )
        if weights is None:
            continue
        rise = _rise(index, group, split, share_ratio)
        for k, weight in zip(changes, weights, strict=True):
            out[k] -= (1.0 - weight) * rise
    return out


def attributed_share(
    index: SampleIndex,
    subroutine: str,
    modified: Collection[str],
    split: TimeSplit,
    scope: Scope = "informative",
    share_ratio: float = 1.0,
) -> AttributedShare:
    """ℒ/ℛ for a regression in ``subroutine`` and one change that modified the profile
    subroutines ``modified`` (FBDetect's single-change case)."""
    return attributed_shares(index, subroutine, [modified], split, scope, share_ratio)[0]


def _deepest_counted(
    index: SampleIndex,
    subroutine: str | None,
    with_b: np.ndarray,
    modified: Collection[str],
    split: TimeSplit,
    scope: Scope,
) -> np.ndarray:
    """Per stack, the position of the deepest frame of ``modified`` that counts under
    ``scope`` on a stack with B; -1 where none does."""
    stacks = index.stack_of_position
    depth = np.full(len(index.offsets) - 1, -1, dtype=np.int64)
    if not modified:
        return depth
    if scope != "stack" and subroutine is not None:
        counted = index.downstream_positions(subroutine, modified)
        if scope == "informative":
            counted |= index.positions_of_any(_separating(index, with_b, modified, split))
    else:
        counted = index.positions_of_any(modified)
    counted &= with_b[stacks]
    np.maximum.at(depth, stacks[counted], np.flatnonzero(counted))
    return depth


def _caller_claims(
    index: SampleIndex,
    subroutine: str,
    with_b: np.ndarray,
    modified_per_change: Sequence[Collection[str]],
    split: TimeSplit,
    attributed: list[float],
    share_ratio: float,
) -> list[float]:
    """What a change whose only counted frames are B's callers may keep of its owned rise
    ``attributed`` (changes that touched B or what it calls keep theirs):

    * a *separating* caller says which of B's samples rose, so it keeps only the rise of its
      stacks beyond the rate at which B's other stacks rose: ``rise(S) − ρ·before(S)`` with S
      B's stacks through its edited callers and ρ the relative rise of B's stacks without
      them. When B is called more on every path, or B itself got slower, every path rises
      alike and a caller on some of them explains nothing;
    * it must carry what is left (``_caller_carries``)."""
    claims = []
    for a, modified in zip(attributed, modified_per_change, strict=True):
        if a <= 0 or (modified and index.stacks_with_any_below(subroutine, modified).any()):
            claims.append(a)
            continue
        on_b = [name for name in modified if (with_b & index.stacks_with(name)).any()]
        through = with_b & _stacks_with_any(index, on_b)
        elsewhere = with_b & ~through
        before_elsewhere = index.share_of(elsewhere, split.before_start_s, split.change_s)
        if before_elsewhere > 0:
            rate = _rise(index, elsewhere, split, share_ratio) / before_elsewhere
            before_through = index.share_of(through, split.before_start_s, split.change_s)
            beyond = _rise(index, through, split, share_ratio) - rate * before_through
            a = min(a, beyond if beyond > _NOTHING else 0.0)
        if a > 0 and not _caller_carries(index, with_b, modified, split, a, share_ratio):
            a = 0.0
        claims.append(a)
    return claims


def _caller_carries(
    index: SampleIndex,
    with_b: np.ndarray,
    modified: Collection[str],
    split: TimeSplit,
    owned: float,
    share_ratio: float,
) -> bool:
    """Whether the change's edited callers of B carry the rise they would be credited with:
    the inclusive share c of those callers (every stack holding one of them) rose by at least
    half of what ``owned`` extra work in B would add to it. A caller that calls B more often
    adds B's extra cost to its own inclusive cost; a caller whose inclusive cost fell (a
    speed-up of its own code, beside which B's share rose) moved cost, it did not add any, and
    takes no credit for B.

    Shares are normalised: work that raises B's share b by ``owned`` raises the share c of a
    caller holding B by ``owned``·(1 − c)/(1 − b) (nothing for a caller on every sample, which
    cannot rise), the same arithmetic as the cost-shift check's."""
    on_b = [name for name in modified if (with_b & index.stacks_with(name)).any()]
    if not on_b:
        return False
    callers = _stacks_with_any(index, on_b)
    c = index.share_of(callers, split.before_start_s, split.change_s)
    b = index.share_of(with_b, split.before_start_s, split.change_s)
    expected = owned * (1.0 - c) / (1.0 - b) if b < 1.0 else 0.0
    return _rise(index, callers, split, share_ratio) >= 0.5 * expected


def _stacks_with_any(index: SampleIndex, names: Collection[str]) -> np.ndarray:
    mask = np.zeros(len(index.offsets) - 1, dtype=bool)
    mask[index.stack_of_position[index.positions_of_any(names)]] = True
    return mask


def _separating(
    index: SampleIndex, with_b: np.ndarray, modified: Collection[str], split: TimeSplit
) -> list[str]:
    """The modified subroutines absent from at least one of B's stacks that carry samples in
    the windows."""
    live = with_b & (index.stack_weights(split.before_start_s, split.after_end_s) > 0)
    return [name for name in modified if (live & ~index.stacks_with(name)).any()]


def service_wide_shares(
    index: SampleIndex, modified_per_change: Sequence[Collection[str]], split: TimeSplit
) -> list[float | None]:
    """For a regression without a subroutine: each change's rise over the stacks it owns (its
    modified frame is the deepest of any change's on them), relative to the largest such rise
    among the changes; None for all when no change's stacks rose."""
    every_stack = np.ones(len(index.offsets) - 1, dtype=bool)
    rises = [
        max(0.0, r)
        for r in _owned_rises(index, None, every_stack, modified_per_change, split, "stack")
    ]
    top = max(rises, default=0.0)
    if top <= 0:
        return [None] * len(rises)
    return [r / top for r in rises]
