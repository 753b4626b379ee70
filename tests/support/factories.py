"""Builders of detection objects for the tests: candidates as the change-point stage hands them
on, and their windows.

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
