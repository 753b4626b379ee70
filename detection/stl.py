"""STL (Cleveland et al. 1990) over a batch of series of one length and period, vectorised: the
algorithm of ``statsmodels.tsa.seasonal.STL`` (netlib's ``stl``: inner passes of cycle-subseries
loess, low-pass filter and trend loess; outer passes of bisquare robustness weights), step for
step, with the same windows, jumps, interpolation, fallbacks and weights.

What differs is how a loess fit sums. statsmodels walks a window, normalises its weights and sums
point by point; here every fit of a pass is a few small matrix products: the weighted moments
``Σw``, ``Σw·u``, ``Σw·u²``, ``Σw·y`` and ``Σw·u·y`` over its window (``u`` the distance to the
fitted point, ``w`` its tricube weight times the robustness weight), and the local line's value
at the point from them, ``(Σw·u²·Σw·y − Σw·u·Σw·u·y) / (Σw·Σw·u² − (Σw·u)²)``. The fit is the
same function of the data; its value differs from statsmodels' in the last bits (about 1e-14 of
the series' scale, ``tests/detection/test_stl.py``), which the robustness passes carry along
without growing. Each series' numbers are computed alone (matrix products stacked per series,
never across them), so they do not depend on the other series of the batch.

Complexity: O(passes × n × (seasonal window + trend window / trend jump + low-pass window /
low-pass jump)) per series, 2 × 16 passes when robust, as statsmodels.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = ["stl_batch"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Where = tuple[tuple[int, int, int], ...]  # fits: (xs, nleft, nright), 1-based, window inclusive


@dataclass(frozen=True, slots=True)
class _Fits:
    """Loess fits of series of ``n`` points, each at its ``xs`` on its window of ``L`` points
    (``columns``): statsmodels' ``_est`` weights (tricube of the distance over h, 1 within
    0.001·h, 0 beyond 0.999·h; h the farther window end, widened by ``(length − n) // 2`` when
    the window is longer than the series), times the window's values, give the moments."""

    count: int
    columns: IntArray  # (fits, L)
    moments: FloatArray  # (fits, L, 3): w, w·u, w·u²
    levels: FloatArray  # (fits, L, 2): w, w·u (times robustness-weighted values)
    plain: FloatArray  # (fits, L, 1): the fit's value as a linear map, without robustness
    line: npt.NDArray[np.bool_]  # (fits,): degree 1 and h > 0 (statsmodels fits a line)
    min_spread2: float  # a line needs Σw̃(x − x̄)² > (0.001·(n − 1))²


@lru_cache(maxsize=128)
def _fits(n: int, length: int, degree: int, where: Where) -> _Fits:
    size = max(nright - nleft + 1 for _, nleft, nright in where)
    count = len(where)
    columns = np.zeros((count, size), dtype=np.int64)
    w = np.zeros((count, size))
    u = np.zeros((count, size))
    line = np.zeros(count, dtype=bool)
    for f, (xs, nleft, nright) in enumerate(where):
        h = float(max(xs - nleft, nright - xs))
        if length > n:
            h += (length - n) // 2
        x = np.arange(nleft, nright + 1, dtype=np.float64)
        r = np.abs(x - xs)
        with np.errstate(divide="ignore", invalid="ignore"):
            tricube = (1.0 - (r / h) ** 3) ** 3
        width = x.size
        columns[f, :width] = x.astype(np.int64) - 1
        w[f, :width] = np.where(r <= 0.999 * h, np.where(r <= 0.001 * h, 1.0, tricube), 0.0)
        u[f, :width] = x - xs
        line[f] = h > 0 and degree > 0
    wu = w * u
    wuu = wu * u
    min_spread2 = (0.001 * (n - 1.0)) ** 2
    s0, s1, s2 = (a.sum(axis=1, keepdims=True) for a in (w, wu, wuu))
    d = s0 * s2 - s1 * s1
    with np.errstate(divide="ignore", invalid="ignore"):
        fitted = line[:, None] & (d > min_spread2 * s0 * s0)
        plain = np.where(fitted, (w * s2 - wu * s1) / d, w / s0)
    return _Fits(
        count,
        columns,
        np.stack([w, wu, wuu], axis=2),
        np.stack([w, wu], axis=2),
        plain[:, :, None],
        line,
        min_spread2,
    )


@dataclass(frozen=True, slots=True)
class _Line:
    """The weighted moments of some fits' windows (Σw, Σw·u, Σw·u²) and what the local lines
    need of them alone; the weighted values (Σw·y, Σw·u·y) then give each fit's value."""

    s0: FloatArray
    s1: FloatArray
    s2: FloatArray
    d: FloatArray
    fitted: npt.NDArray[np.bool_]  # a line (else the weighted mean), as statsmodels decides
    every: bool

    @staticmethod
    def of(moments: FloatArray, line: npt.NDArray[np.bool_], min_spread2: float) -> _Line:
        """From moments stacked on the last axis; ``line`` broadcasts against the fits."""
        s0, s1, s2 = moments[..., 0], moments[..., 1], moments[..., 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            d = s0 * s2 - s1 * s1
            fitted = (d > min_spread2 * s0 * s0) & line
        return _Line(s0, s1, s2, d, fitted, bool(fitted.all()))

    def value(self, levels: FloatArray) -> FloatArray:
        """The fits' values: ``(Σw·u²·Σw·y − Σw·u·Σw·u·y) / (Σw·Σw·u² − (Σw·u)²)``, or Σw·y/Σw
        where statsmodels fits no line; NaN where a window holds no weight (statsmodels'
        ``_est`` returns NaN there and its callers fall back)."""
        t0, t1 = levels[..., 0], levels[..., 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            value: FloatArray = (self.s2 * t0 - self.s1 * t1) / self.d
            if not self.every:
                value = np.where(self.fitted, value, t0 / self.s0)
        return value


def _ess_windows(n: int, length: int, jump: int) -> tuple[Where, int]:
    """statsmodels' ``_ess`` fits for a series of ``n`` points (n ≥ 2), in order: at every
    ``jump``-th point (every point without a jump) and, when the stride misses the last point,
    an extra fit there on the last window; and the jump it uses."""
    newnj = min(jump, n - 1)
    where: list[tuple[int, int, int]] = []
    nleft, nright = 1, n
    if length >= n:
        where = [(i + 1, 1, n) for i in range(0, n, newnj)]
    elif newnj == 1:
        nsh = (length + 2) // 2
        nleft, nright = 1, length
        for i in range(n):
            if (i + 1) > nsh and nright != n:
                nleft += 1
                nright += 1
            where.append((i + 1, nleft, nright))
    else:
        nsh = (length + 1) // 2
        for i in range(0, n, newnj):
            if (i + 1) < nsh:
                nleft, nright = 1, length
            elif (i + 1) >= (n - nsh + 1):
                nleft, nright = n - length + 1, n
            else:
                nleft, nright = i + 1 - nsh + 1, length + i + 1 - nsh
            where.append((i + 1, nleft, nright))
    if newnj > 1 and ((n - 1) // newnj) * newnj + 1 != n:
        where.append((n, nleft, nright))
    return tuple(where), newnj


@dataclass(frozen=True, slots=True)
class _Spread:
    """statsmodels' linear interpolation from fits a jump apart (and the extra fit at the last
    point) to every point ``j``: ``v[left] + (v[right] − v[left]) / span · offset``."""

    left: IntArray
    right: IntArray
    span: FloatArray
    offset: FloatArray

    def apply(self, value: FloatArray, axis: int) -> FloatArray:
        vl = np.take(value, self.left, axis=axis)
        vr = np.take(value, self.right, axis=axis)
        shape = [1] * value.ndim
        shape[axis] = self.left.size
        out: FloatArray = vl + (vr - vl) / self.span.reshape(shape) * self.offset.reshape(shape)
        return out


def _spread(n: int, jump: int, count: int) -> _Spread:
    k = ((n - 1) // jump) * jump + 1  # 1-based: the last point fitted in stride
    j = np.arange(n)
    left = np.minimum(j // jump, count - 1)
    right = np.minimum(left + 1, count - 1)
    span = np.full(n, float(jump))
    offset = (j - left * jump).astype(np.float64)
    if k != n:  # from the last stride fit (k − 1) to the extra fit (count − 1)
        tail = j >= k - 1
        left[tail], right[tail] = count - 2, count - 1
        span[tail] = n - k
        offset[tail] = j[tail] + 1 - k
    if k == n - 1:  # statsmodels keeps the extra fit's value at the last point
        left[n - 1] = count - 1
    return _Spread(left, right, span, offset)


@dataclass(frozen=True, slots=True)
class _Smoother:
    """One ``_ess`` call: its fits, the point each falls back to when its window holds no
    weight, and the interpolation to all ``n`` points (None without a jump)."""

    fits: _Fits
    at: IntArray
    spread: _Spread | None


@lru_cache(maxsize=128)
def _smoother(n: int, length: int, degree: int, jump: int) -> _Smoother:
    where, newnj = _ess_windows(n, length, jump)
    at = np.array([xs - 1 for xs, _, _ in where], dtype=np.int64)
    spread = None if newnj == 1 else _spread(n, newnj, len(where))
    return _Smoother(_fits(n, length, degree, where), at, spread)


def _windows(x: FloatArray, fits: _Fits) -> FloatArray:
    """(rows, fits, 1, L): each fit's window of each row, laid out contiguously, so that every
    row's products see the same memory layout whatever the number of rows (a strided layout
    would send them down another BLAS path, with other roundings)."""
    windows: FloatArray = np.take(x, fits.columns, axis=1)
    return windows[:, :, None, :]


def _smooth(
    plan: _Smoother,
    y: FloatArray,
    robustness: FloatArray | None = None,
    line: _Line | None = None,
) -> FloatArray:
    """statsmodels' ``_ess`` on each row of ``y`` (rows, n), with ``robustness`` weights and
    their ``line`` (``_robust_line``) or without."""
    fits = plan.fits
    if robustness is None or line is None:
        value: FloatArray = (_windows(y, fits) @ fits.plain)[:, :, 0, 0]
    else:
        value = line.value((_windows(robustness * y, fits) @ fits.levels)[:, :, 0])
        empty = np.isnan(value)
        if empty.any():
            value = np.where(empty, y[:, plan.at], value)
    return value if plan.spread is None else plan.spread.apply(value, 1)


def _robust_line(plan: _Smoother, robustness: FloatArray) -> _Line:
    """The weighted moments of ``plan``'s fits under ``robustness`` weights."""
    fits = plan.fits
    moments = (_windows(robustness, fits) @ fits.moments)[:, :, 0]
    return _Line.of(moments, fits.line, fits.min_spread2)


@dataclass(frozen=True, slots=True)
class _Cycles:
    """The cycle-subseries of ``k`` points (the phases ``phases`` of the period), smoothed as
    statsmodels' ``_ss`` does: their ``_ess`` plus a fit one cycle before and one after. The
    fits (before, the ``_ess`` fits, after) as dense (fits, k) weights, which multiply the
    subseries (k, phases) from the left."""

    phases: slice
    k: int
    fits: _Fits
    moments: FloatArray  # (3·fits, k): w, then w·u, then w·u²
    levels: FloatArray  # (2·fits, k)
    plain: FloatArray  # (fits, k)
    at: IntArray  # (fits − 2,) the point each inner fit falls back to
    spread: _Spread | None  # from the inner fits to the k inner values


def _dense(fits: _Fits, k: int, planes: FloatArray) -> FloatArray:
    """(planes × fits, k): the banded weights ``planes`` (fits, L, planes) laid out densely."""
    count, _, depth = planes.shape
    out = np.zeros((depth, count, k))
    rows = np.broadcast_to(np.arange(count)[:, None], fits.columns.shape)
    for p in range(depth):
        np.add.at(out[p], (rows, fits.columns), planes[:, :, p])
    return out.reshape(depth * count, k)


@lru_cache(maxsize=64)
def _cycles(n: int, period: int, length: int, degree: int, jump: int) -> tuple[_Cycles, ...]:
    """The subseries of a series of ``n`` ≥ 2·period points: phases below ``n − (kmax − 1) ·
    period`` have ``kmax`` points, the others one fewer (every k ≥ 2)."""
    kmax = (n - 1) // period + 1
    longer = n - (kmax - 1) * period
    parts = [(slice(0, longer), kmax)]
    if longer < period:
        parts.append((slice(longer, period), kmax - 1))
    out = []
    for phases, k in parts:
        inner, newnj = _ess_windows(k, length, jump)
        where = ((0, 1, min(length, k)), *inner, (k + 1, max(1, k - length + 1), k))
        fits = _fits(k, length, degree, where)
        spread = _spread(k, newnj, len(inner)) if newnj > 1 else None
        at = np.array([xs - 1 for xs, _, _ in inner], dtype=np.int64)
        moments = _dense(fits, k, fits.moments)
        levels = _dense(fits, k, fits.levels)
        plain = _dense(fits, k, fits.plain)
        out.append(_Cycles(phases, k, fits, moments, levels, plain, at, spread))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _RobustCycles:
    """Robustness weights laid out by cycle and each part's weighted moments under them."""

    weights: FloatArray  # (rows, cycles, period)
    lines: tuple[_Line, ...]


def _robust_cycles(
    robustness: FloatArray, parts: tuple[_Cycles, ...], period: int
) -> _RobustCycles:
    rows = len(robustness)
    w3 = _cycle_layout(robustness, parts[0].k, period)
    lines = []
    for part in parts:
        weights = w3[:, : part.k, part.phases]
        count = part.fits.count
        moments = np.moveaxis((part.moments @ weights).reshape(rows, 3, count, -1), 1, -1)
        lines.append(_Line.of(moments, part.fits.line[:, None], part.fits.min_spread2))
    return _RobustCycles(w3, tuple(lines))


def _cycle_smooth(
    y: FloatArray, robust: _RobustCycles | None, parts: tuple[_Cycles, ...], period: int
) -> FloatArray:
    """statsmodels' ``_ss``: each cycle-subseries smoothed and extended by one cycle at each
    end, as (rows, n + 2·period). Phase j's m-th point is ``y[:, m·period + j]``, so the
    series laid out as (rows, cycles, period) holds the subseries in its columns."""
    rows, n = y.shape
    kmax = parts[0].k
    y3 = _cycle_layout(y, kmax, period)
    out = np.empty((rows, kmax + 2, period))
    for i, part in enumerate(parts):
        sub = y3[:, : part.k, part.phases]
        count = part.fits.count
        if robust is None:
            value: FloatArray = part.plain @ sub
        else:
            weights = robust.weights[:, : part.k, part.phases]
            levels = np.moveaxis((part.levels @ (weights * sub)).reshape(rows, 2, count, -1), 1, -1)
            value = robust.lines[i].value(levels)
            inner = value[:, 1:-1]
            empty = np.isnan(inner)
            if empty.any():
                value[:, 1:-1] = np.where(empty, sub[:, part.at], inner)
        if part.spread is not None:
            value = np.concatenate(
                [value[:, :1], part.spread.apply(value[:, 1:-1], 1), value[:, -1:]], axis=1
            )
        if robust is not None:
            for end, neighbour in ((0, 1), (-1, -2)):
                empty = np.isnan(value[:, end])
                if empty.any():
                    value[:, end] = np.where(empty, value[:, neighbour], value[:, end])
        out[:, : part.k + 2, part.phases] = value
    cycles: FloatArray = out.reshape(rows, (kmax + 2) * period)[:, : n + 2 * period]
    return cycles


def _cycle_layout(x: FloatArray, cycles: int, period: int) -> FloatArray:
    """(rows, cycles, period): ``x`` (rows, n) padded with zeros to whole cycles."""
    rows, n = x.shape
    padded = np.zeros((rows, cycles * period))
    padded[:, :n] = x
    return padded.reshape(rows, cycles, period)


def _moving_average(x: FloatArray, length: int) -> FloatArray:
    """statsmodels' ``_ma``: the running mean of ``length`` points, from its running sum (the
    same additions in the same order: the first window's points, then each step's new point
    minus the one it drops)."""
    steps = np.concatenate([x[:, :length], x[:, length:] - x[:, :-length]], axis=1)
    running = np.cumsum(steps, axis=1)[:, length - 1 :]
    out: FloatArray = running / float(length)
    return out


def _robustness(y: FloatArray, fit: FloatArray) -> FloatArray:
    """statsmodels' ``_rwts``: bisquare weights of |residual| over 6 × its median."""
    r = np.abs(y - fit)
    n = y.shape[1]
    mid = [n // 2, n - n // 2 - 1]
    part = np.partition(r, mid, axis=1)
    cmad = 3.0 * (part[:, mid[0]] + part[:, mid[1]])[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = r / cmad
        bisquare = (1.0 - u * u) ** 2
    weights = np.where(r <= 0.001 * cmad, 1.0, np.where(r <= 0.999 * cmad, bisquare, 0.0))
    out: FloatArray = np.where(cmad == 0, 1.0, weights)
    return out


def stl_batch(
    y: np.ndarray,
    period: int,
    seasonal: int,
    trend: int,
    low_pass: int,
    *,
    robust: bool = True,
    seasonal_jump: int = 1,
    trend_jump: int = 1,
    low_pass_jump: int = 1,
) -> tuple[FloatArray, FloatArray]:
    """(seasonal, trend) of each row of ``y`` (rows, n): ``STL(row, period, seasonal, trend,
    low_pass, robust=robust, *_jump=…).fit()`` with statsmodels' defaults otherwise (degree 1
    everywhere; 2 inner passes and 15 robustness passes when robust, else 5 and none). Needs
    ``period ≥ 2`` and ``n ≥ 2·period``; each row's numbers are its own (see the module)."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    rows, n = y.shape
    if period < 2 or n < 2 * period:
        raise ValueError(f"STL needs at least two periods of {period} points, got {n}")
    inner, outer = (2, 15) if robust else (5, 0)
    parts = _cycles(n, period, seasonal, 1, seasonal_jump)
    low = _smoother(n, low_pass, 1, low_pass_jump)
    smooth_trend = _smoother(n, trend, 1, trend_jump)
    season = np.zeros((rows, n))
    level = np.zeros((rows, n))
    weights: FloatArray | None = None
    for k in range(outer + 1):
        # the robustness weights' moments are the same in both inner passes: computed once
        cycle_line = None if weights is None else _robust_cycles(weights, parts, period)
        trend_line = None if weights is None else _robust_line(smooth_trend, weights)
        for _ in range(inner):
            cycles = _cycle_smooth(y - level, cycle_line, parts, period)
            filtered = _moving_average(cycles, period)
            filtered = _moving_average(filtered, period)
            filtered = _moving_average(filtered, 3)
            season = cycles[:, period : period + n] - _smooth(low, filtered)
            level = _smooth(smooth_trend, y - season, weights, trend_line)
        if k < outer:
            weights = _robustness(y, level + season)
    return season, level
