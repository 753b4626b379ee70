"""The most likely single split of each row's segment (FBDetect §5.2.1's CUSUM/EM, finished by
the exact maximum-likelihood split) from the rows' prefix sums, and its likelihood ratio: the
core of ``changepoint.py`` (docs/design/changepoint.md).

Rows are scanned in blocks of about ``BLOCK_CELLS`` cells of the band of columns they may split
at, so the scan's working arrays stay in the processor's cache: a chunk of 2,048 rows with a
1,500-point history would otherwise make a dozen 25 MB temporaries per scan, each paid for in
page faults. A block gives each row exactly what a scan of the whole chunk gives it: the band
of columns is the chunk's, and each row's arithmetic, arg-min and arg-max see the same values
in the same order.

Complexity: O(iterations × rows × band) time, O(BLOCK_CELLS) memory for the scan (the
outputs are O(rows)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from regbot.detection.stage_settings import ChangePointSettings

__all__ = [
    "BLOCK_CELLS",
    "Direction",
    "exact_splits",
    "log_likelihood_ratio",
    "row_blocks",
    "split",
]

BLOCK_CELLS = 1 << 16  # cells of a block's band arrays: 512 KB of float64 each

Direction = Literal["increase", "decrease", "both"]

Columns = tuple[np.ndarray, ...]


def row_blocks(rows: int, width: int, cells: int | None = None) -> list[tuple[int, int]]:
    """``[a, b)`` ranges covering ``rows`` rows, each of about ``cells`` (default
    ``BLOCK_CELLS``) cells of ``width`` columns (at least one row)."""
    step = max(1, (BLOCK_CELLS if cells is None else cells) // max(width, 1))
    return [(a, min(rows, a + step)) for a in range(0, rows, step)]


@dataclass(frozen=True, slots=True)
class _Band:
    """The positions each row may split at: ``[lo, hi)`` per row (k < hi), the rows that have
    one (``testable``), and the band of columns ``[first, stop)`` that covers them all."""

    lo: np.ndarray
    hi: np.ndarray
    testable: np.ndarray
    first: int
    stop: int

    @staticmethod
    def of(
        width1: int,
        seg_lo: np.ndarray,
        seg_hi: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        settings: ChangePointSettings,
    ) -> _Band:
        side = settings.min_points_each_side
        lo = np.maximum(start, seg_lo + side)
        hi = np.minimum(end, seg_hi - side + 1)  # k < hi
        testable = lo < hi
        first = int(np.clip(lo[testable].min(), 0, width1 - 1)) if testable.any() else 0
        stop = int(np.clip(hi[testable].max(), first + 1, width1)) if testable.any() else 1
        return _Band(lo, hi, testable, first, stop)

    def allowed(self, a: int, b: int) -> np.ndarray | None:
        """(b - a, band) bool: which band columns rows ``[a, b)`` may split at; None when each
        of these rows may split at every column of the band."""
        lo, hi = self.lo[a:b], self.hi[a:b]
        if bool(np.all(lo == self.first)) and bool(np.all(hi == self.stop)):
            return None
        band = np.arange(self.first, self.stop)[None, :]
        mask: npt.NDArray[np.bool_] = (band >= lo[:, None]) & (band < hi[:, None])
        return mask


class _Rows:
    """The rows of the prefix sums being split (``index`` into ``p1``/``p2``, None for all of
    them, in order) and their segments' signed sums."""

    def __init__(
        self,
        p1: np.ndarray,
        p2: np.ndarray,
        index: np.ndarray | None,
        seg_lo: np.ndarray,
        seg_hi: np.ndarray,
        sign: float,
    ) -> None:
        self.p1, self.p2, self.index = p1, p2, index
        self.at = np.arange(p1.shape[0]) if index is None else index
        self.seg_lo, self.seg_hi, self.sign = seg_lo, seg_hi, sign
        self.n_seg = np.maximum(seg_hi - seg_lo, 1)
        self.base = sign * p1[self.at, seg_lo]
        self.total = sign * p1[self.at, seg_hi] - self.base  # segment sum

    def before(self, a: int, b: int, first: int, stop: int) -> np.ndarray:
        """(b - a, band) signed sums of rows ``[a, b)``'s segment points before each column."""
        rows = slice(a, b) if self.index is None else self.index[a:b]
        band = self.p1[rows, first:stop]
        out: npt.NDArray[np.float64] = (
            np.subtract(band, self.base[a:b, None])
            if self.sign == 1.0
            else np.subtract(self.sign * band, self.base[a:b, None])
        )  # sign · p1 − base, as one expression would: 1.0 · x is x
        return out

    def means(self, k: np.ndarray, a: int = 0, b: int | None = None) -> tuple[np.ndarray, ...]:
        """The segment's (signed) means before and from ``k`` for rows ``[a, b)``."""
        seg_lo, n_seg = self.seg_lo[a:b], self.n_seg[a:b]
        kk = np.clip(k - seg_lo, 1, np.maximum(n_seg - 1, 1))
        ahead = self.sign * self.p1[self.at[a:b], seg_lo + kk] - self.base[a:b]
        return ahead / kk, (self.total[a:b] - ahead) / np.maximum(n_seg - kk, 1)


def split(
    p1: np.ndarray,
    p2: np.ndarray,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    settings: ChangePointSettings,
    direction: Direction,
    iterate: bool = True,
    rows: np.ndarray | None = None,
) -> Columns:
    """The most likely split of each row's segment ``[seg_lo, seg_hi)`` with k in ``[start,
    end)``: (k, mu0, mu1, llr, iterations, stable, testable), means relative to the row mean.
    ``rows``: the rows of ``p1``/``p2`` (prefix sums with a leading zero, ``changepoint.py``)
    the other arguments describe, default all of them. ``iterate=False`` skips CUSUM/EM and
    takes the exact ML split at once (the same k; for the baseline's older changes, where no
    iteration diagnostics are reported). Only the band of columns some row may split at is
    scanned."""
    if direction == "both":
        args = (p1, p2, seg_lo, seg_hi, start, end, settings)
        if iterate:
            up = split(*args, "increase", iterate, rows)
            down = split(*args, "decrease", iterate, rows)
        else:
            up, down = exact_splits(*args, rows)
        take_down = down[3] > up[3]
        return tuple(np.where(take_down, d, u) for u, d in zip(up, down))
    sign = -1.0 if direction == "decrease" else 1.0
    rs = _Rows(p1, p2, rows, seg_lo, seg_hi, sign)
    band = _Band.of(p1.shape[1], seg_lo, seg_hi, start, end, settings)
    m = len(seg_lo)
    k, iterations = np.empty(m, np.int64), np.zeros(m, np.int64)
    moving = band.testable.copy() if iterate else np.zeros(m, bool)
    for a, b in row_blocks(m, band.stop - band.first):
        k[a:b] = _iterated_block(rs, band, a, b, moving, iterations, settings.max_iterations)
    stable = band.testable & ~moving
    return _fitted(rs, k, band.testable, iterations, stable)


def _iterated_block(
    rs: _Rows,
    band: _Band,
    a: int,
    b: int,
    moving: np.ndarray,
    iterations: np.ndarray,
    max_iterations: int,
) -> np.ndarray:
    """Rows ``[a, b)``'s split: CUSUM/EM from the CUSUM about the mean while ``moving`` (updated
    in place, with ``iterations``), then the exact ML split where strictly more likely."""
    first, stop = band.first, band.stop
    allowed = band.allowed(a, b)
    before = rs.before(a, b, first, stop)
    count = np.arange(first, stop)[None, :] - rs.seg_lo[a:b, None]  # segment points before k
    n_seg = rs.n_seg[a:b]
    cusum = before - count * (rs.total[a:b] / n_seg)[:, None]
    k = first + _masked(cusum, allowed, np.inf).argmin(axis=1)
    still = moving[a:b]
    for _ in range(max_iterations):
        if not still.any():
            break
        iterations[a:b] += still
        mu0, mu1 = rs.means(k, a, b)
        score = before - count * ((mu0 + mu1) / 2)[:, None]
        new_k = first + _masked(score, allowed, np.inf).argmin(axis=1)
        moved = new_k != k
        k = np.where(still, new_k, k)
        still &= moved  # a view of moving: updated in place
    # the exact maximum-likelihood split over the same positions (increases: CUSUM below 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = cusum * cusum / (count * (n_seg[:, None] - count))
    side = cusum < 0
    gain = np.where(side if allowed is None else allowed & side, gain, -np.inf)
    return _better(gain, k, first, stop, band.testable[a:b])


def _masked(x: np.ndarray, allowed: np.ndarray | None, fill: float) -> np.ndarray:
    """``np.where(allowed, x, fill)``; ``x`` itself when every cell is allowed."""
    return x if allowed is None else np.where(allowed, x, fill)


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
    rs: _Rows, k: np.ndarray, testable: np.ndarray, iterations: np.ndarray, stable: np.ndarray
) -> Columns:
    """``split``'s columns for the split at ``k``: the means and the likelihood ratio."""
    p2, at, seg_lo, seg_hi, n_seg = rs.p2, rs.at, rs.seg_lo, rs.seg_hi, rs.n_seg
    total = rs.total
    mu0, mu1 = rs.means(k)
    kk = np.clip(k - seg_lo, 1, np.maximum(n_seg - 1, 1)).astype(np.float64)
    n_after = np.maximum(n_seg - kk, 1)
    sq_total = p2[at, seg_hi] - p2[at, seg_lo]
    sq_before = p2[at, seg_lo + kk.astype(np.int64)] - p2[at, seg_lo]
    sum_before, sum_after = mu0 * kk, mu1 * n_after
    rss1 = (sq_before - sum_before * mu0) + ((sq_total - sq_before) - sum_after * mu1)
    var0 = (sq_total - total * total / n_seg) / n_seg  # σ̃², population variance
    llr = log_likelihood_ratio(n_seg.astype(np.float64), var0, np.maximum(rss1, 0.0))
    llr = np.where(testable, llr, 0.0)
    return k, rs.sign * mu0, rs.sign * mu1, llr, iterations, stable, testable


def exact_splits(
    p1: np.ndarray,
    p2: np.ndarray,
    seg_lo: np.ndarray,
    seg_hi: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    settings: ChangePointSettings,
    rows: np.ndarray | None = None,
) -> tuple[Columns, Columns]:
    """``split`` without iterations for increases and for decreases, from one scan of the band.

    A decrease's band arrays are an increase's negated — its points' sums before k, its CUSUM
    and its CUSUM's starting position (the lowest of −CUSUM, i.e. the highest CUSUM) — and its
    gain is the same square, so both directions' positions come from the same arrays, exactly
    as two scans would find them."""
    up_rows = _Rows(p1, p2, rows, seg_lo, seg_hi, 1.0)
    band = _Band.of(p1.shape[1], seg_lo, seg_hi, start, end, settings)
    first, stop = band.first, band.stop
    m = len(seg_lo)
    k_up, k_down = np.empty(m, np.int64), np.empty(m, np.int64)
    for a, b in row_blocks(m, stop - first):
        allowed = band.allowed(a, b)
        count = np.arange(first, stop)[None, :] - seg_lo[a:b, None]
        n_seg = up_rows.n_seg[a:b]
        cusum = up_rows.before(a, b, first, stop)
        cusum -= count * (up_rows.total[a:b] / n_seg)[:, None]
        lowest_up = first + _masked(cusum, allowed, np.inf).argmin(axis=1)
        lowest_down = first + _masked(cusum, allowed, -np.inf).argmax(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = cusum * cusum
            gain /= count * (n_seg[:, None] - count)
        testable = band.testable[a:b]
        for k, side, lowest in ((k_up, cusum < 0, lowest_up), (k_down, cusum > 0, lowest_down)):
            if allowed is not None:
                side &= allowed
            k[a:b] = _better(np.where(side, gain, -np.inf), lowest, first, stop, testable)
    none = np.zeros(m, np.int64)
    stable = band.testable.copy()  # testable & ~moving, with nothing moving
    down_rows = _Rows(p1, p2, rows, seg_lo, seg_hi, -1.0)
    return (
        _fitted(up_rows, k_up, band.testable, none, stable),
        _fitted(down_rows, k_down, band.testable, none, stable),
    )


def log_likelihood_ratio(n: np.ndarray, var0: np.ndarray, rss1: np.ndarray) -> np.ndarray:
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
