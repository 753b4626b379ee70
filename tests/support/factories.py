"""Builders of detection objects for the tests: candidates as the change-point stage hands them
on, their windows, and SPEC §4 entries and reports as a run writes them.

Plain functions, imported as ``from factories import build_candidate`` (``tests/support`` is on
``pythonpath``); a test module wraps them with its own axis, windows and statistics.
Index convention (``detection/model.py``): ``change_index`` is the first point after the change,
so ``values[:change_index]`` is before and ``values[change_index:]`` after.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from regbot.detection.model import Candidate, Verdict
from regbot.detection.series_batch import WindowBounds
from regbot.report import Funnel, Report, Windows, WindowSection, read_regression

SUSPECT_SHA = "ab" * 20


def build_candidate(
    series_id: str,
    values: np.ndarray,
    change_index: int,
    *,
    times: np.ndarray,
    windows: WindowBounds,
    kind: str = "gcpu",
    sign: float = 1.0,
    llr: float = 0.0,
    p_value: float = 0.0,
    verdicts: Mapping[str, Verdict] | None = None,
) -> Candidate:
    """A candidate changing at ``times[change_index]``, its means taken from ``values`` either
    side of the change (0.0 for an empty side; a change index past the end takes the last time,
    for the tests of too few points)."""
    before, after = values[:change_index], values[change_index:]
    return Candidate(
        series_id=series_id,
        kind=kind,
        times_s=times,
        values=values,
        sign=sign,
        change_index=change_index,
        change_time_s=float(times[min(change_index, len(times) - 1)]),
        mean_before=float(before.mean()) if before.size else 0.0,
        mean_after=float(after.mean()) if after.size else 0.0,
        llr=llr,
        p_value=p_value,
        windows=windows,
        verdicts=dict(verdicts or {}),
    )


def grid_windows(
    t0_s: float, step_s: float, n_hist: int, n_analysis: int, end_s: float
) -> WindowBounds:
    """Windows on a grid ``step_s`` apart from ``t0_s``: historical ``[0, n_hist)`` points,
    analysis ``[n_hist, n_hist + n_analysis)``, extended from there to ``end_s``."""
    return WindowBounds(t0_s, t0_s + n_hist * step_s, t0_s + (n_hist + n_analysis) * step_s, end_s)


def grid_candidate(
    values: np.ndarray,
    change: int,
    *,
    n_hist: int,
    n_analysis: int,
    bucket_s: float,
    t0_s: float,
    series_id: str = "gcpu:Feed.rank",
    kind: str = "gcpu",
) -> Candidate:
    """Points ``bucket_s`` apart from ``t0_s``: historical ``[0, n_hist)``, analysis
    ``[n_hist, n_hist + n_analysis)``, extended to the last point."""
    values = np.asarray(values, dtype=np.float64)
    times = t0_s + bucket_s * np.arange(values.size)
    windows = grid_windows(t0_s, bucket_s, n_hist, n_analysis, float(times[-1]))
    return build_candidate(series_id, values, change, times=times, windows=windows, kind=kind)


def regression_json(
    rid: str = "r-000000000001",
    *,
    confidence: str = "high",
    delta: float | None = 0.02,
    series: str = "gcpu:compute (app/service.py)",
    title: str = "Use more rounds (#9)",
    **extra: object,
) -> dict:
    """One SPEC §4 regression entry as JSON: a gCPU rise of ``delta`` over 0.10, with one
    suspect (PR 9) unless ``confidence`` is none; ``extra`` adds or replaces fields."""
    before = 0.10
    return {
        "id": rid,
        "series": series,
        "kind": "gcpu",
        "detector": "short-term",
        "change_time": 1_800_000_000.0,
        "before": before,
        "after": None if delta is None else before + delta,
        "delta": delta,
        "relative_delta": None if delta is None else delta / before,
        "p_value": 1e-6,
        "group": rid,
        "duplicates": [],
        "verdicts": {},
        "candidates": []
        if confidence == "none"
        else [
            {
                "commit": SUSPECT_SHA,
                "pull_request": 9,
                "title": title,
                "score": 0.8,
                "parts": {"gcpu_attribution": 1.0, "text_similarity": 0.2, "correlation": 0.0},
            }
        ],
        "confidence": confidence,
        **extra,
    }


def build_report(regressions=(), missing_baseline=(), analysis=(0.0, 0.0)) -> Report:
    """A run's report holding SPEC §4 entries given as JSON (read as ``regbot run`` reads
    stored ones)."""
    return Report(
        regbot_version="test",
        window=WindowSection(Windows((0.0, analysis[0]), analysis, (analysis[1], analysis[1]))),
        funnel=Funnel(),
        regressions=tuple(read_regression(e) for e in regressions),
        missing_baseline=tuple(missing_baseline),
    )
