"""The stage registry: every stage a regression's verdicts may name, in pipeline order, and the
funnel entry (SPEC §4 ``funnel``) each one owns.

One ``StrEnum`` is the only place a stage's name is written: the stages stamp their verdicts with
it, the funnel counts by it, and ``regbot explain`` and the PR comment list verdicts in its order.
A ``Stage`` is a ``str``, so it is its own JSON key.
"""

from __future__ import annotations

from enum import StrEnum, unique

__all__ = ["DEDUP_STAGES", "FUNNEL_KEYS", "Stage"]


@unique
class Stage(StrEnum):
    """The pipeline's stages in the order they run: the waiting-for-data rule, the change-point
    test and the short-term filters (FBDetect §5.2), the long-term detector (§5.3), then the dedup
    stages (§5.4–5.5; ``stack_dedup`` is KDD'18's alternative to SOMDedup and PairwiseDedup)."""

    ENOUGH_DATA = "enough_data"
    CHANGE_POINT = "change_point"
    WENT_AWAY = "went_away"
    SEASONALITY = "seasonality"
    THRESHOLD = "threshold"
    LONG_TERM = "long_term"
    SHARE_INFLATION = "share_inflation"
    SAME_REGRESSION = "same_regression"
    SOM_DEDUP = "som_dedup"
    COST_SHIFT = "cost_shift"
    STACK_DEDUP = "stack_dedup"
    PAIRWISE_DEDUP = "pairwise_dedup"

    @property
    def funnel_key(self) -> str | None:
        """The SPEC §4 ``funnel`` entry this stage writes (how many candidates it kept; for the
        change-point test and the long-term detector, how many they found). ``stack_dedup`` runs
        in PairwiseDedup's place and writes its entry; the waiting-for-data rule has none."""
        return _FUNNEL_KEY.get(self)

    @property
    def is_short_term_filter(self) -> bool:
        return self in (Stage.WENT_AWAY, Stage.SEASONALITY, Stage.THRESHOLD)

    @property
    def is_dedup(self) -> bool:
        return self in DEDUP_STAGES


_FUNNEL_KEY: dict[Stage, str] = {
    Stage.CHANGE_POINT: "change_points",
    Stage.WENT_AWAY: "after_went_away",
    Stage.SEASONALITY: "after_seasonality",
    Stage.THRESHOLD: "after_threshold",
    Stage.SHARE_INFLATION: "after_share_inflation",
    Stage.SAME_REGRESSION: "after_same_regression_merge",
    Stage.SOM_DEDUP: "after_som_dedup",
    Stage.COST_SHIFT: "after_cost_shift",
    Stage.PAIRWISE_DEDUP: "after_pairwise_dedup",
    Stage.STACK_DEDUP: "after_pairwise_dedup",
    Stage.LONG_TERM: "long_term",
}
DEDUP_STAGES: tuple[Stage, ...] = (
    Stage.SHARE_INFLATION,
    Stage.SAME_REGRESSION,
    Stage.SOM_DEDUP,
    Stage.COST_SHIFT,
    Stage.STACK_DEDUP,
    Stage.PAIRWISE_DEDUP,
)
"""The dedup stages (FBDetect §5.4–5.5, KDD'18 §2.3) in pipeline order."""

FUNNEL_KEYS: tuple[str, ...] = (
    "series",
    "change_points",
    "after_went_away",
    "after_seasonality",
    "after_threshold",
    "after_share_inflation",
    "after_same_regression_merge",
    "after_som_dedup",
    "after_cost_shift",
    "after_pairwise_dedup",
    "long_term",
)
"""SPEC §4's funnel in its order: ``series``, then the stages' entries (``long_term`` last)."""
