"""A realistic fleet for whole-command detection benchmarks: gCPU from a call tree, latency and
throughput, a fleet-wide load term, non-normal noise, and many regressions in one window.

``simulate_realistic_fleet(FleetSpec(), seed)`` returns ``(series, truth)``; ``write_fleet_csv``
writes the series as SPEC §2 long CSV for ``regbot detect``. Everything is drawn from one
``numpy.random.Generator`` seeded by ``seed``; generation is vectorised (3,000 × 1,500 in a few
seconds). Model, in the order it is built:

* **Series.** ``gcpu_share`` of the series are gCPU ``gcpu:<Class>.<method>`` (2–6 methods per
  class, so regbot's class cost domain groups them); the rest are split between
  ``latency:/api/<endpoint>`` (ms, higher is worse) and ``throughput:/api/<endpoint>`` (rps,
  higher is better: a drop is its regression). All share one time axis of ``bucket_s`` buckets.
* **Call tree.** The methods of one class share one caller: none (a root, with probability
  ``root_class_share``) or a method of an earlier class at depth < ``max_depth``. Exclusive (self)
  shares are log-normal (σ = ``share_sigma``: a few methods cost percents, most a hundredth of
  that) scaled to sum to ``total_share``, none below ``min_share``. A method's gCPU is
  *inclusive*: its own samples plus all its descendants' (SPEC §3), so a caller's noise contains
  its callees'.
* **Load.** L_t = a_t + ``diurnal_load``·sin(2π·(t − 8h)/day), a_t a unit-variance AR(1) with
  time constant ``load_time_constant_s``. Each gCPU method's exclusive share is multiplied by
  1 + β·L_t with β ~ Normal(``load_loading``) (random size and sign, mostly positive: busier
  hosts spend more of their time in request code); latency is multiplied by 1 + b·L_t, b > 0;
  throughput by 1 + c·L_t, c > 0. Stack samples per bucket follow the diurnal load (±25 %).
* **Noise.** Per bucket one multinomial draw over the exclusive shares and "other code" with
  N_t samples (``samples_per_bucket`` on average); inclusive counts are summed up the tree by a
  sparse ancestor matrix. Latency: multiplicative Student-t (3 d.o.f.) noise, heavy-tailed.
  Throughput: normal noise. ``bimodal_share`` of the series flip between two or three levels
  (a Markov chain, switch probability 2–10 % per bucket, levels 2–4 noise sd apart);
  ``heavy_tail_share`` of the gCPU and throughput series get rare bursts (1 % of buckets,
  2 + Pareto(1.5) noise sd, capped at 30) or Student-t noise. ``background_seasonal_share`` of
  the series get a daily pattern of 2–5 noise sd peaking outside the analysis window.
* **Noise sd and MDE.** A series' per-point noise sd is that of its event-free points over the
  historical window, its deterministic daily part removed (for gCPU: the binomial sampling
  variance plus the variance of the load's AR part, flips and bursts carried up the tree). The
  MDE is FBDetect App. A.2's T_critical·s/√n₂ with n₂ = ``mde_points`` (default: the analysis
  window's points, the sample the test has after a change at the deploy; then a 1.5× MDE step
  with ~50 points after it is ~5 standard errors of the before/after difference),
  computed by ``regbot.datasets.fleet.minimum_detectable_effect`` (p = ½, N = 1 gives
  ½·T_critical/√n₂).
* **Windows** are those ``regbot detect`` derives with the default workload: the extended window
  ends at the last timestamp and holds ``extended_points`` buckets before it; the analysis window
  is the ``analysis_points`` buckets before that; ``deploy_time_s`` lies in it.
* **Events.** An event on a gCPU method changes its exclusive share, so the method and all its
  callers (its *affected set*) move by the same absolute gCPU; to keep every true group exact,
  each call tree takes at most one event. ``n_regressions`` independent regressions (steps of
  ``step_sizes_mde`` × MDE, cycled; a ``deploy_share`` of them at ``deploy_time_s``, the rest at
  uniform points of the analysis window): ``cascade_share`` of the gCPU ones are *cascades* on a
  method with 1–``max_depth`` callers (true group = method + callers), the rest ``step`` on a root
  method; ``n_latency_steps``/``n_throughput_steps`` of them are independent latency/throughput
  steps, and ``n_linked_latency``/``n_linked_throughput`` latency/throughput series move with a
  gCPU regression at its change time (2–6 of their own MDE; same true group), and follow that
  method's own cost fluctuation (white, ``COUPLED_SHARE`` of each one's noise sd, in both), as
  a latency driven by a method's CPU does — the evidence that they are one cause. gCPU regressions
  are planted only where 1 × MDE ≥ ``min_regression_gcpu`` (default 1.5× regbot's default
  absolute threshold, so that every planted step is reportable under the default config).
  Other events: ``creep`` (a regression for the long-term path: a ramp starting 8 h–3 days
  before its end, which lies between the analysis window's start and 6 h after the last point,
  reaching 3–10 × MDE at the last point, MDE with n₂ = analysis + extended points); and the
  decoys: ``transient`` (spikes and dips, alternately, of 3–10 × MDE with n₂ from their start,
  for 2–12 buckets, back to baseline inside the analysis window; the first three are latency
  spikes); ``seasonal_peak`` (a daily pattern of 3–10 × MDE, n₂ as for creeps, peaking in the
  analysis window); ``cost_shift`` (+D on one method and −D on a sibling method of the same
  class, so under the same caller, D = 2–6 × MDE of the first, at one time — every other one at
  the deploy: the class total and every caller are unchanged); ``improvement`` (a lasting drop of
  2–6 × MDE, a rise for throughput; the first two on a latency and a throughput series). A drop
  (a dip, an improvement, a cost shift's −D, a daily pattern's trough) is capped at 80 % (daily:
  50 %) of the method's lowest exclusive share, and a method that cannot take the low end of the
  range is not chosen. Every other series is ``none`` (quiet).

Truth: one ``PlantedEvent`` per event and per quiet series, each series in exactly one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from scipy import sparse
from scipy.signal import lfilter

from regbot.datasets.fleet import minimum_detectable_effect
from regbot.detection.presets import DAY_S
from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_csv import write_series_csv

__all__ = ["FleetSpec", "FleetTruth", "PlantedEvent", "simulate_realistic_fleet", "write_fleet_csv"]

EventKind = Literal[
    "step", "cascade", "creep", "transient", "seasonal_peak", "cost_shift", "improvement", "none"
]
REGRESSION_KINDS = ("step", "cascade", "creep")

_AREAS = (
    "Feed Ads Search Story Video Photo Comment Notif Profile Friend Group Event Market Message "
    "Payment Cache Session Media Graph Index Query Privacy Spam Growth Reels Live Page Auth "
    "Locale Inbox"
).split()
_ROLES = (
    "Ranker Scorer Renderer Fetcher Loader Builder Client Handler Serializer Parser Validator "
    "Resolver Filter Mapper Store Writer Reader Planner Encoder Indexer Tracker Router "
    "Formatter Manager Provider Service Adapter Batcher Merger Checker"
).split()
_METHODS = (
    "score rank render fetch load build get put parse encode decode validate resolve filter "
    "map merge flush lookup serialize compute prepare apply update check"
).split()
COUPLED_SHARE = 0.6  # a linked pair's shared cost noise, in noise sd of each
_PAGES = ("", "/list", "/detail", "/search", "/upload", "/share")


@dataclass(frozen=True, slots=True)
class FleetSpec:
    """Settings of one fleet (module docstring). Counts are absolute; sizes are in MDE."""

    n_series: int = 3000
    n_points: int = 1500
    bucket_s: float = 600.0
    analysis_points: int = 24
    extended_points: int = 36
    gcpu_share: float = 0.96
    root_class_share: float = 0.45
    max_depth: int = 5
    samples_per_bucket: int = 4000
    share_sigma: float = 1.5
    min_share: float = 2e-5
    total_share: float = 0.8
    load_time_constant_s: float = 6 * 3600.0
    diurnal_load: float = 1.0
    load_loading: tuple[float, float] = (0.02, 0.02)
    bimodal_share: float = 0.03
    heavy_tail_share: float = 0.03
    background_seasonal_share: float = 0.05
    n_regressions: int = 75
    cascade_share: float = 0.3
    step_sizes_mde: tuple[float, ...] = (1.0, 1.5, 2.0, 4.0, 10.0)
    deploy_share: float = 0.5
    n_latency_steps: int = 4
    n_throughput_steps: int = 3
    n_linked_latency: int = 3
    n_linked_throughput: int = 2
    n_creeps: int = 10
    n_transients: int = 30
    n_seasonal_peaks: int = 20
    n_cost_shifts: int = 10
    n_improvements: int = 20
    min_regression_gcpu: float = 1.5e-4
    alpha: float = 0.01
    mde_points: int | None = None  # n₂ of the MDE unit; None: analysis_points
    start_s: float = 1_699_920_000.0  # a midnight UTC

    def validate(self) -> None:
        """Raise ``InputError`` naming the first setting out of range."""

        def check(name: str, ok: bool, expected: str) -> None:
            if not ok:
                raise InputError(f"FleetSpec.{name}", expected, getattr(self, name))

        check(
            "n_points",
            self.n_points > self.analysis_points + self.extended_points + 50,
            "more than analysis + extended points + 50",
        )
        check("analysis_points", self.analysis_points >= 4, "at least 4")
        check("gcpu_share", 0 < self.gcpu_share <= 1, "a share in (0, 1]")
        check("max_depth", self.max_depth >= 1, "at least 1")
        check("total_share", 0 < self.total_share <= 0.9, "in (0, 0.9]")
        check(
            "min_share",
            0 < self.min_share * self.n_series < self.total_share / 2,
            "a floor whose sum over the series is under half of total_share",
        )
        check("share_sigma", self.share_sigma > 0, "positive")
        n_other = self.n_series - round(self.gcpu_share * self.n_series)
        need = self.n_latency_steps + self.n_linked_latency + self.n_throughput_steps
        check(
            "n_series",
            self.n_series >= 50 and n_other >= need + self.n_linked_throughput + 4,
            "at least 50, with enough latency/throughput series for their events",
        )
        linked = self.n_linked_latency + self.n_linked_throughput
        check(
            "n_regressions",
            self.n_regressions >= self.n_latency_steps + self.n_throughput_steps + linked,
            "at least the latency/throughput steps plus the linked ones",
        )
        check("deploy_share", 0 <= self.deploy_share <= 1, "a share in [0, 1]")
        check("cascade_share", 0 <= self.cascade_share <= 1, "a share in [0, 1]")


@dataclass(frozen=True, slots=True)
class PlantedEvent:
    """One planted event (or one quiet series). ``series_ids[0]`` is its origin (the method whose
    own cost changed; the +D method of a cost shift); per member, ``sizes`` is the change in the
    series' unit and raw direction (a throughput drop is negative; a transient's height; a
    seasonal peak's amplitude) and ``sizes_in_mde`` its magnitude over that series' MDE. ``size`` and
    ``size_in_mde`` are the origin's. ``change_time_s``: the step, ramp start, transient start or
    daily peak in the analysis window (quiet: the analysis window's start); ``end_time_s``: when a
    transient is back or a ramp reaches its top."""

    group_id: str
    kind: EventKind
    series_ids: tuple[str, ...]
    sizes: tuple[float, ...]
    sizes_in_mde: tuple[float, ...]
    change_time_s: float
    end_time_s: float | None = None

    @property
    def size(self) -> float:
        return self.sizes[0]

    @property
    def size_in_mde(self) -> float:
        return self.sizes_in_mde[0]

    @property
    def is_regression(self) -> bool:
        return self.kind in REGRESSION_KINDS


@dataclass(frozen=True, slots=True)
class FleetTruth:
    """The fleet's ground truth: events, windows (epoch seconds, as ``regbot detect`` derives
    them), the call tree (caller of each gCPU series, None for a root), each series' noise sd and
    noise type (``normal``, ``bimodal``, ``heavy_tailed``), and the load path L_t."""

    events: tuple[PlantedEvent, ...]
    analysis_start_s: float
    extended_start_s: float
    end_s: float
    deploy_time_s: float
    bucket_s: float
    caller: Mapping[str, str | None]
    noise_sd: Mapping[str, float]
    noise: Mapping[str, str]
    load: np.ndarray = field(repr=False)

    def event_of(self) -> dict[str, PlantedEvent]:
        """Series id → the event it belongs to."""
        return {sid: e for e in self.events for sid in e.series_ids}


def write_fleet_csv(series: list[Series], path: Path) -> None:
    """SPEC §2 long CSV (``timestamp,series,value,kind,unit``) of the fleet."""
    write_series_csv(series, Path(path))


def mde(noise_sd: np.ndarray | float, n_after: np.ndarray | int, alpha: float) -> np.ndarray:
    """App. A.2's MDE for per-point noise ``noise_sd`` and ``n_after`` points after the change."""
    n = np.asarray(n_after)
    per = {int(k): 2 * minimum_detectable_effect(0.5, 1, int(k), alpha) for k in np.unique(n)}
    return np.asarray(noise_sd) * np.vectorize(per.__getitem__, otypes=[float])(n)


def simulate_realistic_fleet(spec: FleetSpec, seed: int) -> tuple[list[Series], FleetTruth]:
    """The fleet of ``spec`` drawn from ``seed`` (module docstring)."""
    spec.validate()
    rng = np.random.default_rng(seed)
    fleet = _Fleet(spec, rng)
    fleet.plant_events()
    return fleet.finish()


class _Fleet:
    """The fleet while it is built: exclusive gCPU shares (n_g, T) before sampling, latency and
    throughput values (n_o, T), and the events planted so far."""

    def __init__(self, spec: FleetSpec, rng: np.random.Generator) -> None:
        self.spec, self.rng = spec, rng
        sp, T = spec, spec.n_points
        self.times = sp.start_s + sp.bucket_s * np.arange(T, dtype=np.float64)
        self.a0 = T - 1 - sp.extended_points - sp.analysis_points
        self.a1 = T - 1 - sp.extended_points
        self.deploy = int(rng.integers(self.a0 + 2, self.a1 - 3))
        n_g = round(sp.gcpu_share * sp.n_series)
        n_lat = (sp.n_series - n_g + 1) // 2
        self.n_g, self.n_lat, self.n_o = n_g, n_lat, sp.n_series - n_g
        self._build_tree()
        phi = np.exp(-sp.bucket_s / sp.load_time_constant_s)
        ar = lfilter([np.sqrt(1 - phi**2)], [1, -phi], rng.standard_normal(T + 500))[500:]
        self.daily = np.sin(2 * np.pi * (self.times - 8 * 3600) / DAY_S)
        self.ar, self.load = ar, ar + sp.diurnal_load * self.daily
        self.samples = np.rint(sp.samples_per_bucket * (1 + 0.25 * self.daily)).astype(np.int64)
        self._base_noise()
        self.events: list[PlantedEvent] = []
        self.tree_used = np.zeros(n_g, dtype=bool)  # by root index
        self.other_used = np.zeros(self.n_o, dtype=bool)

    # -- structure -------------------------------------------------------------------------
    def _build_tree(self) -> None:
        sp, rng = self.spec, self.rng
        names: list[str] = []
        parent: list[int] = []
        depth: list[int] = []
        klass: list[int] = []
        c = 0
        while len(names) < self.n_g:
            k = min(int(rng.integers(2, 7)), self.n_g - len(names))
            cname = _AREAS[c % len(_AREAS)] + _ROLES[(c // len(_AREAS) + c) % len(_ROLES)]
            cname += str(c // (len(_AREAS) * len(_ROLES)) or "")
            open_ = [i for i, d in enumerate(depth) if d < sp.max_depth]
            if not names or not open_ or rng.random() < sp.root_class_share:
                p, d = -1, 0
            else:
                p = int(open_[rng.integers(len(open_))])
                d = depth[p] + 1
            for m in rng.choice(len(_METHODS), size=k, replace=False):
                names.append(f"{cname}.{_METHODS[m]}")
                parent.append(p)
                depth.append(d)
                klass.append(c)
            c += 1
        self.names, self.parent = names, np.array(parent)
        self.depth, self.klass = np.array(depth), np.array(klass)
        # ancestor-or-self matrix: anc[a, d] = 1 when a is d or one of its callers
        rows, cols, root = [], [], np.arange(self.n_g)
        for v in range(self.n_g):
            a = v
            while a >= 0:
                rows.append(a)
                cols.append(v)
                root[v] = a
                a = parent[a]
        self.root = root
        self.anc = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(self.n_g,) * 2)
        share = np.exp(sp.share_sigma * rng.standard_normal(self.n_g))
        share *= sp.total_share / share.sum()
        for _ in range(20):  # lift the floor, keep the sum
            low = share < sp.min_share
            share[low] = sp.min_share
            share[~low] *= (sp.total_share - low.sum() * sp.min_share) / share[~low].sum()
        self.base = share
        self.base_incl = self.anc @ self.base
        pages = [f"/api/{a.lower()}{p}" for p in _PAGES for a in _AREAS]
        self.endpoints = pages[: max(self.n_lat, self.n_o - self.n_lat)]

    def _base_noise(self) -> None:
        """Event-free exclusive shares (n_g, T), latency/throughput values, and noise sd."""
        sp, rng, T, n_g = self.spec, self.rng, self.spec.n_points, self.n_g
        beta = rng.normal(*sp.load_loading, size=n_g)
        self.noise = np.array(["normal"] * sp.n_series, dtype=object)
        sampling_sd = np.sqrt(self.base_incl / sp.samples_per_bucket)
        rand = np.outer(self.base * beta, self.ar)  # random (non-daily) part of each share
        excl = self.base[:, None] + np.outer(self.base * beta, self.load)
        picks = rng.permutation(sp.n_series)
        n_bi, n_ht = round(sp.bimodal_share * sp.n_series), round(sp.heavy_tail_share * sp.n_series)
        bimodal, heavy = np.sort(picks[:n_bi]), np.sort(picks[n_bi : n_bi + n_ht])
        self.noise[n_g : n_g + self.n_lat] = "heavy_tailed"  # Student-t noise, all latency
        self.noise[bimodal], self.noise[heavy] = "bimodal", "heavy_tailed"
        flips = self._flips(len(bimodal))  # (k, T) level 0/1/2 times a 2–4 sd gap
        g_bi = bimodal[bimodal < n_g]
        extra = flips[: len(g_bi)] * sampling_sd[g_bi, None]
        g_ht = heavy[heavy < n_g]
        bursts = (
            (rng.random((len(g_ht), T)) < 0.01)
            * np.minimum(2 + rng.pareto(1.5, size=(len(g_ht), T)), 30)
            * sampling_sd[g_ht, None]
        )
        for rows, add in ((g_bi, extra), (g_ht, bursts)):
            rand[rows] += add
            excl[rows] += add
        hist = slice(0, self.a0)
        incl_rand = self.anc @ rand
        incl = self.anc @ excl
        var = (incl[:, hist] * (1 - incl[:, hist]) / self.samples[hist]).mean(axis=1)
        self.excl = excl
        sd = np.empty(sp.n_series)
        sd[:n_g] = np.sqrt(var + incl_rand[:, hist].var(axis=1))
        # latency (ms): level · (1 + b·L) · exp(σ·t3), heavy-tailed; throughput (rps): level ·
        # (1 + c·L) + normal (Student-t for its heavy-tailed ones)
        n_o, n_lat = self.n_o, self.n_lat
        level = np.exp(rng.uniform(np.log(5), np.log(500), n_o))
        level[n_lat:] = np.exp(rng.uniform(np.log(50), np.log(5000), n_o - n_lat))
        gain = rng.uniform(0.02, 0.08, n_o)
        gain[n_lat:] = rng.uniform(0.05, 0.15, n_o - n_lat)
        sigma = rng.uniform(0.02, 0.08, n_o)
        sigma[n_lat:] = rng.uniform(0.01, 0.04, n_o - n_lat)
        shock = rng.standard_t(3, size=(n_o, T)) / np.sqrt(3)
        tp_normal = ~np.isin(np.arange(n_g + n_lat, sp.n_series), heavy)
        shock[n_lat:][tp_normal] = rng.standard_normal((int(tp_normal.sum()), T))
        o_bi = bimodal[bimodal >= n_g] - n_g
        mode = 1 + flips[len(g_bi) :] * sigma[o_bi, None]
        steady = level[:, None] * (1 + gain[:, None] * sp.diurnal_load * self.daily)
        moving = level[:, None] * (1 + gain[:, None] * self.load)
        other = moving * np.exp(sigma[:, None] * shock)
        other[n_lat:] = moving[n_lat:] * (1 + sigma[n_lat:, None] * shock[n_lat:])
        other[o_bi] *= mode
        self.other = other
        sd[n_g:] = (other - steady)[:, hist].std(axis=1)
        self.sd = sd
        self.min_excl = excl.min(axis=1)

    def _flips(self, k: int) -> np.ndarray:
        """(k, T) Markov chains over 2 or 3 levels, in units of 2–4 noise sd per level."""
        rng, T = self.rng, self.spec.n_points
        levels = rng.integers(2, 4, size=k)
        p_switch = rng.uniform(0.02, 0.1, size=k)
        switch = rng.random((k, T)) < p_switch[:, None]
        target = (rng.random((k, T)) * levels[:, None]).astype(np.int64)
        state = np.zeros((k, T), dtype=np.int64)
        for t in range(1, T):
            state[:, t] = np.where(switch[:, t], target[:, t], state[:, t - 1])
        return state * rng.uniform(2, 4, size=k)[:, None]

    # -- events ----------------------------------------------------------------------------
    def _members(self, v: int) -> list[int]:
        out = []
        while v >= 0:
            out.append(v)
            v = int(self.parent[v])
        return out

    @property
    def n2(self) -> int:
        """n₂ of the MDE unit of steps, cost shifts, improvements and transients."""
        return self.spec.mde_points or self.spec.analysis_points

    def _mde(self, rows: list[int] | np.ndarray) -> np.ndarray:
        return mde(self.sd[np.asarray(rows)], self.n2, self.spec.alpha)

    def _pick_gcpu(self, ok: np.ndarray) -> int:
        """A random gCPU method satisfying ``ok`` whose call tree has no event yet."""
        free = np.flatnonzero(ok & ~self.tree_used[self.root])
        if len(free) == 0:
            raise InputError(
                "FleetSpec", "a fleet large enough for the events asked for", self.spec.n_series
            )
        v = int(free[self.rng.integers(len(free))])
        self.tree_used[self.root[v]] = True
        return v

    def _sibling_room(self) -> np.ndarray:
        """Per method, the largest lowest exclusive share among the other methods of its class
        whose call trees have no event yet."""
        avail = np.where(self.tree_used[self.root], 0.0, self.min_excl)
        order = np.lexsort((-avail, self.klass))
        k, m = self.klass[order], avail[order]
        first = np.r_[True, k[1:] != k[:-1]]
        top_of = m[np.flatnonzero(first)][np.cumsum(first) - 1]
        second = np.where(np.r_[k[1:] == k[:-1], False], np.r_[m[1:], 0.0], 0.0)
        room = np.empty_like(avail)
        room[order] = np.where(first, second, top_of)  # the class's largest gets the runner-up
        return room

    def _pick_other(self, latency: bool) -> int:
        lo, hi = (0, self.n_lat) if latency else (self.n_lat, self.n_o)
        free = np.flatnonzero(~self.other_used[lo:hi]) + lo
        if len(free) == 0:
            raise InputError("FleetSpec", "more latency/throughput series", self.spec.n_series)
        j = int(free[self.rng.integers(len(free))])
        self.other_used[j] = True
        return j

    def _add(self, row: int, values: np.ndarray | float, span: slice) -> None:
        """Add to the exclusive share (gCPU row) or to the values (other rows) over ``span``."""
        if row < self.n_g:
            self.excl[row, span] += values
        else:
            self.other[row - self.n_g, span] += values

    def _record(
        self,
        kind: EventKind,
        rows: list[int],
        sizes: list[float],
        start: int,
        n_after: int,
        end: float | None = None,
    ) -> None:
        in_mde = np.abs(sizes) / mde(self.sd[rows], n_after, self.spec.alpha)
        self.events.append(
            PlantedEvent(
                f"g{len(self.events):03d}-{kind}",
                kind,
                tuple(self.series_id(r) for r in rows),
                tuple(float(s) for s in sizes),
                tuple(float(x) for x in in_mde),
                float(self.times[start]),
                end,
            )
        )

    def _couple(self, v: int, j: int, sign: float) -> None:
        """Method ``v``'s own cost fluctuates (request mix; white, ``COUPLED_SHARE`` of its
        noise sd) and latency/throughput series ``j`` follows it (``sign`` −1: throughput falls
        as cost rises), so the two carry one noise: the evidence a linked pair is one cause.
        Both rows' noise sd include it."""
        w = self.rng.standard_normal(self.spec.n_points)
        for row, sgn in ((v, 1.0), (j, sign)):
            part = COUPLED_SHARE * self.sd[row]
            if row < self.n_g:
                w_row = np.maximum(part * w, -0.5 * self.min_excl[row])
            else:
                w_row = part * w
            self._add(row, sgn * w_row, slice(None))
            self.sd[row] = float(np.hypot(self.sd[row], part))

    def series_id(self, row: int) -> str:
        if row < self.n_g:
            return f"gcpu:{self.names[row]}"
        j = row - self.n_g
        kind, k = ("latency", j) if j < self.n_lat else ("throughput", j - self.n_lat)
        return f"{kind}:{self.endpoints[k]}"

    def plant_events(self) -> None:
        sp, rng = self.spec, self.rng
        a0, a1, n_g = self.a0, self.a1, self.n_g
        n_reg = sp.n_regressions
        sizes = np.resize(np.asarray(sp.step_sizes_mde, dtype=float), n_reg)
        rng.shuffle(sizes)
        at_deploy = rng.random(n_reg) < sp.deploy_share
        starts = np.where(at_deploy, self.deploy, rng.integers(a0, a1, size=n_reg))
        n_other = sp.n_latency_steps + sp.n_throughput_steps
        n_cascade = round(sp.cascade_share * (n_reg - n_other))
        linked = [True] * sp.n_linked_latency + [False] * sp.n_linked_throughput
        for i in range(n_reg):
            m, c = float(sizes[i]), int(starts[i])
            if i < n_other:
                j = n_g + self._pick_other(latency=i < sp.n_latency_steps)
                d = m * float(self._mde([j])[0]) * (1 if i < sp.n_latency_steps else -1)
                self._add(j, d, slice(c, None))
                self._record("step", [j], [d], c, self.n2)
                continue
            unit = mde(self.sd[:n_g], self.n2, sp.alpha)
            big = unit >= sp.min_regression_gcpu
            cascade = i - n_other < n_cascade
            v = self._pick_gcpu(big & ((self.depth >= 1) if cascade else (self.depth == 0)))
            j = None
            if linked and not cascade:
                lat = linked.pop()
                j = n_g + self._pick_other(latency=lat)
                self._couple(v, j, -1.0 if not lat else 1.0)
            d = m * float(self._mde([v])[0])
            self.excl[v, c:] += d
            rows, ds = self._members(v), [d] * len(self._members(v))
            if j is not None:
                dj = rng.uniform(2, 6) * float(self._mde([j])[0]) * (1 if lat else -1)
                self._add(j, dj, slice(c, None))
                rows, ds = rows + [j], ds + [dj]
            self._record("cascade" if cascade else "step", rows, ds, c, self.n2)
        self._plant_decoys()

    def _plant_decoys(self) -> None:
        """Creeps, cost shifts, improvements, seasonal peaks and transients, scarcest first. A
        drop (and a peak's trough) is capped at what the method's lowest exclusive share allows
        (80 %; 50 % for a daily pattern); a method that cannot take the low end of the range is
        not chosen."""
        sp, rng, T = self.spec, self.rng, self.spec.n_points
        a0, a1, n_g = self.a0, self.a1, self.n_g
        window = lambda: int(rng.integers(a0, a1))  # noqa: E731
        end_of = lambda s, n: float(self.times[s] + n * sp.bucket_s)  # noqa: E731
        for k in range(sp.n_cost_shifts):
            c = self.deploy if k % 2 == 0 else window()
            unit = mde(self.sd[:n_g], self.n2, sp.alpha)
            cap = 0.8 * self._sibling_room() / unit  # y: the sibling with the most room to drop
            x = self._pick_gcpu((cap >= 2) & (2 * unit >= sp.min_regression_gcpu))
            sibs = np.flatnonzero((self.klass == self.klass[x]) & (np.arange(n_g) != x))
            # x's own tree is taken now; a sibling under the same caller shares it
            other_event = self.tree_used[self.root[sibs]] & (self.root[sibs] != self.root[x])
            avail = np.where(other_event, 0.0, self.min_excl[sibs])
            y = int(sibs[np.argmax(avail)])
            self.tree_used[self.root[y]] = True
            d = min(rng.uniform(2, 6), float(cap[x])) * float(unit[x])
            self.excl[x, c:] += d
            self.excl[y, c:] -= d
            self._record("cost_shift", [x, y], [d, -d], c, self.n2)
        for k in range(sp.n_improvements):
            c, m = window(), rng.uniform(2, 6)
            if k < 2:  # one latency and one throughput improvement
                j = n_g + self._pick_other(latency=k == 0)
                d = m * float(self._mde([j])[0]) * (-1 if k == 0 else 1)
                self._add(j, d, slice(c, None))
                self._record("improvement", [j], [d], c, self.n2)
                continue
            unit = mde(self.sd[:n_g], self.n2, sp.alpha)
            cap = 0.8 * self.min_excl / unit
            v = self._pick_gcpu(cap >= 2)
            d = -min(m, float(cap[v])) * float(unit[v])
            self.excl[v, c:] += d
            rows = self._members(v)
            self._record("improvement", rows, [d] * len(rows), c, self.n2)
        unit60 = mde(self.sd[:n_g], T - a0, sp.alpha)
        for _ in range(sp.n_seasonal_peaks):
            p = window()
            cap = 0.5 * self.min_excl / unit60
            v = self._pick_gcpu(cap >= 3)
            amp = min(rng.uniform(3, 10), float(cap[v])) * float(unit60[v])
            self.excl[v] += amp * np.cos(2 * np.pi * (self.times - self.times[p]) / DAY_S)
            rows = self._members(v)
            self._record("seasonal_peak", rows, [amp] * len(rows), p, T - a0)
        for _ in range(sp.n_creeps):
            end = int(rng.integers(a0, T + 36))
            start = end - int(rng.integers(48, 433))
            v = self._pick_gcpu(unit60 >= sp.min_regression_gcpu)
            ramp = np.clip((np.arange(T) - start) / (end - start), 0, 1)
            d = rng.uniform(3, 10) * float(unit60[v])
            self.excl[v] += d * ramp / ramp[-1]
            rows = self._members(v)
            self._record("creep", rows, [d] * len(rows), start, T - a0, end_of(start, end - start))
        for k in range(sp.n_transients):
            length = int(rng.integers(2, 13))
            s = int(rng.integers(a0, a1 - length + 1))
            m, sign = rng.uniform(3, 10), (1 if k % 2 == 0 else -1)
            if k < 3:  # a few latency spikes
                j = n_g + self._pick_other(latency=True)
                h = m * float(self._mde([j])[0])
                self._add(j, h, slice(s, s + length))
                self._record("transient", [j], [h], s, self.n2, end_of(s, length))
                continue
            unit = mde(self.sd[:n_g], self.n2, sp.alpha)
            cap = 0.8 * self.min_excl / unit if sign < 0 else np.full(n_g, np.inf)
            v = self._pick_gcpu(cap >= 3)
            h = sign * min(m, float(cap[v])) * float(unit[v])
            self.excl[v, s : s + length] += h
            rows = self._members(v)
            self._record("transient", rows, [h] * len(rows), s, self.n2, end_of(s, length))
        phase = lambda peak_s: np.cos(2 * np.pi * (self.times - peak_s) / DAY_S)  # noqa: E731
        # background daily patterns (not events): peaks outside the analysis window's hours
        taken = {r for e in self.events if e.kind == "seasonal_peak" for r in e.series_ids}
        n_bg = round(sp.background_seasonal_share * sp.n_series)
        for row in rng.permutation(sp.n_series)[:n_bg]:
            if self.series_id(int(row)) in taken:
                continue
            off = int(rng.integers(0, round(DAY_S / sp.bucket_s) - sp.analysis_points))
            p = self.times[self.a1] + off * sp.bucket_s
            amp = rng.uniform(2, 5) * self.sd[row]
            if row < n_g:
                amp = min(amp, 0.5 * self.min_excl[row])
            self._add(int(row), amp * phase(p), slice(None))

    def finish(self) -> tuple[list[Series], FleetTruth]:
        sp, n_g = self.spec, self.n_g
        pvals = np.clip(self.excl.T, 0.0, None)  # (T, n_g)
        other = np.clip(1.0 - pvals.sum(axis=1, keepdims=True), 0.0, None)
        pvals = np.hstack([pvals, other])
        pvals /= pvals.sum(axis=1, keepdims=True)
        counts = self.rng.multinomial(self.samples, pvals)[:, :n_g]  # (T, n_g)
        gcpu = np.asarray(self.anc @ counts.T.astype(np.float64)) / self.samples[None, :]
        values = np.vstack([gcpu, self.other])
        ids = [self.series_id(r) for r in range(sp.n_series)]
        kinds = ["gcpu"] * n_g + ["latency"] * self.n_lat + ["throughput"] * (self.n_o - self.n_lat)
        units = {"gcpu": "share", "latency": "ms", "throughput": "rps"}
        series = [
            Series(i, k, self.times, values[r], unit=units[k])
            for r, (i, k) in enumerate(zip(ids, kinds))
        ]
        seen = {s for e in self.events for s in e.series_ids}
        start = self.a0
        quiet = [
            PlantedEvent(f"q-{i}", "none", (i,), (0.0,), (0.0,), float(self.times[start]))
            for i in ids
            if i not in seen
        ]
        caller = {ids[v]: (ids[int(p)] if p >= 0 else None) for v, p in enumerate(self.parent)}
        truth = FleetTruth(
            tuple(self.events + quiet),
            float(self.times[self.a0]),
            float(self.times[self.a1]),
            float(self.times[-1]),
            float(self.times[self.deploy]),
            sp.bucket_s,
            caller,
            dict(zip(ids, map(float, self.sd))),
            dict(zip(ids, map(str, self.noise))),
            self.load,
        )
        return series, truth
