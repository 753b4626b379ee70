"""The detection pipeline (FBDetect §5.1): change points → went-away → seasonality → thresholds,
plus long-term detection; the funnel counts what each stage removed.

The deduplication stages (same-regression merge, SOMDedup, cost shift, pairwise dedup, §5.4–5.5)
come after these and keep their own funnel entries; until they run, their counts equal the
count before them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from regbot.detection.changepoint import detect_change_points
from regbot.detection.long_term import detect_long_term, screen_long_term
from regbot.detection.model import Candidate, DetectionSettings, SeriesBatch, WindowBounds
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
        times, values = batch.row(row)
        k = int(points.index[row])
        candidates.append(
            Candidate(
                series_id=batch.ids[row],
                kind=batch.kinds[row],
                times_s=times,
                values=values,
                sign=float(batch.sign[row]),
                change_index=k,
                change_time_s=float(times[k]),
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

    def apply(stage_key: str, judge) -> None:
        nonlocal candidates
        kept = []
        for candidate in candidates:
            judged = candidate.with_verdict(judge(candidate))
            (kept if judged.passed else filtered).append(judged)
        candidates = kept
        funnel[stage_key] = len(candidates)

    apply("after_went_away", lambda c: went_away_verdict(c, settings.went_away))
    apply("after_seasonality", lambda c: seasonality_verdict(c, settings.seasonality))
    apply("after_threshold", lambda c: threshold_verdict(c, settings.workload.threshold))
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
