"""Share inflation: a gCPU share that rose only because the rest of the service got cheaper.

Complexity: per distinct split, one pass over at most ``max_series`` series (cumulative sums
on a shared time axis are built once per run and answer any split in O(series)).
Design: docs/design/share_inflation.md
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from regbot.detection.dedup_context import DedupContext, evenly_spaced, subroutine_of_series
from regbot.detection.model import Candidate, Verdict
from regbot.detection.stages import Stage

__all__ = ["Inflation", "ShareInflationSettings", "common_ratio", "share_inflation_verdicts"]

STAGE = Stage.SHARE_INFLATION
FALLS_NAMED = 3
MIN_BLOCKS = 4  # history blocks needed to measure the common level's own wander
BIWEIGHT_C = 4.685  # Tukey's biweight constant (95% efficiency at the normal)


@dataclass(frozen=True, slots=True)
class ShareInflationSettings:
    """``alpha``: one-sided level of both tests (the ratio above 1, the rise left above 0);
    ``min_series``/``max_series``: the fewest and the most gCPU series the ratio is estimated
    from; ``max_relative_se``: a series counts when its log ratio's standard error is at most
    this."""

    alpha: float = 0.01
    min_series: int = 20
    max_series: int = 4000
    max_relative_se: float = 0.05


@dataclass(frozen=True, slots=True)
class Inflation:
    """The common ratio of the run's gCPU shares at one split: ``ratio`` (after / before),
    the standard error of its log across series, how much the common level wanders on its own
    over such a span (log units; None: too little history), the series it came from, whether it
    is significantly above 1, and the largest falls over the split (series id, oriented
    change)."""

    ratio: float
    log_se: float
    wander: float | None
    series: int
    inflating: bool
    falls: tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class _Axis:
    """Series sharing one time axis: their ids and cumulative sums of values, squares and
    counts (NaN counted as missing), so any split's means and variances cost O(series)."""

    times_s: np.ndarray
    ids: tuple[str, ...]
    sums: np.ndarray  # (n, T + 1)
    squares: np.ndarray
    counts: np.ndarray

    def moments(self, start_s: float, stop_s: float, closed: bool) -> tuple[np.ndarray, ...]:
        """Count, mean and variance (ddof 1) of every row over ``[start_s, stop_s)`` (or
        ``[start_s, stop_s]`` when ``closed``)."""
        lo = int(np.searchsorted(self.times_s, start_s, side="left"))
        hi = int(np.searchsorted(self.times_s, stop_s, side="right" if closed else "left"))
        n = self.counts[:, hi] - self.counts[:, lo]
        total = self.sums[:, hi] - self.sums[:, lo]
        square = self.squares[:, hi] - self.squares[:, lo]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / n
            var = np.maximum(square - n * mean * mean, 0.0) / (n - 1)
        return n, mean, var


def inflation_sample_ids(context: DedupContext, settings: ShareInflationSettings) -> list[str]:
    """The gCPU series the share-inflation ratio is estimated from: at most ``max_series`` of
    the run's, evenly spaced by id."""
    gcpu = sorted(s for s in context.all_series_ids() if subroutine_of_series(s) is not None)
    return evenly_spaced(gcpu, settings.max_series)


def _axes(context: DedupContext, settings: ShareInflationSettings) -> list[_Axis]:
    """The run's gCPU series (at most ``max_series``, evenly spaced by id) grouped by axis;
    worked out once per context."""
    key = ("share_inflation_axes", settings.max_series)
    if key in context.memo:
        return context.memo[key]  # type: ignore[return-value]
    ids = [sid for sid in inflation_sample_ids(context, settings) if sid in context.series]
    groups: dict[tuple[int, float, float], list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for sid in ids:
        times, values = context.series[sid]
        times = np.asarray(times, dtype=np.float64)
        if times.size < 2:
            continue
        groups.setdefault((times.size, float(times[0]), float(times[-1])), []).append(
            (sid, times, np.asarray(values, dtype=np.float64))
        )
    axes = []
    for rows in groups.values():
        by_axis: list[list[tuple[str, np.ndarray, np.ndarray]]] = []
        for row in rows:
            home = next((g for g in by_axis if np.array_equal(g[0][1], row[1])), None)
            if home is None:
                by_axis.append([row])
            else:
                home.append(row)
        for group in by_axis:
            values = np.vstack([v for _, _, v in group])
            present = np.isfinite(values)
            clean = np.where(present, values, 0.0)
            zero = np.zeros((len(group), 1))
            axes.append(
                _Axis(
                    group[0][1],
                    tuple(s for s, _, _ in group),
                    np.hstack([zero, np.cumsum(clean, axis=1)]),
                    np.hstack([zero, np.cumsum(clean * clean, axis=1)]),
                    np.hstack([zero, np.cumsum(present, axis=1)]),
                )
            )
    context.memo[key] = axes
    return axes


def _densest(logs: np.ndarray, ses: np.ndarray, block: int = 512) -> float:
    """Where the series pile up, each counted by its own precision: the value (among the
    series' own) that maximises a density made of one biweight kernel per series, its width
    ``BIWEIGHT_C`` × the series' error and its height the inverse (so an imprecise series
    spreads its vote thin). A mode that ignores precision (the half-sample mode) can be won
    by a clump of imprecise moved series."""
    best, best_density = float(logs[0]), -1.0
    for start in range(0, logs.size, block):
        at = logs[start : start + block]
        u = (at[:, None] - logs[None, :]) / (BIWEIGHT_C * ses[None, :])
        density = (np.where(np.abs(u) < 1.0, (1.0 - u * u) ** 2, 0.0) / ses[None, :]).sum(axis=1)
        k = int(np.argmax(density))
        if density[k] > best_density:
            best, best_density = float(at[k]), float(density[k])
    return best


def _unmoved_level(
    logs: np.ndarray, ses: np.ndarray, iterations: int = 30
) -> tuple[float, float, np.ndarray]:
    """The log ratio shared by the series the deploy did not move, its standard error and which
    series share it (within 3 of their errors): Tukey's biweight M-estimate started at the
    half-sample mode, each series standardised by its own error (a redescending weight: a series
    further than ``BIWEIGHT_C`` errors from the level has no say, so the moved series cannot pull
    the level towards them however many they are), started where the series pile up
    (``_densest``). The error is the weighted mean's, widened by the members' overdispersion when
    they scatter more than their own errors say (a fleet-wide load moves no two shares exactly
    alike)."""
    centre = _densest(logs, ses)
    precision = 1.0 / (ses * ses)
    weights = np.zeros(logs.size)
    for _ in range(iterations):
        u = (logs - centre) / (BIWEIGHT_C * ses)
        weights = np.where(np.abs(u) < 1.0, (1.0 - u * u) ** 2, 0.0) * precision
        if weights.sum() <= 0:
            return centre, math.inf, np.zeros(logs.size, dtype=bool)
        moved = float(np.sum(weights * logs) / weights.sum()) - centre
        centre += moved
        if abs(moved) < 1e-12:
            break
    members = np.abs(logs - centre) <= 3.0 * ses
    k = int(members.sum())
    if k < 2:
        return centre, math.inf, members
    dispersion = float(np.sum(((logs[members] - centre) / ses[members]) ** 2)) / (k - 1)
    log_se = math.sqrt(max(1.0, dispersion) / float(precision[members].sum()))
    return centre, log_se, members


def _wander(
    axis: _Axis, rows: np.ndarray, start_s: float, change_s: float, end_s: float
) -> float | None:
    """How far the unmoved series' common level wanders on its own, as the standard deviation of
    the difference of an after-sized block mean and the history's mean: the log of the members'
    mean relative level (each row over its mean before the change), in blocks of as many points
    as follow the change, over the history. None with fewer than ``MIN_BLOCKS`` blocks."""
    lo = int(np.searchsorted(axis.times_s, start_s, side="left"))
    mid = int(np.searchsorted(axis.times_s, change_s, side="left"))
    hi = int(np.searchsorted(axis.times_s, end_s, side="right"))
    after, before = hi - mid, mid - lo
    if after < 1 or before < MIN_BLOCKS * after:
        return None
    sums = np.diff(axis.sums[rows, lo : mid + 1], axis=1)
    present = np.diff(axis.counts[rows, lo : mid + 1], axis=1) > 0
    base = sums.sum(axis=1) / np.maximum(present.sum(axis=1), 1)
    relative = np.where(present, sums / base[:, None], np.nan)
    with np.errstate(invalid="ignore"), np.errstate(divide="ignore"):
        level = np.log(np.nanmean(relative, axis=0))
    blocks = before // after
    means = level[before - blocks * after :].reshape(blocks, after).mean(axis=1)
    means = means[np.isfinite(means)]
    if means.size < MIN_BLOCKS:
        return None
    return float(np.std(means, ddof=1) * math.sqrt(1.0 + after / before))


def common_ratio(
    context: DedupContext,
    start_s: float,
    change_s: float,
    end_s: float,
    settings: ShareInflationSettings = ShareInflationSettings(),
) -> Inflation | None:
    """The common ratio of the run's gCPU shares across ``change_s`` (before: ``[start_s,
    change_s)``, after: ``[change_s, end_s]``), or None when fewer than ``min_series`` series
    know their ratio well enough. Kept in ``context.memo`` per split."""
    key = ("share_inflation", float(start_s), float(change_s), float(end_s), settings)
    if key in context.memo:
        return context.memo[key]  # type: ignore[return-value]
    logs: list[np.ndarray] = []
    ses: list[np.ndarray] = []
    deltas: list[np.ndarray] = []
    names: list[str] = []
    where: list[tuple[int, int]] = []  # (axis, row) of each series in ``names``
    axes = _axes(context, settings)
    for k, axis in enumerate(axes):
        n_b, b, var_b = axis.moments(start_s, change_s, closed=False)
        n_a, a, var_a = axis.moments(change_s, end_s, closed=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            log = np.log(a / b)
            se = np.sqrt(var_a / (n_a * a * a) + var_b / (n_b * b * b))
        good = (n_b >= 3) & (n_a >= 3) & (b > 0) & (a > 0) & np.isfinite(se) & (se > 0)
        good &= se <= settings.max_relative_se
        logs.append(log[good])
        ses.append(se[good])
        deltas.append((a - b)[good])
        names.extend(s for s, g in zip(axis.ids, good, strict=True) if g)
        where.extend((k, int(row)) for row in np.flatnonzero(good))
    found: Inflation | None = None
    log_all = np.concatenate(logs) if logs else np.zeros(0)
    se_all = np.concatenate(ses) if ses else np.zeros(0)
    if log_all.size >= settings.min_series:
        centre, log_se, members = _unmoved_level(log_all, se_all)
        if members.sum() >= settings.min_series:
            on_axis: dict[int, list[int]] = {}
            for member in np.flatnonzero(members).tolist():
                axis_k, row = where[member]
                on_axis.setdefault(axis_k, []).append(row)
            home = max(on_axis, key=lambda k: len(on_axis[k]))
            rows = np.array(on_axis[home])
            wander = _wander(axes[home], rows, start_s, change_s, end_s)
            total_se = math.hypot(log_se, wander) if wander is not None else math.inf
            inflating = bool(centre > 0 and centre > float(-ndtri(settings.alpha)) * total_se)
            delta_all = np.concatenate(deltas)
            order = np.argsort(delta_all)[:FALLS_NAMED]
            falls = tuple((names[int(k)], float(delta_all[k])) for k in order if delta_all[k] < 0)
            found = Inflation(
                math.exp(centre), log_se, wander, int(members.sum()), inflating, falls
            )
    context.memo[key] = found
    return found


def _points(candidate: Candidate, context: DedupContext) -> tuple[np.ndarray, np.ndarray]:
    found = context.series.get(candidate.series_id)
    if found is None:
        return np.asarray(candidate.times_s, np.float64), np.asarray(candidate.values, np.float64)
    return np.asarray(found[0], np.float64), np.asarray(found[1], np.float64)


def _side(times: np.ndarray, values: np.ndarray, keep: np.ndarray) -> tuple[int, float, float]:
    part = values[keep & np.isfinite(values)]
    if part.size < 2:
        return int(part.size), float(part.mean()) if part.size else math.nan, math.nan
    return int(part.size), float(part.mean()), float(part.var(ddof=1))


def _judge(
    candidate: Candidate, context: DedupContext, settings: ShareInflationSettings
) -> Verdict:
    if subroutine_of_series(candidate.series_id) is None:
        return Verdict(STAGE, True, "not a gCPU share", {})
    w = candidate.windows
    start_s, change_s, end_s = w.historical_start_s, float(candidate.change_time_s), w.end_s
    inflation = common_ratio(context, start_s, change_s, end_s, settings)
    if inflation is None:
        return Verdict(
            STAGE,
            True,
            f"too few gCPU series to estimate a common ratio (need {settings.min_series})",
            {},
        )
    numbers: dict[str, object] = {
        "ratio": inflation.ratio,
        "ratio_log_se": inflation.log_se,
        "wander": inflation.wander,
        "inflating": inflation.inflating,
        "series": inflation.series,
        "falls": [{"series": s, "delta": d} for s, d in inflation.falls],
    }
    if not inflation.inflating:
        reason = f"no share inflation at the change (every share ×{inflation.ratio:.4g})"
        return Verdict(STAGE, True, reason, numbers)
    times, values = _points(candidate, context)
    n_b, b, var_b = _side(times, values, (times >= start_s) & (times < change_s))
    n_a, a, var_a = _side(times, values, (times >= change_s) & (times <= end_s))
    if n_b < 2 or n_a < 2:
        return Verdict(STAGE, True, "too few points either side of the change", numbers)
    r = inflation.ratio
    left = a - r * b
    se = math.sqrt(var_a / n_a + r * r * var_b / n_b + (r * b * inflation.log_se) ** 2)
    z_left = left / se if se > 0 else (math.inf if left > 0 else -math.inf)
    threshold = candidate.verdicts.get(Stage.THRESHOLD)
    mode = threshold.numbers.get("mode") if threshold is not None else None
    limit = threshold.numbers.get("threshold", 0.0) if threshold is not None else 0.0
    assert isinstance(limit, int | float)  # the threshold stage writes its threshold as a number
    value = float(limit)
    measured = left / abs(b) if mode == "relative" and b != 0 else left
    significant = z_left >= float(-ndtri(settings.alpha))
    above = measured >= value if mode is not None else True
    numbers.update(
        {
            "delta": a - b,
            "corrected_delta": left,
            "corrected_se": se,
            "z": z_left,
            "threshold_mode": mode,
            "threshold": value if mode is not None else None,
        }
    )
    cause = ", ".join(f"{s} {d:+.4g}" for s, d in inflation.falls) or "no single fall"
    if significant and above:
        reason = (
            f"rise {a - b:+.4g} stays {left:+.4g} ± {se:.2g} after the deploy's share inflation "
            f"(every share ×{r:.4g})"
        )
        return Verdict(STAGE, True, reason, numbers)
    why = "below the threshold" if significant else f"z {z_left:.2f}"
    reason = (
        f"share inflation: every gCPU share ×{r:.4g} at this change (median of {inflation.series} "
        f"series; the largest falls: {cause}); of the rise {a - b:+.4g}, {left:+.4g} ± {se:.2g} "
        f"is left ({why})"
    )
    return Verdict(STAGE, False, reason, numbers)


def share_inflation_verdicts(
    candidates: Sequence[Candidate],
    context: DedupContext,
    settings: ShareInflationSettings = ShareInflationSettings(),
) -> list[Verdict]:
    """One verdict per candidate: failed when its rise is the deploy's share inflation."""
    return [_judge(c, context, settings) for c in candidates]
