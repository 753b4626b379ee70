"""Ranking and the confidence decision (FBDetect §5.6: name a culprit only when confident)."""

from __future__ import annotations

import pytest

from regbot.attribution.model import Commit
from regbot.attribution.rank import RankSettings, ScoreWeights, rank_commits, weighted_score

SETTINGS = RankSettings()


def commits(n: int) -> list[Commit]:
    return [Commit(sha=f"{i:040x}", title=f"change {i}") for i in range(n)]


def parts(g, t, c=None) -> dict:
    return {"gcpu_attribution": g, "text_similarity": t, "correlation": c}


def test_weighted_mean_leaves_out_parts_that_do_not_apply() -> None:
    assert weighted_score(parts(1.0, 0.2, None), SETTINGS) == pytest.approx((0.5 + 0.05) / 0.75)
    assert weighted_score(parts(1.0, 0.2, 0.0), SETTINGS) == pytest.approx(0.55)
    assert weighted_score(parts(None, 0.4, None), SETTINGS) == pytest.approx(0.4)
    zero = RankSettings(weights=ScoreWeights(gcpu_attribution=0, text_similarity=0, correlation=0))
    assert weighted_score(parts(1.0, 1.0, 1.0), zero) == 0.0


def test_a_clear_leader_is_named_with_high_confidence() -> None:
    result = rank_commits(commits(3), [parts(0, 0.1), parts(1.0, 0.3), parts(0, 0.0)], SETTINGS)
    assert result.confidence == "high"
    assert [s.commit.title for s in result.candidates] == ["change 1"]
    assert [s.commit.title for s in result.ranked] == ["change 1", "change 0", "change 2"]
    assert result.ranked[0].parts.gcpu_attribution == 1.0


def test_two_commits_on_the_regressed_code_are_low_confidence_and_both_listed() -> None:
    result = rank_commits(commits(3), [parts(1.0, 0.3), parts(1.0, 0.25), parts(0, 0.0)], SETTINGS)
    assert result.confidence == "low"
    assert {s.commit.title for s in result.candidates} == {"change 0", "change 1"}


def test_weak_evidence_names_nobody() -> None:
    result = rank_commits(commits(2), [parts(0.2, 0.3), parts(0.0, 0.1)], SETTINGS)
    assert result.confidence == "none"
    assert result.candidates == ()
    assert len(result.ranked) == 2


def test_candidates_are_capped() -> None:
    capped = RankSettings(top1_margin=0.0, max_candidates=2)
    result = rank_commits(commits(4), [parts(1.0, 0.5)] * 4, capped)
    assert len(result.candidates) == 2


def test_ties_prefer_the_later_commit() -> None:
    result = rank_commits(commits(2), [parts(0.0, 0.0), parts(0.0, 0.0)], SETTINGS)
    assert result.ranked[0].commit.title == "change 1"
