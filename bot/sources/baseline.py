"""Missing baselines: the sources and series of a run that had too little history to judge.

A change can only be called a regression against a baseline, the historical window before the
deploy. Where that window is (nearly) empty, "no regression found" means "not looked at", and
the gate must say so instead of passing silently (issue 6: default neutral with a warning).

The rule, judged on the series of the run as detection saw them (after ``--now``):

* **A configured source that returned no series** (``RunSeries.counts``: 0, or absent because
  nothing was found, e.g. an empty profile folder) is missing, whatever else the run had.
* **gCPU series from profiles** are one source: the sample store's buckets are their common time
  axis, so the profiles source is missing when the store has fewer than ``min_points`` buckets
  in the historical window (each gCPU series is not listed: they all lack the same history).
  Pyroscope's series are judged the same way, by the buckets it answered.
* **Every other series** (series files, Prometheus) is judged on its own: missing when it has
  fewer than ``min_points`` points in the historical window, including none at all.

``min_points`` is the change-point detector's minimum of points on each side of a change
(:class:`~regbot.detection.stage_settings.ChangePointSettings`, 3): with fewer points before the
deploy the likelihood-ratio test has no "before" segment of its own and its verdict would rest on
the analysis window alone. A larger share of the window's expected points (e.g. 10%) was not
chosen: profile collection is often intermittent (a few recordings a day), and a partial but
usable history must not hold every deploy's gate at neutral.

The historical window is ``[historical_start_s, analysis_start_s)`` (half-open, as everywhere
in detection).

:func:`missing_baselines_of_run` applies the rule to one ``regbot run``: the profiles' gCPU series
are judged as one source by the sample store's buckets (those up to ``--now``), every other series
on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from regbot.bot.config import SourceSettings
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import ChangePointSettings
from regbot.profiles.model import Series
from regbot.profiles.sample_index import SampleIndex
from regbot.report.model import MissingBaseline

__all__ = [
    "MIN_BASELINE_POINTS",
    "PROFILES_SOURCE",
    "MissingBaseline",
    "configured_source_names",
    "find_missing_baselines",
    "missing_baselines_of_run",
    "missing_names",
    "points_in_history",
]

MIN_BASELINE_POINTS = ChangePointSettings().min_points_each_side
PROFILES_SOURCE = "profiles"


def points_in_history(timestamps_s: np.ndarray, windows: WindowBounds) -> int:
    """How many of ``timestamps_s`` lie in the historical window."""
    t = np.asarray(timestamps_s, np.float64)
    return int(np.count_nonzero((t >= windows.historical_start_s) & (t < windows.analysis_start_s)))


def _too_few(points: int, needed: int, what: str) -> str:
    if points == 0:
        return f"no {what} in the historical window (needs {needed})"
    return f"{points} {what} in the historical window (needs {needed})"


def find_missing_baselines(
    configured: Iterable[str],
    counts: Mapping[str, int],
    series: Sequence[Series],
    windows: WindowBounds,
    *,
    profile_buckets_s: np.ndarray | None = None,
    min_points: int = MIN_BASELINE_POINTS,
) -> list[MissingBaseline]:
    """The missing baselines of a run (module docstring): ``configured`` names the configured
    sources (``profiles``, ``series``, ``prometheus``), ``counts`` how many series each gave,
    ``series`` the series judged one by one (everything but the gCPU series of profiles), and
    ``profile_buckets_s`` the sample store's bucket times (None without a store). Sources come
    first in the order configured, then series by id."""
    if min_points < 1:
        raise ValueError("min_points must be at least 1")
    missing: list[MissingBaseline] = []
    for source in configured:
        if counts.get(source, 0) == 0:
            missing.append(
                MissingBaseline("source", source, "the source returned no series", None, min_points)
            )
        elif source in (PROFILES_SOURCE, "pyroscope") and profile_buckets_s is not None:
            buckets = points_in_history(profile_buckets_s, windows)
            if buckets < min_points:
                missing.append(
                    MissingBaseline(
                        "source",
                        source,
                        _too_few(buckets, min_points, "profile buckets"),
                        buckets,
                        min_points,
                    )
                )
    for s in sorted(series, key=lambda s: s.id):
        points = points_in_history(s.timestamps_s, windows)
        if points < min_points:
            missing.append(
                MissingBaseline(
                    "series", s.id, _too_few(points, min_points, "points"), points, min_points
                )
            )
    return missing


def configured_source_names(sources: SourceSettings) -> list[str]:
    """The names of the configured sources (``profiles``, ``series``, ``prometheus``,
    ``pyroscope``), in that order; a scrape store counts as profiles (unless Pyroscope gives
    the stacks)."""
    return [
        name
        for name, on in (
            (
                "profiles",
                bool(sources.profiles) or (sources.scrape is not None and not sources.pyroscope),
            ),
            ("series", bool(sources.series)),
            ("prometheus", sources.prometheus is not None),
            ("pyroscope", sources.pyroscope is not None),
        )
        if on
    ]


def missing_baselines_of_run(
    configured: Iterable[str],
    counts: Mapping[str, int],
    series: Sequence[Series],
    windows: WindowBounds,
    *,
    index: SampleIndex | None,
    now_s: float | None,
) -> list[MissingBaseline]:
    """The missing baselines of one run's ``series`` (as detection saw them): the profiles' gCPU
    series judged as one source by the sample store's buckets up to ``now_s`` (``index`` is the
    store, None without one), every other series on its own (:func:`find_missing_baselines`)."""
    buckets = None
    profile_ids: set[str] = set()
    if index is not None:
        buckets = np.asarray(index.bucket_times_s, np.float64)
        if now_s is not None:
            buckets = buckets[buckets <= now_s]
        profile_ids = {f"gcpu:{name}" for name in index.subroutines}
    judged = [s for s in series if not (s.kind == "gcpu" and s.id in profile_ids)]
    return find_missing_baselines(configured, counts, judged, windows, profile_buckets_s=buckets)


def missing_names(missing: Iterable[MissingBaseline]) -> list[str]:
    """The report's missing baselines as one line each, ``source profiles: …``."""
    return [f"{m.scope} {m.name}: {m.reason}" for m in missing]
