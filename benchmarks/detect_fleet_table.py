"""The detection benchmark's fleet-mode table: the fleets, regbot's funnel, recall per MDE
multiple, false positives per 1,000 series by decoy, and per regbot variant the change-time
error and interval coverage, creeps, duplicates, group purity, filters, misses and seconds."""

from __future__ import annotations

import numpy as np
from detect_fleet_tally import (
    DECOY_NAMES,
    DECOYS,
    LIMITS,
    MULTIPLES,
    RECALL_TARGETS,
    TOLERANCE_BUCKETS,
)


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
