"""Sums of phase-adjusted values over a few windows' edges, for rows on one time axis: what the
long-term screen compares (``long_term.screen_long_term``), without adjusting every point.

The screen's cheap trend is each row's values minus its centred phase profile
(``season_adjust.subtract_phase_profile``), and it reads that trend only at the edges of its
windows: the first and last few points of each. Rows on one time axis share their phase buckets
and their windows' edges, so only the profile (from the historical points) and the adjusted
values at the edge columns are needed. Both are computed as ``subtract_phase_profile`` computes
them — the same bucket sums in the same order (one ``bincount`` over the rows laid end to end),
the same centring, the same subtraction — and each edge's sum is taken over a full-width row
holding the adjusted values at the edge and zeros elsewhere, the very row (and so the same
pairwise summation) the screen sums; ``tests/detection/test_phase_edges.py`` checks the bits.

Complexity: O(rows × historical points) for the profile, O(rows × width) per edge sum.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["edge_sums"]

FloatArray = npt.NDArray[np.float64]


def _phase_bucket(times: np.ndarray, origin_s: float, period_s: float, buckets: int) -> np.ndarray:
    """The phase bucket of each timestamp (``season_adjust``'s rule)."""
    phase = np.mod(times - origin_s, period_s) / period_s
    bucket: npt.NDArray[np.int64] = np.minimum((phase * buckets).astype(np.int64), buckets - 1)
    return bucket


def edge_sums(
    values: np.ndarray,
    times: np.ndarray,
    valid: np.ndarray,
    historical: np.ndarray,
    edges: list[np.ndarray],
    origin_s: float,
    period_s: float,
    buckets: int,
    indices: dict[tuple[int, int, bytes], np.ndarray] | None = None,
) -> list[FloatArray]:
    """For each edge (a (width,) mask), each row's ``np.where(edge, adjusted, 0.0).sum(axis=1)``,
    ``adjusted`` being ``subtract_phase_profile(values, times, valid, historical, origin_s,
    period_s, buckets)`` of rows sharing the (width,) ``times``, ``valid`` and ``historical``
    masks (``values`` is (rows, width)). ``indices``: where to keep the bucket index of the
    rows' historical points for the next call (the same for every chunk of a batch)."""
    rows, width = values.shape
    bucket = _phase_bucket(np.where(valid, times, origin_s), origin_s, period_s, buckets)
    columns = np.flatnonzero(historical)
    in_history = bucket[columns]
    key = (rows, buckets, in_history.tobytes())
    index = indices.get(key) if indices is not None else None
    if index is None:  # row · buckets + bucket of each historical point, rows end to end
        index = (np.arange(rows)[:, None] * buckets + in_history[None, :]).ravel()
        if indices is not None:
            indices.clear()  # the chunks of one batch ask for one index: keep the last
            indices[key] = index
    if columns.size and columns[-1] - columns[0] + 1 == columns.size:  # one run: a slice
        history = values[:, columns[0] : columns[-1] + 1]
    else:
        history = values[:, columns]
    sums = np.bincount(index, weights=history.ravel(), minlength=rows * buckets)
    counts = np.bincount(in_history, minlength=buckets)
    covered = bool(np.all(counts >= 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        profile = sums.reshape(rows, buckets) / counts
    profile = np.where(covered, profile - profile.mean(axis=1, keepdims=True), 0.0)
    row = np.zeros((rows, width))
    out = []
    for edge in edges:
        at = np.flatnonzero(edge)
        row[:, at] = values[:, at] - profile[:, bucket[at]]
        out.append(row.sum(axis=1))
        row[:, at] = 0.0
    return out
