"""The detection pipeline's windows (FBDetect §5.1): which windows each series is judged in,
and whether a change has enough data around it to be judged yet.

Windows per series: every series gets the run's windows, widened where a window holds fewer than
``Windows.min_points`` of its points (``WindowBounds.for_series``): a per-build series (a few
points a day, irregular gaps) reaches further back, a dense series keeps FBDetect's windows.
Series sharing the same bounds are detected together. A point is a distinct timestamp: the
series readers average repeated measurements at one time into one point
(``profiles.series_files.normalise_points``), so a build measured five times counts once.

Waiting for data (``enough_data_verdict``): a change, short- or long-term, is judged only when
its history holds ``min_points.historical`` points and at least ``min_points.extended`` points
(``min_points.analysis`` without an extended window) follow it; otherwise it goes to
``filtered`` with the counts seen and needed, and a later run decides.

Complexity: O(series · log points) to plan; O(1) per candidate to check its data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regbot.detection.model import Candidate, Verdict
from regbot.detection.presets import Windows
from regbot.detection.series_batch import SeriesBatch, WindowBounds
from regbot.detection.stages import Stage
from regbot.profiles.model import Series

__all__ = [
    "WINDOW_NAMES",
    "WindowUse",
    "enough_data_verdict",
    "plan_windows",
    "window_search_ranges",
]

WINDOW_NAMES = ("historical", "analysis", "extended")


@dataclass(frozen=True, slots=True)
class WindowUse:
    """What the windows held in one run. ``points``: per window ("historical", "analysis",
    "extended"), the fewest and the most points a series had in it (series with no point in the
    windows at all are not counted; (0, 0) when there are none); ``widened_series``: how many
    series had a window reach further back; ``earliest``: the earliest edges any series used
    (the run's bounds when none was widened); ``min_points``: the minimum asked for."""

    min_points: tuple[int, int, int]
    points: dict[str, tuple[int, int]]
    widened_series: int
    earliest: WindowBounds
    seen_series: int = 0  # series with at least one point in their windows

    @staticmethod
    def merged(uses: list[WindowUse]) -> WindowUse:
        """What the windows held over several parts of one run's series (planned separately
        against the same run bounds): fewest and most points over the parts that saw a series,
        widened series summed, the earliest edges."""
        seen = [use for use in uses if use.seen_series]
        points = {
            name: (min(u.points[name][0] for u in seen), max(u.points[name][1] for u in seen))
            if seen
            else (0, 0)
            for name in WINDOW_NAMES
        }
        edges = [use.earliest for use in uses]
        earliest = WindowBounds(
            min(e.historical_start_s for e in edges),
            min(e.analysis_start_s for e in edges),
            min(e.extended_start_s for e in edges),
            edges[0].end_s,
        )
        return WindowUse(
            uses[0].min_points,
            points,
            sum(use.widened_series for use in uses),
            earliest,
            sum(use.seen_series for use in uses),
        )


def plan_windows(
    series: list[Series], windows: WindowBounds, settings: Windows
) -> tuple[list[tuple[WindowBounds, list[int]]], WindowUse]:
    """Each series' bounds (``WindowBounds.for_series``), as groups of series indices sharing
    bounds (the run's bounds first, then in order of first appearance), and what the windows
    held. Series with no point in their windows are in no group (nothing to detect). Series
    with one shared time axis are planned once. O(series · log points)."""
    groups: dict[WindowBounds, list[int]] = {windows: []}
    counts = np.zeros((len(series), 3), dtype=np.int64)
    cache: dict[int, tuple[WindowBounds, np.ndarray]] = {}
    for i, s in enumerate(series):
        key = id(s.timestamps_s)
        if key not in cache:
            times = np.asarray(s.timestamps_s, np.float64)
            bounds = windows.for_series(times, settings)
            edges = (bounds.historical_start_s, bounds.analysis_start_s, bounds.extended_start_s)
            at = np.searchsorted(times, edges, "left")
            end = np.searchsorted(times, bounds.end_s, "right")
            cache[key] = (bounds, np.diff(np.append(at, end)))
        bounds, held = cache[key]
        if held.any():
            groups.setdefault(bounds, []).append(i)
        counts[i] = held
    seen = counts.sum(axis=1) > 0
    points = {
        name: (int(counts[seen, j].min()), int(counts[seen, j].max())) if seen.any() else (0, 0)
        for j, name in enumerate(WINDOW_NAMES)
    }
    used = [b for b, members in groups.items() if members]
    earliest = WindowBounds(
        min([windows.historical_start_s] + [b.historical_start_s for b in used]),
        min([windows.analysis_start_s] + [b.analysis_start_s for b in used]),
        min([windows.extended_start_s] + [b.extended_start_s for b in used]),
        windows.end_s,
    )
    need = settings.min_points
    use = WindowUse(
        (need.historical, need.analysis, need.extended),
        points,
        sum(len(m) for b, m in groups.items() if b != windows),
        earliest,
        int(seen.sum()),
    )
    return [(b, m) for b, m in groups.items() if m], use


def enough_data_verdict(candidate: Candidate, settings: Windows) -> Verdict:
    """Waiting for data: the change needs ``min_points.historical`` points of history (its
    points before its analysis window) and ``min_points.extended`` points from the change on
    (``min_points.analysis`` when the workload has no extended window)."""
    need = settings.min_points
    history = int(np.searchsorted(candidate.times_s, candidate.windows.analysis_start_s, "left"))
    after = len(candidate.values) - int(candidate.change_index)
    need_after = need.extended if settings.extended_s > 0 else need.analysis
    numbers = {
        "points_before": history,
        "needed_before": need.historical,
        "points_after": after,
        "needed_after": need_after,
    }
    if history < need.historical:
        reason = f"waiting for data: {history} points of history, {need.historical} needed"
        return Verdict(Stage.ENOUGH_DATA, False, reason, numbers)
    if after < need_after:
        reason = f"waiting for data: {after} points after the change, {need_after} needed"
        return Verdict(Stage.ENOUGH_DATA, False, reason, numbers)
    return Verdict(Stage.ENOUGH_DATA, True, "enough data before and after the change", numbers)


def window_search_ranges(
    batch: SeriesBatch, windows: WindowBounds
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the index range a change point may take: its first point in the analysis
    window up to (not including) its first point in the extended window."""
    start = (batch.times_s < windows.analysis_start_s).sum(axis=1)
    end = (batch.times_s < windows.extended_start_s).sum(axis=1)
    return start.astype(np.int64), end.astype(np.int64)
