"""SOMDedup's representative election (FBDetect §5.5.1): the ImportanceScore of a group's
members over the change each is credited with, and the group's representative.

Complexity: O(n) per group, after its stack links.
Design: docs/design/som_dedup.md ("ImportanceScore").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from regbot.detection.dedup.som_features import root_cause_bitmap
from regbot.detection.dedup.stack_links import stack_links
from regbot.detection.dedup_context import DedupContext, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.stage_settings import ImportanceWeights, SomSettings

__all__ = ["Election", "elect", "importance_scores", "series_popularity"]


def importance_scores(
    candidates: Sequence[Candidate],
    popularity: np.ndarray,
    root_cause_found: np.ndarray,
    weights: ImportanceWeights,
    changes: np.ndarray | None = None,
    *,
    relative_cap: float,
) -> tuple[np.ndarray, np.ndarray]:
    """ImportanceScore of candidates compared with each other (one group), given each one's
    popularity (n,), whether a root cause was found (n,) bool and the change each one is
    credited with in the group (n,; None: its own delta; see "Stack groups"): (n,) scores and
    the (n, 4) terms (relative change, capped at ``relative_cap``, absolute change,
    1 − popularity, root cause found), each in [0, 1]; see docs/design/som_dedup.md."""
    delta = (
        np.array([c.delta for c in candidates], dtype=np.float64)
        if changes is None
        else np.asarray(changes, dtype=np.float64)
    )
    before = np.abs(np.array([c.mean_before for c in candidates], dtype=np.float64))
    new_cost = np.where(delta > 0, relative_cap, 0.0)
    relative = np.where(before > 0, delta / np.where(before > 0, before, 1.0), new_cost)
    relative = np.clip(relative, 0.0, relative_cap)
    largest_delta = float(np.abs(delta).max(initial=0.0))
    terms = np.column_stack(
        [
            _over(relative, float(relative.max(initial=0.0))),
            _over(np.clip(delta, 0.0, None), largest_delta),
            1.0 - popularity,
            root_cause_found.astype(np.float64),
        ]
    )
    w = (weights.relative_change, weights.absolute_change, weights.popularity, weights.root_cause)
    return terms @ np.asarray(w, dtype=np.float64), terms


def _over(values: np.ndarray, scale: float) -> np.ndarray:
    return values / scale if scale > 0 else np.zeros_like(values)


def series_popularity(series_id: str, context: DedupContext) -> float:
    """``context.popularity`` of the series' subroutine, in [0, 1]; 0 for non-gCPU series and
    unknown subroutines."""
    subroutine = subroutine_of_series(series_id)
    if subroutine is None:
        return 0.0
    return min(max(float(context.popularity.get(subroutine, 0.0)), 0.0), 1.0)


@dataclass(frozen=True, slots=True)
class Election:
    """One group's ImportanceScore election: the representative's position in the group, and
    per member its score, its (n, 4) terms, the change it was credited with and whether a root
    cause was found for it."""

    best: int
    scores: np.ndarray
    terms: np.ndarray
    credited: np.ndarray
    found: np.ndarray


def elect(
    group: Sequence[Candidate],
    context: DedupContext,
    settings: SomSettings,
    credited: np.ndarray | None = None,
) -> Election:
    """The group's representative: the highest ImportanceScore over ``credited`` changes (None:
    the stack links among the group's own members decide them) among its short-term members
    (long-term ones only when it has no other); ties go to the lower popularity, then the
    smaller series id, then the earlier member."""
    if credited is None:
        credited = stack_links(group, context, settings).credited
    popularity = np.array([series_popularity(c.series_id, context) for c in group])
    found: npt.NDArray[np.bool_] = np.any(root_cause_bitmap(group, context), axis=1)
    scores, terms = importance_scores(
        group, popularity, found, settings.weights, credited, relative_cap=settings.relative_cap
    )
    best = min(
        range(len(group)),
        key=lambda k: (
            group[k].detector == "long-term",
            -scores[k],
            popularity[k],
            group[k].series_id,
            k,
        ),
    )
    return Election(best, scores, terms, np.asarray(credited, dtype=np.float64), found)
