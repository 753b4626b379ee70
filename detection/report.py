"""The JSON report of SPEC §4, built from a detection result as plain data (no I/O here)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from regbot.detection.model import Candidate
from regbot.detection.pipeline import DetectionResult
from regbot.detection.window_plan import WINDOW_NAMES
from regbot.detection.ratios import relative_change
from regbot.detection.dedup.same_regression import regression_id

if TYPE_CHECKING:
    from regbot.detection.dedup import DedupResult

__all__ = ["build_report", "regression_entry", "regression_id"]


def _json_number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def regression_entry(
    candidate: Candidate, group: str | None = None, duplicates: list[str] | None = None
) -> dict[str, object]:
    """One regression in SPEC §4 form; before/after/delta are in the series' own direction and
    unit (a throughput drop has a negative delta), ``relative_delta`` = delta / |before|, null
    where ``before`` is zero or near it (``ratios.relative_change``: a new cost).
    Beside SPEC §4: ``change_time_interval`` [first, last] in epoch seconds, the points the
    change may have come at (``detection/change_time.py``: the deploy lies after the point
    before ``first`` and at or before ``last``); null when the detector gives none (long-term)."""
    interval = candidate.change_interval_s
    before = candidate.sign * candidate.mean_before
    after = candidate.sign * candidate.mean_after
    delta = after - before
    rid = candidate.regression_id or regression_id(
        candidate.series_id, candidate.detector, candidate.change_time_s
    )
    return {
        "id": rid,
        "series": candidate.series_id,
        "kind": candidate.kind,
        "detector": candidate.detector,
        "change_time": candidate.change_time_s,
        "change_time_interval": None if interval is None else [interval[0], interval[1]],
        "before": _json_number(before),
        "after": _json_number(after),
        "delta": _json_number(delta),
        "relative_delta": relative_change(before, delta),
        "p_value": _json_number(candidate.p_value),
        "group": group or rid,
        "duplicates": list(duplicates or []),
        "verdicts": {
            stage: {"passed": v.passed, "reason": v.reason, **dict(v.numbers)}
            for stage, v in candidate.verdicts.items()
        },
        "candidates": [],
        "confidence": "none",
    }


def _order(candidates: list[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (c.change_time_s, c.series_id, c.detector))


def window_section(result: DetectionResult) -> dict[str, object]:
    """SPEC §4's ``window`` (the run's nominal bounds) and, beside it, what was used: the
    ``min_points`` asked for, per window the fewest and most ``points`` a series held,
    ``widened_series`` (how many series reached further back for enough points) and
    ``earliest``: the earliest bounds any series used, in the SPEC shape."""
    w = result.windows
    section: dict[str, object] = {
        "historical": [w.historical_start_s, w.analysis_start_s],
        "analysis": [w.analysis_start_s, w.extended_start_s],
        "extended": [w.extended_start_s, w.end_s],
    }
    use = result.window_use
    if use is not None:
        e = use.earliest
        section["min_points"] = dict(zip(WINDOW_NAMES, use.min_points))
        section["points"] = {name: list(use.points[name]) for name in WINDOW_NAMES}
        section["widened_series"] = use.widened_series
        section["earliest"] = {
            "historical": [e.historical_start_s, e.analysis_start_s],
            "analysis": [e.analysis_start_s, e.extended_start_s],
            "extended": [e.extended_start_s, e.end_s],
        }
    return section


def build_report(
    result: DetectionResult, version: str, dedup: DedupResult | None = None
) -> dict[str, object]:
    """SPEC §4. Only representatives are listed (one per dedup group touched in this run); the
    candidates a filter or a dedup stage removed go in the extra ``filtered`` list with the
    verdicts that removed them (for ``regbot explain``)."""
    funnel = dict(result.funnel)
    if dedup is None:
        listed, removed, group_of, duplicates = result.reported, result.filtered, {}, {}
    else:
        funnel.update(dedup.funnel)
        listed, removed = dedup.representatives, result.filtered + dedup.removed
        group_of, duplicates = dedup.group_of, dedup.duplicates

    def entry(c: Candidate) -> dict[str, object]:
        rid = c.regression_id
        return regression_entry(c, group_of.get(rid), duplicates.get(rid))

    return {
        "regbot_version": version,
        "window": window_section(result),
        "funnel": funnel,
        "regressions": [entry(c) for c in _order(listed)],
        "filtered": [entry(c) for c in _order(removed)],
    }
