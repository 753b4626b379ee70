"""Detection benchmark: speed, memory and quality of the short-term path on a simulated fleet,
beside peers on the same series in the same run.

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

    python benchmarks/detect.py [--series 100000] [--points 1500] [--peer-series 300] [--no-otava]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
INSTALL_HINT = "pip install -e '.[bench]'"

REGBOT_RUN = """
import json, resource, sys, time
from collections import Counter
import numpy as np
from regbot.detection.simulate import FleetScenario, simulate_fleet
from regbot.detection.model import DetectionSettings, LongTermSettings, SeriesBatch
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
    from regbot.detection.simulate import FleetScenario

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


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=100_000)
    parser.add_argument("--points", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--peer-series", type=int, default=300)
    parser.add_argument("--no-otava", action="store_true")
    args = parser.parse_args()

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
    from regbot.detection.simulate import simulate_fleet

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


if __name__ == "__main__":
    main()
