"""The detection pipeline (FBDetect §5.1): change points → went-away → seasonality → thresholds,
plus long-term detection; the funnel counts what each stage removed.

Windows: ``window_plan``; the short-term filters: ``short_term_filters``.

The deduplication stages (same-regression merge, SOMDedup, cost shift, pairwise dedup, §5.4–5.5)
come after these (``regbot.detection.dedup``) and write their own funnel entries
(``regbot.detection.stages.Stage.funnel_key``); this pipeline writes only its own.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from regbot.detection.blas_threads import one_blas_thread
from regbot.detection.change_test import ChangeTest, change_tests
from regbot.detection.changepoint import CHUNK_ROWS, detect_window_changes
from regbot.detection.discoveries import discovery_cut
from regbot.detection.fleet_load import LoadRemoval, remove_fleet_load
from regbot.detection.long_term import detect_long_term_rows, screen_long_term
from regbot.detection.model import Candidate, Verdict
from regbot.detection.scratch import borrowed
from regbot.detection.season_adjust import adjust_for_season
from regbot.detection.series_batch import SeriesBatch, WindowBounds
from regbot.detection.short_term_filters import judge_candidates
from regbot.detection.stage_settings import DetectionSettings
from regbot.detection.stages import Stage
from regbot.detection.window_plan import (
    WindowUse,
    enough_data_verdict,
    plan_windows,
    window_search_ranges,
)
from regbot.partition_ranges import partition_ranges
from regbot.profiles.model import Series, last_time_s
from regbot.report.model import Funnel


@dataclass(frozen=True, slots=True)
class DetectionResult:
    """What one detection run found: reported candidates, filtered ones (with the verdict that
    removed them), the run's (nominal) windows, the funnel (SPEC §4), and what the windows held
    per series (``window_use``; None when the batch was cut by the caller)."""

    windows: WindowBounds
    funnel: Funnel
    reported: list[Candidate] = field(default_factory=list)
    filtered: list[Candidate] = field(default_factory=list)
    window_use: WindowUse | None = None


def find_change_candidates(
    batch: SeriesBatch,
    windows: WindowBounds,
    settings: DetectionSettings,
    load: LoadRemoval | None = None,
) -> list[Candidate]:
    """Rows whose most likely change point lies in the analysis window, is an increase (oriented:
    worse), and passes the likelihood-ratio test at ``alpha``. Vectorised over the batch.

    Seasonal rows are tested on their deseasonalised values (``season_adjust``), so that
    ``mean_before``/``mean_after`` are deseasonalised levels there; the candidate keeps its raw
    values for the later stages. ``load``: what ``remove_fleet_load`` took out of the batch's
    values (its numbers go into each candidate's ``change_point`` verdict)."""
    load = load or LoadRemoval.none(len(batch))
    firsts = range(0, len(batch), CHUNK_ROWS)
    chunks = [(batch.rows(f, f + CHUNK_ROWS), load.rows(f, f + CHUNK_ROWS)) for f in firsts]
    workers = min(len(chunks), settings.workers or os.cpu_count() or 1)
    if workers <= 1:
        found = [_chunk_candidates(rows, part, windows, settings) for rows, part in chunks]
    else:  # numpy releases the GIL in the array work, so chunks run side by side in threads
        with ThreadPoolExecutor(workers) as pool:
            found = list(
                pool.map(lambda c: _chunk_candidates(c[0], c[1], windows, settings), chunks)
            )
    return [candidate for part in found for candidate in part]


def keep_discoveries(
    candidates: list[Candidate],
    tests: int,
    settings: DetectionSettings,
    stage: Stage = Stage.CHANGE_POINT,
) -> list[Candidate]:
    """The candidates that are discoveries among the run's ``tests`` series
    (``discoveries.py``; all of them with ``multiple_testing: none``); each keeps the cut in its
    ``stage`` verdict (``change_point`` for the short-term path, ``long_term`` for §5.3's)."""
    point = settings.change_point
    if point.multiple_testing == "none" or not candidates:
        return candidates
    cut = discovery_cut(np.array([c.p_value for c in candidates]), tests, point.alpha)
    kept = []
    for c in candidates:
        if c.p_value <= cut:
            verdict = c.verdicts[stage]
            numbers = {**verdict.numbers, "discovery_cut": cut, "tests": tests}
            reason = f"{verdict.reason}; a discovery among {tests} series (p ≤ {cut:.3g})"
            kept.append(c.with_verdict(Verdict(stage, True, reason, numbers)))
    return kept


def change_point_verdict(
    test: ChangeTest, alpha: float, k: int, load: LoadRemoval, row: int
) -> Verdict:
    """The change-point test's verdict: the test chosen for the noise (``change_test.py``) with
    its p-value against alpha and its numbers and, where the fleet load was removed
    (``fleet_load.py``), the loading, its R² and the load's step across the change (removed
    part, mean after minus mean before, oriented units)."""
    numbers: dict[str, object] = {
        "test": test.test,
        "p_value": test.p_value,
        "alpha": alpha,
        **test.numbers,
    }
    name = "likelihood-ratio" if test.test == "likelihood_ratio" else "rank (noise not normal)"
    reason = f"{name} test p = {test.p_value:.3g} < {alpha}"
    part = load.removed(row)
    if part is not None:
        numbers.update(
            load_loading=float(load.loading[row]),
            load_r2=float(load.r2[row]),
            load_step=float(part[k:].mean() - part[:k].mean()),
        )
        reason += " after removing the fleet load"
    return Verdict(Stage.CHANGE_POINT, True, reason, numbers)


def _chunk_candidates(
    batch: SeriesBatch, load: LoadRemoval, windows: WindowBounds, settings: DetectionSettings
) -> list[Candidate]:
    start, end = window_search_ranges(batch, windows)
    season = settings.seasonality
    with borrowed(batch.values.shape) as adjusted:  # the tests hold none of its rows
        values, _ = adjust_for_season(
            batch, windows, season.periods_s, season.acf_alpha, out=adjusted
        )
        points = detect_window_changes(values, batch.lengths, start, end, settings.change_point)
        chosen = np.flatnonzero(
            (points.index >= 0)
            & (points.p_value < settings.change_point.alpha)
            & (points.mean_after > points.mean_before)
        )
        rows = chosen.tolist()
        tests = change_tests(
            [values[row, : batch.lengths[row]] for row in rows],
            points.segment_start[chosen].tolist(),
            points.index[chosen].tolist(),
            points.p_value[chosen].tolist(),
            settings.change_point.alpha,
        )
    candidates = []
    for row, test in zip(rows, tests):
        if not test.passed:
            continue
        row_times, row_values = batch.row(row)
        k = int(points.index[row])
        candidates.append(
            Candidate(
                series_id=batch.ids[row],
                kind=batch.kinds[row],
                times_s=row_times,
                values=row_values,
                sign=float(batch.sign[row]),
                change_index=k,
                change_time_s=float(row_times[k]),
                mean_before=float(points.mean_before[row]),
                mean_after=float(points.mean_after[row]),
                llr=float(points.llr[row]),
                p_value=test.p_value,
                windows=windows,
                change_interval_s=(
                    float(row_times[points.interval_start[row]]),
                    float(row_times[points.interval_end[row]]),
                ),
            ).with_verdict(change_point_verdict(test, settings.change_point.alpha, k, load, row))
        )
    return candidates


def run_detection(
    series: list[Series], settings: DetectionSettings, now_s: float | None = None
) -> DetectionResult:
    """Detect regressions in ``series`` for the windows ending at ``now_s`` (default: the last
    timestamp in the data); data after ``now_s`` is ignored."""
    if now_s is None:
        now_s = last_time_s(series) or 0.0
    windows = WindowBounds.ending_at(now_s, settings.workload.windows)
    return detect_in_windows(series, settings, windows)


def detect_in_windows(
    series: list[Series], settings: DetectionSettings, windows: WindowBounds
) -> DetectionResult:
    """The pipeline for the run's ``windows``, each series in its own (``plan_windows``), in
    partitions of at most ``settings.partition_series`` series (``partition_ranges``): the
    same result as ``detect_partition`` over those partitions run anywhere, then
    ``combine_findings``."""
    findings = [
        detect_partition(series[a:b], settings, windows)
        for a, b in partition_ranges(len(series), settings.partition_series)
    ]
    return combine_findings(findings, settings, windows)


@dataclass(frozen=True, slots=True)
class PartitionFindings:
    """What detection finds in one partition of a run's series, before the run-wide steps
    (``combine_findings``): the short-term candidates that passed the change-point test (not
    yet cut for multiple testing, not yet judged by the filters), the long-term candidates of
    every row the screen kept (the run decides which series the short-term path already
    reports), the rows tested, the partition's series and what its windows held."""

    candidates: list[Candidate]
    long_term: list[Candidate]
    tests: int
    n_series: int
    window_use: WindowUse | None


def detect_partition(
    series: Sequence[Series], settings: DetectionSettings, windows: WindowBounds
) -> PartitionFindings:
    """The per-series stages over one partition: windows per series, the fleet load removed
    (estimated from the partition's rows), change points and their test, the long-term screen
    and detector. A pure function of its arguments: a worker process or a Dask worker gives
    the same findings as the caller's process."""
    with one_blas_thread():
        return _detect_partition(list(series), settings, windows)


def _detect_partition(
    series: list[Series], settings: DetectionSettings, windows: WindowBounds
) -> PartitionFindings:
    groups, use = plan_windows(series, windows, settings.workload.windows)
    parts = []
    for bounds, members in groups:
        batch = SeriesBatch.from_series(
            [series[i] for i in members],
            settings.higher_is_better,
            start_s=bounds.historical_start_s,
            end_s=bounds.end_s,
        )
        parts.append((batch, bounds))
    return _batch_findings(parts, settings, len(series), use)


def detect_batch(
    batch: SeriesBatch, settings: DetectionSettings, windows: WindowBounds
) -> DetectionResult:
    """The pipeline over a packed batch, already cut to ``windows`` by the caller (a dense fleet:
    no window is widened here; the waiting-for-data rule still applies)."""
    found = _batch_findings([(batch, windows)], settings, len(batch), None)
    return combine_findings([found], settings, windows)


def _batch_findings(
    parts: list[tuple[SeriesBatch, WindowBounds]],
    settings: DetectionSettings,
    n_series: int,
    use: WindowUse | None,
) -> PartitionFindings:
    candidates: list[Candidate] = []
    long_term: list[Candidate] = []
    for batch, bounds in parts:
        batch, load = remove_fleet_load(batch, bounds.analysis_start_s, settings.fleet_load)
        candidates += find_change_candidates(batch, bounds, settings, load)
        long_term += detect_long_term_batch(batch, bounds, settings, set())
    tests = sum(len(batch) for batch, _ in parts)
    return PartitionFindings(_own(candidates), _own(long_term), tests, n_series, use)


def _own(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates with their own copies of their points: a candidate's rows are views into
    its partition's batch, which would otherwise stay in memory as long as the candidate does
    (a run's memory would grow with every partition it has seen)."""
    return [replace(c, times_s=np.array(c.times_s), values=np.array(c.values)) for c in candidates]


def combine_findings(
    findings: Sequence[PartitionFindings], settings: DetectionSettings, windows: WindowBounds
) -> DetectionResult:
    """The run-wide steps over the partitions' findings, in partition order: the discovery cut
    among all the run's tests, the short-term filters, then the long-term candidates of series
    the short-term path does not report, cut and checked for enough data; the funnel."""
    n_series = sum(f.n_series for f in findings)
    tests = sum(f.tests for f in findings)
    uses = [f.window_use for f in findings if f.window_use is not None]
    use = WindowUse.merged(uses) if len(uses) == len(findings) and uses else None
    funnel = Funnel(series=n_series)
    candidates = keep_discoveries([c for f in findings for c in f.candidates], tests, settings)
    funnel = funnel.counted(Stage.CHANGE_POINT, len(candidates))
    filtered: list[Candidate] = []
    kept: list[Candidate] = []
    survivors = dict.fromkeys(
        (Stage.ENOUGH_DATA, Stage.WENT_AWAY, Stage.SEASONALITY, Stage.THRESHOLD), 0
    )
    with one_blas_thread():
        judged = judge_candidates(candidates, settings)
    for candidate, verdicts in zip(candidates, judged):
        for verdict in verdicts:
            candidate = candidate.with_verdict(verdict)
            survivors[verdict.stage] += verdict.passed
        (kept if candidate.passed else filtered).append(candidate)
    candidates = kept
    for stage in (Stage.WENT_AWAY, Stage.SEASONALITY, Stage.THRESHOLD):
        funnel = funnel.counted(stage, survivors[stage])

    exclude = {c.series_id for c in candidates}
    found = [c for f in findings for c in f.long_term if c.series_id not in exclude]
    long_term = []
    for candidate in keep_discoveries(found, tests, settings, Stage.LONG_TERM):
        verdict = enough_data_verdict(candidate, settings.workload.windows)
        if verdict.passed:
            long_term.append(candidate)
        else:
            filtered.append(candidate.with_verdict(verdict))
    funnel = funnel.counted(Stage.LONG_TERM, len(long_term))
    return DetectionResult(windows, funnel, candidates + long_term, filtered, use)


def detect_long_term_batch(
    batch: SeriesBatch, windows: WindowBounds, settings: DetectionSettings, exclude: set[str]
) -> list[Candidate]:
    """§5.3 over the batch: a vectorised screen, then the full detector on the rows it keeps.
    A series already reported by the short-term path is not reported twice."""
    if not settings.long_term.enabled or len(batch) == 0:
        return []
    threshold = settings.workload.threshold
    keep = screen_long_term(
        batch.values,
        batch.times_s,
        batch.lengths,
        windows,
        threshold,
        settings.long_term.edge_share,
        settings=settings.long_term,
    )
    rows = [
        (batch.ids[row], batch.kinds[row], *batch.row(row), float(batch.sign[row]))
        for row in np.flatnonzero(keep).tolist()
        if batch.ids[row] not in exclude
    ]
    found = detect_long_term_rows(rows, windows, threshold, settings.long_term)
    return [candidate for candidate in found if candidate is not None]
