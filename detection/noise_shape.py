"""Noise shape: is a series' noise close enough to normal for means, or does it need ranks?

Complexity: O(n · SMOOTH_POINTS) for the shape, O(n) (means, prefix sums) or O(n · m) (medians)
for rolling levels.
Design: docs/design/noise_shape.md
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.ndimage import median_filter, rank_filter

from regbot.detection.moments import std
from regbot.detection.order_stats import mad as median_absolute_deviation
from regbot.detection.order_stats import median

__all__ = [
    "NoiseShape",
    "level_of",
    "noise_shape",
    "rolling_levels",
    "smooth_residual",
    "smooth_residuals",
]

MAD_NORMAL = 1.4826
SMOOTH_POINTS = 25
LOW_RATIO, HIGH_RATIO = 0.8, 1.25
MIN_POINTS = 20

Statistic = Literal["mean", "median"]


@dataclass(frozen=True, slots=True)
class NoiseShape:
    """The decision and its numbers: ``statistic`` is "mean" for normal noise, "median" else."""

    normal: bool
    tail_ratio: float | None
    statistic: Statistic

    def numbers(self) -> dict[str, object]:
        return {
            "noise": "normal" if self.normal else "not normal",
            "noise_tail_ratio": self.tail_ratio,
            "level_statistic": self.statistic,
        }


def smooth_residual(values: np.ndarray) -> np.ndarray:
    """``values`` minus their rolling median over ``SMOOTH_POINTS`` points (fewer, odd, for a
    shorter series): the residuals ``noise_shape`` reads."""
    v = np.asarray(values, dtype=np.float64)
    residual: np.ndarray = v - median_filter(v, size=min(SMOOTH_POINTS, v.size | 1), mode="nearest")
    return residual


def smooth_residuals(samples: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``smooth_residual`` of each sample, the rolling medians of the samples of at least
    ``SMOOTH_POINTS`` points from one filter pass over them laid end to end, each padded with
    ``SMOOTH_POINTS // 2`` copies of its first and last value (what the filter's "nearest" mode
    pads one sample with), so that every window holds what it holds in the sample's own pass
    and its median is the same order statistic. Samples that are shorter, hold NaN (no order)
    or a negative zero (a tie whose sign the filter's order would pick) get their own pass.
    O(total points · SMOOTH_POINTS)."""
    arrays = [np.asarray(s, dtype=np.float64) for s in samples]
    joined = [i for i, v in enumerate(arrays) if v.ndim == 1 and v.size >= SMOOTH_POINTS]
    padded = _end_to_end([arrays[i] for i in joined])
    if _ambiguous_order(padded):
        joined = [i for i in joined if not _ambiguous_order(arrays[i])]
        padded = _end_to_end([arrays[i] for i in joined])
    out: list[np.ndarray] = list(arrays)
    alone = set(range(len(arrays))).difference(joined)
    for i in alone:
        out[i] = smooth_residual(arrays[i])
    if not joined:
        return out
    medians = median_filter(padded, size=SMOOTH_POINTS, mode="nearest")
    half = SMOOTH_POINTS // 2
    start = half
    for i in joined:
        v = arrays[i]
        out[i] = v - medians[start : start + v.size]
        start += v.size + 2 * half
    return out


def _end_to_end(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays laid end to end, each between ``SMOOTH_POINTS // 2`` copies of its first
    value and as many of its last."""
    half = SMOOTH_POINTS // 2
    pieces = []
    for v in arrays:
        pieces += [np.full(half, v[0]), v, np.full(half, v[-1])]
    return np.concatenate(pieces) if pieces else np.zeros(0)


def _ambiguous_order(v: np.ndarray) -> bool:
    """Whether ``v`` holds NaN or a negative zero."""
    return bool(np.isnan(v).any() or (np.signbit(v) & (v == 0)).any())


def noise_shape(
    values: np.ndarray,
    *,
    low: float = LOW_RATIO,
    high: float = HIGH_RATIO,
    residual: np.ndarray | None = None,
) -> NoiseShape:
    """The noise shape of ``values`` (a history, ascending time) — see docs/design/noise_shape.md.
    ``residual``: their ``smooth_residual``, when already computed."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < MIN_POINTS:
        return NoiseShape(True, None, "mean")
    if residual is None:
        residual = smooth_residual(v)
    mad = median_absolute_deviation(residual)
    sd = std(residual)
    if mad <= 0.0:
        # More than half the residuals equal: a quantised or mostly constant series. Any spread
        # at all then comes from a minority of points — not normal unless there is none.
        normal = sd == 0.0
        return NoiseShape(normal, None, "mean" if normal else "median")
    ratio = sd / (MAD_NORMAL * mad)
    normal = low <= ratio <= high
    return NoiseShape(normal, ratio, "mean" if normal else "median")


def level_of(values: np.ndarray, statistic: Statistic) -> float:
    """The level of ``values`` by ``statistic``."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()) if statistic == "mean" else median(v)


def rolling_levels(values: np.ndarray, m: int, statistic: Statistic) -> np.ndarray:
    """The ``statistic`` of every window of ``m`` consecutive points (``len(values) - m + 1`` of
    them; one window of all the points when there are fewer than ``m``; empty for no values).
    Medians are ``np.median`` of each window, read off rank filters (O(n log m)): the middle
    order statistic, or the mean of the two middle ones."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return v
    m = max(1, min(int(m), v.size))
    if statistic == "mean":
        csum = np.concatenate(([0.0], np.cumsum(v)))
        return (csum[m:] - csum[:-m]) / m
    if m < 3 or np.isnan(v).any():  # numpy's own, NaN windows included
        medians: np.ndarray = np.median(sliding_window_view(v, m), axis=1)
        return medians
    # a window starting at j is the filters' window centred at j + m // 2
    inside = slice(m // 2, m // 2 + v.size - m + 1)
    upper: np.ndarray = rank_filter(v, m // 2, size=m, mode="nearest")[inside]
    if m % 2:
        return upper
    lower = rank_filter(v, m // 2 - 1, size=m, mode="nearest")[inside]
    out: np.ndarray = (lower + upper) / 2  # np.median's mean of the two middle values
    return out
