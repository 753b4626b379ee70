"""SameRegressionMerger (FBDetect Table 3): one regression, one id, however many runs see it.

Successive runs analyse overlapping windows, so one change is found again and again, and the
short-term and long-term paths can both find it in one run. A candidate is the *same regression*
as a known one (from the state store) or as another candidate of this run when it is on the same
series and its change time is within ``gap_s`` of the other's (the nearest wins; ties: the earlier
known regression). It then takes that regression's id; otherwise it gets a fresh id from its
series, detector and change time (``regression_id``), so the same input always gives the same id.
Within a run, of two candidates that are the same regression the short-term one is kept (its
change point is the sharper estimate) and the other is merged into it. O(candidates · log known).
"""

from __future__ import annotations

import bisect
import hashlib
from collections import defaultdict
from dataclasses import dataclass, replace

from regbot.detection.model import Candidate, Verdict

STAGE = "same_regression"


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
    candidates: list[Candidate], known: list[KnownRegression], gap_s: float
) -> tuple[list[Candidate], list[Candidate]]:
    """(kept, merged): every candidate with its stable ``regression_id`` and a verdict; the
    merged ones are duplicates of a kept candidate of this run (the verdict names it)."""
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
        previous = _nearest_known(by_series[candidate.series_id], candidate.change_time_s, gap_s)
        if previous is not None:
            rid = previous.id
            verdict = Verdict(
                STAGE,
                True,
                f"seen before as {rid}",
                {
                    "regression_id": rid,
                    "seen_before": True,
                    "known_change_time": previous.change_time_s,
                },
            )
        else:
            rid = regression_id(candidate.series_id, candidate.detector, candidate.change_time_s)
            verdict = Verdict(
                STAGE, True, "new regression", {"regression_id": rid, "seen_before": False}
            )
        judged = replace(candidate, regression_id=rid).with_verdict(verdict)
        kept_by_series[candidate.series_id].append(judged)
        results[i] = (judged, True)
    kept = [results[i][0] for i in range(len(candidates)) if results[i][1]]
    merged = [results[i][0] for i in range(len(candidates)) if not results[i][1]]
    return kept, merged


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
