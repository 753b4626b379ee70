"""A seeded generator of profiled services with planted regression cascades, for tests and
benchmarks of deduplication (like ``simulate``, it returns data and its truth from a seed).

A service is a random call tree (depth ``depth``; every node a subroutine ``f<k> (mod<m>.py)``);
each leaf-to-root path is a stack with a base sampling weight. Per time bucket, ``samples`` stack
samples are drawn (one multinomial over the stacks) and kept as sample-store records, so gCPU
series come out of the real store (``SampleIndex`` → ``build_gcpu``). A planted change raises one
subroutine's stacks by ``lift`` from its change time on: its inclusive gCPU rises, and so does
every caller's (the cascade), and the service's throughput series (``qps:<service>``) drops in
proportion. The changed subroutine is a leaf of the tree (the regression is its own cost); a tree
``depth`` levels deep gives it ``depth - 1`` callers. Several changes in one window use disjoint
subtrees and different change times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regbot.detection.dedup_context import StackShare
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.model import Series
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.stacks import StackTable
from regbot.profiles.store import aggregate_records, bucket_start


@dataclass(frozen=True, slots=True)
class PlantedChange:
    """One planted regression: its subroutine, change time and the subroutines on its path
    from the root (the callers whose inclusive gCPU echoes it)."""

    subroutine: str
    change_time_s: float
    callers: tuple[str, ...]
    lift: float


@dataclass(frozen=True, slots=True)
class CascadeService:
    index: SampleIndex
    series: list[Series]
    changes: list[PlantedChange]
    bucket_s: float
    start_s: float
    points: int


def simulate_cascades(
    seed: int,
    *,
    changes: int = 2,
    points: int = 600,
    bucket_s: float = 600.0,
    change_points: tuple[int, ...] = (560, 575),
    branching: int = 4,
    depth: int = 5,
    samples: int = 200_000,
    lift: float = 0.6,
    start_s: float = 1_700_000_000.0,
) -> CascadeService:
    """A service with ``changes`` planted regressions at ``change_points`` (bucket indices)."""
    rng = np.random.default_rng(seed)
    leaf_paths = _call_tree(rng, branching, depth)
    # every function has cost of its own: a stack ending at each interior node too
    interior = {tuple(path[:k]) for path in leaf_paths for k in range(2, len(path))}
    paths = leaf_paths + [list(p) for p in sorted(interior)]
    is_leaf = np.array([i < len(leaf_paths) for i in range(len(paths))])
    table = StackTable()
    stack_ids = np.array([table.intern_stack(path) for path in paths], dtype=np.int64)
    base = rng.lognormal(0.0, 1.0, len(paths))
    base /= base.sum()
    # changes in disjoint subtrees (distinct children of the root), below the root's child
    root_children = list(dict.fromkeys(path[1] for path in paths))
    subtrees = rng.permutation(len(root_children))[:changes]
    planted: list[PlantedChange] = []
    weight = np.tile(base, (points, 1))
    for n, subtree in enumerate(subtrees):
        inside = [i for i, p in enumerate(paths) if is_leaf[i] and p[1] == root_children[subtree]]
        hot = base[inside] / base[inside].sum()  # regressions that matter are in hot code
        target_path = paths[inside[int(rng.choice(len(inside), p=hot))]]
        level = len(target_path) - 1  # a leaf: its own cost, echoed by every caller above it
        target = target_path[level]
        carrying = [i for i, p in enumerate(paths) if target in p]
        at = change_points[n % len(change_points)]
        weight[at:, carrying] *= 1 + lift
        planted.append(
            PlantedChange(target, start_s + at * bucket_s, tuple(target_path[:level]), lift)
        )
    weight /= weight.sum(axis=1, keepdims=True)
    counts = np.vstack([rng.multinomial(samples, w) for w in weight])
    times = start_s + bucket_s * np.arange(points)
    rows, cols = np.nonzero(counts)
    records = aggregate_records(
        bucket_start(times[rows], int(bucket_s)),
        stack_ids[cols],
        counts[rows, cols].astype(np.float64),
    )
    index = SampleIndex(table, records)
    series = build_gcpu(index, floor=0.0005).series()
    # throughput falls as the planted code takes more CPU (capacity fixed): the extra CPU is the
    # planted code's *sampled* share above its base, so the throughput carries the leaf's own
    # sampling noise (the evidence of one cause dedup needs without stacks)
    extra = np.zeros(points)
    for change in planted:
        carrying = [i for i, p in enumerate(paths) if change.subroutine in p]
        extra += counts[:, carrying].sum(axis=1) / samples - base[carrying].sum()
    qps = 1000.0 / (1.0 + extra) + rng.normal(0.0, 0.2, points)  # a fleet-wide average: smooth
    series.append(Series("qps:service", "throughput", times, qps))
    return CascadeService(index, series, planted, bucket_s, start_s, points)


def _call_tree(rng: np.random.Generator, branching: int, depth: int) -> list[list[str]]:
    """Root-first paths of a random tree; node names are unique subroutines."""
    counter = [0]

    def name() -> str:
        counter[0] += 1
        return f"f{counter[0]} (mod{counter[0] % 7}.py)"

    paths: list[list[str]] = []

    def grow(path: list[str], level: int) -> None:
        if level == depth:
            paths.append(path)
            return
        if level == 1:
            children = branching
        elif level <= 3:
            children = int(rng.integers(1, branching + 1))
        else:  # deep levels: mostly chains, so a tree 20 levels deep stays a few dozen stacks
            children = 1 if rng.random() < 0.8 else 2
        for _ in range(children):
            grow([*path, name()], level + 1)

    grow(["main (app.py)"], 1)
    return paths


def tree_stack_shares(
    edges: dict[str, tuple[str, ...]], self_samples: dict[str, float], root: str = "main"
) -> tuple[dict[str, StackShare], dict[str, frozenset[str]]]:
    """The stack shares of a small call tree given as ``parent -> children`` edges: one stack
    per root-to-node path, weighted by the node's own samples (a node without any has no stack
    of its own); a subroutine's share holds every stack containing it, so a leaf's stacks are
    also its callers'. Also each subroutine's callers (every node above it)."""
    paths: list[tuple[tuple[str, ...], float]] = []
    callers: dict[str, frozenset[str]] = {}

    def walk(node: str, path: tuple[str, ...]) -> None:
        callers[node] = frozenset(path)
        path = (*path, node)
        if self_samples.get(node, 0.0) > 0:
            paths.append((path, self_samples[node]))
        for child in edges.get(node, ()):
            walk(child, path)

    walk(root, ())
    shares: dict[str, list[tuple[int, float]]] = {}
    for stack_id, (path, weight) in enumerate(paths):
        for frame in dict.fromkeys(path):
            shares.setdefault(frame, []).append((stack_id, weight))
    stacks = {
        frame: StackShare(np.array([i for i, _ in v]), np.array([w for _, w in v]))
        for frame, v in shares.items()
    }
    return stacks, callers
