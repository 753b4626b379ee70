"""The report of a fleet detected in partitions: detection on the executor, the series dedup
asks for gathered (or, for series read whole, taken as they are), dedup against the state when
there is one, the SPEC §4 report. What `regbot detect` runs, and what the scale benchmark runs
on simulated partitions."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from regbot import __version__
from regbot.bot.dedup_context import (
    build_dedup_context,
    dedup_series_needed,
    deduplicate_against_state,
    open_profile_index,
)
from regbot.bot.execution.executors import Executor
from regbot.bot.execution.fleet_detection import PartitionSource, detect_fleet, gather_series
from regbot.bot.views.progress import RunProgress
from regbot.detection.report import build_report
from regbot.detection.stage_settings import DetectionSettings
from regbot.profiles.series_partitions import SeriesPartition, SeriesSurvey
from regbot.report.model import Report

if TYPE_CHECKING:
    from regbot.bot.config import Config
    from regbot.bot.state import StateStore

__all__ = ["fleet_report"]


def fleet_report(
    partitions: Sequence[PartitionSource],
    survey: SeriesSurvey,
    config: Config,
    settings: DetectionSettings,
    now_s: float | None,
    executor: Executor,
    progress: RunProgress,
    state: StateStore | None = None,
) -> Report:
    """Detect, deduplicate (against ``state`` when given, recording the run there) and
    report (module docstring)."""
    done = progress.stage(f"detecting ({executor.name})", len(partitions))
    result = detect_fleet(partitions, survey, settings, now_s, executor, done)
    index = open_profile_index(config.sources.profiles)
    if survey.streamed and not result.reported:
        series = []  # nothing to deduplicate: no need to read the fleet again
    elif survey.streamed:
        wanted = dedup_series_needed(result.reported, survey.ids, index, result.windows, config)
        done = progress.stage("gathering series for dedup", len(partitions))
        series = gather_series(partitions, wanted, executor, done)
    else:
        series = [s for p in partitions if isinstance(p, SeriesPartition) for s in p.series]
    progress.stage("deduplicating")
    context = build_dedup_context(
        result.reported,
        series,
        index,
        result.windows,
        config.higher_is_better,
        series_ids=survey.ids if survey.streamed else (),
    )
    if state is None:
        from regbot.detection.dedup import deduplicate  # scikit-learn: only when dedup runs

        dedup = deduplicate(result.reported, context, [], [], config.dedup, config.cost_shift)
        return build_report(result, __version__, dedup)
    dedup = deduplicate_against_state(
        result.reported, context, state, result.windows.historical_start_s, config
    )
    report = build_report(result, __version__, dedup)
    state.record_run(time.time(), report, dedup.groups)
    return report
