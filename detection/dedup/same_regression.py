"""SameRegressionMerger (FBDetect Table 3): one regression, one id, however many runs see it.

Complexity: O(candidates · (log known + points)).
Design: docs/design/same_regression.md
"""

from __future__ import annotations

import bisect
import hashlib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from regbot.detection.model import Candidate, Verdict
from regbot.detection.presets import Threshold
from regbot.detection.stages import Stage
from regbot.detection.thresholds import threshold_verdict

if TYPE_CHECKING:  # dedup imports this module
    from regbot.detection.dedup import DedupSettings

STAGE = Stage.SAME_REGRESSION


@dataclass(frozen=True, slots=True)
class KnownRegression:
    """A regression an earlier run reported (from the state store)."""

    id: str
    series_id: str
    change_time_s: float
    group_id: str = ""


def regression_id(series_id: str, detector: str, change_time_s: float) -> str:
    """Fresh stable id: the same series, detector and change time give the same id."""
    digest = hashlib.sha1(f"{series_id}\n{detector}\n{change_time_s:.3f}".encode()).hexdigest()
    return f"r-{digest[:12]}"


def merge_same_regressions(
    candidates: list[Candidate],
    known: list[KnownRegression],
    settings: DedupSettings,
    threshold: Threshold | None = None,
) -> tuple[list[Candidate], list[Candidate]]:
    """(kept, merged): every candidate with its stable ``regression_id`` and a verdict; the
    merged ones are duplicates of a kept candidate of this run (the verdict names it).
    ``settings``: its ``merge_gap_s`` (rules 1, 2 and 4), ``merge_alpha`` and
    ``merge_min_points`` (rule 3); ``threshold``: rule 3 (docs/design/same_regression.md)."""
    gap_s, alpha, min_points = settings.merge_gap_s, settings.merge_alpha, settings.merge_min_points
    by_series: dict[str, list[KnownRegression]] = defaultdict(list)
    for regression in sorted(known, key=lambda r: (r.series_id, r.change_time_s, r.id)):
        by_series[regression.series_id].append(regression)
    order = sorted(
        range(len(candidates)),
        key=lambda i: (candidates[i].detector != "short-term", candidates[i].change_time_s),
    )
    kept_by_series: dict[str, list[Candidate]] = defaultdict(list)
    results: dict[int, tuple[Candidate, bool]] = {}
    for i in order:
        candidate = candidates[i]
        twin = _nearest(kept_by_series[candidate.series_id], candidate.change_time_s, gap_s)
        if twin is not None:
            verdict = Verdict(
                STAGE,
                False,
                f"same regression as {twin.regression_id} ({twin.detector})",
                {
                    "regression_id": twin.regression_id,
                    "gap_s": abs(twin.change_time_s - candidate.change_time_s),
                },
            )
            results[i] = (
                replace(candidate, regression_id=twin.regression_id).with_verdict(verdict),
                False,
            )
            continue
        judged = _judge_against_known(
            candidate, by_series[candidate.series_id], gap_s, alpha, min_points, threshold
        )
        kept_by_series[candidate.series_id].append(judged)
        results[i] = (judged, True)
    kept = [results[i][0] for i in range(len(candidates)) if results[i][1]]
    merged = [results[i][0] for i in range(len(candidates)) if not results[i][1]]
    return kept, merged


def _judge_against_known(
    candidate: Candidate,
    known: list[KnownRegression],
    gap_s: float,
    alpha: float,
    min_points: int,
    threshold: Threshold | None,
) -> Candidate:
    """Rules 2-4: the candidate with its id and ``same_regression`` verdict (always passed: a
    regression seen before is still listed, under its first id)."""
    t = candidate.change_time_s
    previous = _nearest_known(known, t, gap_s)
    if previous is not None:
        return _seen_before(candidate, previous, "", {})
    earlier = [r for r in known if r.change_time_s < t]
    if earlier:
        evidence = level_since_known(candidate, earlier[-1].change_time_s, alpha, min_points)
        if not evidence["significant"]:
            reason = "its level is not significantly above the level since the known change"
            return _seen_before(candidate, earlier[-1], reason, evidence)
        if not evidence["known_step_significant"]:
            reason = "one change explains the data: the level before its change point is no"
            reason += " different from the level before the known change"
            return _seen_before(candidate, earlier[-1], reason, evidence)
        level = evidence["level_since_known"]
        assert isinstance(level, float)  # significant: there are points since the known change
        rebased = replace(candidate, mean_before=level)
        if threshold is not None:
            size = threshold_verdict(rebased, threshold)
            evidence["measured_since_known"] = size.numbers["measured"]
            if not size.passed:
                reason = "its rise above the level since the known change is below the threshold"
                return _seen_before(candidate, earlier[-1], reason, evidence)
        rid = regression_id(candidate.series_id, candidate.detector, t)
        numbers = {"regression_id": rid, "seen_before": False, **evidence}
        numbers["window_mean_before"] = candidate.mean_before
        verdict = Verdict(
            STAGE,
            True,
            f"new regression: its level is significantly above the level since "
            f"{earlier[-1].id} (Mann-Whitney p={evidence['p_value']:.3g} < {alpha})",
            numbers,
        )
        return replace(rebased, regression_id=rid).with_verdict(verdict)
    later = [r for r in known if r.change_time_s > t]
    if later:
        fit = step_fits(candidate, later[0].change_time_s)
        if fit["sse_known"] <= fit["sse_own"]:
            reason = "a step at the known change fits its points at least as well as its own"
            return _seen_before(candidate, later[0], reason, fit)
    rid = regression_id(candidate.series_id, candidate.detector, t)
    return replace(candidate, regression_id=rid).with_verdict(
        Verdict(STAGE, True, "new regression", {"regression_id": rid, "seen_before": False})
    )


def _seen_before(
    candidate: Candidate, previous: KnownRegression, why: str, numbers: Mapping[str, object]
) -> Candidate:
    rid = previous.id
    reason = f"seen before as {rid}: {why}" if why else f"seen before as {rid}"
    verdict = Verdict(
        STAGE,
        True,
        reason,
        {
            "regression_id": rid,
            "seen_before": True,
            "known_change_time": previous.change_time_s,
            **numbers,
        },
    )
    return replace(candidate, regression_id=rid).with_verdict(verdict)


def level_since_known(
    candidate: Candidate, known_change_s: float, alpha: float, min_points: int
) -> dict[str, object]:
    """Rule 3's evidence, on oriented values: the candidate's points from the known change to its
    own change point (all its points before the change when the known change is older than its
    windows) against its points from the change point on (``significant``: one-sided
    Mann–Whitney, after > since, p < ``alpha``, ``min_points`` on each side); and those points
    against the candidate's points before the known change (``known_step_significant``: since >
    before, p < ``alpha``; true when fewer than ``min_points`` points before it are in the
    candidate's windows, as then nothing disputes the known step)."""
    times, values = candidate.times_s, candidate.values
    k = int(candidate.change_index)
    since = values[:k][times[:k] >= known_change_s]
    prior = values[:k][times[:k] < known_change_s]
    after = values[k:]
    numbers: dict[str, object] = {
        "known_change_time": known_change_s,
        "points_since_known": int(since.size),
        "points_after": int(after.size),
        "level_since_known": float(since.mean()) if since.size else None,
        "level_after": float(after.mean()) if after.size else None,
        "test": "mann-whitney (one-sided)",
        "p_value": None,
        "alpha": alpha,
        "significant": False,
        "points_before_known": int(prior.size),
        "level_before_known": float(prior.mean()) if prior.size else None,
        "p_value_known_step": None,
        "known_step_significant": True,
    }
    if since.size < min_points or after.size < min_points:
        return numbers
    from scipy.stats import mannwhitneyu  # scipy.stats costs ~0.3 s to import: not for `explain`

    p = float(mannwhitneyu(after, since, alternative="greater").pvalue)
    numbers["p_value"] = p
    numbers["significant"] = bool(p < alpha and after.mean() > since.mean())
    if prior.size >= min_points:
        p_known = float(mannwhitneyu(since, prior, alternative="greater").pvalue)
        numbers["p_value_known_step"] = p_known
        numbers["known_step_significant"] = bool(p_known < alpha)
    return numbers


def step_fits(candidate: Candidate, known_change_s: float) -> dict[str, float]:
    """Rule 4's evidence: the sum of squared errors of one step at the candidate's change point
    and of one step at the known change, over the candidate's points."""
    values = candidate.values
    at_known = int(np.searchsorted(candidate.times_s, known_change_s, "left"))
    return {
        "known_change_time": known_change_s,
        "sse_own": _step_sse(values, int(candidate.change_index)),
        "sse_known": _step_sse(values, at_known),
    }


def _step_sse(values: np.ndarray, k: int) -> float:
    parts = [values[:k], values[k:]]
    return float(sum(((p - p.mean()) ** 2).sum() for p in parts if p.size))


def _nearest(candidates: list[Candidate], time_s: float, gap_s: float) -> Candidate | None:
    close = [c for c in candidates if abs(c.change_time_s - time_s) <= gap_s]
    return min(close, key=lambda c: abs(c.change_time_s - time_s), default=None)


def _nearest_known(
    known: list[KnownRegression], time_s: float, gap_s: float
) -> KnownRegression | None:
    times = [r.change_time_s for r in known]
    lo = bisect.bisect_left(times, time_s - gap_s)
    hi = bisect.bisect_right(times, time_s + gap_s)
    return min(
        known[lo:hi], key=lambda r: (abs(r.change_time_s - time_s), r.change_time_s), default=None
    )
