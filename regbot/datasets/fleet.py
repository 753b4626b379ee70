"""Fleet simulator: gCPU series of many subroutines with planted events and their ground truth.

FBDetect §2's feasibility simulation made concrete for stack-trace sampling: subroutines with
log-uniform base shares, a diurnal load, mixed server generations, daily patterns, multinomial
sampling noise per bucket, and planted steps, creeps, transients (spikes, dips) and seasonal peaks
sized in minimum detectable effects (Appendix A.2). Like ruptures' datasets it returns
``(signal, truth)`` from a seed. Time O(n·T); memory one float64 (n, T) array.

Design (the model, term by term): docs/design/datasets_fleet.md
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.stats import t as student_t

from regbot.detection.presets import DAY_S
from regbot.detection.series_batch import WindowBounds
from regbot.errors import InputError
from regbot.profiles.model import Series

__all__ = ["FleetScenario", "PlantedEvent", "minimum_detectable_effect", "simulate_fleet"]

EventKind = Literal["step", "transient_spike", "transient_dip", "seasonal_peak", "creep", "none"]

_VERBS = ("handle", "render", "serialize", "parse", "fetch", "encode", "validate", "query")
_DIRS = ("app/views", "app/models", "lib/cache", "lib/db", "api/handlers", "core/feed")


@dataclass(frozen=True, slots=True)
class PlantedEvent:
    """The truth about one simulated series (one per series, in series order).

    ``start_s``: when the event begins (a seasonal peak: the time of the peak; ``none``: the
    analysis window's start, the span a detector judges). ``end_s``: when a transient is back at
    baseline (may lie after the last point) or a creep reaches its full size; None otherwise.
    ``size``: the change in gCPU share (absolute, not relative; negative for a dip; a seasonal
    peak's amplitude above its daily mean). ``size_in_mde``: size over the series' MDE for the
    points from ``start_s`` to the end. ``base_share``: the series' time-averaged share without
    events; ``daily_amplitude``: its daily pattern's amplitude in share (0 = none).
    """

    series_id: str
    kind: EventKind
    start_s: float
    end_s: float | None
    size: float
    size_in_mde: float
    is_regression: bool
    base_share: float = 0.0
    daily_amplitude: float = 0.0


@dataclass(frozen=True, slots=True)
class FleetScenario:
    """Settings of one simulated fleet (module docstring). Shares are of all series; sizes are in
    MDE units; ``*_buckets`` and ``*_points`` count buckets of ``bucket_s`` seconds."""

    n_series: int = 1000
    n_points: int = 1500
    bucket_s: float = 600.0
    samples_per_bucket: int = 200_000
    generations: int = 2
    generation_cost_spread: float = 0.1
    diurnal_amplitude: float = 0.3
    seasonal_share: float = 0.1
    step_share: float = 0.1
    step_sizes_mde: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0, 5.0)
    transient_share: float = 0.05
    transient_sizes_mde: tuple[float, float] = (3.0, 10.0)
    transient_buckets: tuple[int, int] = (2, 12)
    creep_share: float = 0.02
    creep_sizes_mde: tuple[float, float] = (3.0, 5.0)
    seasonal_peak_share: float = 0.05
    daily_sizes_mde: tuple[float, float] = (3.0, 10.0)
    analysis_points: int = 24
    extended_points: int = 36
    min_share: float = 1e-5
    max_share: float = 0.02
    total_share: float = 0.8
    alpha: float = 0.01
    start_s: float = 1_699_920_000.0  # a midnight UTC

    def validate(self) -> None:
        """Raise ``InputError`` naming the first setting out of range."""

        def check(name: str, ok: bool, expected: str) -> None:
            if not ok:
                raise InputError(f"FleetScenario.{name}", expected, getattr(self, name))

        check("n_series", self.n_series >= 1, "at least 1")
        check("bucket_s", self.bucket_s > 0, "a positive number of seconds")
        check("samples_per_bucket", self.samples_per_bucket >= 1, "at least 1")
        check("generations", self.generations >= 1, "at least 1")
        check("generation_cost_spread", 0 <= self.generation_cost_spread < 0.5, "in [0, 0.5)")
        check("diurnal_amplitude", 0 <= self.diurnal_amplitude < 1, "in [0, 1)")
        check("analysis_points", self.analysis_points >= 1, "at least 1")
        check("extended_points", self.extended_points >= 1, "at least 1")
        check(
            "n_points",
            self.n_points > self.analysis_points + self.extended_points,
            "more than analysis_points + extended_points",
        )
        shares = ("seasonal_share", "step_share", "transient_share", "creep_share")
        for name in (*shares, "seasonal_peak_share"):
            check(name, 0 <= getattr(self, name) <= 1, "a share in [0, 1]")
        events = self.step_share + self.transient_share + self.creep_share
        check(
            "seasonal_peak_share",
            events + self.seasonal_peak_share <= 1,
            "step, transient, creep and seasonal-peak shares summing to at most 1",
        )
        check(
            "seasonal_share",
            self.seasonal_share + self.seasonal_peak_share <= 1,
            "seasonal_share + seasonal_peak_share at most 1",
        )
        check("step_sizes_mde", len(self.step_sizes_mde) >= 1, "at least one size")
        for name in ("transient_sizes_mde", "creep_sizes_mde", "daily_sizes_mde"):
            low, high = getattr(self, name)
            check(name, 0 < low <= high, "(low, high) with 0 < low <= high")
        low, high = self.transient_buckets
        check("transient_buckets", 1 <= low <= high, "(low, high) with 1 <= low <= high")
        check("min_share", 0 < self.min_share <= self.max_share, "in (0, max_share]")
        check("max_share", self.max_share < 1, "below 1")
        check("total_share", 0 < self.total_share <= 0.9, "in (0, 0.9]")
        check("alpha", 0 < self.alpha < 1, "in (0, 1)")


def minimum_detectable_effect(
    base_share: float, samples_per_bucket: int, n_after: int, alpha: float = 0.01
) -> float:
    """Appendix A.2's detection threshold for a gCPU share sampled binomially:
    ``t.ppf(1 − alpha/2, n_after − 1) · sqrt(p(1 − p) / samples_per_bucket / n_after)``."""
    if not 0 < base_share < 1:
        raise InputError("base_share", "a share in (0, 1)", base_share)
    if samples_per_bucket < 1:
        raise InputError("samples_per_bucket", "at least 1", samples_per_bucket)
    if n_after < 2:
        raise InputError("n_after", "at least 2 points", n_after)
    if not 0 < alpha < 1:
        raise InputError("alpha", "in (0, 1)", alpha)
    return float(_mde(float(base_share), samples_per_bucket, int(n_after), alpha))


def _mde(
    share: np.ndarray | float, samples: float, n_after: np.ndarray | int, alpha: float
) -> np.ndarray:
    """``minimum_detectable_effect`` without checks, broadcasting over arrays of shares/points."""
    t_critical = student_t.ppf(1 - alpha / 2, n_after - 1)
    return t_critical * np.sqrt(share * (1 - share) / samples / n_after)


def simulate_fleet(
    scenario: FleetScenario, seed: int
) -> tuple[list[Series], list[PlantedEvent], WindowBounds]:
    """Simulate ``scenario.n_series`` gCPU series of ``scenario.n_points`` points.

    Returns the series (kind ``gcpu``, unit ``share``, sharing one timestamp array), one
    ``PlantedEvent`` per series in the same order, and the run's windows: historical from the
    first point, analysis and extended as set, ``end_s`` one bucket after the last point (so
    ``WindowBounds.ending_at(end_s, windows)`` gives the same bounds).
    """
    scenario.validate()
    sc = scenario
    rng = np.random.default_rng(seed)
    n, n_points = sc.n_series, sc.n_points
    first_analysis = n_points - sc.analysis_points - sc.extended_points
    first_extended = n_points - sc.extended_points
    times = sc.start_s + sc.bucket_s * np.arange(n_points, dtype=np.float64)
    end_s = sc.start_s + sc.bucket_s * n_points
    bounds = WindowBounds(
        float(times[0]), float(times[first_analysis]), float(times[first_extended]), end_s
    )
    load = 1 + sc.diurnal_amplitude * np.sin(2 * np.pi * times / DAY_S)
    samples = np.rint(sc.samples_per_bucket * load).astype(np.int64)

    base = _draw_shares(rng, n, sc)
    probs = _generation_multipliers(rng, n, load, sc)
    probs *= base[:, None]

    perm = rng.permutation(n)
    event_shares = (sc.step_share, sc.transient_share, sc.creep_share, sc.seasonal_peak_share)
    edges = [0, *(round(float(c) * n) for c in np.cumsum(event_shares))]
    steps, transients, creeps, peaks = (np.sort(perm[a:b]) for a, b in zip(edges, edges[1:]))
    others = np.setdiff1d(np.arange(n), peaks)
    n_seasonal = min(round(sc.seasonal_share * n), len(others))
    seasonal = np.sort(rng.choice(others, size=n_seasonal, replace=False))

    kinds: list[EventKind] = ["none"] * n
    start = np.full(n, bounds.analysis_start_s)
    end: list[float | None] = [None] * n
    size = np.zeros(n)
    in_mde = np.zeros(n)
    amplitude = np.zeros(n)
    index = np.arange(n_points)

    def mde(rows: np.ndarray, start_index: np.ndarray | int) -> np.ndarray:
        n_after = np.broadcast_to(n_points - np.asarray(start_index), rows.shape)
        return _mde(base[rows], sc.samples_per_bucket, n_after, sc.alpha)

    def daily(rows: np.ndarray, peak_s: np.ndarray, start_index: np.ndarray | int) -> np.ndarray:
        unit = mde(rows, start_index)
        amp = np.minimum(rng.uniform(*sc.daily_sizes_mde, size=len(rows)) * unit, 0.5 * base[rows])
        probs[rows] += amp[:, None] * np.cos(2 * np.pi * (times[None, :] - peak_s[:, None]) / DAY_S)
        amplitude[rows] = amp
        return amp / unit

    # Background daily patterns: the peak's time of day falls outside the analysis window.
    outside_s = max(DAY_S - sc.analysis_points * sc.bucket_s, 0.0) or DAY_S
    daily(seasonal, bounds.extended_start_s + rng.uniform(0, outside_s, n_seasonal), first_analysis)

    peak_index = rng.integers(first_analysis, first_extended, size=len(peaks))
    in_mde[peaks] = daily(peaks, times[peak_index], peak_index)
    size[peaks] = amplitude[peaks]
    start[peaks] = times[peak_index]
    for i in peaks:
        kinds[i] = "seasonal_peak"

    step_index = rng.integers(first_analysis, first_extended, size=len(steps))
    in_mde[steps] = np.resize(np.asarray(sc.step_sizes_mde, dtype=np.float64), len(steps))
    size[steps] = in_mde[steps] * mde(steps, step_index)
    probs[steps] += size[steps, None] * (index[None, :] >= step_index[:, None])
    start[steps] = times[step_index]
    for i in steps:
        kinds[i] = "step"

    low, high = sc.transient_buckets
    spike_index = rng.integers(first_analysis, first_extended, size=len(transients))
    spike_end = spike_index + rng.integers(low, high + 1, size=len(transients))
    spike_sign = rng.choice(np.array([1.0, -1.0]), size=len(transients))
    unit = mde(transients, spike_index)
    spike_size = rng.uniform(*sc.transient_sizes_mde, size=len(transients)) * unit
    during = (index[None, :] >= spike_index[:, None]) & (index[None, :] < spike_end[:, None])
    headroom = np.where(during, probs[transients], np.inf).min(axis=1)
    spike_size = np.where(spike_sign < 0, np.minimum(spike_size, 0.8 * headroom), spike_size)
    probs[transients] += (spike_sign * spike_size)[:, None] * during
    size[transients] = spike_sign * spike_size
    in_mde[transients] = size[transients] / unit
    start[transients] = times[spike_index]
    for i, sign, stop in zip(transients, spike_sign, spike_end):
        kinds[i] = "transient_spike" if sign > 0 else "transient_dip"
        end[i] = sc.start_s + sc.bucket_s * float(stop)

    ramp = np.clip((index - first_analysis) / sc.analysis_points, 0.0, 1.0)
    in_mde[creeps] = rng.uniform(*sc.creep_sizes_mde, size=len(creeps))
    size[creeps] = in_mde[creeps] * mde(creeps, first_analysis)
    probs[creeps] += size[creeps, None] * ramp[None, :]
    for i in creeps:
        kinds[i] = "creep"
        end[i] = bounds.extended_start_s

    _sample(rng, probs, samples)

    width = len(str(n - 1))
    series: list[Series] = []
    events: list[PlantedEvent] = []
    for i in range(n):
        name = f"gcpu:{_VERBS[i % len(_VERBS)]}_{i:0{width}d} ({_DIRS[i % len(_DIRS)]}_{i % 17}.py)"
        series.append(Series(name, "gcpu", times, probs[i], unit="share"))
        events.append(
            PlantedEvent(
                name,
                kinds[i],
                float(start[i]),
                end[i],
                float(size[i]),
                float(in_mde[i]),
                kinds[i] in ("step", "creep"),
                float(base[i]),
                float(amplitude[i]),
            )
        )
    return series, events, bounds


def _draw_shares(rng: np.random.Generator, n: int, sc: FleetScenario) -> np.ndarray:
    """Log-uniform base shares summing to at most ``total_share`` (module docstring)."""
    u = rng.random(n)
    low = min(sc.min_share, sc.total_share / (2 * n))
    log_low = np.log(low)

    def shares(log_high: float) -> np.ndarray:
        return np.exp(log_low + (log_high - log_low) * u)

    log_high = np.log(sc.max_share)
    if shares(log_high).sum() > sc.total_share:
        lo, hi = log_low, log_high  # shares(lo) sums to n·low <= total_share / 2
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if shares(mid).sum() <= sc.total_share else (lo, mid)
        log_high = lo
    return shares(log_high)


def _generation_multipliers(
    rng: np.random.Generator, n: int, load: np.ndarray, sc: FleetScenario
) -> np.ndarray:
    """(n, T) cost multipliers of each subroutine over time from the generation mix; each row
    averages exactly 1 over time."""
    trough = 1 - sc.diurnal_amplitude
    capacity = np.full((sc.generations, len(load)), trough / sc.generations)
    capacity[-1] += load - trough
    mix = capacity / load  # (G, T), columns sum to 1
    spread = sc.generation_cost_spread
    costs = 1 + rng.uniform(-spread, spread, size=(n, sc.generations))
    costs /= costs @ mix.mean(axis=1, keepdims=True)
    return costs @ mix


def _sample(rng: np.random.Generator, probs: np.ndarray, samples: np.ndarray) -> None:
    """Replace each column of ``probs`` (shares) by a multinomial draw's counts / N_t, in place."""
    n = probs.shape[0]
    pvals = np.empty(n + 1)
    for j, trials in enumerate(samples):
        pvals[:n] = probs[:, j]
        pvals[n] = max(0.0, 1.0 - pvals[:n].sum())
        probs[:, j] = rng.multinomial(trials, pvals)[:n] / trials
