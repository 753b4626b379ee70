"""Detection of a fleet in partitions (``regbot detect`` at any size): the per-series stages run
where the executor puts them, each partition loaded by its own worker; the run-wide steps (the
discovery cut, the short-term filters, the long-term cut) and everything after them see only
the candidates.

1. ``detect_fleet``: one task per partition (``detect_partition`` over the series the
   partition loads); the findings come back to this process and ``combine_findings`` makes
   the run's result, the same as ``detect_in_windows`` over all the series in one process.
2. ``gather_series``: one task per partition returning only the series asked for (the dedup
   stages' candidates, cost-domain members and fleet samples), so the dedup context holds a
   few thousand series, not the fleet.

Windows end at ``--now``, else at the last timestamp the survey saw; when the partitions find
that the data with values ends earlier (rows with empty values at the end), detection runs
again with that end, so the result is the one reading everything at once gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from regbot.bot.execution.executors import Executor
from regbot.detection.pipeline import (
    DetectionResult,
    PartitionFindings,
    combine_findings,
    detect_partition,
)
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import DetectionSettings
from regbot.profiles.model import Series, last_time_s
from regbot.profiles.series_partitions import SeriesSurvey

__all__ = [
    "PartitionSource",
    "detect_fleet",
    "detect_in_windows_on",
    "gather_series",
    "survey_partitions",
]

Done = Callable[[int], None]


class PartitionSource(Protocol):
    """A part of the run's series that a worker loads itself (a file's row ranges, series in
    memory, a simulated partition); picklable."""

    def load(self) -> list[Series]: ...


@dataclass(frozen=True, slots=True)
class _DetectJob:
    partition: PartitionSource
    settings: DetectionSettings
    windows: WindowBounds


@dataclass(frozen=True, slots=True)
class _GatherJob:
    partition: PartitionSource
    wanted: frozenset[str]


def _detect(job: _DetectJob) -> tuple[PartitionFindings, float | None]:
    series = job.partition.load()
    last = last_time_s(series)
    return detect_partition(series, job.settings, job.windows), last


def _gather(job: _GatherJob) -> list[Series]:
    return [s for s in job.partition.load() if s.id in job.wanted]


def detect_fleet(
    partitions: Sequence[PartitionSource],
    survey: SeriesSurvey,
    settings: DetectionSettings,
    now_s: float | None,
    executor: Executor,
    on_done: Done | None = None,
) -> DetectionResult:
    """The run's detection over ``partitions`` with the windows ending at ``now_s``, else at the
    end of the data (module docstring)."""
    end_s = now_s if now_s is not None else (survey.last_time_s or 0.0)
    while True:
        windows = WindowBounds.ending_at(end_s, settings.workload.windows)
        result, last = _detect_on(partitions, settings, windows, executor, on_done)
        if now_s is None and last is not None and last < end_s:
            end_s = last  # the rows after it had no values
            continue
        return result


def detect_in_windows_on(
    partitions: Sequence[PartitionSource],
    settings: DetectionSettings,
    windows: WindowBounds,
    executor: Executor,
    on_done: Done | None = None,
) -> DetectionResult:
    """The run's detection over ``partitions`` in given ``windows`` (`regbot run`'s, from the
    deploy time): ``detect_in_windows`` with the partitions on the executor."""
    return _detect_on(partitions, settings, windows, executor, on_done)[0]


def _detect_on(
    partitions: Sequence[PartitionSource],
    settings: DetectionSettings,
    windows: WindowBounds,
    executor: Executor,
    on_done: Done | None,
) -> tuple[DetectionResult, float | None]:
    """Partitions in other processes use one thread each (the executor's workers are the
    parallelism); the combined result, and the last timestamp with a value."""
    inner = settings if executor.name == "local" else replace(settings, workers=1)
    jobs = [_DetectJob(p, inner, windows) for p in partitions]
    found = executor.map(_detect, jobs, on_done)
    last = max((t for _, t in found if t is not None), default=None)
    return combine_findings([f for f, _ in found], settings, windows), last


def gather_series(
    partitions: Sequence[PartitionSource],
    wanted: set[str],
    executor: Executor,
    on_done: Done | None = None,
) -> list[Series]:
    """The series named in ``wanted``, in the run's order, each loaded by its partition's
    worker."""
    jobs = [_GatherJob(p, frozenset(wanted)) for p in partitions]
    found = executor.map(_gather, jobs, on_done)
    return [s for part in found for s in part]


def _survey(partition: PartitionSource) -> tuple[list[str], float | None]:
    series = partition.load()
    last = last_time_s(series)
    return [s.id for s in series], last


def survey_partitions(
    partitions: Sequence[PartitionSource], executor: Executor, on_done: Done | None = None
) -> SeriesSurvey:
    """The survey of partitions that only their workers can load (a simulated fleet): every id
    in order and the last timestamp, one task per partition."""
    found = executor.map(_survey, list(partitions), on_done)
    ids = [i for part, _ in found for i in part]
    last = max((t for _, t in found if t is not None), default=None)
    return SeriesSurvey(ids, last, streamed=True)
