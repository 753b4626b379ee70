"""Shared-cause evidence without stack samples: is one cause behind two regressions?

Complexity: the load costs O(series · points) (two medians, two matrix-vector products); the
test of k rows against m rows one (k, T) × (T, m) product per statistic, per pair of time axes.
Design: docs/design/shared_cause.md
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import TracebackType

import numpy as np
import numpy.typing as npt
from scipy.special import ndtr

from regbot.detection.dedup_context import DedupContext, evenly_spaced
from regbot.detection.row_stats import nan_row_medians

__all__ = [
    "CLIP_Z",
    "LAGS",
    "LoadFactor",
    "Noise",
    "PairStats",
    "delta_with_se",
    "estimate_load",
    "load_over_windows",
    "noise_of",
    "pair_stats",
    "paired_points",
]

CLIP_Z = 4.0
LAGS = 8
MAD_SCALE = 1.4826
SCALE_POINTS = 256  # columns a fleet series' robust scale is estimated from
START_SERIES = 1000  # series whose median starts the load factor (evenly spaced)
LOAD_SERIES = 8000  # series the load factor is estimated from (evenly spaced by id)
R_LIMIT = 1.0 - 1e-9


@dataclass(frozen=True, slots=True)
class LoadFactor:
    """The fleet's common factor of residual noise: per difference time (the later point's
    time), a value of unit mean square; ``series``: how many series it was estimated from."""

    times_s: np.ndarray
    values: np.ndarray
    series: int


@dataclass(frozen=True, slots=True)
class Noise:
    """Load-free residual noise of rows grouped by time axis. Row ``i`` is row ``position[i]``
    of class ``axis[i]``: ``times_s[c]`` (T_c,), ``z[c]`` (k_c, T_c) standardised residuals (0
    where masked), ``valid[c]`` (k_c, T_c). Per row: ``scale`` (raw units per unit of z),
    ``autocorr`` (k, LAGS), ``load_loading`` (its loading on the load factor, 0 without one)
    and ``usable`` (enough points to be tested). ``patterns[c]`` (P_c, T_c): the distinct rows
    of ``valid[c]`` as 0/1 floats, ``pattern_of[c]`` (k_c,) each row's among them
    (``validity_patterns``)."""

    axis: np.ndarray
    position: np.ndarray
    times_s: list[np.ndarray]
    z: list[np.ndarray]
    valid: list[np.ndarray]
    scale: np.ndarray
    autocorr: np.ndarray
    load_loading: np.ndarray
    usable: np.ndarray
    patterns: list[np.ndarray]
    pattern_of: list[np.ndarray]

    def raw_sd(self) -> np.ndarray:
        """(k,) each row's residual standard deviation in raw units."""
        out = np.zeros(len(self.axis))
        for c, (z, valid) in enumerate(zip(self.z, self.valid)):
            rows = np.flatnonzero(self.axis == c)
            count = np.maximum(valid.sum(axis=1), 1)
            out[rows] = np.sqrt((z * z).sum(axis=1) / count)[self.position[rows]]
        sd: npt.NDArray[np.float64] = out * self.scale
        return sd


@dataclass(frozen=True)
class PairStats:
    """Statistics of rows ``a`` against rows ``b``, each (len(a), len(b)); NaN where a pair has
    fewer than ``MIN_POINTS`` common points or a row is unusable (``r``, ``z``, ``n_eff`` and
    so ``p``). ``slope``: raw residual of the ``b`` row on the ``a`` row's. ``p``, ``slope``
    and ``slope_se`` are computed when first read (most callers need them at a few pairs:
    ``p_at``), each from the same arrays by the same formula whenever it is read."""

    r: np.ndarray
    z: np.ndarray
    points: np.ndarray
    n_eff: np.ndarray
    dot: np.ndarray
    energy_a: np.ndarray
    energy_b: np.ndarray
    ratio: np.ndarray  # (len(a), len(b)) broadcastable: scale of b over scale of a
    enough: np.ndarray

    def p_at(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``p[rows, columns]`` (NumPy fancy indexing), computed for those pairs only."""
        return np.asarray(ndtr(-self.z[rows, columns]))

    @cached_property
    def p(self) -> np.ndarray:
        """One-sided p-value of ``z`` (positive correlation)."""
        return np.asarray(ndtr(-self.z))

    @cached_property
    def slope(self) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.where(self.enough, self.dot / self.energy_a * self.ratio, np.nan)

    @cached_property
    def slope_se(self) -> np.ndarray:
        with np.errstate(all="ignore"):
            spread = np.sqrt(self.energy_b / self.energy_a) * self.ratio
            out: npt.NDArray[np.float64] = spread * np.sqrt(
                (1.0 - self.r * self.r) / np.maximum(self.n_eff - 2.0, 1.0)
            )
            return out


MIN_POINTS = 8


def paired_points(times_a: np.ndarray, times_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the points of two series taken as simultaneous: each point of ``a`` with the
    nearest point of ``b`` when they are less than half a spacing apart (the smaller median
    spacing of the two), each point of ``b`` used once. Series from different sources rarely
    share exact timestamps (a store buckets on multiples of its width, a metrics system on its
    own scrape times), so exact intersection would find no common points."""
    if len(times_a) == 0 or len(times_b) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    spacings = [np.median(np.diff(t)) for t in (times_a, times_b) if len(t) > 1]
    tolerance = 0.5 * min(spacings) if spacings else 0.0
    right = np.clip(np.searchsorted(times_b, times_a), 0, len(times_b) - 1)
    left = np.clip(right - 1, 0, len(times_b) - 1)
    nearer_left = np.abs(times_b[left] - times_a) < np.abs(times_b[right] - times_a)
    nearest = np.where(nearer_left, left, right)
    distance = np.abs(times_b[nearest] - times_a)
    close = (distance < tolerance) | (distance == 0)
    ia = np.flatnonzero(close)
    ib, first = np.unique(nearest[ia], return_index=True)
    return ia[first], ib


def delta_with_se(values: np.ndarray, change_index: int) -> tuple[float, float]:
    """Mean after minus mean before the change and its standard error
    (√(s²_before/n_before + s²_after/n_after); NaN with fewer than 2 points a side)."""
    values = np.asarray(values, dtype=np.float64)
    before, after = values[: max(change_index, 0)], values[max(change_index, 0) :]
    if before.size < 2 or after.size < 2:
        return float("nan"), float("nan")
    delta = float(after.mean() - before.mean())
    se = math.sqrt(before.var(ddof=1) / before.size + after.var(ddof=1) / after.size)
    return delta, se


def _standardised_differences(
    values: np.ndarray, mask: np.ndarray, scale_points: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of differences (k, T) with their masks: z (0 where masked), scale (k,), and the
    mask with rows of no spread emptied. ``scale_points``: the median and MAD from that many
    evenly spaced columns only (a fleet-wide estimate needs no more; all columns unmasked)."""
    if mask.all():
        sample = values
        if scale_points is not None and values.shape[1] > scale_points:
            sample = values[:, :: values.shape[1] // scale_points]
        centre = np.median(sample, axis=1, keepdims=True)
        mad = np.median(np.abs(sample - centre), axis=1)
    else:
        masked = np.where(mask, values, np.nan)
        with np.errstate(all="ignore"):
            centre = nan_row_medians(masked)[:, None]
            mad = nan_row_medians(np.abs(masked - centre))
    scale = MAD_SCALE * np.nan_to_num(mad)
    flat = ~(scale > 0)
    if flat.any():
        with np.errstate(all="ignore"), _quiet():
            sd = np.nanstd(np.where(mask[flat], values[flat], np.nan), axis=1)
        scale[flat] = np.nan_to_num(sd)
    ok = scale > 0
    if not ok.all():
        mask = mask & ok[:, None]
    z = values - np.nan_to_num(centre)
    z /= np.where(ok, scale, 1.0)[:, None]
    np.clip(z, -CLIP_Z, CLIP_Z, out=z)
    if not mask.all():
        z[~mask] = 0.0
    return z, np.where(ok, scale, 0.0), mask


class _quiet:
    """Silences numpy's all-NaN-slice warnings inside a block."""

    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._catch.__exit__(exc_type, exc, traceback)


def load_sample_ids(context: DedupContext) -> list[str]:
    """The series the fleet's load factor is estimated from: at most ``LOAD_SERIES`` of the
    run's, evenly spaced by id (a few thousand estimate the one shared factor as well as a
    whole fleet)."""
    return evenly_spaced(sorted(context.all_series_ids()), LOAD_SERIES)


def load_over_windows(
    windows: Sequence[tuple[float, float]], context: DedupContext, min_series: int
) -> LoadFactor | None:
    """The fleet's load factor over the span of ``windows`` ((start_s, end_s) per candidate:
    its historical start and its end) from the context's series, or None without windows or
    series. SOMDedup and PairwiseDedup of one run ask for the same factor: it is worked out
    once per context (kept in ``context.memo``)."""
    if not windows or not context.series:
        return None
    start_s = min(start for start, _ in windows)
    end_s = max(end for _, end in windows)
    key = ("load", float(start_s), float(end_s), int(min_series))
    if key not in context.memo:
        sample = set(load_sample_ids(context))  # kept in the run's order of series
        series = {
            sid: context.series[sid]
            for sid in context.all_series_ids()
            if sid in sample and sid in context.series
        }
        context.memo[key] = estimate_load(series, start_s, end_s, min_series)
    found = context.memo[key]
    return found if isinstance(found, LoadFactor) else None


def estimate_load(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    start_s: float,
    end_s: float,
    min_series: int,
) -> LoadFactor | None:
    """The fleet's load factor from the series on the most common time axis within
    ``[start_s, end_s]``, or None with fewer than ``min_series`` of them (docs/design/shared_cause.md)."""
    by_axis: dict[bytes, list[str]] = {}
    axes: dict[bytes, np.ndarray] = {}
    seen: dict[int, bytes] = {}  # a fleet's series usually share one times array
    for series_id, (times, _) in series.items():
        key = seen.get(id(times))
        if key is None:
            key = seen[id(times)] = np.asarray(times, dtype=np.float64).tobytes()
        axes.setdefault(key, np.asarray(times, dtype=np.float64))
        by_axis.setdefault(key, []).append(series_id)
    if not by_axis:
        return None
    key = max(by_axis, key=lambda k: len(by_axis[k]))
    ids = by_axis[key]
    times = axes[key]
    keep = np.flatnonzero((times >= start_s) & (times <= end_s))
    if len(ids) < max(min_series, 1) or keep.size < MIN_POINTS + 1:
        return None
    values = np.empty((len(ids), keep.size))
    for k, series_id in enumerate(ids):
        values[k] = np.asarray(series[series_id][1], dtype=np.float64)[keep]
    differences = np.diff(values, axis=1)
    finite = np.isfinite(differences)
    if not finite.all():
        differences[~finite] = 0.0
    z, _, mask = _standardised_differences(differences, finite, SCALE_POINTS)
    z = z[mask.any(axis=1)]
    if z.shape[0] < max(min_series, 1):
        return None
    first = np.median(z[:: max(1, z.shape[0] // START_SERIES)], axis=0)
    norm = float(first @ first)
    if not norm > 0:
        return None
    loading = z @ first / norm
    weight = float(loading @ loading)
    factor = loading @ z / weight if weight > 0 else first
    rms = math.sqrt(float(np.mean(factor * factor)))
    if not rms > 0:
        return None
    return LoadFactor(times[keep][1:], factor / rms, int(z.shape[0]))


def noise_of(
    times_list: Sequence[np.ndarray],
    values_list: Sequence[np.ndarray],
    change_times_s: Sequence[float],
    load: LoadFactor | None,
    guard_points: int,
) -> Noise:
    """Load-free residual noise of each series (docs/design/shared_cause.md), rows grouped by time axis."""
    k = len(times_list)
    keys: dict[bytes, int] = {}
    axis = np.empty(k, dtype=np.int64)
    position = np.empty(k, dtype=np.int64)
    members: list[list[int]] = []
    for i, times in enumerate(times_list):
        c = keys.setdefault(np.asarray(times, dtype=np.float64).tobytes(), len(keys))
        if c == len(members):
            members.append([])
        axis[i], position[i] = c, len(members[c])
        members[c].append(i)
    scale = np.zeros(k)
    autocorr = np.zeros((k, LAGS))
    loading = np.zeros(k)
    usable = np.zeros(k, dtype=bool)
    out_times: list[np.ndarray] = []
    out_z: list[np.ndarray] = []
    out_valid: list[np.ndarray] = []
    for rows in members:
        times = np.asarray(times_list[rows[0]], dtype=np.float64)
        values = np.array([np.asarray(values_list[i], dtype=np.float64) for i in rows])
        differences = np.diff(values, axis=1).reshape(len(rows), max(times.size - 1, 0))
        after = times[1:]
        mask = np.isfinite(differences)
        change = np.searchsorted(after, np.asarray([change_times_s[i] for i in rows]))
        columns = np.arange(after.size)
        mask &= np.abs(columns[None, :] - change[:, None]) > guard_points
        z, row_scale, mask = _standardised_differences(np.where(mask, differences, 0.0), mask)
        row_loading = np.zeros(len(rows))
        if load is not None:
            factor = _load_on(after, load)
            known = np.isfinite(factor)
            f = np.where(known, factor, 0.0)
            fit = mask & known[None, :]
            denominator = (fit * f * f).sum(axis=1)
            row_loading = np.where(
                denominator > 0,
                (z * f).sum(axis=1) / np.where(denominator > 0, denominator, 1.0),
                0.0,
            )
            z = np.where(mask, z - row_loading[:, None] * f[None, :], 0.0)
        count = mask.sum(axis=1)
        mean = z.sum(axis=1) / np.maximum(count, 1)
        z = np.where(mask, z - mean[:, None], 0.0)
        energy = (z * z).sum(axis=1)
        lags = np.zeros((len(rows), LAGS))
        for lag in range(1, min(LAGS, max(after.size - 1, 0)) + 1):
            lags[:, lag - 1] = (z[:, lag:] * z[:, :-lag]).sum(axis=1)
        lags = np.where(energy[:, None] > 0, lags / np.where(energy > 0, energy, 1.0)[:, None], 0)
        scale[rows], autocorr[rows], loading[rows] = row_scale, lags, row_loading
        usable[rows] = (count >= MIN_POINTS) & (energy > 0)
        out_times.append(after)
        out_z.append(z)
        out_valid.append(mask)
    distinct = [validity_patterns(valid) for valid in out_valid]
    return Noise(
        axis,
        position,
        out_times,
        out_z,
        out_valid,
        scale,
        autocorr,
        loading,
        usable,
        [patterns for patterns, _ in distinct],
        [of for _, of in distinct],
    )


def _load_on(times_s: np.ndarray, load: LoadFactor) -> np.ndarray:
    """The load factor at ``times_s`` (NaN where it has no point within half a spacing)."""
    if times_s.size == load.times_s.size and np.array_equal(times_s, load.times_s):
        return load.values
    out = np.full(times_s.size, np.nan)
    ia, ib = paired_points(times_s, load.times_s)
    out[ia] = load.values[ib]
    return out


def validity_patterns(valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a 0/1 validity matrix (k, T) as floats (P, T) and each row's index
    among them (k,). A run's rows hold nearly the same points (all but a guard around each
    one's change, and the change times of one deploy are few), so P is small: products
    against the patterns stand in for products against every row. O(k × T)."""
    packed = np.packbits(np.asarray(valid, dtype=bool), axis=1)
    index: dict[bytes, int] = {}
    of = np.array([index.setdefault(row.tobytes(), len(index)) for row in packed], np.int64)
    first = np.unique(of, return_index=True)[1]  # each pattern's first row, in pattern order
    patterns: npt.NDArray[np.float64] = np.asarray(valid, dtype=np.float64)[first]
    return patterns, of


def pair_stats(noise: Noise, rows_a: Sequence[int], rows_b: Sequence[int]) -> PairStats:
    """Every row of ``rows_a`` against every row of ``rows_b`` (docs/design/shared_cause.md, "The test")."""
    a = np.asarray(rows_a, dtype=np.int64)
    b = np.asarray(rows_b, dtype=np.int64)
    shape = (a.size, b.size)
    dot, energy_a, energy_b, points = (np.zeros(shape) for _ in range(4))
    for ca in np.unique(noise.axis[a]).tolist():
        ia_rows = np.flatnonzero(noise.axis[a] == ca)
        for cb in np.unique(noise.axis[b]).tolist():
            ib_rows = np.flatnonzero(noise.axis[b] == cb)
            cols_a: slice | npt.NDArray[np.intp]
            cols_b: slice | npt.NDArray[np.intp]
            if ca == cb:
                cols_a = cols_b = slice(None)
            else:
                cols_a, cols_b = paired_points(noise.times_s[ca], noise.times_s[cb])
                if cols_a.size < MIN_POINTS:
                    continue
            za = noise.z[ca][noise.position[a[ia_rows]]][:, cols_a]
            zb = noise.z[cb][noise.position[b[ib_rows]]][:, cols_b]
            block = np.ix_(ia_rows, ib_rows)
            # energies over the other row's points and the common points, per distinct
            # validity pattern (z is 0 where its row has no point)
            pattern_a = noise.patterns[ca][:, cols_a]
            of_a = noise.pattern_of[ca][noise.position[a[ia_rows]]]
            pattern_b = noise.patterns[cb][:, cols_b]
            of_b = noise.pattern_of[cb][noise.position[b[ib_rows]]]
            dot[block] = za @ zb.T
            energy_a[block] = ((za * za) @ pattern_b.T)[:, of_b]
            energy_b[block] = (pattern_a @ (zb * zb).T)[of_a, :]
            points[block] = (pattern_a @ pattern_b.T)[np.ix_(of_a, of_b)]
    enough = (points >= MIN_POINTS) & noise.usable[a][:, None] & noise.usable[b][None, :]
    enough &= (energy_a > 0) & (energy_b > 0)
    with np.errstate(all="ignore"):
        r = np.where(enough, dot / np.sqrt(energy_a * energy_b), np.nan)
        r = np.clip(r, -R_LIMIT, R_LIMIT)
        inflation = 1.0 + 2.0 * (noise.autocorr[a] @ noise.autocorr[b].T)
        n_eff = np.where(enough, np.clip(points / np.maximum(inflation, 1e-3), 0, points), np.nan)
        z = np.arctanh(r) * np.sqrt(np.maximum(n_eff - 4.0, 0.0))
        ratio = noise.scale[b][None, :] / noise.scale[a][:, None]
    return PairStats(r, z, points, n_eff, dot, energy_a, energy_b, ratio, enough)
