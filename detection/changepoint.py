"""Change-point detector (FBDetect §5.2.1): CUSUM and EM iterated to the most likely single mean
shift, then the likelihood-ratio chi-squared test. Vectorised over a whole batch of series.

Complexity: O((cuts + 2) × iterations × rows × points) time, O(chunk × points) memory; the
posterior costs one sort of the window and its margins per row.
Design: docs/design/changepoint.md
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.stats import chi2

from regbot.detection.change_time import change_posterior, density_interval, mass_between
from regbot.detection.series_batch import ChangePoints
from regbot.detection.stage_settings import ChangePointSettings

CHUNK_ROWS = 2048

Direction = Literal["increase", "decrease", "both"]


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
        mean, p1, p2 = _prefix_sums(values[lo:hi], lengths[lo:hi])
        segment = seg_lo[lo:hi], seg_hi[lo:hi]
        search = start[lo:hi], end[lo:hi]
        split = _split(p1, p2, *segment, *search, settings, direction)
        prior = segment[0], segment[1] + 1
        parts.append(_finish(split, mean, (p1, p2), segment, prior, search, settings))
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


def _prefix_sums(values: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, ...]:
    """Row means and (rows, T + 1) prefix sums of the centred values and their squares, with a
    leading zero: ``p1[:, k]`` is the sum of the first k points."""
    m, width = values.shape
    valid = np.arange(width)[None, :] < lengths[:, None]
    mean = np.where(valid, values, 0.0).sum(axis=1) / np.maximum(lengths, 1)
    centred = np.where(valid, values - mean[:, None], 0.0)
    p1 = np.zeros((m, width + 1))
    np.cumsum(centred, axis=1, out=p1[:, 1:])
    p2 = np.zeros((m, width + 1))
    np.cumsum(centred * centred, axis=1, out=p2[:, 1:])
    return mean, p1, p2


def _split(
    p1: np.ndarray,
    p2: np.ndarray,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    settings: ChangePointSettings,
    direction: Direction,
    iterate: bool = True,
) -> tuple[np.ndarray, ...]:
    """The most likely split of each row's segment: (k, mu0, mu1, llr, iterations, stable,
    testable), means relative to the row mean. ``iterate=False`` skips CUSUM/EM and takes the
    exact ML split at once (the same k; for the baseline's older changes, where no iteration
    diagnostics are reported). Only the band of columns some row may split at is scanned."""
    if direction == "both":
        if iterate:
            up = _split(p1, p2, seg_lo, seg_hi, start, end, settings, "increase", iterate)
            down = _split(p1, p2, seg_lo, seg_hi, start, end, settings, "decrease", iterate)
        else:
            up, down = _exact_splits(p1, p2, seg_lo, seg_hi, start, end, settings)
        take_down = down[3] > up[3]
        return tuple(np.where(take_down, d, u) for u, d in zip(up, down))
    sign = -1.0 if direction == "decrease" else 1.0
    m = p1.shape[0]
    rows = np.arange(m)
    n_seg = np.maximum(seg_hi - seg_lo, 1)
    base = sign * p1[rows, seg_lo]
    total = sign * p1[rows, seg_hi] - base  # segment sum
    testable, first, stop, allowed, count = _band(p1, seg_lo, seg_hi, start, end, settings)
    before = sign * p1[:, first:stop] - base[:, None]  # sum of the segment's points before k

    def lowest_cusum(level: np.ndarray) -> np.ndarray:
        score = before - count * level[:, None]
        lowest: npt.NDArray[np.intp] = first + np.where(allowed, score, np.inf).argmin(axis=1)
        return lowest

    k = lowest_cusum(total / n_seg)
    iterations = np.zeros(m, np.int64)
    moving = testable.copy() if iterate else np.zeros(m, bool)
    for _ in range(settings.max_iterations):
        if not moving.any():
            break
        iterations += moving
        mu0, mu1 = _means(p1, seg_lo, n_seg, sign, base, total, k)
        new_k = lowest_cusum((mu0 + mu1) / 2)
        moved = new_k != k
        k = np.where(moving, new_k, k)
        moving &= moved
    stable = testable & ~moving

    # the exact maximum-likelihood split over the same positions (increases: CUSUM below 0)
    cusum = before - count * (total / n_seg)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = cusum * cusum / (count * (n_seg[:, None] - count))
    gain = np.where(allowed & (cusum < 0), gain, -np.inf)
    k = _better(gain, k, first, stop, testable)
    return _fitted(p1, p2, seg_lo, seg_hi, sign, k, testable, iterations, stable)


def _band(
    p1: np.ndarray,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    settings: ChangePointSettings,
) -> tuple[np.ndarray, int, int, np.ndarray, np.ndarray]:
    """(testable, first, stop, allowed, count): the rows with a position to split at, the band
    of columns ``[first, stop)`` some row may split at, which of them each row may, and the
    segment's points before each."""
    width1 = p1.shape[1]
    side = settings.min_points_each_side
    lo = np.maximum(start, seg_lo + side)
    hi = np.minimum(end, seg_hi - side + 1)  # k < hi
    testable = lo < hi
    first = int(np.clip(lo[testable].min(), 0, width1 - 1)) if testable.any() else 0
    stop = int(np.clip(hi[testable].max(), first + 1, width1)) if testable.any() else 1
    band = np.arange(first, stop)[None, :]
    allowed = (band >= lo[:, None]) & (band < hi[:, None])
    count = band - seg_lo[:, None]  # points of the segment before k
    return testable, first, stop, allowed, count


def _means(
    p1: np.ndarray,
    seg_lo: np.ndarray,
    n_seg: np.ndarray,
    sign: float,
    base: np.ndarray,
    total: np.ndarray,
    k: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The segment's (signed) means before and from ``k``."""
    kk = np.clip(k - seg_lo, 1, np.maximum(n_seg - 1, 1))
    ahead = sign * p1[np.arange(len(k)), seg_lo + kk] - base
    return ahead / kk, (total - ahead) / np.maximum(n_seg - kk, 1)


def _better(
    gain: np.ndarray, k: np.ndarray, first: int, stop: int, testable: np.ndarray
) -> np.ndarray:
    """``k``, or the band's position of the largest ``gain`` where that is larger."""
    rows = np.arange(len(k))
    best = gain.argmax(axis=1)
    better = gain[rows, best] > gain[rows, np.clip(k - first, 0, stop - first - 1)]
    out: np.ndarray = np.where(testable & better, first + best, k)
    return out


def _fitted(
    p1: np.ndarray,
    p2: np.ndarray,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    sign: float,
    k: np.ndarray,
    testable: np.ndarray,
    iterations: np.ndarray,
    stable: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """``_split``'s columns for the split at ``k``: the means and the likelihood ratio."""
    rows = np.arange(len(k))
    n_seg = np.maximum(seg_hi - seg_lo, 1)
    base = sign * p1[rows, seg_lo]
    total = sign * p1[rows, seg_hi] - base  # segment sum
    mu0, mu1 = _means(p1, seg_lo, n_seg, sign, base, total, k)
    kk = np.clip(k - seg_lo, 1, np.maximum(n_seg - 1, 1)).astype(np.float64)
    n_after = np.maximum(n_seg - kk, 1)
    sq_total = p2[rows, seg_hi] - p2[rows, seg_lo]
    sq_before = p2[rows, seg_lo + kk.astype(np.int64)] - p2[rows, seg_lo]
    sum_before, sum_after = mu0 * kk, mu1 * n_after
    rss1 = (sq_before - sum_before * mu0) + ((sq_total - sq_before) - sum_after * mu1)
    var0 = (sq_total - total * total / n_seg) / n_seg  # σ̃², population variance
    llr = _log_likelihood_ratio(n_seg.astype(np.float64), var0, np.maximum(rss1, 0.0))
    llr = np.where(testable, llr, 0.0)
    return k, sign * mu0, sign * mu1, llr, iterations, stable, testable


def _exact_splits(
    p1: np.ndarray,
    p2: np.ndarray,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    settings: ChangePointSettings,
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """``_split`` without iterations for increases and for decreases, from one scan of the band.

    A decrease's band arrays are an increase's negated — its points' sums before k, its CUSUM
    and its CUSUM's starting position (the lowest of −CUSUM, i.e. the highest CUSUM) — and its
    gain is the same square, so both directions' positions come from the same arrays, exactly
    as two scans would find them."""
    m = p1.shape[0]
    rows = np.arange(m)
    n_seg = np.maximum(seg_hi - seg_lo, 1)
    base = p1[rows, seg_lo]
    total = p1[rows, seg_hi] - base
    testable, first, stop, allowed, count = _band(p1, seg_lo, seg_hi, start, end, settings)
    before = p1[:, first:stop] - base[:, None]
    cusum = before - count * (total / n_seg)[:, None]
    lowest_up = first + np.where(allowed, cusum, np.inf).argmin(axis=1)
    lowest_down = first + np.where(allowed, cusum, -np.inf).argmax(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = cusum * cusum / (count * (n_seg[:, None] - count))
    none = np.zeros(m, np.int64)
    stable = testable.copy()  # testable & ~moving, with nothing moving
    out = []
    for sign, side, lowest in ((1.0, cusum < 0, lowest_up), (-1.0, cusum > 0, lowest_down)):
        k = _better(np.where(allowed & side, gain, -np.inf), lowest, first, stop, testable)
        out.append(_fitted(p1, p2, seg_lo, seg_hi, sign, k, testable, none, stable))
    return out[0], out[1]


def _finish(
    split: tuple[np.ndarray, ...],
    row_mean: np.ndarray,
    sums: tuple[np.ndarray, np.ndarray],
    segment: tuple[np.ndarray, np.ndarray],
    prior: tuple[np.ndarray, np.ndarray],
    window: tuple[np.ndarray, np.ndarray],
    settings: ChangePointSettings,
) -> tuple[np.ndarray, ...]:
    """ChangePoints columns from a split: p-values, absolute means, the posterior's mass in
    ``window`` (prior support ``prior``) and the change-time interval."""
    k, mu0, mu1, llr, iterations, stable, testable = split
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
    mean, p1, p2 = _prefix_sums(values, lengths)
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
        early = _significant_split(p1[active], p2[active], lo, end, lo, end, settings)
        seg_lo[active] = np.where(early >= 0, early, lo)
        active = active[early >= 0]
        active = active[can_hold(active)]

    # the change in the window: §5.2.1's split, searched in the window, on the segment; kept
    # when the window holds at least min_window_share of the change's posterior on the window
    # and its margins (otherwise the data place the change outside the window)
    split = _split(p1, p2, seg_lo, seg_hi, window_start, window_end, settings, direction)
    prior = np.maximum(near_lo, seg_lo), np.minimum(near_hi, seg_hi + 1)
    window = window_start, window_end
    columns = _finish(split, mean, (p1, p2), (seg_lo, seg_hi), prior, window, settings)
    index, share, first, last = columns[0], columns[9], columns[10], columns[11]
    outside = share < settings.min_window_share
    return (
        np.where(outside, -1, index), *columns[1:10],
        np.where(outside, -1, first), np.where(outside, -1, last),
    )  # fmt: skip


def _significant_split(
    p1: np.ndarray,
    p2: np.ndarray,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    settings: ChangePointSettings,
) -> np.ndarray:
    """Per row, the most likely split (either direction) of ``[seg_lo, seg_hi)`` within
    ``[start, end)`` when its p-value times the number of positions searched is below
    ``alpha``; -1 otherwise."""
    split = _split(p1, p2, seg_lo, seg_hi, start, end, settings, "both", iterate=False)
    k, llr, testable = split[0], split[3], split[6]
    side = settings.min_points_each_side
    searched = np.minimum(end, seg_hi - side + 1) - np.maximum(start, seg_lo + side)
    significant = testable & (chi2.sf(llr, 2) * np.maximum(searched, 1) < settings.alpha)
    return np.where(significant, k, -1)


def _log_likelihood_ratio(n: np.ndarray, var0: np.ndarray, rss1: np.ndarray) -> np.ndarray:
    """-2·log(L0/L1) for Gaussian models: ``n·log(σ̃²/s²) + 2`` with ``s² = rss1/(n-2)``.

    A constant series has no change (LLR 0). A perfect step (s² = 0 with σ̃² > 0) takes
    s = 0.01·σ̃, as Kats does, which makes it decisively significant rather than infinite.
    The closed form dips just below 0 when the split explains nothing (s² > σ̃²); such values
    are clamped to 0 (p = 1).
    """
    scale = np.where(n > 2, rss1 / np.maximum(n - 2, 1), 0.0)
    perfect = (scale <= 0) & (var0 > 0)
    scale = np.where(perfect, var0 * 1e-4, scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = np.where(
            perfect,
            n * np.log(1e4) + n,  # the residual term vanishes when s is substituted
            n * np.log(var0 / scale) + 2.0,
        )
    return np.where((var0 > 0) & np.isfinite(llr), np.maximum(llr, 0.0), 0.0)
