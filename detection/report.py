"""The JSON report of SPEC §4, built from a detection result as plain data (no I/O here)."""

from __future__ import annotations

import hashlib
import math

from regbot.detection.model import Candidate
from regbot.detection.pipeline import DetectionResult


def regression_id(series_id: str, detector: str, change_time_s: float) -> str:
    """Stable id: the same series, detector and change time give the same id on every re-run."""
    digest = hashlib.sha1(f"{series_id}\n{detector}\n{change_time_s:.3f}".encode()).hexdigest()
    return f"r-{digest[:12]}"


def _json_number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def regression_entry(candidate: Candidate) -> dict[str, object]:
    """One regression in SPEC §4 form; before/after/delta are in the series' own direction and
    unit (a throughput drop has a negative delta), ``relative_delta`` = delta / |before|."""
    before = candidate.sign * candidate.mean_before
    after = candidate.sign * candidate.mean_after
    delta = after - before
    rid = regression_id(candidate.series_id, candidate.detector, candidate.change_time_s)
    return {
        "id": rid,
        "series": candidate.series_id,
        "kind": candidate.kind,
        "detector": candidate.detector,
        "change_time": candidate.change_time_s,
        "before": before,
        "after": after,
        "delta": delta,
        "relative_delta": _json_number(delta / abs(before)) if before else None,
        "p_value": _json_number(candidate.p_value),
        "group": rid,
        "duplicates": [],
        "verdicts": {
            stage: {"passed": v.passed, "reason": v.reason, **dict(v.numbers)}
            for stage, v in candidate.verdicts.items()
        },
        "candidates": [],
        "confidence": "none",
    }


def build_report(result: DetectionResult, version: str) -> dict[str, object]:
    """SPEC §4. Reported regressions sorted by change time then series; filtered ones go in the
    extra ``filtered`` list with the verdicts that removed them (for ``regbot explain``)."""
    w = result.windows
    order = sorted(result.reported, key=lambda c: (c.change_time_s, c.series_id))
    return {
        "regbot_version": version,
        "window": {
            "historical": [w.historical_start_s, w.analysis_start_s],
            "analysis": [w.analysis_start_s, w.extended_start_s],
            "extended": [w.extended_start_s, w.end_s],
        },
        "funnel": dict(result.funnel),
        "regressions": [regression_entry(c) for c in order],
        "filtered": [
            regression_entry(c)
            for c in sorted(result.filtered, key=lambda c: (c.change_time_s, c.series_id))
        ],
    }
