"""Dedup benchmark: 10,000 candidate regressions through same-regression merge, SOMDedup, cost
shift and PairwiseDedup, then the same window again against the groups the first pass made.

Candidates come from cascades built directly (no detection): each of ``--changes`` planted
regressions is a hot leaf subroutine called from many call sites (fan-in); every caller's inclusive
gCPU is its own cost plus its share of the leaf, so the leaf's step echoes into all of them; the
service's throughput drops with it. A realistic window has few root changes and many echoes
(FBDetect: SOMDedup "often reducing regressions by two orders of magnitude"). Prints the funnel,
seconds per stage and the purity of the groups against the planted cascades.

    python benchmarks/dedup.py [--candidates 10000] [--changes 50] [--seed 1]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from regbot.detection import dedup as dedup_module
from regbot.detection.dedup import DedupSettings, deduplicate
from regbot.detection.model import Candidate, DedupContext, StackShare, WindowBounds

POINTS, BUCKET_S, START = 600, 600.0, 1_700_000_000.0


def build(n_candidates: int, changes: int, seed: int):
    """``changes`` planted regressions, each a leaf called from many call sites (fan-in): the
    leaf's step echoes into every caller's inclusive gCPU, and the service's throughput drops."""
    rng = np.random.default_rng(seed)
    times = START + BUCKET_S * np.arange(POINTS)
    bounds = WindowBounds(
        START, START + 552 * BUCKET_S, START + 588 * BUCKET_S, START + 599 * BUCKET_S
    )
    callers = n_candidates // changes - 2  # leaf, callers, throughput
    candidates: list[Candidate] = []
    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    popularity: dict[str, float] = {}
    caller_map: dict[str, frozenset[str]] = {}
    stacks: dict[str, StackShare] = {}
    owner: dict[str, int] = {}
    for s in range(changes):
        at = int(rng.integers(555, 585))
        leaf_share, step = rng.uniform(0.002, 0.02), rng.uniform(0.3, 1.0)
        split = rng.dirichlet(np.ones(callers))  # the leaf's samples under each call site
        leaf = f"svc{s}.hot_leaf (svc{s}/core.py)"
        caller_names = [f"svc{s}.site{k} (svc{s}/site{k % 17}.py)" for k in range(callers)]
        rise = np.where(np.arange(POINTS) >= at, step, 0.0)
        leaf_values = leaf_share * (1 + rise) + rng.normal(0, 0.01 * leaf_share, POINTS)
        first_stack = s * 2 * callers
        under = first_stack + np.arange(callers)  # stack "site k -> leaf"
        own = first_stack + callers + np.arange(callers)  # stack "site k" (its own code)
        entries = [(leaf, leaf_values, under)]
        for k, name in enumerate(caller_names):
            own_share = rng.uniform(0.0005, 0.005)
            values = own_share + leaf_share * split[k] * (1 + rise)
            values = values + rng.normal(0, 0.01 * values.mean(), POINTS)
            entries.append((name, values, np.array([under[k], own[k]])))
        for name, values, stack_ids in entries:
            sid = f"gcpu:{name}"
            series[sid] = (times, values)
            popularity[name] = float(values.mean())
            caller_map[name] = frozenset(caller_names) if name == leaf else frozenset()
            weights = np.full(len(stack_ids), 10.0)
            stacks[name] = StackShare(np.sort(stack_ids), weights)
            candidates.append(candidate(sid, "gcpu", times, values, at, bounds))
            owner[sid] = s
        qps = 1000.0 * (1 - 3 * leaf_share * rise) + rng.normal(0, 0.2, POINTS)
        sid = f"qps:svc{s}"
        series[sid] = (times, -qps)
        candidates.append(candidate(sid, "throughput", times, -qps, at, bounds))
        owner[sid] = s
    context = DedupContext(series=series, popularity=popularity, callers=caller_map, stacks=stacks)
    return candidates, context, owner


def candidate(sid: str, kind: str, times, values, at: int, bounds: WindowBounds) -> Candidate:
    return Candidate(
        series_id=sid,
        kind=kind,
        times_s=times,
        values=values,
        sign=1.0,
        change_index=at,
        change_time_s=float(times[at]),
        mean_before=float(values[:at].mean()),
        mean_after=float(values[at:].mean()),
        llr=100.0,
        p_value=1e-20,
        windows=bounds,
    )


def timed_stages():
    """Wrap the dedup module's stages to time them."""
    seconds: dict[str, float] = defaultdict(float)
    for name in ("merge_same_regressions", "som_dedup", "cost_shift_verdicts", "pairwise_dedup"):
        original = getattr(dedup_module, name)

        def wrapper(*args, _original=original, _name=name, **kwargs):
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                seconds[_name] += time.perf_counter() - started

        setattr(dedup_module, name, wrapper)
    return seconds


def purity(result, owner) -> float:
    members: dict[str, set[int]] = defaultdict(set)
    series_of = {c.regression_id: c.series_id for c in result.representatives + result.removed}
    for rid, gid in result.group_of.items():
        if rid in series_of:
            members[gid].add(owner[series_of[rid]])
    return sum(len(m) == 1 for m in members.values()) / max(1, len(members))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    candidates, context, owner = build(args.candidates, args.changes, args.seed)
    services = len(set(owner.values()))
    print(
        f"{len(candidates):,} candidates from {services:,} planted cascades "
        "(a leaf called from many sites, its callers, and throughput)"
    )
    seconds = timed_stages()
    settings = DedupSettings()
    started = time.perf_counter()
    first = deduplicate(candidates, context, [], [], settings)
    total_first = time.perf_counter() - started
    stage_first = dict(seconds)
    seconds.clear()
    known = [
        dedup_module.KnownRegression(c.regression_id, c.series_id, c.change_time_s)
        for c in first.representatives + first.removed
    ]
    started = time.perf_counter()
    second = deduplicate(candidates, context, known, first.groups, settings)
    total_second = time.perf_counter() - started
    print(
        "\nfunnel (first pass):",
        " -> ".join(
            [f"candidates {len(candidates):,}"] + [f"{k} {v:,}" for k, v in first.funnel.items()]
        ),
    )
    print(
        f"representatives: {len(first.representatives):,} for {services:,} planted changes; "
        f"group purity {purity(first, owner):.1%}"
    )
    print(f"\n{'stage':<26} {'first pass s':>12} {'same window again s':>20}")
    for name in ("merge_same_regressions", "som_dedup", "cost_shift_verdicts", "pairwise_dedup"):
        print(f"{name:<26} {stage_first.get(name, 0):>12.2f} {seconds.get(name, 0):>20.2f}")
    print(
        f"{'total':<26} {total_first:>12.2f} {total_second:>20.2f}   (target: <= 60 s on 2 cores)"
    )
    same_ids = sorted(c.regression_id for c in second.representatives) == sorted(
        c.regression_id for c in first.representatives
    )
    new_groups = len(second.groups) - len(first.groups)
    print(f"\nsecond pass: {new_groups} new groups; ids unchanged: {same_ids}")


if __name__ == "__main__":
    main()
