"""SOMDedup (FBDetect §5.5.1): group regressions one change caused; each group keeps its most
important one.

**Partitions.** The paper runs SOMDedup on "metrics of the same type within the same analysis
window", so candidates are split by ``kind`` (a gCPU delta and a throughput delta are not
comparable in the ImportanceScore) and each kind gets its own map, with ``n`` its candidates.

**Features** (``som_features``), one row per candidate, in blocks on fixed scales that do not
depend on the batch. Z-scoring over the batch would not do: a root-cause bit set on one leaf of
21 candidates becomes a 4.5-unit column and tears the leaf away from its callers.

* *shape*: the ``fourier_terms`` first non-DC rFFT magnitudes of the candidate's values over its
  *segment*. The segment is the analysis and extended windows plus as much history before them
  as the analysis window is long, so a change at the analysis start still shows its step. It is
  linearly resampled to ``SEGMENT_POINTS`` (M) points, centred and divided by its std.
  Parseval bounds the one-sided non-DC magnitudes of that unit-variance signal by M/√2, so
  dividing by M/√2 puts the block's norm in [0, 1]. Level, scale and the callers' higher base
  level drop out; where the step is, and whether it is a ramp or a spike, stay in.
  Magnitudes cannot tell a step at a third of the segment from one at two thirds (mirror
  images), which is one reason for the position block.
* *variance*: log(var after / var before), clipped to ±3 and divided by 3. Each side is every
  point of the candidate on that side of the change except the ``GUARD_POINTS`` nearest it,
  so a change point one point off does not turn the step into variance. A pure level shift
  scores 0 whatever the noise or the base level; a change that adds variability scores more.
  A variance normalised by the level would split a cascade, because the callers sit on higher
  levels.
* *position*: the change time relative to the analysis window, clipped to [0, 1].
* *root causes*: one bit per commit of ``context.commit_subroutines`` that modifies the
  candidate's subroutine, divided by √(bits set), so it is a unit vector when any bit is set.
  No commits means no columns.
* *metric ID*: TF-IDF of the series id over character 2- and 3-grams (rows of unit norm),
  projected on at most ``METRIC_COMPONENTS`` TruncatedSVD components (seeded). Norms stay in
  [0, 1] and the map stays cheap.

Each block is multiplied by its ``BLOCK_WEIGHTS`` entry. A cascade (a leaf regression echoed
into every caller's inclusive gCPU) is one change, at one time and with one shape, across
*different* code. Shape and position are the evidence for it. Position weighs 3, so one point
of a 24-point analysis window is 0.125 and a change 4 points away is 0.5. Metric ID and
root-cause bits differ between a leaf and its callers by construction, so they only break
near-ties (0.2; leaf and callers then differ by about 0.33).

**SOM** (``train_som``): a batch SOM on an L×L grid, L = ⌈n^¼⌉, written here instead of taken
from a library. Each epoch assigns every item to its best-matching unit at once (one matrix
product gives the squared distances) and sets each unit to the neighbourhood-weighted mean of
the items (one (L², L²) × (L², d) product on the per-unit sums). The training is vectorised
with no per-item Python loop, deterministic, and O(n · L² · d) per epoch. MiniSom's online
training loops over the samples in Python and depends on their order. The neighbourhood is
Gaussian; its radius falls linearly from L/2 to 0.5 over the epochs. Units start on the plane
of the first two principal components (±1 std along each), or on seeded random items when the
features have no variance.

**Cells.** A SOM always uses all of its L² units, so it splits a lone tight group: in 60
seeded trials, a lone cascade of 2 to 21 candidates (a 2×2 or 3×3 map) was never in a single
unit. Units are therefore merged, but only *tight* ones: a unit is tight when all its items
are within ``MERGE_DISTANCE`` (0.5) of its centroid. Tight units whose centroids are within
0.5 of each other, by complete linkage, form one cell, so no chains form. This costs
O(n · d + L⁴ · d) = O(n · d). A unit that holds a spread of items is left as the map made it.
The resolution this sets: with position weighing 3, changes of one shape less than about a
sixth of the analysis window apart (4 points of 24) can share a cell. 10,000 candidates from
479 cascades at 22 change hours and 3 shapes went from 98 units to 12 cells. A verdict reports
the representative's unit as ``cell``; the representative's verdict also lists the merged
``units``.

**ImportanceScore** (within a cell): w1·relative + w2·absolute + w3·(1 − popularity) +
w4·root-cause-found. Each term is in [0, 1], so that the weights (0.2/0.6/0.1/0.1) mean what
they say:

* relative: delta / |mean before|, capped at ``RELATIVE_CAP`` (the cap when the level before
  is 0, which is a new cost), divided by the cell's largest;
* absolute: delta divided by the cell's largest |delta|;
* popularity: ``context.popularity`` of the subroutine, 0 for non-gCPU series and unknown
  subroutines (the paper prefers less widely invoked subroutines);
* root cause found: any bit set.

The representative is the argmax. Ties go to the lower popularity, then the smaller series
id, then input order.

Complexity: features are O(n · (points + M log M)) and the SOM is O(epochs · n · √n · d).
On one thread, 10,000 candidates take about 2 s, or 3.5 s with 479 commit columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from regbot.detection.model import (
    Candidate,
    DedupContext,
    SomSettings,
    Verdict,
    subroutine_of_series,
)
from regbot.errors import InputError

__all__ = [
    "BLOCK_WEIGHTS",
    "MERGE_DISTANCE",
    "grid_side",
    "importance_scores",
    "root_cause_bitmap",
    "series_popularity",
    "som_dedup",
    "som_features",
    "train_som",
]

STAGE = "som_dedup"
SEGMENT_POINTS = 64
VARIANCE_CLIP = 3.0
GUARD_POINTS = 2
METRIC_COMPONENTS = 16
RELATIVE_CAP = 10.0
BLOCK_WEIGHTS = {"shape": 1.0, "variance": 0.5, "position": 3.0, "root_cause": 0.2, "metric": 0.2}
MERGE_DISTANCE = 0.5
FINAL_RADIUS = 0.5
BMU_CHUNK = 8192


def grid_side(n: int) -> int:
    """L = ⌈n^¼⌉ (at least 1), exact for perfect fourth powers."""
    side = max(1, math.ceil(n**0.25))
    while side > 1 and (side - 1) ** 4 >= n:
        side -= 1
    return side


# --- the map --------------------------------------------------------------------------------


def train_som(
    features: np.ndarray, side: int, epochs: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Batch SOM on a ``side``×``side`` grid over ``features`` (n, d).

    Returns ``weights`` (side², d), unit ``k`` at row ``k // side``, column ``k % side``, and
    ``bmu_per_item`` (n,) int64, each item's best-matching unit after the last epoch (ties: the
    lower unit). ``seed`` only matters when the features have no variance (random items start
    the units; they are all alike then). O(epochs · n · side² · d).
    """
    x = np.asarray(features, dtype=np.float64)
    n, d = x.shape
    units = side * side
    rows, cols = np.divmod(np.arange(units), side)
    grid_d2 = (rows[:, None] - rows[None, :]) ** 2 + (cols[:, None] - cols[None, :]) ** 2
    weights = _initial_weights(x, side, seed)
    x_sq = np.einsum("ij,ij->i", x, x)
    for radius in np.linspace(side / 2.0, FINAL_RADIUS, max(epochs, 1)):
        bmu = _best_units(x, x_sq, weights)
        sums = np.zeros((units, d))
        np.add.at(sums, bmu, x)
        counts = np.bincount(bmu, minlength=units).astype(np.float64)
        h = np.exp(-grid_d2 / (2.0 * radius * radius))
        mass = h @ counts
        moved = mass > 0
        weights[moved] = (h @ sums)[moved] / mass[moved, None]
    return weights, _best_units(x, x_sq, weights)


def _best_units(x: np.ndarray, x_sq: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each item's nearest unit, ``BMU_CHUNK`` items at a time (an (n, units) distance matrix
    for 100,000 candidates would be a quarter of a gigabyte)."""
    w_sq = np.einsum("ij,ij->i", weights, weights)
    bmu = np.empty(x.shape[0], dtype=np.int64)
    for first in range(0, x.shape[0], BMU_CHUNK):
        rows = slice(first, first + BMU_CHUNK)
        d2 = x_sq[rows, None] - 2.0 * (x[rows] @ weights.T) + w_sq[None, :]
        bmu[rows] = np.argmin(d2, axis=1)
    return bmu


def _initial_weights(x: np.ndarray, side: int, seed: int) -> np.ndarray:
    """Units on the plane of the first two principal components, ±1 std along each; a
    direction without variance leaves its coordinate at the mean."""
    n, d = x.shape
    mean = x.mean(axis=0)
    centred = x - mean
    if n < 2 or not np.any(centred):
        picks = np.random.default_rng(seed).integers(0, n, size=side * side)
        return x[picks].copy()
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    spread = singular / math.sqrt(n)
    axes = np.zeros((2, d))
    for k in range(min(2, vt.shape[0])):
        direction = vt[k] * np.sign(vt[k][np.argmax(np.abs(vt[k]))])  # sign-stable
        axes[k] = direction * spread[k]
    steps = np.linspace(-1.0, 1.0, side) if side > 1 else np.zeros(1)
    rows, cols = np.divmod(np.arange(side * side), side)
    return mean + steps[cols][:, None] * axes[0] + steps[rows][:, None] * axes[1]


def _merged_cells(features: np.ndarray, bmu: np.ndarray, threshold: float) -> np.ndarray:
    """Per item, its cell: the lowest unit of its group of merged units.

    Only *tight* units merge — every item within ``threshold`` of the unit's centroid — and
    tight units merge when their centroids are within ``threshold`` of each other by complete
    linkage. A lone tight group the map split over several units is one cell again, while a
    unit that holds a spread of items (the √n units of a large run) keeps the map's resolution.
    O(n · d + units² · d)."""
    occupied, inverse = np.unique(bmu, return_inverse=True)
    sums = np.zeros((occupied.size, features.shape[1]))
    np.add.at(sums, inverse, features)
    centroids = sums / np.bincount(inverse)[:, None]
    radius = np.zeros(occupied.size)
    np.maximum.at(radius, inverse, np.linalg.norm(features - centroids[inverse], axis=1))
    label = occupied.copy()
    tight = np.flatnonzero(radius <= threshold)
    if tight.size > 1:
        clusters = fcluster(
            linkage(centroids[tight], method="complete"), threshold, criterion="distance"
        )
        for cluster in np.unique(clusters):
            together = tight[clusters == cluster]
            label[together] = occupied[together].min()
    return label[inverse]


# --- features -------------------------------------------------------------------------------


def som_features(
    candidates: Sequence[Candidate], context: DedupContext, fourier_terms: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(n, d) features: the blocks of the module docstring, each times its ``BLOCK_WEIGHTS``
    entry, in the order shape, variance, position, root causes, metric ID; and the (n, commits)
    root-cause bitmap as booleans. ``seed`` drives the metric ID's TruncatedSVD."""
    n = len(candidates)
    terms = max(fourier_terms, 0)
    points = max(SEGMENT_POINTS, 2 * terms + 2)
    shape = np.zeros((n, terms))
    variance = np.zeros((n, 1))
    position = np.zeros((n, 1))
    grid = np.linspace(0.0, 1.0, points)
    for i, c in enumerate(candidates):
        w = c.windows
        analysis_s = max(w.extended_start_s - w.analysis_start_s, 0.0)
        if analysis_s > 0:
            position[i, 0] = min(max((c.change_time_s - w.analysis_start_s) / analysis_s, 0), 1)
        variance[i, 0] = _variance_ratio(c.values, c.change_index)
        start_s, end_s = w.analysis_start_s - analysis_s, max(w.end_s, w.extended_start_s)
        keep = (c.times_s >= start_s) & (c.times_s <= end_s)
        if terms == 0 or np.count_nonzero(keep) < 2 or end_s <= start_s:
            continue
        segment = np.interp(start_s + grid * (end_s - start_s), c.times_s[keep], c.values[keep])
        segment -= segment.mean()
        std = segment.std()
        if std > 0:
            magnitudes = np.abs(np.fft.rfft(segment / std))[1 : terms + 1]
            shape[i] = magnitudes * (math.sqrt(2.0) / points)
    bitmap = root_cause_bitmap(candidates, context)
    used = bitmap[:, bitmap.any(axis=0)]  # a commit no candidate could blame adds nothing
    bits = used / np.sqrt(np.maximum(used.sum(axis=1, keepdims=True), 1))
    blocks = {
        "shape": shape,
        "variance": variance,
        "position": position,
        "root_cause": bits,
        "metric": _metric_block([c.series_id for c in candidates], seed),
    }
    return np.hstack([BLOCK_WEIGHTS[name] * block for name, block in blocks.items()]), bitmap


def _variance_ratio(values: np.ndarray, change_index: int) -> float:
    before = values[: max(change_index - GUARD_POINTS, 0)]
    after = values[change_index + GUARD_POINTS :]
    if before.size < 2 or after.size < 2:
        return 0.0
    var_before, var_after = float(before.var()), float(after.var())
    floor = 1e-12 * (var_before + var_after) + 1e-300
    ratio = math.log((var_after + floor) / (var_before + floor))
    return min(max(ratio, -VARIANCE_CLIP), VARIANCE_CLIP) / VARIANCE_CLIP


def root_cause_bitmap(candidates: Sequence[Candidate], context: DedupContext) -> np.ndarray:
    """(n, commits) bool: commit ``j`` (in ``context.commit_subroutines`` order) modifies the
    subroutine of candidate ``i``'s gCPU series. Non-gCPU series have no bits."""
    commits_of: dict[str, list[int]] = {}
    for j, modified in enumerate(context.commit_subroutines.values()):
        for subroutine in modified:
            commits_of.setdefault(subroutine, []).append(j)
    bitmap = np.zeros((len(candidates), len(context.commit_subroutines)), dtype=bool)
    for i, c in enumerate(candidates):
        subroutine = subroutine_of_series(c.series_id)
        if subroutine is not None:
            bitmap[i, commits_of.get(subroutine, [])] = True
    return bitmap


def _metric_block(series_ids: list[str], seed: int) -> np.ndarray:
    n = len(series_ids)
    if len(set(series_ids)) < 2:
        return np.zeros((n, 0))
    tfidf = TfidfVectorizer(analyzer="char", ngram_range=(2, 3)).fit_transform(series_ids)
    components = min(METRIC_COMPONENTS, n - 1, tfidf.shape[1] - 1)
    if components < 1:
        return np.zeros((n, 0))
    return TruncatedSVD(n_components=components, random_state=seed).fit_transform(tfidf)


# --- importance -----------------------------------------------------------------------------


def importance_scores(
    candidates: Sequence[Candidate],
    popularity: np.ndarray,
    root_cause_found: np.ndarray,
    weights: tuple[float, float, float, float],
) -> tuple[np.ndarray, np.ndarray]:
    """ImportanceScore of candidates compared with each other (one cell), given each one's
    popularity (n,) and whether a root cause was found (n,) bool: (n,) scores and the (n, 4)
    terms (relative change, absolute change, 1 − popularity, root cause found), each in
    [0, 1]; see the module docstring."""
    delta = np.array([c.delta for c in candidates], dtype=np.float64)
    before = np.abs(np.array([c.mean_before for c in candidates], dtype=np.float64))
    new_cost = np.where(delta > 0, RELATIVE_CAP, 0.0)
    relative = np.where(before > 0, delta / np.where(before > 0, before, 1.0), new_cost)
    relative = np.clip(relative, 0.0, RELATIVE_CAP)
    largest_delta = float(np.abs(delta).max(initial=0.0))
    terms = np.column_stack(
        [
            _over(relative, float(relative.max(initial=0.0))),
            _over(np.clip(delta, 0.0, None), largest_delta),
            1.0 - popularity,
            root_cause_found.astype(np.float64),
        ]
    )
    return terms @ np.asarray(weights, dtype=np.float64), terms


def _over(values: np.ndarray, scale: float) -> np.ndarray:
    return values / scale if scale > 0 else np.zeros_like(values)


def series_popularity(series_id: str, context: DedupContext) -> float:
    """``context.popularity`` of the series' subroutine, in [0, 1]; 0 for non-gCPU series and
    unknown subroutines."""
    subroutine = subroutine_of_series(series_id)
    if subroutine is None:
        return 0.0
    return min(max(float(context.popularity.get(subroutine, 0.0)), 0.0), 1.0)


# --- the stage ------------------------------------------------------------------------------


def som_dedup(
    candidates: list[Candidate], context: DedupContext, settings: SomSettings
) -> list[Candidate]:
    """Every candidate, in input order, with a ``som_dedup`` verdict: each cell's representative
    passes, the other members fail as its duplicates. One map per ``kind``."""
    _validate(settings)
    verdicts: dict[int, Verdict] = {}
    by_kind: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        by_kind.setdefault(c.kind, []).append(i)
    for indices in by_kind.values():
        found = _kind_verdicts([candidates[i] for i in indices], context, settings)
        verdicts.update(zip(indices, found))
    return [c.with_verdict(verdicts[i]) for i, c in enumerate(candidates)]


def _kind_verdicts(
    candidates: list[Candidate], context: DedupContext, settings: SomSettings
) -> list[Verdict]:
    side = grid_side(len(candidates))
    features, bitmap = som_features(candidates, context, settings.fourier_terms, settings.seed)
    _, bmu = train_som(features, side, settings.epochs, settings.seed)
    cells = split_by_stacks(candidates, _merged_cells(features, bmu, MERGE_DISTANCE), context)
    popularity = np.array([series_popularity(c.series_id, context) for c in candidates])
    found = bitmap.any(axis=1)
    verdicts: dict[int, Verdict] = {}
    for label in np.unique(cells):
        members = np.flatnonzero(cells == label).tolist()
        group = [candidates[i] for i in members]
        scores, terms = importance_scores(
            group, popularity[members], found[members], settings.weights
        )
        best = min(
            range(len(group)),
            key=lambda k: (-scores[k], popularity[members[k]], group[k].series_id, k),
        )
        representative = group[best]
        cell = _grid_position(int(bmu[members[best]]), side)
        for k, i in enumerate(members):
            if k == best:
                units = sorted({int(u) for u in bmu[members]})
                verdicts[i] = Verdict(
                    STAGE,
                    True,
                    f"representative of {len(group)} in cell {tuple(cell)}",
                    {
                        "cell": cell,
                        "units": [_grid_position(u, side) for u in units],
                        "side": side,
                        "importance": float(scores[k]),
                        "relative_change": float(terms[k, 0]),
                        "absolute_change": float(terms[k, 1]),
                        "popularity_term": float(terms[k, 2]),
                        "root_cause_found": bool(found[i]),
                        "members": [c.series_id for c in group],
                    },
                )
            else:
                verdicts[i] = Verdict(
                    STAGE,
                    False,
                    f"duplicate of {representative.series_id}",
                    {
                        "cell": cell,
                        "unit": _grid_position(int(bmu[i]), side),
                        "representative": representative.series_id,
                        "importance": float(scores[k]),
                        "representative_importance": float(scores[best]),
                    },
                )
    return [verdicts[i] for i in range(len(candidates))]


def split_by_stacks(
    candidates: Sequence[Candidate], cells: np.ndarray, context: DedupContext
) -> np.ndarray:
    """Cells split so that gCPU regressions whose stacks share no sample are never one group.

    regbot's addition to §5.5.1. The SOM places items by time, shape and names; after a deploy
    every commit lands at once, so independent regressions of one deploy share time and shape
    and fall into one cell. A cascade's members share stack samples (every caller's stacks
    include the regressed leaf's), independent changes in unrelated code do not. Candidates
    connected through shared stack ids (``context.stacks``), directly or through other
    candidates, form a component; a cell holding several components is split along them. A
    candidate without stacks (no sample store, a throughput series) stays with the cell's
    largest component. Union-find over the stack ids, O(total stack ids)."""
    labels = np.asarray(cells, dtype=np.int64).copy()
    if not context.stacks:
        return labels
    parent = list(range(len(candidates)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_holder: dict[int, int] = {}
    has_stacks = np.zeros(len(candidates), dtype=bool)
    for i, candidate in enumerate(candidates):
        sub = subroutine_of_series(candidate.series_id)
        share = context.stacks.get(sub) if sub is not None else None
        if share is None or len(share.stack_ids) == 0:
            continue
        has_stacks[i] = True
        for stack in share.stack_ids.tolist():
            other = first_holder.setdefault(stack, i)
            if other != i:
                parent[find(i)] = find(other)
    next_label = int(labels.max()) + 1 if len(labels) else 0
    for cell in np.unique(labels):
        members = np.flatnonzero((labels == cell) & has_stacks)
        roots = [find(int(i)) for i in members]
        if len(set(roots)) <= 1:
            continue
        sizes = {r: roots.count(r) for r in set(roots)}
        largest = max(sizes, key=lambda r: (sizes[r], -r))
        for i, root in zip(members.tolist(), roots):
            if root != largest:
                labels[i] = next_label + root
    return _join_simultaneous(candidates, labels, has_stacks, find)


CASCADE_BUCKETS = 8  # change points this many buckets apart are one moment (location jitter)


def _join_simultaneous(
    candidates: Sequence[Candidate], labels: np.ndarray, has_stacks: np.ndarray, find
) -> np.ndarray:
    """Members of one stack-sharing component whose change points lie within
    ``CASCADE_BUCKETS`` buckets of each other (chained) are one cascade and get one label, even
    when the SOM put them in different cells: a caller far above the regressed leaf carries much
    other code, so its series is noisier and its shape features scatter, but its samples contain
    the leaf's and it changed at the same moment."""
    stacked = np.flatnonzero(has_stacks)
    if len(stacked) < 2:
        return labels
    times = candidates[int(stacked[0])].times_s
    spacing = float(np.median(np.diff(times))) if len(times) > 1 else 0.0
    tolerance = CASCADE_BUCKETS * spacing
    by_component: dict[int, list[int]] = {}
    for i in stacked.tolist():
        by_component.setdefault(find(i), []).append(i)
    for items in by_component.values():
        items.sort(key=lambda i: candidates[i].change_time_s)
        cluster = [items[0]]
        for previous, current in zip(items, items[1:]):
            gap = candidates[current].change_time_s - candidates[previous].change_time_s
            if gap > tolerance:
                _one_label(labels, cluster)
                cluster = []
            cluster.append(current)
        _one_label(labels, cluster)
    return labels


def _one_label(labels: np.ndarray, items: list[int]) -> None:
    labels[items] = min(int(labels[i]) for i in items)


def _grid_position(unit: int, side: int) -> list[int]:
    return [unit // side, unit % side]


def _validate(settings: SomSettings) -> None:
    if settings.epochs < 1:
        raise InputError("SomSettings.epochs", "at least 1", settings.epochs)
    if settings.fourier_terms < 0:
        raise InputError("SomSettings.fourier_terms", "0 or more", settings.fourier_terms)
    if len(settings.weights) != 4 or not all(math.isfinite(w) for w in settings.weights):
        raise InputError("SomSettings.weights", "four finite numbers", settings.weights)
