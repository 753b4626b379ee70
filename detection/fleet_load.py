"""The fleet-wide load, removed from every series before the change-point test.

Complexity: O(rows × points) per round, on at
most ``max_rows`` rows; then one pass over all rows.
Design: docs/design/fleet_load.md
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from regbot.detection.noise_shape import MAD_NORMAL
from regbot.detection.presets import DAY_S
from regbot.detection.row_stats import row_medians_in_place
from regbot.detection.series_batch import SeriesBatch
from regbot.detection.stage_settings import FleetLoadSettings

__all__ = ["LoadRemoval", "remove_fleet_load"]

CLIP_Z = 8.0
POWER_STEPS = 3
# Rows per block of the per-row passes: a block's temporaries (~10 MB at 1,500 points) stay
# below the allocator's mmap threshold, so each block reuses the last one's memory instead of
# faulting in fresh pages (the results do not depend on it: rows are independent).
BLOCK_ROWS = 1024


@dataclass(frozen=True, slots=True)
class LoadRemoval:
    """What was removed from a batch: per row the loading (0 where nothing was removed), the
    share of the row's historical level variance the load explains (R²), and the load
    ``factor`` (T,; None when none was estimated) with each row's ``amplitude`` (its scale ×
    loading, oriented units; 0 where nothing was removed): row i lost ``amplitude[i] × factor``.
    Kept as a factor and amplitudes, not an (n, T) array, so a 100,000-series batch costs one
    time axis more, not a second copy of its values."""

    loading: np.ndarray
    r2: np.ndarray
    amplitude: np.ndarray
    factor: np.ndarray | None

    @staticmethod
    def none(n: int) -> LoadRemoval:
        return LoadRemoval(np.zeros(n), np.zeros(n), np.zeros(n), None)

    def rows(self, start: int, stop: int) -> LoadRemoval:
        """Rows ``start:stop`` (views)."""
        return LoadRemoval(
            self.loading[start:stop], self.r2[start:stop], self.amplitude[start:stop], self.factor
        )

    def removed(self, row: int) -> np.ndarray | None:
        """The part removed from row ``row`` (T,), or None when nothing was."""
        if self.factor is None or self.amplitude[row] == 0:
            return None
        part: npt.NDArray[np.float64] = self.amplitude[row] * self.factor
        return part


def remove_fleet_load(
    batch: SeriesBatch, analysis_start_s: float, settings: FleetLoadSettings
) -> tuple[SeriesBatch, LoadRemoval]:
    """The batch with the fleet load removed from the rows it drives (docs/design/fleet_load.md), and
    what was removed. The batch is returned unchanged when it has no shared time axis, too few
    rows or too little history."""
    n = len(batch)
    if not settings.enabled or n < settings.min_series or batch.values.shape[1] == 0:
        return batch, LoadRemoval.none(n)
    if not _shared_axis(batch):
        return batch, LoadRemoval.none(n)
    history = int(np.searchsorted(batch.times_s[0], analysis_start_s, "left"))
    if history < settings.min_history:
        return batch, LoadRemoval.none(n)
    times = np.asarray(batch.times_s[0], np.float64)
    centre, scale = _robust_centre_scale(batch.values[:, :history])
    usable = np.flatnonzero(scale > 0)
    if len(usable) < settings.min_series:
        return batch, LoadRemoval.none(n)
    sample = usable[
        np.linspace(0, len(usable) - 1, min(len(usable), settings.max_rows)).astype(int)
    ]
    factor = _estimate_factor(
        _standardise(batch.values[sample], centre[sample], scale[sample]),
        times[:history],
        settings,
    )
    f_centred = factor - factor[:history].mean()
    if not f_centred[:history].any():
        return batch, LoadRemoval.none(n)
    loading, t_stat, r2 = np.zeros(n), np.zeros(n), np.zeros(n)
    values = batch.values
    for lo in range(0, len(usable), BLOCK_ROWS):
        rows = usable[lo : lo + BLOCK_ROWS]
        z = _standardise(values[rows, :history], centre[rows], scale[rows])
        fit = _loadings(z - z.mean(axis=1, keepdims=True), f_centred[:history], times[:history])
        loading[rows], t_stat[rows], r2[rows] = fit.b, fit.t, fit.level_r2
    driven = np.abs(t_stat) >= settings.min_t
    loading[~driven] = 0.0
    adjust = np.flatnonzero(driven)
    amplitude = np.where(driven, scale * loading, 0.0)
    if len(adjust) == 0:
        return batch, LoadRemoval(loading, r2, amplitude, None)
    out = values.copy()
    for lo in range(0, len(adjust), BLOCK_ROWS):
        rows = adjust[lo : lo + BLOCK_ROWS]
        out[rows] -= amplitude[rows][:, None] * f_centred[None, :]
    return replace(batch, values=out), LoadRemoval(loading, r2, amplitude, f_centred)


@dataclass(frozen=True, slots=True)
class _Fit:
    b: np.ndarray  # loading per row (standardised units per unit of f)
    t: np.ndarray  # its t statistic
    level_r2: np.ndarray  # share of the row's historical level variance b·f explains
    noise_var: np.ndarray  # historical level variance b·f leaves


def _loadings(zc: np.ndarray, f_hist: np.ndarray, times_s: np.ndarray) -> _Fit:
    """Each row's loading on the load over the history (``_Fit``). ``zc``: rows centred over
    the history; ``f_hist``: the centred factor there; ``times_s``: the history's times.

    Least squares of each row on the load *and its own daily cycle* (a sine and a cosine of
    the time of day, nuisance terms): a row's own daily pattern is not a response to the load
    even where it happens to line up with the load's daily part, so only the load's wandering
    away from its daily cycle identifies the loading (fitted on the load alone, a method with its
    own daily peak took the coincidence of two daily cycles for a loading and had the load's
    wandering injected). The t statistic uses the residual's lag-1 autocorrelation ρ
    (variance × (1 + ρ)/(1 − ρ)), so a row's own slow structure does not make a loading look
    surer than it is."""
    phase = 2 * np.pi * np.asarray(times_s, np.float64) / DAY_S
    design = np.column_stack([f_hist, np.sin(phase), np.cos(phase)])
    design[:, 1:] -= design[:, 1:].mean(axis=0)
    inverse = np.linalg.pinv(design.T @ design)
    coef = (zc @ design) @ inverse  # (rows, 3)
    resid = zc - coef @ design.T
    m = zc.shape[1]
    noise_var = np.maximum(np.einsum("ij,ij->i", resid, resid) / max(m - 3, 1), 1e-12)
    rho = np.einsum("ij,ij->i", resid[:, 1:], resid[:, :-1]) / np.maximum(
        np.einsum("ij,ij->i", resid, resid), 1e-300
    )
    rho = np.clip(rho, 0.0, 0.99)
    se = np.sqrt(noise_var * inverse[0, 0] * (1 + rho) / (1 - rho))
    b = coef[:, 0]
    total = np.maximum(np.einsum("ij,ij->i", zc, zc), 1e-300)
    explained = b * b * float(f_hist @ f_hist)
    return _Fit(b, b / se, np.clip(explained / total, 0.0, 1.0), noise_var)


def _shared_axis(batch: SeriesBatch) -> bool:
    """All rows have the same length and the same timestamps (a broadcast axis, or equal rows)."""
    lengths = batch.lengths
    if len(lengths) == 0 or (lengths != lengths[0]).any() or lengths[0] != batch.times_s.shape[1]:
        return False
    times = batch.times_s
    if times.strides[0] == 0:
        return True
    return bool((times == times[0]).all())


def _robust_centre_scale(history: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the median and 1.4826 × MAD of its historical levels (the standard deviation
    where the MAD is 0; 0 for a constant row). Exactly ``np.median`` of the rows and of their
    absolute deviations, in one working copy of the history: one partition per statistic at
    the upper middle, the lower middle (even lengths) the largest value left of it. Rows holding
    NaN take ``np.median``'s own path (NaN, as it gives)."""
    if np.isnan(history).any():
        centre = np.median(history, axis=1)
        scale = MAD_NORMAL * np.median(np.abs(history - centre[:, None]), axis=1)
    else:
        work = np.array(history, dtype=np.float64, order="C")
        centre = row_medians_in_place(work)
        np.subtract(work, centre[:, None], out=work)
        np.abs(work, out=work)
        scale = MAD_NORMAL * row_medians_in_place(work)
    flat = scale <= 0
    if flat.any():
        scale[flat] = history[flat].std(axis=1)
    return centre, scale


def _standardise(values: np.ndarray, centre: np.ndarray, scale: np.ndarray) -> np.ndarray:
    z = (values - centre[:, None]) / scale[:, None]
    clipped: npt.NDArray[np.float64] = np.clip(z, -CLIP_Z, CLIP_Z, out=z)
    return clipped


def _estimate_factor(
    z: np.ndarray, history_times_s: np.ndarray, settings: FleetLoadSettings
) -> np.ndarray:
    """The load ``f`` (T,) from standardised rows ``z`` (docs/design/fleet_load.md): a column median,
    then ``settings.iterations`` rounds of loadings on the history and robust cross-sectional
    weighted least squares per column. Scaled to unit variance over the history."""
    history = len(history_times_s)
    zc_all = z - z[:, :history].mean(axis=1, keepdims=True)
    factor = zc_all.mean(axis=0)
    for _ in range(POWER_STEPS):  # towards the leading principal component
        factor = _unit(zc_all.T @ (zc_all @ factor), history)
    work, product = np.empty_like(zc_all), np.empty_like(zc_all)
    for _ in range(settings.iterations):
        factor = _unit(factor, history)
        if not factor.any():
            return factor
        fit = _loadings(
            zc_all[:, :history], factor[:history] - factor[:history].mean(), history_times_s
        )
        b, noise_var = fit.b, fit.noise_var
        weight = b / noise_var  # per row: b_i / σ_i²
        # Huber weights u from the residuals e/σ, built in place in ``work``
        np.multiply.outer(b, factor - factor[:history].mean(), out=work)
        np.subtract(zc_all, work, out=work)
        np.divide(work, np.sqrt(noise_var)[:, None], out=work)
        np.abs(work, out=work)
        np.maximum(work, 1e-12, out=work)
        np.divide(settings.huber_k, work, out=work)
        u = np.minimum(1.0, work, out=work)
        np.multiply(u, weight[:, None], out=product)
        num = (np.multiply(product, zc_all, out=product)).sum(axis=0)
        den = np.multiply(u, (weight * b)[:, None], out=product).sum(axis=0)
        factor = np.where(den > 0, num / np.maximum(den, 1e-300), 0.0)
    return _unit(factor, history)


def _unit(factor: np.ndarray, history: int) -> np.ndarray:
    sd = float(factor[:history].std())
    return factor / sd if sd > 0 and np.isfinite(sd) else np.zeros_like(factor)
