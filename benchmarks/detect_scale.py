"""The detection benchmark's ``--scale`` mode: regbot's short-term path on a 100,000-series
simulated fleet (time, peak memory, funnel, recall per planted event), then the peers on the
first ``--peer-series`` series of the same fleet: precision, recall, F1, false-positive rate and
seconds per 1,000 series."""

from __future__ import annotations

import argparse

import numpy as np
from detect_peers import peer_rows
from detect_scale_regbot import run_regbot, scenario


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
