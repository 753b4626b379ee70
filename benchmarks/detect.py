"""Detection benchmark: the whole `regbot detect` command on realistic fleets (default), or the
speed of the short-term path on a 100,000-series fleet (``--scale``); peers on the same series.

**Fleet quality (default).** For each of ``--fleets`` seeded fleets from
``tests/support/fleet_sim.py`` (3,000 series × 1,500 ten-minute points: gCPU from a call tree,
latency, throughput, a shared load term, ~75 regressions of 1–10× MDE in one analysis window,
cascades, creeps, transients, seasonal peaks, cost shifts, improvements), the fleet is written as
a SPEC §2 CSV beside an empty ``regbot.yml`` in a temporary folder and the command a user types is
run: ``regbot detect series.csv -c regbot.yml -o out.json`` (default config: dedup on, no stacks,
state in that folder), timed; then again with ``dedup: {method: kdd18}``. From ``out.json``:

* a true regression (step or cascade) is *found* when a reported regression (a representative in
  ``regressions``) lies on one of its true group's series with its change time within ±6 buckets;
  recall per MDE multiple of its origin series;
* change-time error: per true regression, the report on its group's series nearest in time
  (median and p90 |error| in buckets, share within ±6 at ≥ 4× MDE); coverage of the report's
  ``change_time_interval`` [lo, hi] when the report has one;
* creeps reported (a report on the creep's series after its ramp began), by detector;
* false positives per 1,000 series by what the reported series carries: transient, seasonal peak,
  cost-shift member, improvement, quiet (how many of them bimodal or heavy-tailed), mistimed (a
  true regression's series reported > 6 buckets away);
* duplicates per true group: representatives beyond the first within ±6 buckets of one true
  regression, over the true regressions found;
* group purity: each representative's members are rebuilt from its ``duplicates`` ids and from
  the ``filtered`` candidates whose ``som_dedup``/``pairwise_dedup`` verdict names it as
  ``representative`` (``stack_dedup``: ``explained_by``); purity = the share of merged members
  that belong to the representative's true group;
* the funnel (mean per fleet) and, for true regressions ≥ 1.5× MDE that were missed, the stage
  whose verdict removed their candidate.

Beside it, on the same series: the maximum-likelihood single change point (least-squares split
over the whole series; the limit for change-time accuracy), ruptures Binseg (l2, penalty
3·log(n)·σ̂²) and Apache Otava (``peers.py``; ``--no-otava`` to skip). A peer reports a series when
it places an upward (oriented: worse) change point in the analysis window; it is scored by the
same rules. Peers run on every series of a planted event plus a seeded sample of quiet series (up
to ``--peer-series`` per fleet); their false positives per 1,000 series scale each decoy type's
rate in the subset to its count in the fleet.

    python benchmarks/detect.py [--series 3000] [--points 1500] [--fleets 3 | --seeds 1 2 3]
                                [--peer-series 400] [--no-otava] [--no-kdd18]

**Scale (``--scale``).**

1. regbot, in a child process (so peak memory is its own): simulate a fleet
   (``detection.simulate``, default 100,000 series × 1,500 ten-minute points, seed 1), pack it,
   and run the whole short-term path (change points → went-away → seasonality → thresholds,
   threshold 0 so that only the statistics decide) over it. Prints seconds, peak RSS and the
   funnel, and the quality against the planted truth: recall per step size (in multiples of the
   minimum detectable effect), false-positive rate per quiet series, and the share of transient
   dips/spikes and seasonal peaks filtered.
2. Peers on the first ``--peer-series`` series of the same fleet: ruptures Binseg (l2) and Pelt
   (l2, run as KernelCPD with the linear kernel: the same cost in ruptures' C code) with an
   MBIC-like penalty 3·log(n)·σ̂² (σ̂ from the MAD of first differences), a plain
   CUSUM (k = 0.5σ, h = 5σ) without regbot's filters, and Apache Otava's E-divisive from its own
   venv (``--no-otava`` to skip). A peer "reports" a series when it puts an upward change point
   in the analysis window. Table: method, precision, recall, F1, false-positive rate, seconds per
   1,000 series — regbot's row from the same subset.

    python benchmarks/detect.py --scale [--series 100000] [--points 1500] [--seed 1]
                                        [--peer-series 300] [--no-otava]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
INSTALL_HINT = "pip install -e '.[bench]'"

REGBOT_RUN = """
import json, resource, sys, time
from collections import Counter
import numpy as np
from regbot.datasets.fleet import FleetScenario, simulate_fleet
from regbot.detection.series_batch import SeriesBatch
from regbot.detection.stage_settings import DetectionSettings, LongTermSettings
from regbot.detection.presets import Threshold, Windows, WorkloadSettings
from regbot.detection.pipeline import detect_batch
from detect import scenario

n, points, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
t0 = time.perf_counter()
series, events, bounds = simulate_fleet(scenario(n, points), seed)
simulated_s = time.perf_counter() - t0
windows = Windows(bounds.analysis_start_s - bounds.historical_start_s,
                  bounds.extended_start_s - bounds.analysis_start_s,
                  bounds.end_s - bounds.extended_start_s)
settings = DetectionSettings(
    workload=WorkloadSettings(Threshold("absolute", 0.0), windows, 3600.0),
    long_term=LongTermSettings(enabled=False),
)
t1 = time.perf_counter()
batch = SeriesBatch.from_series(series, start_s=bounds.historical_start_s, end_s=bounds.end_s)
del series
result = detect_batch(batch, settings, bounds)
detect_s = time.perf_counter() - t1
reported = {c.series_id for c in result.reported}
by_kind = {}
for e in events:
    key = e.kind if e.kind != "step" else f"step {e.size_in_mde:g}x"
    total, hits = by_kind.get(key, (0, 0))
    by_kind[key] = (total + 1, hits + (e.series_id in reported))
print(json.dumps({
    "simulated_s": simulated_s, "detect_s": detect_s, "funnel": result.funnel,
    "by_kind": by_kind, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "reported_first": sorted(
        int(i) for i, e in enumerate(events) if e.series_id in reported
    ),
}))
"""


SAMPLES_PER_SERIES = (
    20  # stack samples per subroutine per bucket, the simulator's 10,000-series default
)


def scenario(n: int, points: int):
    """The fleet: samples per bucket grow with the number of subroutines (20 each, as the
    simulator's 10,000-series default has), so a fleet of 100,000 subroutines is sampled as
    densely per subroutine as one of 10,000 rather than falling below one sample per bucket,
    under FBDetect's triviality floor."""
    from regbot.datasets.fleet import FleetScenario

    return FleetScenario(n_series=n, n_points=points, samples_per_bucket=SAMPLES_PER_SERIES * n)


def run_regbot(n: int, points: int, seed: int) -> dict:
    program = textwrap.dedent(REGBOT_RUN)
    done = subprocess.run(
        [sys.executable, "-c", program, str(n), str(points), str(seed)],
        cwd=Path(__file__).resolve().parent,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"regbot run failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def upward_in_window(values: np.ndarray, breakpoints: list[int], lo: int, hi: int) -> bool:
    """A peer reports a series when one of its change points lies in [lo, hi) and the segment
    after it has a higher mean than the segment before it."""
    edges = [0, *sorted(b for b in breakpoints if 0 < b < len(values)), len(values)]
    for i in range(1, len(edges) - 1):
        b = edges[i]
        if lo <= b < hi and values[b : edges[i + 1]].mean() > values[edges[i - 1] : b].mean():
            return True
    return False


def noise_sigma(values: np.ndarray) -> float:
    return float(
        1.4826 * np.median(np.abs(np.diff(values) - np.median(np.diff(values)))) / math.sqrt(2)
    )


def peer_rows(series, lo: int, hi: int, use_otava: bool) -> dict[str, tuple[list[bool], float]]:
    """method -> (reported per series, seconds per series)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from plain_cusum import plain_cusum

    rows: dict[str, tuple[list[bool], float]] = {}
    arrays = [np.asarray(s.values, dtype=np.float64) for s in series]
    try:
        import ruptures as rpt
    except ImportError:
        print(f"ruptures is not installed; peers skipped ({INSTALL_HINT})")
        rpt = None
    if rpt is not None:
        for name, make in (
            ("ruptures Binseg l2", lambda: rpt.Binseg(model="l2", min_size=3, jump=1)),
            # Pelt with the l2 cost, in ruptures' C code (KernelCPD with the linear kernel is the
            # same cost and search; the pure-Python Pelt is O(n^2) per series here).
            ("ruptures Pelt l2 (KernelCPD)", lambda: rpt.KernelCPD(kernel="linear", min_size=3)),
        ):
            flags, t = [], time.perf_counter()
            for x in arrays:
                pen = 3 * math.log(len(x)) * max(noise_sigma(x), 1e-12) ** 2
                bkps = make().fit(x).predict(pen=pen)[:-1]
                flags.append(upward_in_window(x, bkps, lo, hi))
            rows[name] = (flags, (time.perf_counter() - t) / len(arrays))
    flags, t = [], time.perf_counter()
    for x in arrays:
        sigma = max(noise_sigma(x), 1e-12)
        flags.append(upward_in_window(x, plain_cusum((x - np.median(x)) / sigma), lo, hi))
    rows["plain CUSUM k=0.5 h=5"] = (flags, (time.perf_counter() - t) / len(arrays))
    if use_otava:
        from peers import OtavaUnavailable, run_otava_timed

        try:
            found, seconds, versions = run_otava_timed(arrays)
            rows[f"otava e-divisive {versions['otava']}"] = (
                [upward_in_window(x, b, lo, hi) for x, b in zip(arrays, found)],
                float(np.mean(seconds)),
            )
        except OtavaUnavailable as error:
            print(f"otava row skipped: {error}")
    return rows


def scores(flags: list[bool], truth: list[bool], quiet: list[bool]) -> tuple[float, ...]:
    tp = sum(f and t for f, t in zip(flags, truth))
    fp = sum(f and not t for f, t in zip(flags, truth))
    fn = sum(t and not f for f, t in zip(flags, truth))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    quiet_fp = sum(f and q for f, q in zip(flags, quiet)) / max(1, sum(quiet))
    return precision, recall, f1, quiet_fp


def scale_run(args: argparse.Namespace) -> None:
    """The ``--scale`` mode (module docstring)."""

    run = run_regbot(args.series, args.points, args.seed)
    print(
        f"fleet: {args.series:,} series x {args.points:,} points (simulated in {run['simulated_s']:.1f}s)"
    )
    print(
        f"regbot short-term path: {run['detect_s']:.1f}s, peak RSS {run['peak_mb']:,.0f} MB "
        f"(targets: <= 120 s, <= 4,096 MB on 2 cores)"
    )
    print(
        "funnel: "
        + ", ".join(
            f"{k} {v:,}" for k, v in run["funnel"].items() if not k.startswith("after_s") or True
        )
    )
    print(f"\n{'planted event':<22} {'series':>8} {'reported':>9} {'share':>7}")
    for kind, (total, hits) in sorted(run["by_kind"].items()):
        print(f"{kind:<22} {total:>8,} {hits:>9,} {hits / total:>7.1%}")
    steps_2x = [
        (t, h)
        for k, (t, h) in run["by_kind"].items()
        if k.startswith("step") and float(k[5:-1]) >= 2
    ]
    total, hits = map(sum, zip(*steps_2x))
    transients = [run["by_kind"].get(k, (0, 0)) for k in ("transient_spike", "transient_dip")]
    t_total, t_hits = map(sum, zip(*transients))
    s_total, s_hits = run["by_kind"].get("seasonal_peak", (0, 0))
    q_total, q_hits = run["by_kind"].get("none", (0, 0))
    print(f"\nrecall, steps >= 2x MDE: {hits / total:.1%} (target >= 90%)")
    print(f"false positives per quiet series: {q_hits / max(q_total, 1):.3%} (target <= 0.1%)")
    print(
        f"transients filtered: {1 - t_hits / max(t_total, 1):.1%}; "
        f"seasonal peaks filtered: {1 - s_hits / max(s_total, 1):.1%} (targets >= 99%)"
    )

    # Peers on the first --peer-series series of the same fleet (same seed, same simulation).
    from regbot.datasets.fleet import simulate_fleet

    series, events, bounds = simulate_fleet(scenario(args.series, args.points), args.seed)
    subset = list(range(min(args.peer_series, len(series))))
    chosen = [series[i] for i in subset]
    times = np.asarray(chosen[0].timestamps_s)
    lo = int(np.searchsorted(times, bounds.analysis_start_s))
    hi = int(np.searchsorted(times, bounds.extended_start_s))
    truth = [events[i].is_regression for i in subset]
    quiet = [events[i].kind == "none" for i in subset]
    reported = set(run["reported_first"])
    rows = {
        "regbot (short-term path)": ([i in reported for i in subset], run["detect_s"] / args.series)
    }
    rows.update(peer_rows(chosen, lo, hi, not args.no_otava))
    print(
        f"\nsame {len(subset)} series, same run; positives = planted steps and creeps "
        f"({sum(truth)}), quiet series {sum(quiet)}"
    )
    print(
        f"{'method':<28} {'precision':>9} {'recall':>7} {'F1':>6} {'FPR':>7} {'s/1000 series':>14}"
    )
    for name, (flags, per_series) in rows.items():
        p, r, f1, fpr = scores(flags, truth, quiet)
        print(f"{name:<28} {p:>9.3f} {r:>7.3f} {f1:>6.3f} {fpr:>7.2%} {per_series * 1000:>14.3f}")
    binseg = rows.get("ruptures Binseg l2")
    if binseg is not None:
        ratio = binseg[1] / rows["regbot (short-term path)"][1]
        print(
            f"\nregbot is {ratio:,.0f}x faster per series than ruptures Binseg l2 (target >= 50x)"
        )


# ---- fleet quality: the whole `regbot detect` command on realistic fleets ------------------

TOLERANCE_BUCKETS = 6
MULTIPLES = (1.0, 1.5, 2.0, 4.0, 10.0)
RECALL_TARGETS = {1.0: 0.30, 1.5: 0.75, 2.0: 0.85, 4.0: 0.97, 10.0: 0.97}
DECOYS = ("transient", "seasonal_peak", "cost_shift", "improvement", "quiet", "mistimed")
DECOY_NAMES = {"seasonal_peak": "season peak", "cost_shift": "cost shift"}
KDD18_CONFIG = "dedup:\n  method: kdd18\n"
LIMITS = ("ML placement", "ML in window")


def fleet_sim():
    """The simulator module from tests/support (not part of the installed package)."""
    sys.path.insert(0, str(REPO / "tests" / "support"))
    import fleet_sim as module

    return module


def fleet_spec(sim, n_series: int, n_points: int):
    """The simulator's default fleet, its event counts scaled to ``n_series`` (3,000 = as is)."""
    spec = sim.FleetSpec(n_series=n_series, n_points=n_points)
    if n_series == 3000:
        return spec
    f = n_series / 3000
    counts = {
        name: max(round(getattr(spec, name) * f), low)
        for name, low in (
            ("n_regressions", 12),
            ("n_latency_steps", 1),
            ("n_throughput_steps", 1),
            ("n_linked_latency", 1),
            ("n_linked_throughput", 1),
            ("n_creeps", 2),
            ("n_transients", 4),
            ("n_seasonal_peaks", 2),
            ("n_cost_shifts", 2),
            ("n_improvements", 3),
        )
    }
    return sim.FleetSpec(n_series=n_series, n_points=n_points, **counts)


def regbot_command() -> str:
    here = Path(sys.executable).with_name("regbot")
    found = str(here) if here.exists() else shutil.which("regbot")
    if found is None:
        raise SystemExit(
            "the regbot command is not installed in this environment (pip install -e .)"
        )
    return found


def run_detect(csv_path: Path, folder: Path, config_text: str) -> tuple[dict, float]:
    """``regbot detect series.csv -c regbot.yml -o out.json`` in ``folder``: (report, seconds)."""
    folder.mkdir()
    (folder / "regbot.yml").write_text(config_text)
    command = [regbot_command(), "detect", str(csv_path), "-c", "regbot.yml", "-o", "out.json"]
    t = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return json.loads((folder / "out.json").read_text()), seconds


def decoy_type(kind: str) -> str:
    return "quiet" if kind == "none" else kind


@dataclass
class Tally:
    """Counts of one method over all fleets (sums, so fleets pool)."""

    found: Counter = field(default_factory=Counter)  # multiple -> true regressions found
    total: Counter = field(default_factory=Counter)  # multiple -> true regressions
    fp: Counter = field(default_factory=Counter)  # decoy type -> false positives (per fleet sum)
    series: int = 0  # series over all fleets (the denominator of FP per 1,000)
    errors: list = field(default_factory=list)  # (multiple, error in buckets) of nearest reports
    covered: list = field(default_factory=list)  # interval covers the truth, per nearest report
    creeps: Counter = field(default_factory=Counter)  # detector -> creeps reported
    n_creeps: int = 0
    quiet_non_normal: int = 0
    extra: int = 0  # duplicate representatives of found true regressions
    merged: int = 0  # merged members of reported groups
    merged_same: int = 0  # ... that belong to the representative's true group
    missed: Counter = field(default_factory=Counter)  # what removed a missed true step >= 1.5x
    filters: Counter = field(default_factory=Counter)
    funnel: Counter = field(default_factory=Counter)
    seconds: list = field(default_factory=list)
    unsampled: set = field(default_factory=set)  # decoy types a peer's subset did not hold

    def recall(self, m: float) -> float:
        return self.found[m] / self.total[m] if self.total[m] else float("nan")

    def fp_per_1000(self, kind: str | None = None) -> float:
        if kind in self.unsampled or (kind is None and self.unsampled):
            return float("nan")
        count = sum(self.fp.values()) if kind is None else self.fp[kind]
        return 1000 * count / max(self.series, 1)


def multiple_of(event) -> float:
    return min(MULTIPLES, key=lambda m: abs(m - event.size_in_mde))


def group_members(rep: dict, by_id: dict, filtered: list[dict]) -> set[str]:
    """The series of a representative's group, from its duplicates and the dedup verdicts."""
    members = {rep["series"]}
    members |= {by_id[d]["series"] for d in rep.get("duplicates", []) if d in by_id}
    for f in filtered:
        v = f["verdicts"]
        for stage, key in (
            ("som_dedup", "representative"),
            ("pairwise_dedup", "representative"),
            ("stack_dedup", "explained_by"),
        ):
            if stage in v and not v[stage]["passed"] and v[stage].get(key) == rep["series"]:
                members.add(f["series"])
    return members


def score_report(report: dict, truth, n_series: int, tally: Tally) -> None:
    """Add one fleet's report to ``tally`` (the rules of the module docstring)."""
    tol = TOLERANCE_BUCKETS * truth.bucket_s
    event_of = truth.event_of()
    regs, filtered = report["regressions"], report.get("filtered", [])
    by_id = {e["id"]: e for e in regs + filtered}
    on_series: dict[str, list[dict]] = defaultdict(list)
    for r in regs:
        on_series[r["series"]].append(r)
    tally.series += n_series
    tally.funnel.update(report["funnel"])
    hits: dict[str, list[dict]] = defaultdict(list)
    for r in regs:
        e = event_of.get(r["series"])
        if e is None:
            tally.fp["unknown"] += 1
        elif e.kind in ("step", "cascade"):
            if abs(r["change_time"] - e.change_time_s) <= tol:
                hits[e.group_id].append(r)
            else:
                tally.fp["mistimed"] += 1
        elif e.kind == "creep":
            if r["change_time"] >= e.change_time_s - tol:
                hits[e.group_id].append(r)
            else:
                tally.fp["mistimed"] += 1
        else:
            tally.fp[decoy_type(e.kind)] += 1
            if e.kind == "none" and truth.noise[r["series"]] != "normal":
                tally.quiet_non_normal += 1
    for e in truth.events:
        if e.kind == "creep":
            tally.n_creeps += 1
            if hits.get(e.group_id):
                tally.creeps[hits[e.group_id][0]["detector"]] += 1
        if e.kind not in ("step", "cascade"):
            continue
        m = multiple_of(e)
        tally.total[m] += 1
        tally.found[m] += bool(hits.get(e.group_id))
        tally.extra += max(len(hits.get(e.group_id, [])) - 1, 0)
        near = [r for sid in e.series_ids for r in on_series.get(sid, [])]
        if near:
            r = min(near, key=lambda r: abs(r["change_time"] - e.change_time_s))
            tally.errors.append((m, (r["change_time"] - e.change_time_s) / truth.bucket_s))
            interval = r.get("change_time_interval")
            if interval is not None:
                tally.covered.append(interval[0] <= e.change_time_s <= interval[1])
        if m >= 1.5 and not hits.get(e.group_id):
            tally.missed[why_missed(e, near, filtered, tol)] += 1
    for r in regs:
        group = event_of[r["series"]].group_id if r["series"] in event_of else None
        merged = group_members(r, by_id, filtered) - {r["series"]}
        tally.merged += len(merged)
        tally.merged_same += sum(
            event_of.get(s) is not None and event_of[s].group_id == group for s in merged
        )
    filter_removals(truth, filtered, on_series, tally)


def why_missed(event, near: list[dict], filtered: list[dict], tol: float) -> str:
    """What became of a true regression that was not found."""
    own = [
        f
        for f in filtered
        if f["series"] in event.series_ids and abs(f["change_time"] - event.change_time_s) <= tol
    ]
    for f in own:
        failed = [stage for stage, v in f["verdicts"].items() if not v["passed"]]
        if failed:
            return f"removed by {failed[0]}"
    if near:
        return "reported > 6 buckets away"
    if any(f["series"] in event.series_ids for f in filtered):
        return "candidate > 6 buckets away, filtered"
    return "no change point"


def filter_removals(truth, filtered: list[dict], on_series: dict, tally: Tally) -> None:
    """Issue item 3's view: true lasting steps >= 1.5x removed by went-away, seasonality or cost
    shift (on their origin series); transients and seasonal peaks reported."""
    removed_by: dict[str, set[str]] = defaultdict(set)
    for f in filtered:
        for stage, v in f["verdicts"].items():
            if not v["passed"]:
                removed_by[f["series"]].add(stage)
    for e in truth.events:
        origin = e.series_ids[0]
        if e.kind in ("step", "cascade") and e.size_in_mde >= 1.5:
            tally.filters["steps"] += 1
            stages = removed_by.get(origin, set()) & {"went_away", "seasonality", "cost_shift"}
            tally.filters["steps removed"] += bool(stages) and not on_series.get(origin)
        if e.kind in ("transient", "seasonal_peak"):
            tally.filters[e.kind] += 1
            tally.filters[f"{e.kind} reported"] += any(on_series.get(s) for s in e.series_ids)


# -- the same series through the limit and the peers ----------------------------------------


def oriented(series) -> np.ndarray:
    values = np.asarray(series.values, dtype=np.float64)
    return -values if series.kind == "throughput" else values


def ml_change_point(x: np.ndarray, lo: int = 2, hi: int | None = None) -> np.ndarray:
    """Per row, the least-squares single split (first index of the new segment) searched over
    [lo, hi) (default: the whole row, at least 2 points each side): argmax of
    k(n−k)/n·(mean₁ − mean₂)²."""
    n = x.shape[1]
    k = np.arange(max(lo, 1), min(hi or n - 1, n))
    s = np.cumsum(x, axis=1)[:, k - 1]
    total = x.sum(axis=1, keepdims=True)
    gain = (s - k * total / n) ** 2 * n / (k * (n - k))
    return k[np.argmax(gain, axis=1)]


def score_ml(series_by_id: dict, truth, tally: Tally, in_window: bool = False) -> None:
    """Share of true regressions whose origin series' ML split lies within ±6 buckets; searched
    over the whole series, or over the analysis window only (what a detector searching the
    window, as regbot does, can reach)."""
    times = next(iter(series_by_id.values())).timestamps_s
    events = [e for e in truth.events if e.kind in ("step", "cascade")]
    x = np.stack([oriented(series_by_id[e.series_ids[0]]) for e in events])
    lo = int(np.searchsorted(times, truth.analysis_start_s))
    hi = int(np.searchsorted(times, truth.extended_start_s))
    placed = ml_change_point(x, lo, hi) if in_window else ml_change_point(x)
    for e, k in zip(events, placed):
        true_index = int(np.searchsorted(times, e.change_time_s))
        m = multiple_of(e)
        tally.total[m] += 1
        tally.found[m] += abs(int(k) - true_index) <= TOLERANCE_BUCKETS
        tally.errors.append((m, int(k) - true_index))


def upward_points(x: np.ndarray, breakpoints: list[int], lo: int, hi: int) -> list[int]:
    """Change points in [lo, hi) after which the (oriented) mean rises."""
    edges = [0, *sorted(b for b in breakpoints if 0 < b < len(x)), len(x)]
    return [
        edges[i]
        for i in range(1, len(edges) - 1)
        if lo <= edges[i] < hi
        and x[edges[i] : edges[i + 1]].mean() > x[edges[i - 1] : edges[i]].mean()
    ]


def peer_subset(series: list, truth, limit: int, seed: int) -> list[int]:
    """Every series of a planted event, plus a seeded sample of quiet series up to ``limit``."""
    event_of = truth.event_of()
    events = [i for i, s in enumerate(series) if event_of[s.id].kind != "none"]
    quiet = [i for i, s in enumerate(series) if event_of[s.id].kind == "none"]
    rng = np.random.default_rng(seed)
    extra = rng.choice(quiet, size=min(max(limit - len(events), 0), len(quiet)), replace=False)
    return sorted(events + [int(i) for i in extra])


def score_peer(
    series: list, subset: list[int], points: list[list[int]], truth, tally: Tally
) -> None:
    """One peer's change points on ``subset`` scored like regbot's reports; quiet false
    positives scaled from the subset's quiet series to the fleet's."""
    event_of = truth.event_of()
    times = series[0].timestamps_s
    lo = int(np.searchsorted(times, truth.analysis_start_s))
    hi = int(np.searchsorted(times, truth.extended_start_s))
    reported: dict[str, list[int]] = {}
    for i, bkps in zip(subset, points):
        up = upward_points(oriented(series[i]), bkps, lo, hi)
        if up:
            reported[series[i].id] = up
    in_subset = Counter(decoy_type(event_of[series[i].id].kind) for i in subset)
    in_fleet = Counter(decoy_type(e.kind) for e in truth.events for _ in e.series_ids)
    tally.series += len(series)
    fp = Counter()
    for sid, found in reported.items():
        e = event_of[sid]
        true_index = int(np.searchsorted(times, e.change_time_s))
        if e.kind in ("step", "cascade"):
            if not any(abs(k - true_index) <= TOLERANCE_BUCKETS for k in found):
                fp["mistimed"] += 1
        elif e.kind != "creep":
            fp[decoy_type(e.kind)] += 1
    for kind, count in fp.items():
        tally.fp[kind] += count * in_fleet[kind] / max(in_subset[kind], 1)
    tally.unsampled |= {kind for kind in in_fleet if kind != "mistimed" and not in_subset[kind]}
    for e in truth.events:
        if e.kind not in ("step", "cascade"):
            continue
        true_index = int(np.searchsorted(times, e.change_time_s))
        m = multiple_of(e)
        tally.total[m] += 1
        tally.found[m] += any(
            abs(k - true_index) <= TOLERANCE_BUCKETS
            for sid in e.series_ids
            for k in reported.get(sid, [])
        )


def binseg_points(arrays: list[np.ndarray]) -> tuple[list[list[int]], float]:
    import ruptures as rpt

    t, out = time.perf_counter(), []
    for x in arrays:
        pen = 3 * math.log(len(x)) * max(noise_sigma(x), 1e-12) ** 2
        out.append(rpt.Binseg(model="l2", min_size=3, jump=1).fit(x).predict(pen=pen)[:-1])
    return out, (time.perf_counter() - t) / max(len(arrays), 1)


# -- the run and its table -------------------------------------------------------------------


def fleet_run(args: argparse.Namespace) -> None:
    """The default mode (module docstring)."""
    sim = fleet_sim()
    seeds = args.seeds or list(range(1, args.fleets + 1))
    spec = fleet_spec(sim, args.series or 3000, args.points)
    methods = ["regbot", *([] if args.no_kdd18 else ["regbot kdd18"]), *LIMITS]
    tallies: dict[str, Tally] = defaultdict(Tally)
    peers_note, otava_error = "", None
    try:
        import ruptures  # noqa: F401

        has_ruptures = True
    except ImportError:
        has_ruptures = False
        peers_note = f"ruptures is not installed; Binseg skipped ({INSTALL_HINT}). "
    started = time.perf_counter()
    for seed in seeds:
        t = time.perf_counter()
        series, truth = sim.simulate_realistic_fleet(spec, seed)
        simulated_s = time.perf_counter() - t
        with tempfile.TemporaryDirectory(prefix="regbot-fleet-") as folder:
            work = Path(folder)
            if args.keep is not None:
                work = args.keep / f"fleet-{seed}"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir(parents=True)
            csv_path = work / "series.csv"
            sim.write_fleet_csv(series, csv_path)
            report, seconds = run_detect(csv_path, work / "default", "")
            score_report(report, truth, len(series), tallies["regbot"])
            tallies["regbot"].seconds.append(seconds)
            line = f"fleet seed {seed}: simulated {simulated_s:.1f}s; regbot detect {seconds:.1f}s"
            if not args.no_kdd18:
                report, seconds = run_detect(csv_path, work / "kdd18", KDD18_CONFIG)
                score_report(report, truth, len(series), tallies["regbot kdd18"])
                tallies["regbot kdd18"].seconds.append(seconds)
                line += f", with kdd18 dedup {seconds:.1f}s"
        score_ml({s.id: s for s in series}, truth, tallies["ML placement"])
        score_ml({s.id: s for s in series}, truth, tallies["ML in window"], in_window=True)
        subset = peer_subset(series, truth, args.peer_series, seed)
        arrays = [oriented(series[i]) for i in subset]
        if has_ruptures:
            points, per_series = binseg_points(arrays)
            score_peer(series, subset, points, truth, tallies["ruptures Binseg l2"])
            tallies["ruptures Binseg l2"].seconds.append(per_series)
            line += f"; Binseg {per_series * len(arrays):.0f}s on {len(arrays)} series"
        if not args.no_otava and otava_error is None:
            from peers import OtavaUnavailable, run_otava_timed

            try:
                points, per, versions = run_otava_timed(arrays)
                name = f"otava {versions['otava']}"
                score_peer(series, subset, points, truth, tallies[name])
                tallies[name].seconds.append(float(np.mean(per)))
                line += f"; Otava {sum(per):.0f}s"
            except OtavaUnavailable as error:
                otava_error = str(error)
        print(line)
    if otava_error:
        peers_note += f"Otava skipped: {otava_error}. "
    elif args.no_otava:
        peers_note += "Otava skipped (--no-otava). "
    print_fleet_table(tallies, methods, seeds, spec, args, peers_note)
    print(f"\nwhole benchmark: {time.perf_counter() - started:.0f}s")


def print_fleet_table(tallies, methods, seeds, spec, args, peers_note: str) -> None:
    reg = tallies["regbot"]
    n = len(seeds)
    print(
        f"\n{n} fleets (seeds {', '.join(map(str, seeds))}) x {spec.n_series:,} series x "
        f"{spec.n_points:,} points; per fleet {spec.n_regressions} true regressions "
        f"(cascades {spec.cascade_share:.0%} of gCPU ones), {spec.n_creeps} creeps, "
        f"{spec.n_transients} transients, {spec.n_seasonal_peaks} seasonal peaks, "
        f"{spec.n_cost_shifts} cost shifts, {spec.n_improvements} improvements"
    )
    print(
        "regbot: `regbot detect series.csv -c regbot.yml -o out.json`, empty regbot.yml "
        "(kdd18 row: dedup: {method: kdd18})"
    )
    funnel = " -> ".join(f"{k} {v / n:,.0f}" for k, v in reg.funnel.items())
    print(f"funnel (mean per fleet): {funnel}")
    peers = [m for m in tallies if m not in methods]
    print(
        f"peers: every planted-event series + quiet ones up to {args.peer_series} per fleet; "
        f"{peers_note}"
    )
    header = f"\n{'recall within +-6 buckets':<34}" + "".join(f"{m:>7g}x" for m in MULTIPLES)
    print(header)
    print(f"{'target':<34}" + "".join(f"{RECALL_TARGETS[m]:>8.2f}" for m in MULTIPLES))
    for name in [*methods, *peers]:
        label = {
            "regbot": "regbot (default config)",
            "regbot kdd18": "regbot (dedup kdd18)",
            "ML placement": "ML placement, whole series",
            "ML in window": "ML placement in analysis window",
        }.get(name, name)
        t = tallies[name]
        print(
            f"{label:<34}"
            + "".join(f"{t.recall(m):>8.2f}" for m in MULTIPLES)
            + f"   (n = {sum(t.total.values())})"
        )
    print(
        f"\n{'false positives / 1,000 series':<34}{'all':>6}"
        + "".join(f"{DECOY_NAMES.get(d, d):>13}" for d in DECOYS)
    )
    print(f"{'target':<34}{0.5:>6.1f}")
    for name in [m for m in methods if m not in LIMITS] + peers:
        t = tallies[name]
        print(
            f"{name:<34}{t.fp_per_1000():>6.2f}"
            + "".join(f"{t.fp_per_1000(d):>13.2f}" for d in DECOYS)
        )
    for name in [m for m in methods if m not in LIMITS]:
        t = tallies[name]
        err = np.array([e for _, e in t.errors], dtype=float)
        big = [abs(e) <= TOLERANCE_BUCKETS for m, e in t.errors if m >= 4]
        ml_big = [
            np.mean([abs(e) <= TOLERANCE_BUCKETS for m, e in tallies[limit].errors if m >= 4])
            for limit in LIMITS
        ]
        print(f"\n{name}:")
        if len(err):
            print(
                f"  change time |error| (nearest report per true regression, {len(err)}): "
                f"median {np.median(np.abs(err)):.1f} buckets, p90 "
                f"{np.quantile(np.abs(err), 0.9):.1f}; within +-6 at >= 4x "
                f"{np.mean(big):.1%} (target >= 97%; ML placement {ml_big[0]:.1%}, "
                f"in window {ml_big[1]:.1%}); "
                f"mean signed error {err.mean():+.1f}"
            )
        cover = (
            f"{np.mean(t.covered):.1%} of {len(t.covered)} (target >= 90%)"
            if t.covered
            else "n/a (the report has no change_time_interval)"
        )
        print(f"  change-time interval coverage: {cover}")
        detectors = ", ".join(f"{d} {c}" for d, c in t.creeps.most_common()) or "none"
        print(f"  creeps reported: {sum(t.creeps.values())}/{t.n_creeps} ({detectors})")
        found = sum(t.found.values())
        print(
            f"  duplicates per true group: {t.extra / max(found, 1):.1%} "
            f"({t.extra} extra representatives for {found} found; target <= 2%)"
        )
        purity = t.merged_same / t.merged if t.merged else float("nan")
        print(
            f"  group purity: {purity:.1%} of {t.merged} merged members from the "
            f"representative's true group (target >= 98%)"
        )
        print(
            f"  quiet false positives on bimodal/heavy-tailed series: {t.quiet_non_normal} "
            f"of {t.fp['quiet']}"
        )
        f = t.filters
        print(
            f"  filters: true steps >= 1.5x removed by went_away/seasonality/cost_shift "
            f"{f['steps removed']}/{f['steps']} (target <= 2%); transients reported "
            f"{f['transient reported']}/{f['transient']}, seasonal peaks reported "
            f"{f['seasonal_peak reported']}/{f['seasonal_peak']} (target <= 1%)"
        )
        missed = ", ".join(f"{why} {c}" for why, c in t.missed.most_common()) or "none"
        print(f"  true regressions >= 1.5x missed: {missed}")
        print(
            f"  seconds per fleet: {np.mean(t.seconds):.1f} "
            f"({', '.join(f'{s:.1f}' for s in t.seconds)})"
        )
    for name in peers:
        print(f"{name}: {np.mean(tallies[name].seconds):.3f} s per series")


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", action="store_true", help="the 100,000-series speed run")
    parser.add_argument(
        "--series",
        type=int,
        default=None,
        help="series per fleet (default 3,000; --scale: 100,000)",
    )
    parser.add_argument("--points", type=int, default=1500)
    parser.add_argument("--fleets", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--seed", type=int, default=1, help="--scale only")
    parser.add_argument(
        "--peer-series",
        type=int,
        default=None,
        help="series per fleet the peers run on (default 400; --scale: 300)",
    )
    parser.add_argument("--no-otava", action="store_true")
    parser.add_argument("--no-kdd18", action="store_true")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep each fleet's series.csv, regbot.yml and out.json under this folder",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.scale:
        args.series = args.series or 100_000
        args.peer_series = args.peer_series or 300
        scale_run(args)
    else:
        args.peer_series = args.peer_series or 400
        fleet_run(args)


if __name__ == "__main__":
    main()
