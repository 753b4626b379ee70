"""``regbot.yml``'s ``attribution:`` as a settings dataclass, in a module of its own so that
reading the configuration does not import attribution's machinery."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from regbot.attribution.rank import RankSettings
from regbot.settings_fields import NOT_IN_CONFIG, Score

__all__ = ["AttributionSettings", "Scope"]

Scope = Literal["informative", "downstream", "stack"]


@dataclass(frozen=True, slots=True)
class AttributionSettings(RankSettings):
    """``regbot.yml``'s ``attribution:``: the ranking's settings (``RankSettings``: the parts'
    weights; no candidate is named unless the top score reaches ``confidence_floor`` and leads
    the second by ``top1_margin``; at most ``max_candidates`` are listed), then ``scope``: which
    modified frames gCPU attribution counts (``informative``, ``downstream`` or ``stack``, see
    ``regbot.attribution.gcpu_attribution``); ``fuzzy_floor``: the rapidfuzz ratio (0-100) a
    frame must reach to match a modified function by name alone; ``signal_kinds``: series kinds
    that describe a set-up rather than performance (feature flags, config rollouts), used for
    the correlation part and never run through detection; ``text_frames``: the heaviest stack
    paths whose frames join a regression's text (not a key of the file)."""

    scope: Scope = "informative"
    fuzzy_floor: Score = 90.0
    signal_kinds: frozenset[str] = frozenset({"feature_flag", "config", "rollout", "experiment"})
    text_frames: Annotated[int, NOT_IN_CONFIG] = 3
