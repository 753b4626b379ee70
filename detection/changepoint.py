"""Change-point detector (FBDetect §5.2.1): CUSUM and EM iterated to the most likely single mean
shift, then the likelihood-ratio chi-squared test. Vectorised over a whole batch of series.

Complexity: O((cuts + 2) × iterations × rows × points) time, O(chunk × points) memory (the
prefix sums; the scans work on blocks of rows that stay in cache, ``changepoint_split.py``);
the posterior costs one sort of the window and its margins per row.
Design: docs/design/changepoint.md
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.stats import chi2

from regbot.detection.change_time import change_posterior, density_interval, mass_between
from regbot.detection.changepoint_split import Direction, row_blocks, split
from regbot.detection.scratch import borrowed
from regbot.detection.series_batch import ChangePoints
from regbot.detection.stage_settings import ChangePointSettings

__all__ = ["CHUNK_ROWS", "Direction", "detect_change_points", "detect_window_changes"]

CHUNK_ROWS = 2048


def detect_change_points(
    values: np.ndarray,
    lengths: np.ndarray,
    settings: ChangePointSettings = ChangePointSettings(),
    *,
    search_start: np.ndarray | None = None,
    search_end: np.ndarray | None = None,
    segment_start: np.ndarray | None = None,
    segment_end: np.ndarray | None = None,
    direction: Direction = "increase",
) -> ChangePoints:
    """The most likely change point of every row, and its likelihood-ratio test.

    ``values`` is (n, T) with row i valid in ``[:lengths[i]]``. The single-change model is fitted
    to the segment ``[segment_start, segment_end)`` of each row (default the whole row);
    ``search_start``/``search_end`` (default the segment) bound the change index k (first point
    after the change), which must also leave ``min_points_each_side`` points of the segment on
    both sides. ``direction`` chooses increases (regressions of oriented series), decreases, or
    both (the larger LLR wins, for general segmentation). Rows that cannot be tested get index
    -1 and p-value 1. The interval holds the ``interval_mass`` posterior set of the change's
    position on the segment (``change_time.py``).
    """
    values = np.asarray(values, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    seg_lo = _per_row(segment_start, np.zeros(n, np.int64))
    seg_hi = _per_row(segment_end, lengths)
    start = _per_row(search_start, seg_lo)
    end = _per_row(search_end, seg_hi)
    parts = []
    for lo, hi in _chunks(n):
        with borrowed((2, hi - lo, values.shape[1] + 1)) as sums:
            mean, p1, p2 = _prefix_sums(values[lo:hi], lengths[lo:hi], sums)
            segment = seg_lo[lo:hi], seg_hi[lo:hi]
            search = start[lo:hi], end[lo:hi]
            found = split(p1, p2, *segment, *search, settings, direction)
            prior = segment[0], segment[1] + 1
            parts.append(_finish(found, mean, (p1, p2), segment, prior, search, settings))
    return _concat(parts)


def detect_window_changes(
    values: np.ndarray,
    lengths: np.ndarray,
    window_start: np.ndarray,
    window_end: np.ndarray,
    settings: ChangePointSettings = ChangePointSettings(),
    direction: Direction = "increase",
) -> ChangePoints:
    """Each row's change in its window ``[window_start, window_end)`` (indices: the analysis
    window), on a segment that starts after the history's last significant older change, with
    the test on that segment (docs/design/changepoint.md). ``direction`` as for ``detect_change_points``
    (older changes are cut whatever their direction). Rows that cannot be tested, and rows whose
    window holds less than ``min_window_share`` of the change's posterior (the data place it
    outside the window), get index -1 and interval -1, -1; ``window_share`` says which.
    """
    values = np.asarray(values, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    window_start = np.asarray(window_start, np.int64)
    window_end = np.asarray(window_end, np.int64)
    parts = []
    for lo, hi in _chunks(len(lengths)):
        parts.append(
            _window_chunk(
                values[lo:hi],
                lengths[lo:hi],
                window_start[lo:hi],
                window_end[lo:hi],
                settings,
                direction,
            )
        )
    return _concat(parts)


def _per_row(given: np.ndarray | None, default: np.ndarray) -> np.ndarray:
    return default.copy() if given is None else np.asarray(given, np.int64).copy()


def _chunks(n: int) -> list[tuple[int, int]]:
    return [(lo, min(n, lo + CHUNK_ROWS)) for lo in range(0, n, CHUNK_ROWS)]


def _concat(parts: list[tuple[np.ndarray, ...]]) -> ChangePoints:
    if not parts:
        empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
        return ChangePoints(
            empty_i, empty_f, empty_f, empty_f, empty_f, empty_i, np.zeros(0, bool),
            empty_i, empty_i, empty_f, empty_i, empty_i,
        )  # fmt: skip
    return ChangePoints(*(np.concatenate(column) for column in zip(*parts)))


def _prefix_sums(
    values: np.ndarray, lengths: np.ndarray, out: np.ndarray | None = None
) -> tuple[np.ndarray, ...]:
    """Row means and (rows, T + 1) prefix sums of the centred values and their squares, with a
    leading zero: ``p1[:, k]`` is the sum of the first k points. Computed in blocks of rows
    (``row_blocks``) so the temporaries stay in cache; each row's sums are those of the whole
    array at once (the same reductions and accumulations along the row). ``out``: a (2, rows,
    T + 1) array to hold p1 and p2 (``scratch.borrowed``), default new."""
    m, width = values.shape
    mean = np.empty(m)
    p1, p2 = np.empty((2, m, width + 1)) if out is None else out
    p1[:, 0] = 0.0
    p2[:, 0] = 0.0
    columns = np.arange(width)[None, :]
    contiguous = values.flags.c_contiguous
    for a, b in row_blocks(m, width):
        n = lengths[a:b]
        if contiguous and n.min(initial=width) >= width:  # every point valid: no mask
            mean[a:b] = values[a:b].sum(axis=1) / np.maximum(n, 1)
            centred = values[a:b] - mean[a:b, None]
        else:
            valid = columns < n[:, None]
            mean[a:b] = np.where(valid, values[a:b], 0.0).sum(axis=1) / np.maximum(n, 1)
            centred = np.where(valid, values[a:b] - mean[a:b, None], 0.0)
        np.cumsum(centred, axis=1, out=p1[a:b, 1:])
        np.multiply(centred, centred, out=centred)
        np.cumsum(centred, axis=1, out=p2[a:b, 1:])
    return mean, p1, p2


def _finish(
    found: tuple[np.ndarray, ...],
    row_mean: np.ndarray,
    sums: tuple[np.ndarray, np.ndarray],
    segment: tuple[np.ndarray, np.ndarray],
    prior: tuple[np.ndarray, np.ndarray],
    window: tuple[np.ndarray, np.ndarray],
    settings: ChangePointSettings,
) -> tuple[np.ndarray, ...]:
    """ChangePoints columns from a split: p-values, absolute means, the posterior's mass in
    ``window`` (prior support ``prior``) and the change-time interval."""
    k, mu0, mu1, llr, iterations, stable, testable = found
    index = np.where(testable, k, -1)
    p_value = np.where(testable, chi2.sf(llr, 2), 1.0)
    side = settings.min_points_each_side
    pooled = change_posterior(*sums, *segment, *prior, side, "pooled")
    share = np.where(testable, mass_between(pooled, *window), 0.0)
    separate = change_posterior(*sums, *segment, *prior, side, "separate")
    first, last = density_interval(separate, index, settings.interval_mass)
    return (
        index, row_mean + mu0, row_mean + mu1, llr, p_value, iterations, stable,
        *segment, share, first, last,
    )  # fmt: skip


def _window_chunk(
    values: np.ndarray,
    lengths: np.ndarray,
    window_start: np.ndarray,
    window_end: np.ndarray,
    settings: ChangePointSettings,
    direction: Direction,
) -> tuple[np.ndarray, ...]:
    with borrowed((2, len(lengths), values.shape[1] + 1)) as sums:
        return _window_split(values, lengths, window_start, window_end, settings, direction, sums)


def _window_split(
    values: np.ndarray,
    lengths: np.ndarray,
    window_start: np.ndarray,
    window_end: np.ndarray,
    settings: ChangePointSettings,
    direction: Direction,
    sums: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """``detect_window_changes``' columns for one chunk, its prefix sums held in ``sums``."""
    mean, p1, p2 = _prefix_sums(values, lengths, sums)
    m = len(lengths)
    side = settings.min_points_each_side
    margin = np.ceil(settings.search_margin * (window_end - window_start)).astype(np.int64)
    near_lo = np.maximum(window_start - margin, 0)
    near_hi = np.minimum(window_end + margin, lengths + 1)
    seg_lo, seg_hi = np.zeros(m, np.int64), lengths.copy()

    def can_hold(rows: np.ndarray) -> np.ndarray:  # a split in the window fits the segment
        fits: npt.NDArray[np.bool_] = np.maximum(
            window_start[rows], seg_lo[rows] + side
        ) < np.minimum(window_end[rows], seg_hi[rows] - side + 1)
        return fits

    # older changes: cut the segment where the history before the window holds a change of its
    # own, significant even after a Bonferroni correction for the positions searched
    active = np.flatnonzero(can_hold(np.arange(m)))
    for _ in range(settings.max_segment_cuts):
        if not len(active):
            break
        lo, end = seg_lo[active], window_start[active]
        rows = None if len(active) == m else active  # every row: no index needed
        early = _significant_split(p1, p2, rows, lo, end, lo, end, settings)
        seg_lo[active] = np.where(early >= 0, early, lo)
        active = active[early >= 0]
        active = active[can_hold(active)]

    # the change in the window: §5.2.1's split, searched in the window, on the segment; kept
    # when the window holds at least min_window_share of the change's posterior on the window
    # and its margins (otherwise the data place the change outside the window)
    found = split(p1, p2, seg_lo, seg_hi, window_start, window_end, settings, direction)
    prior = np.maximum(near_lo, seg_lo), np.minimum(near_hi, seg_hi + 1)
    window = window_start, window_end
    columns = _finish(found, mean, (p1, p2), (seg_lo, seg_hi), prior, window, settings)
    index, share, first, last = columns[0], columns[9], columns[10], columns[11]
    outside = share < settings.min_window_share
    return (
        np.where(outside, -1, index), *columns[1:10],
        np.where(outside, -1, first), np.where(outside, -1, last),
    )  # fmt: skip


def _significant_split(
    p1: np.ndarray,
    p2: np.ndarray,
    rows: np.ndarray | None,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    settings: ChangePointSettings,
) -> np.ndarray:
    """Per row (of ``rows`` of the prefix sums, None for all), the most likely split (either
    direction) of ``[seg_lo, seg_hi)`` within ``[start, end)`` when its p-value times the
    number of positions searched is below ``alpha``; -1 otherwise."""
    found = split(p1, p2, seg_lo, seg_hi, start, end, settings, "both", iterate=False, rows=rows)
    k, llr, testable = found[0], found[3], found[6]
    side = settings.min_points_each_side
    searched = np.minimum(end, seg_hi - side + 1) - np.maximum(start, seg_lo + side)
    significant = testable & (chi2.sf(llr, 2) * np.maximum(searched, 1) < settings.alpha)
    return np.where(significant, k, -1)
