"""Dedup benchmark: 10,000 candidate regressions through same-regression merge, SOMDedup, cost
shift and PairwiseDedup, then the same window again against the groups the first pass made.

Candidates come from cascades built directly (no detection): each of ``--changes`` planted
regressions is a hot leaf subroutine called from many call sites (fan-in); every caller's inclusive
gCPU is its own cost plus its share of the leaf, so the leaf's step echoes into all of them; the
service's throughput drops with it (with every wiggle of the leaf's gCPU: its noise is the
evidence that one cause moved both). A realistic window has few root changes and many echoes
(FBDetect: SOMDedup "often reducing regressions by two orders of magnitude"). Prints the funnel,
seconds per stage and the purity of the groups against the planted cascades.

A second scenario has no stacks (a series file): a fleet of ``--series`` gCPU series of
``--points`` ten-minute buckets, every bucket one multinomial draw of stack samples over a call
tree, under a fleet-wide load term that scales every stack's probability (1 + g·L_t). One deploy
at one bucket ships ``--independent`` unrelated regressions (3-10× MDE) and ``--cascades``
leaves whose callers (depth 4) rise by the same absolute gCPU, their samples holding the leaf's.
The candidates are the planted changed series (no detection). Prints the reports, cascades
whole, independent steps merged with another change, group purity, duplicates per true group
and seconds (the evidence step alone: load factor, residual noise and pair tests).

    python benchmarks/dedup.py [--candidates 10000] [--changes 50] [--seed 1]
                               [--series 3000] [--points 1500] [--independent 75] [--cascades 10]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from regbot.detection.dedup import DedupSettings, deduplicate
from regbot.detection.dedup import flow as dedup_module
from regbot.detection.dedup_context import DedupContext, StackShare
from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds

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
        # throughput falls with the CPU the leaf takes, every wiggle of it included
        qps = 1000.0 * (1 - 3 * (leaf_values - leaf_share)) + rng.normal(0, 0.02, POINTS)
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


def build_fleet(seed: int, n_series: int, points: int, independent: int, cascades: int):
    """The no-stacks scenario (module docstring): candidates, context (every series, no
    stacks) and each candidate's planted change."""
    rng = np.random.default_rng(seed)
    samples, at, depth = 2_000_000, points - 40, 4
    times = START + BUCKET_S * np.arange(points)
    bounds = WindowBounds(
        START,
        float(times[points - 60]),
        float(times[points - 36]),
        float(times[-1]),
    )
    stacks: list[tuple[str, ...]] = []
    base: list[float] = []
    lift: list[float] = []
    owner_of: list[str] = []
    sd_post = 2.0 / np.sqrt(points - at)  # one MDE in noise sds (App. A.2, t ≈ 2)
    for k in range(independent):
        share = float(np.exp(rng.uniform(np.log(2e-4), np.log(4e-3))))
        stacks.append(("main", f"Svc{k}.handle", f"Mod{k}.work"))
        base.append(share)
        lift.append(rng.uniform(3.0, 10.0) * sd_post * np.sqrt(share / samples) / share)
        owner_of.append(f"Mod{k}.work")
    for c in range(cascades):
        chain = tuple(f"Chain{c}.f{d}" for d in range(depth))
        leaf_share = float(rng.uniform(1e-3, 4e-3))
        for d in range(1, depth + 1):
            stacks.append(("main", *chain[:d]))
            base.append(leaf_share if d == depth else float(rng.uniform(0.5, 3.0)) * leaf_share)
            lift.append(rng.uniform(0.06, 0.15) if d == depth else 0.0)
            owner_of.append(chain[-1])
    flat = n_series - independent * 2 - cascades * depth
    for k in range(max(flat, 0)):
        stacks.append(("main", f"Flat{k}.run"))
        base.append(float(np.exp(rng.uniform(np.log(2e-5), np.log(2e-3)))))
        lift.append(0.0)
        owner_of.append("")
    base_a, lift_a = np.array(base), np.array(lift)
    base_a *= min(1.0, 0.8 / base_a.sum())
    load = 0.03 * rng.normal(size=points) + 0.05 * np.sin(2 * np.pi * np.arange(points) / 144)
    gain = rng.uniform(0.5, 1.5, base_a.size)
    step = (np.arange(points) >= at)[:, None]
    probs = base_a[None, :] * (1.0 + gain[None, :] * load[:, None]) * (1.0 + step * lift_a)
    probs = np.column_stack([probs, np.clip(1.0 - probs.sum(axis=1), 0.0, None)])
    probs /= probs.sum(axis=1, keepdims=True)
    counts = rng.multinomial(samples, probs)[:, :-1] / samples
    frames = sorted({f for s in stacks for f in s if f != "main"})
    index = {f: i for i, f in enumerate(frames)}
    rows, cols = [], []
    for j, s in enumerate(stacks):
        for f in s[1:]:
            rows.append(index[f])
            cols.append(j)
    from scipy import sparse

    holds = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(frames), len(stacks)))
    gcpu = np.asarray(holds @ counts.T)  # (frames, points): inclusive gCPU
    series = {f"gcpu:{f}": (times, gcpu[i]) for i, f in enumerate(frames)}
    owner: dict[str, str] = {}
    for s, who, up in zip(stacks, owner_of, lift_a):
        if up > 0:
            for f in s[1:]:
                if not f.startswith("Svc"):
                    owner[f"gcpu:{f}"] = who
    candidates = [
        candidate(sid, "gcpu", times, series[sid][1], at + int(rng.integers(-1, 2)), bounds)
        for sid in sorted(owner)
    ]
    return candidates, DedupContext(series=series), owner


def run_fleet(args: argparse.Namespace) -> None:
    from regbot.detection.dedup import som_dedup as som_module

    started = time.perf_counter()
    candidates, context, owner = build_fleet(
        args.seed, args.series, args.points, args.independent, args.cascades
    )
    built = time.perf_counter() - started
    print(
        f"\nno stacks: {len(context.series):,} series x {args.points:,} points "
        f"(built in {built:.1f} s), {len(candidates)} candidates: {args.independent} independent "
        f"steps and {args.cascades} cascades (leaf + 3 callers) at one deploy, a load term"
    )
    evidence_s = 0.0
    if hasattr(som_module, "run_load"):
        from regbot.detection.dedup.shared_cause import noise_of, pair_stats

        started = time.perf_counter()
        load = som_module.run_load(candidates, context, 20)
        noise = noise_of(
            [c.times_s for c in candidates],
            [c.values for c in candidates],
            [c.change_time_s for c in candidates],
            load,
            3,
        )
        pair_stats(noise, range(len(candidates)), range(len(candidates)))
        evidence_s = time.perf_counter() - started
    seconds = timed_stages()
    seconds.clear()
    started = time.perf_counter()
    result = deduplicate(candidates, context, [], [], DedupSettings())
    total = time.perf_counter() - started
    group_of = dict(result.group_of)
    for representative, members in result.duplicates.items():
        for rid in members:
            group_of.setdefault(rid, group_of.get(representative, representative))
    series_of = {c.regression_id: c.series_id for c in result.representatives + result.removed}
    members: dict[str, set[str]] = defaultdict(set)
    for rid, gid in group_of.items():
        members[gid].add(series_of[rid])
    changes = sorted(set(owner.values()))
    pure = sum(len({owner[s] for s in m}) == 1 for m in members.values())
    groups_per_change = {
        ch: sum(any(owner[s] == ch for s in m) for m in members.values()) for ch in changes
    }
    duplicates = sum(n - 1 for n in groups_per_change.values()) / len(changes)
    whole = sum(
        1
        for ch in changes
        if ch.startswith("Chain")
        and any({owner[s] for s in m} == {ch} and len(m) == 4 for m in members.values())
    )
    merged_wrong = sum(
        1
        for ch in changes
        if not ch.startswith("Chain")
        and any(len({owner[s] for s in m}) > 1 and f"gcpu:{ch}" in m for m in members.values())
    )
    print(f"reports: {len(result.representatives)} for {len(changes)} planted changes")
    print(f"{'funnel':<38} " + " -> ".join(f"{k.funnel_key} {v}" for k, v in result.funnel.items()))
    print(f"{'cascades whole (4 of 4 in one group)':<38} {whole} of {args.cascades}")
    print(f"{'independent steps merged with another':<38} {merged_wrong} of {args.independent}")
    print(f"{'group purity':<38} {pure / max(1, len(members)):.1%}")
    print(f"{'duplicates per true group':<38} {duplicates:.1%}")
    print(f"{'evidence step s (load, noise, pairs)':<38} {evidence_s:.2f}")
    print(f"{'dedup total s':<38} {total:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--series", type=int, default=3000)
    parser.add_argument("--points", type=int, default=1500)
    parser.add_argument("--independent", type=int, default=75)
    parser.add_argument("--cascades", type=int, default=10)
    parser.add_argument("--only", choices=("stacks", "fleet"), default=None)
    args = parser.parse_args()
    if args.only != "stacks":
        run_fleet(args)
    if args.only == "fleet":
        return
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
            [f"candidates {len(candidates):,}"]
            + [f"{k.funnel_key} {v:,}" for k, v in first.funnel.items()]
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
