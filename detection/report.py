"""The SPEC §4 report (:class:`regbot.report.Report`) built from a detection result and its
dedup, as plain data (no I/O here). O(candidates · verdict numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regbot.detection.dedup.same_regression import regression_id
from regbot.detection.model import Candidate
from regbot.detection.pipeline import DetectionResult
from regbot.detection.ratios import relative_change
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stages import DEDUP_STAGES, Stage
from regbot.detection.window_plan import WINDOW_NAMES
from regbot.report.model import (
    Funnel,
    RegressionEntry,
    Report,
    VerdictEntry,
    Windows,
    WindowSection,
    WindowUseSection,
)
from regbot.report.plain import finite_or_none

if TYPE_CHECKING:
    from regbot.detection.dedup import DedupResult

__all__ = ["build_report", "regression_entry", "regression_id", "window_section"]


def regression_entry(
    candidate: Candidate, group: str | None = None, duplicates: list[str] | None = None
) -> RegressionEntry:
    """One regression in SPEC §4 form; before/after/delta are in the series' own direction and
    unit (a throughput drop has a negative delta), ``relative_delta`` = delta / |before|, None
    where ``before`` is zero or near it (``ratios.relative_change``: a new cost).
    Beside SPEC §4: ``change_time_interval`` [first, last] in epoch seconds, the points the
    change may have come at (``detection/change_time.py``: the deploy lies after the point
    before ``first`` and at or before ``last``); None when the detector gives none (long-term)."""
    before = candidate.sign * candidate.mean_before
    after = candidate.sign * candidate.mean_after
    delta = after - before
    rid = candidate.regression_id or regression_id(
        candidate.series_id, candidate.detector, candidate.change_time_s
    )
    return RegressionEntry(
        id=rid,
        series=candidate.series_id,
        kind=candidate.kind,
        detector=candidate.detector,
        change_time_s=candidate.change_time_s,
        change_time_interval=candidate.change_interval_s,
        before=finite_or_none(before),
        after=finite_or_none(after),
        delta=finite_or_none(delta),
        relative_delta=relative_change(before, delta),
        p_value=finite_or_none(candidate.p_value),
        group=group or rid,
        duplicates=tuple(duplicates or ()),
        verdicts={
            stage: VerdictEntry(v.passed, v.reason, v.numbers)
            for stage, v in candidate.verdicts.items()
        },
    )


def _order(candidates: list[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (c.change_time_s, c.series_id, c.detector))


def _windows(w: WindowBounds) -> Windows:
    return Windows(
        (w.historical_start_s, w.analysis_start_s),
        (w.analysis_start_s, w.extended_start_s),
        (w.extended_start_s, w.end_s),
    )


def window_section(result: DetectionResult) -> WindowSection:
    """SPEC §4's ``window`` (the run's nominal bounds) and, beside it, what was used."""
    use = result.window_use
    if use is None:
        return WindowSection(_windows(result.windows))
    return WindowSection(
        _windows(result.windows),
        WindowUseSection(
            min_points=dict(zip(WINDOW_NAMES, use.min_points)),
            points={name: use.points[name] for name in WINDOW_NAMES},
            widened_series=use.widened_series,
            earliest=_windows(use.earliest),
        ),
    )


def funnel_of(result: DetectionResult, dedup: DedupResult | None) -> Funnel:
    """The detection stages' funnel with each dedup stage's own entry; without a dedup, the
    dedup entries say that nothing was removed (each equals the count after the thresholds)."""
    funnel = result.funnel
    counts = dedup.funnel if dedup is not None else {}
    for stage in DEDUP_STAGES:
        if stage in counts:
            funnel = funnel.counted(stage, counts[stage])
        elif dedup is None and stage is not Stage.STACK_DEDUP:
            funnel = funnel.counted(stage, result.funnel.after_threshold)
    return funnel


def build_report(result: DetectionResult, version: str, dedup: DedupResult | None = None) -> Report:
    """SPEC §4. Only representatives are listed (one per dedup group touched in this run); the
    candidates a filter or a dedup stage removed go in the extra ``filtered`` list with the
    verdicts that removed them (for ``regbot explain``)."""
    if dedup is None:
        listed, removed = result.reported, result.filtered
        group_of: dict[str, str] = {}
        duplicates: dict[str, list[str]] = {}
    else:
        listed, removed = dedup.representatives, result.filtered + dedup.removed
        group_of, duplicates = dedup.group_of, dedup.duplicates

    def entry(c: Candidate) -> RegressionEntry:
        rid = c.regression_id
        return regression_entry(c, group_of.get(rid), duplicates.get(rid))

    return Report(
        regbot_version=version,
        window=window_section(result),
        funnel=funnel_of(result, dedup),
        regressions=tuple(entry(c) for c in _order(listed)),
        filtered=tuple(entry(c) for c in _order(removed)),
    )
