"""The detection pipeline (FBDetect §5.1): change points → went-away → seasonality → thresholds,
plus long-term detection; the funnel counts what each stage removed.

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

The deduplication stages (same-regression merge, SOMDedup, cost shift, pairwise dedup, §5.4–5.5)
come after these and keep their own funnel entries; until they run, their counts equal the
count before them.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from regbot.detection.changepoint import CHUNK_ROWS, detect_window_changes
from regbot.detection.change_test import ChangeTest, change_test
from regbot.detection.discoveries import discovery_cut
from regbot.detection.fleet_load import LoadRemoval, remove_fleet_load
from regbot.detection.long_term import detect_long_term, screen_long_term
from regbot.detection.model import (
    Candidate,
    DetectionSettings,
    SeriesBatch,
    Verdict,
    WindowBounds,
    Windows,
)
from regbot.detection.season_adjust import adjust_for_season
from regbot.detection.seasonality import seasonality_verdict
from regbot.detection.thresholds import threshold_verdict
from regbot.detection.went_away import went_away_verdict
from regbot.profiles.model import Series

FUNNEL_KEYS = (
    "series",
    "change_points",
    "after_went_away",
    "after_seasonality",
    "after_threshold",
    "after_share_inflation",
    "after_same_regression_merge",
    "after_som_dedup",
    "after_cost_shift",
    "after_pairwise_dedup",
    "long_term",
)


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


@dataclass(frozen=True, slots=True)
class DetectionResult:
    """What one detection run found: reported candidates, filtered ones (with the verdict that
    removed them), the run's (nominal) windows, the funnel (SPEC §4), and what the windows held
    per series (``window_use``; None when the batch was cut by the caller)."""

    windows: WindowBounds
    funnel: dict[str, int]
    reported: list[Candidate] = field(default_factory=list)
    filtered: list[Candidate] = field(default_factory=list)
    window_use: WindowUse | None = None


WINDOW_NAMES = ("historical", "analysis", "extended")


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
        return Verdict("enough_data", False, reason, numbers)
    if after < need_after:
        reason = f"waiting for data: {after} points after the change, {need_after} needed"
        return Verdict("enough_data", False, reason, numbers)
    return Verdict("enough_data", True, "enough data before and after the change", numbers)


def window_search_ranges(
    batch: SeriesBatch, windows: WindowBounds
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the index range a change point may take: its first point in the analysis
    window up to (not including) its first point in the extended window."""
    start = (batch.times_s < windows.analysis_start_s).sum(axis=1)
    end = (batch.times_s < windows.extended_start_s).sum(axis=1)
    return start.astype(np.int64), end.astype(np.int64)


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
        found = [_chunk_candidates(*chunk, windows, settings) for chunk in chunks]
    else:  # numpy releases the GIL in the array work, so chunks run side by side in threads
        with ThreadPoolExecutor(workers) as pool:
            found = list(
                pool.map(lambda chunk: _chunk_candidates(*chunk, windows, settings), chunks)
            )
    return [candidate for part in found for candidate in part]


def keep_discoveries(
    candidates: list[Candidate], tests: int, settings: DetectionSettings, stage: str = "change_point"
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
        "test": test.test, "p_value": test.p_value, "alpha": alpha, **test.numbers
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
    return Verdict("change_point", True, reason, numbers)


def _chunk_candidates(
    batch: SeriesBatch, load: LoadRemoval, windows: WindowBounds, settings: DetectionSettings
) -> list[Candidate]:
    start, end = window_search_ranges(batch, windows)
    values, _ = adjust_for_season(
        batch, windows, settings.seasonality.periods_s, settings.seasonality.acf_alpha
    )
    points = detect_window_changes(values, batch.lengths, start, end, settings.change_point)
    chosen = np.flatnonzero(
        (points.index >= 0)
        & (points.p_value < settings.change_point.alpha)
        & (points.mean_after > points.mean_before)
    )
    candidates = []
    for row in chosen.tolist():
        row_times, row_values = batch.row(row)
        k = int(points.index[row])
        test = change_test(
            values[row, : batch.lengths[row]],
            int(points.segment_start[row]),
            k,
            float(points.p_value[row]),
            settings.change_point.alpha,
        )
        if not test.passed:
            continue
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
        now_s = max((float(s.timestamps_s[-1]) for s in series if len(s.timestamps_s)), default=0.0)
    windows = WindowBounds.ending_at(now_s, settings.workload.windows)
    return detect_in_windows(series, settings, windows)


def detect_in_windows(
    series: list[Series], settings: DetectionSettings, windows: WindowBounds
) -> DetectionResult:
    """The pipeline for the run's ``windows``, each series in its own (``plan_windows``)."""
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
    return _detect_parts(parts, settings, windows, use, len(series))


def detect_batch(
    batch: SeriesBatch, settings: DetectionSettings, windows: WindowBounds
) -> DetectionResult:
    """The pipeline over a packed batch, already cut to ``windows`` by the caller (a dense fleet:
    no window is widened here; the waiting-for-data rule still applies)."""
    return _detect_parts([(batch, windows)], settings, windows, None, len(batch))


def _detect_parts(
    parts: list[tuple[SeriesBatch, WindowBounds]],
    settings: DetectionSettings,
    windows: WindowBounds,
    use: WindowUse | None,
    n_series: int,
) -> DetectionResult:
    """The pipeline over batches of series, each with its bounds (``n_series``: all the run's
    series, those without points in their windows included)."""
    funnel = dict.fromkeys(FUNNEL_KEYS, 0)
    funnel["series"] = n_series
    candidates = []
    load_free = []
    for batch, bounds in parts:
        batch, load = remove_fleet_load(batch, bounds.analysis_start_s, settings.fleet_load)
        load_free.append((batch, bounds))
        candidates += find_change_candidates(batch, bounds, settings, load)
    parts = load_free
    tests = sum(len(b) for b, _ in parts)
    candidates = keep_discoveries(candidates, tests, settings)
    funnel["change_points"] = len(candidates)
    filtered: list[Candidate] = []
    kept: list[Candidate] = []
    survivors = dict.fromkeys(("enough_data", "went_away", "seasonality", "threshold"), 0)
    for candidate, verdicts in zip(candidates, judge_candidates(candidates, settings)):
        for verdict in verdicts:
            candidate = candidate.with_verdict(verdict)
            survivors[verdict.stage] += verdict.passed
        (kept if candidate.passed else filtered).append(candidate)
    candidates = kept
    funnel["after_went_away"] = survivors["went_away"]
    funnel["after_seasonality"] = survivors["seasonality"]
    funnel["after_threshold"] = survivors["threshold"]
    for key in (
        "after_share_inflation",
        "after_same_regression_merge",
        "after_som_dedup",
        "after_cost_shift",
        "after_pairwise_dedup",
    ):
        funnel[key] = len(candidates)

    exclude = {c.series_id for c in candidates}
    found = [
        c for batch, bounds in parts for c in detect_long_term_batch(batch, bounds, settings, exclude)
    ]
    long_term = []
    for candidate in keep_discoveries(found, tests, settings, "long_term"):
        verdict = enough_data_verdict(candidate, settings.workload.windows)
        if verdict.passed:
            long_term.append(candidate)
        else:
            filtered.append(candidate.with_verdict(verdict))
    funnel["long_term"] = len(long_term)
    return DetectionResult(windows, funnel, candidates + long_term, filtered, use)


PARALLEL_FROM = 256  # candidates; fewer are judged in-process (a pool costs more than it saves)


def judge_candidate(candidate: Candidate, settings: DetectionSettings) -> list[Verdict]:
    """The short-term filters in order (went-away, seasonality, threshold), stopping at the first
    that removes the candidate: the verdicts it collected. A change still waiting for data gets
    only its ``enough_data`` verdict (recorded only when it fails: it is a precondition of
    judging, like the change-point test's points on each side, not a filter of its own)."""
    enough = enough_data_verdict(candidate, settings.workload.windows)
    if not enough.passed:
        return [enough]
    verdicts = [went_away_verdict(candidate, settings.went_away)]
    if verdicts[-1].passed:
        verdicts.append(seasonality_verdict(candidate, settings.seasonality))
    if verdicts[-1].passed:
        verdicts.append(threshold_verdict(candidate, settings.workload.threshold))
    return verdicts


def judge_candidates(
    candidates: list[Candidate], settings: DetectionSettings
) -> list[list[Verdict]]:
    """``judge_candidate`` for every candidate, in order. Each is a pure function of its
    candidate, so with many candidates the work is spread over ``settings.workers`` processes
    (0: one per core); the result is the same as in one process."""
    workers = settings.workers or os.cpu_count() or 1
    if workers <= 1 or len(candidates) < PARALLEL_FROM:
        return [judge_candidate(c, settings) for c in candidates]
    judge = partial(judge_candidate, settings=settings)
    chunk = max(16, len(candidates) // (workers * 8))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(judge, candidates, chunksize=chunk))


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
    found = []
    for row in np.flatnonzero(keep).tolist():
        if batch.ids[row] in exclude:
            continue
        times, values = batch.row(row)
        candidate = detect_long_term(
            batch.ids[row],
            batch.kinds[row],
            times,
            values,
            float(batch.sign[row]),
            windows,
            threshold,
            settings.long_term,
        )
        if candidate is not None:
            found.append(candidate)
    return found
