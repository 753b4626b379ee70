"""Workload settings and FBDetect's Table 1 workloads as named presets (`preset: frontfaas-small`).

The workload types belong to detection (the pipeline reads them); ``regbot.bot.config`` builds
them from ``regbot.yml`` and re-exports them.

Table 1 of the FBDetect paper (SOSP '24) gives, per workload, a detection threshold, a re-run
interval and three windows. Conversions: percentages become shares (3% -> 0.03, 0.005% ->
0.00005); the first nine rows are absolute thresholds on gCPU (a share), the three CT rows are
relative (5% -> 0.05); "N/A" extended windows are 0 seconds (no went-away check after the
analysis window).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MINUTE_S = 60.0
HOUR_S = 3600.0
DAY_S = 86400.0

ThresholdMode = Literal["absolute", "relative"]


@dataclass(frozen=True, slots=True)
class Threshold:
    """The smallest change reported: ``absolute`` compares ``after - before`` in the series'
    unit (a gCPU share for gCPU series); ``relative`` compares ``(after - before) / before``."""

    mode: ThresholdMode
    value: float


@dataclass(frozen=True, slots=True)
class MinPoints:
    """The fewest points (distinct timestamps) each window holds for a series.

    A window that holds fewer points than this over its duration reaches further back for that
    series, so that per-build series (one point per CI run, a few a day, irregular gaps) are
    judged on enough data. They also decide when a change is reported at all: a change needs
    ``historical`` points of history and, after it, ``extended`` points (``analysis`` points
    when the workload has no extended window); with fewer it waits for data (see
    ``regbot.detection.pipeline``).

    Defaults (12 / 6 / 6): a dense fleet (10-minute points: 1,440 / 24 / 36 in 10d / 4h / 6h)
    never needs widening, so its windows are FBDetect's; 6 points after a change are what
    the change-point test needs to tell a lasting step from a one- or two-point spike, and 12
    points of history (two post-change lengths) give a baseline whose noise can be estimated;
    a short profiling session (a dozen one-minute buckets before a deploy) is still judged.
    """

    historical: int = 12
    analysis: int = 6
    extended: int = 6


@dataclass(frozen=True, slots=True)
class Windows:
    """FBDetect's three windows, in seconds, oldest first: the historical window is the
    baseline, a change point must fall in the analysis window, and the extended window after it
    shows whether the change stayed (0 = no extended window). ``min_points``: the fewest
    points each window holds per series (a window short of them reaches further back)."""

    historical_s: float
    analysis_s: float
    extended_s: float
    min_points: MinPoints = MinPoints()


@dataclass(frozen=True, slots=True)
class WorkloadSettings:
    """One detection configuration (a row of FBDetect Table 1); ``preset`` names the row it
    started from, if any."""

    threshold: Threshold
    windows: Windows
    rerun_interval_s: float
    preset: str | None = None


# FBDetect Table 1: name, threshold mode and value, re-run interval, historical, analysis and
# extended window.
_TABLE_1: tuple[tuple[str, ThresholdMode, float, float, float, float, float], ...] = (
    ("frontfaas-large", "absolute", 0.03, 30 * MINUTE_S, 10 * DAY_S, 3 * HOUR_S, 0.0),
    ("frontfaas-small", "absolute", 0.00005, 2 * HOUR_S, 10 * DAY_S, 4 * HOUR_S, 6 * HOUR_S),
    ("pythonfaas-large", "absolute", 0.005, 1 * HOUR_S, 10 * DAY_S, 6 * HOUR_S, 0.0),
    ("pythonfaas-small", "absolute", 0.0003, 4 * HOUR_S, 10 * DAY_S, 6 * HOUR_S, 6 * HOUR_S),
    ("tao-frontfaas", "absolute", 0.0005, 2 * HOUR_S, 10 * DAY_S, 4 * HOUR_S, 1 * DAY_S),
    ("tao-non-frontfaas", "absolute", 0.0005, 1 * HOUR_S, 10 * DAY_S, 1 * DAY_S, 6 * HOUR_S),
    ("adserving-short", "absolute", 0.002, 6 * HOUR_S, 10 * DAY_S, 1 * DAY_S, 12 * HOUR_S),
    ("adserving-long", "absolute", 0.001, 1 * DAY_S, 16 * DAY_S, 9 * DAY_S, 0.0),
    ("invoicer-short", "absolute", 0.005, 12 * HOUR_S, 14 * DAY_S, 1 * DAY_S, 1 * DAY_S),
    ("ct-supply-short", "relative", 0.05, 12 * HOUR_S, 7 * DAY_S, 1 * DAY_S, 1 * DAY_S),
    ("ct-supply-long", "relative", 0.05, 12 * HOUR_S, 10 * DAY_S, 7 * DAY_S, 1 * DAY_S),
    ("ct-demand", "relative", 0.05, 12 * HOUR_S, 7 * DAY_S, 1 * DAY_S, 0.0),
)

WORKLOAD_PRESETS: dict[str, WorkloadSettings] = {
    name: WorkloadSettings(
        Threshold(mode, threshold), Windows(historical_s, analysis_s, extended_s), rerun_s, name
    )
    for name, mode, threshold, rerun_s, historical_s, analysis_s, extended_s in _TABLE_1
}

# The workload used when none is named: the SPEC §5 example (absolute 0.0001 = 0.01% gCPU,
# windows 10d / 4h / 6h). Its windows are FrontFaaS (small)'s, so its re-run interval is that
# row's 2 hours; the threshold is twice that row's 0.005%, a safer start for services sampled
# less densely than Meta's fleet.
DEFAULT_WORKLOAD = WorkloadSettings(
    Threshold("absolute", 0.0001), Windows(10 * DAY_S, 4 * HOUR_S, 6 * HOUR_S), 2 * HOUR_S
)
