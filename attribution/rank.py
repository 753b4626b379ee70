"""Ranking a deploy's commits for one regression and deciding whether to name any (FBDetect §5.6).

The score is the weighted mean of the parts that apply to the regression: a part that cannot be
computed (no sample store or no rise of the subroutine in it for gCPU attribution; no signal
series for correlation) is left out of the mean instead of counting as 0, so a service without
feature-flag series is not held to a lower score. Every part is in [0, 1], so is the score.

Confidence (FBDetect names a culprit for about a third of regressions, and is right in the top
three 95% of the time when it does):

* ``high``: the best score reaches ``confidence_floor`` and leads the second by at least
  ``top1_margin``; the candidates are the best and the others within the floor, at most
  ``max_candidates``;
* ``low``: the best score reaches the floor but another is within the margin (two commits touched
  the regressed code); the candidates are those within the margin of the best that reach the floor;
* ``none``: the best score is under the floor; no candidate is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from regbot.attribution.model import Attribution, Commit, ScoredCommit, ScoreParts
from regbot.settings_fields import NonNegative, Share

PART_NAMES = ("gcpu_attribution", "text_similarity", "correlation")


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    """Weights of a candidate score's parts (FBDetect §5.6); they need not sum to 1."""

    gcpu_attribution: NonNegative = 0.5
    text_similarity: NonNegative = 0.25
    correlation: NonNegative = 0.25


@dataclass(frozen=True, slots=True)
class RankSettings:
    """Weights of the parts, the confidence floor, the top-1 margin, how many to name (the
    ranking's part of ``regbot.yml``'s ``attribution:``, see ``AttributionSettings``)."""

    weights: ScoreWeights = ScoreWeights()
    confidence_floor: Share = 0.5
    top1_margin: Share = 0.1
    max_candidates: int = 3

    def weight(self, part: str) -> float:
        return float(getattr(self.weights, part))


def weighted_score(parts: dict[str, float | None], settings: RankSettings) -> float:
    """The weighted mean of the parts that apply (None: does not apply)."""
    total = weight_sum = 0.0
    for name in PART_NAMES:
        value = parts.get(name)
        if value is None:
            continue
        w = settings.weight(name)
        total += w * value
        weight_sum += w
    return total / weight_sum if weight_sum > 0 else 0.0


def rank_commits(
    commits: Sequence[Commit],
    parts: Sequence[dict[str, float | None]],
    settings: RankSettings,
    matched: Sequence[tuple[str, ...]] | None = None,
) -> Attribution:
    """Score, sort (best first; ties: the later commit first, as it landed closer to the
    deploy, then by sha for a stable order) and decide the confidence."""
    scored = [
        ScoredCommit(
            commit,
            weighted_score(p, settings),
            ScoreParts(**{name: float(p.get(name) or 0.0) for name in PART_NAMES}),
            matched[i] if matched is not None else (),
        )
        for i, (commit, p) in enumerate(zip(commits, parts, strict=True))
    ]
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].score, -i, scored[i].commit.sha))
    ranked = tuple(scored[i] for i in order)
    return decide(ranked, settings)


def decide(ranked: tuple[ScoredCommit, ...], settings: RankSettings) -> Attribution:
    """The confidence rule of the module docstring over an already sorted ranking."""
    if not ranked or ranked[0].score < settings.confidence_floor:
        return Attribution(ranked, (), "none")
    best = ranked[0].score
    second = ranked[1].score if len(ranked) > 1 else 0.0
    limit = max(settings.max_candidates, 1)
    if best - second >= settings.top1_margin:
        named = tuple(s for s in ranked if s.score >= settings.confidence_floor)[:limit]
        return Attribution(ranked, named, "high")
    close = tuple(
        s
        for s in ranked
        if s.score >= settings.confidence_floor and best - s.score < settings.top1_margin
    )
    return Attribution(ranked, close[:limit], "low")
