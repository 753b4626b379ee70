"""The detection pipeline (FBDetect §5.1): change points → went-away → seasonality → thresholds,
plus long-term detection; the funnel counts what each stage removed.

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

from regbot.detection.changepoint import CHUNK_ROWS, detect_change_points
from regbot.detection.long_term import detect_long_term, screen_long_term
from regbot.detection.model import Candidate, DetectionSettings, SeriesBatch, Verdict, WindowBounds
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
    "after_same_regression_merge",
    "after_som_dedup",
    "after_cost_shift",
    "after_pairwise_dedup",
    "long_term",
)


@dataclass(frozen=True, slots=True)
class DetectionResult:
    """What one detection run found: reported candidates, filtered ones (with the verdict that
    removed them), the windows, and the funnel (SPEC §4)."""

    windows: WindowBounds
    funnel: dict[str, int]
    reported: list[Candidate] = field(default_factory=list)
    filtered: list[Candidate] = field(default_factory=list)


def window_search_ranges(
    batch: SeriesBatch, windows: WindowBounds
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the index range a change point may take: its first point in the analysis
    window up to (not including) its first point in the extended window."""
    start = (batch.times_s < windows.analysis_start_s).sum(axis=1)
    end = (batch.times_s < windows.extended_start_s).sum(axis=1)
    return start.astype(np.int64), end.astype(np.int64)


def find_change_candidates(
    batch: SeriesBatch, windows: WindowBounds, settings: DetectionSettings
) -> list[Candidate]:
    """Rows whose most likely change point lies in the analysis window, is an increase (oriented:
    worse), and passes the likelihood-ratio test at ``alpha``. Vectorised over the batch.

    Seasonal rows are tested on their deseasonalised values (``season_adjust``), so that
    ``mean_before``/``mean_after`` are deseasonalised levels there; the candidate keeps its raw
    values for the later stages."""
    chunks = [batch.rows(first, first + CHUNK_ROWS) for first in range(0, len(batch), CHUNK_ROWS)]
    workers = min(len(chunks), settings.workers or os.cpu_count() or 1)
    if workers <= 1:
        found = [_chunk_candidates(chunk, windows, settings) for chunk in chunks]
    else:  # numpy releases the GIL in the array work, so chunks run side by side in threads
        with ThreadPoolExecutor(workers) as pool:
            found = list(
                pool.map(lambda chunk: _chunk_candidates(chunk, windows, settings), chunks)
            )
    return [candidate for part in found for candidate in part]


def _chunk_candidates(
    batch: SeriesBatch, windows: WindowBounds, settings: DetectionSettings
) -> list[Candidate]:
    start, end = window_search_ranges(batch, windows)
    values, _ = adjust_for_season(
        batch, windows, settings.seasonality.periods_s, settings.seasonality.acf_alpha
    )
    points = detect_change_points(
        values, batch.lengths, settings.change_point, search_start=start, search_end=end
    )
    chosen = np.flatnonzero(
        (points.index >= 0)
        & (points.p_value < settings.change_point.alpha)
        & (points.mean_after > points.mean_before)
    )
    candidates = []
    for row in chosen.tolist():
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
                p_value=float(points.p_value[row]),
                windows=windows,
            )
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
    batch = SeriesBatch.from_series(
        series, settings.higher_is_better, start_s=windows.historical_start_s, end_s=windows.end_s
    )
    return detect_batch(batch, settings, windows)


def detect_batch(
    batch: SeriesBatch, settings: DetectionSettings, windows: WindowBounds
) -> DetectionResult:
    """The pipeline over a packed batch (already cut to the windows)."""
    funnel = dict.fromkeys(FUNNEL_KEYS, 0)
    funnel["series"] = len(batch)
    candidates = find_change_candidates(batch, windows, settings)
    funnel["change_points"] = len(candidates)
    filtered: list[Candidate] = []
    kept: list[Candidate] = []
    survivors = dict.fromkeys(("went_away", "seasonality", "threshold"), 0)
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
        "after_same_regression_merge",
        "after_som_dedup",
        "after_cost_shift",
        "after_pairwise_dedup",
    ):
        funnel[key] = len(candidates)

    long_term = detect_long_term_batch(
        batch, windows, settings, exclude={c.series_id for c in candidates}
    )
    funnel["long_term"] = len(long_term)
    return DetectionResult(windows, funnel, candidates + long_term, filtered)


PARALLEL_FROM = 256  # candidates; fewer are judged in-process (a pool costs more than it saves)


def judge_candidate(candidate: Candidate, settings: DetectionSettings) -> list[Verdict]:
    """The short-term filters in order (went-away, seasonality, threshold), stopping at the first
    that removes the candidate: the verdicts it collected."""
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
