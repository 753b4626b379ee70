"""Detection then dedup over a profiled service with planted cascades, as `regbot run` does
them (threshold 0, no long-term detector): shared by the dedup-flow and evidence tests."""

from __future__ import annotations

from regbot.bot.dedup_context import build_dedup_context
from regbot.datasets.cascades import CascadeService
from regbot.detection.dedup import DedupResult, DedupSettings, deduplicate
from regbot.detection.dedup.same_regression import KnownRegression
from regbot.detection.dedup_context import Group
from regbot.detection.pipeline import DetectionResult, detect_in_windows
from regbot.detection.presets import Threshold, Windows, WorkloadSettings
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import DetectionSettings, LongTermSettings

HIGHER_IS_BETTER = frozenset({"throughput", "qps"})


def run_once(
    svc: CascadeService,
    known: tuple[KnownRegression, ...] | list[KnownRegression] = (),
    groups: tuple[Group, ...] | list[Group] = (),
) -> tuple[DetectionResult, DedupResult]:
    """One run over the service's last 47 buckets (36 analysis, 11 extended) after 552 of
    history, against the ``known`` regressions and ``groups`` of earlier runs."""
    start = svc.start_s
    bounds = WindowBounds(start, start + 552 * 600, start + 588 * 600, start + 599 * 600)
    windows = Windows(552 * 600, 36 * 600, 11 * 600)
    settings = DetectionSettings(
        workload=WorkloadSettings(Threshold("absolute", 0.0), windows, 3600),
        long_term=LongTermSettings(enabled=False),
    )
    result = detect_in_windows(svc.series, settings, bounds)
    context = build_dedup_context(result.reported, svc.series, svc.index, bounds, HIGHER_IS_BETTER)
    dedup = deduplicate(result.reported, context, list(known), list(groups), DedupSettings())
    return result, dedup
