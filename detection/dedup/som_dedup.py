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

Each block is multiplied by its ``SomSettings.block_weights`` entry (1, 0.5, 3, 0.2, 0.2 in the
order above). A cascade (a leaf regression echoed into every caller's inclusive gCPU) is one
change, at one time and with one shape, across *different* code. Shape and position are the
evidence for it. Position weighs 3 by default, so one point of a 24-point analysis window is
0.125 and a change 4 points away is 0.5. Metric ID and root-cause bits differ between a leaf and
its callers by construction, so they only break near-ties (0.2; leaf and callers then differ by
about 0.33).

**SOM** (``train_som``): a batch SOM on an L×L grid, L = ⌈n^¼⌉, written here instead of taken
from a library. Each epoch assigns every item to its best-matching unit at once (one matrix
product gives the squared distances) and sets each unit to the neighbourhood-weighted mean of
the items (one (L², L²) × (L², d) product on the per-unit sums). The training is vectorised
with no per-item Python loop, deterministic, and O(n · L² · d) per epoch. MiniSom's online
training loops over the samples in Python and depends on their order. The neighbourhood is
Gaussian; its radius falls linearly from L/2 to 0.5 over the epochs. Units start on the plane
of the first two principal components (±1 std along each), or on seeded random items when the
features have no variance.

**Cells.** A SOM always uses all of its L² units, so it splits a lone tight group: in 60 seeded
trials, a lone cascade of 2 to 21 candidates (a 2×2 or 3×3 map) was never in a single unit.
Units are therefore merged, but only *tight* ones: a unit is tight when all its items are within
``SomSettings.merge_distance`` (0.5) of its centroid. Tight units whose centroids are within
that distance of each other, by complete linkage, form one cell, so no chains form. This costs
O(n · d + L⁴ · d) = O(n · d). A unit that holds a spread of items is left as the map made it.
The resolution this sets: with position weighing 3, changes of one shape less than about a sixth
of the analysis window apart (4 points of 24) can share a cell. 10,000 candidates from 479
cascades at 22 change hours and 3 shapes went from 98 units to 12 cells. A verdict reports the
representative's unit as ``cell``; the representative's verdict also lists the merged ``units``.

**Stack groups** (``stack_links``; regbot's addition to §5.5.1). After a
deploy every commit lands at once, so independent regressions of one deploy share time and
shape and fall into one cell, while a caller far above a regressed leaf carries much other code,
so its series is noisier and its features scatter to other cells. The stack samples
(``context.stacks``) say which candidates can be one change: a cascade's members share samples
(every caller's stacks include the regressed leaf's). Sharing is not transitive evidence,
though: every stack of a service holds ``handle_request``, whose regression (the echo of two
unrelated leaves that regressed at the same deploy) would chain the two into one group, and a
group is judged, and can be removed, through its representative alone. Groups are therefore
built from leaf-to-ancestor links, never across siblings:

* *moment*: candidates connected through shared stacks (directly or through others) whose change
  points chain within ``SomSettings.cascade_buckets`` (8) buckets of each other, the
  change-point location jitter of a noisy caller. Links only join candidates of one moment.
* *ancestor*: of two candidates of one moment that share stacks, the one in the other's
  ``context.callers`` (and not the reverse) is the other's ancestor; without that evidence (no
  callers, or each in the other's: recursion) the one with more samples, then the larger
  series id.
* *leaf*: a candidate that is no other's ancestor. It heads its own group.
* An ancestor joins the group of one leaf below it: the leaf whose rise as seen inside it (the
  leaf's delta × the share of the leaf's samples on stacks that hold the ancestor) comes closest
  to the ancestor's own rise. When no leaf explains more than the ancestor rose, that is the
  leaf that explains most of it; a leaf that would explain more than that (its rise was offset
  inside the ancestor, as a cost shift's is) counts by how close it comes. Ties: the larger
  explained rise, then the smaller series id. So a caller whose rise is the sum of two unrelated
  leaves' joins the group of the larger one, and the leaves stay apart. An ancestor with no leaf
  below it in its moment heads its own group.
* Final groups (``regbot.detection.dedup.cause_groups``): candidates with stacks by their head,
  whatever their SOM cells. A candidate without stacks (no sample store, a throughput series)
  merges only on evidence of one cause within its SOM cell: its load-free residual noise must
  correlate significantly with another's (a caller's samples hold its callee's), with the same
  leaf-to-ancestor structure and rise test; otherwise it is a group of its own. Sharing a cell
  (shape and time) is never enough: after a deploy, independent regressions share both.
* *Credited change*: in the ImportanceScore an ancestor counts the part of its rise that is
  its group's — its delta less the rise that belongs to *other groups* (candidates below it
  whose head is not its own: a caller also carries unrelated leaves' rises) — when the part of
  that which is its own code's (less its head's rise seen inside it) is larger than the head's;
  otherwise it counts its head's rise seen inside it; never more than its own delta. So a
  caller summing two leaves, or a caller on every stack whose rise is its leaf's plus noise,
  does not outrank its own group's leaf on the absolute change, while a caller whose own code
  rose more than the busier callee below it (a slower loop above a callee called a little
  more) keeps that rise and represents the group: a representative is never a weaker
  detection than a member of its own group. With the stacks' own rises (the sample store's,
  ``StackShare.rises``) the other groups' part is measured per stack: the rise of the
  ancestor's stacks that hold a candidate of another group and none of its own group's;
  without them, the nearest other-group candidates' deltas times the share of their samples
  inside the ancestor. Heads and
  candidates without stacks count their own delta.

Known limit: a caller whose own code regressed at the same moment as a leaf below it joins that
leaf's group; its extra rise is not split off. The links cost one sparse product,
O(Σ over stacks of (candidates holding it)²), then a pass over the sharing pairs.

After SOMDedup the cost-shift check judges the representatives; for a group whose
representative it removes, ``rehome`` places the other members again without the cost shifts
and ``reelect`` elects the next representative (see ``regbot.detection.dedup``).

**ImportanceScore** (within a group): w1·relative + w2·absolute + w3·(1 − popularity) +
w4·root-cause-found, over each member's credited change. Each term is in [0, 1], so that the
weights (0.2/0.6/0.1/0.1) mean what they say:

* relative: credited change / |mean before|, capped at ``SomSettings.relative_cap`` (10; the
  cap when the level before is 0, which is a new cost), divided by the group's largest;
* absolute: credited change divided by the group's largest |credited change|;
* popularity: ``context.popularity`` of the subroutine, 0 for non-gCPU series and unknown
  subroutines (the paper prefers less widely invoked subroutines);
* root cause found: any bit set.

The representative is the argmax among the group's short-term detections (a long-term one
represents a group only of long-term ones: its change is a rise between two windows' means,
weaker evidence than a change point tested in the window, and a representative is never a
weaker detection than a member of its own group). Ties go to the lower popularity, then the
smaller series id, then input order.

Complexity: features are O(n · (points + M log M)) and the SOM is O(epochs · n · √n · d).
On one thread, 10,000 candidates take about 2 s, or 3.5 s with 479 commit columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.sparse.csgraph import connected_components
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from regbot.detection.dedup.cause_groups import cause_groups
from regbot.detection.model import (
    Candidate,
    DedupContext,
    SomSettings,
    StackShare,
    Verdict,
    subroutine_of_series,
)
from regbot.detection.dedup.shared_cause import LoadFactor, load_over_windows
from regbot.errors import InputError

__all__ = [
    "BLOCK_NAMES",
    "Election",
    "StackLinks",
    "elect",
    "grid_side",
    "importance_scores",
    "joined_verdict",
    "reelect",
    "run_load",
    "rehome",
    "root_cause_bitmap",
    "series_popularity",
    "som_dedup",
    "som_features",
    "stack_links",
    "train_som",
]

STAGE = "som_dedup"
SEGMENT_POINTS = 64
VARIANCE_CLIP = 3.0
GUARD_POINTS = 2
METRIC_COMPONENTS = 16
BLOCK_NAMES = ("shape", "variance", "position", "root_cause", "metric")  # block_weights' order
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
    candidates: Sequence[Candidate], context: DedupContext, settings: SomSettings
) -> tuple[np.ndarray, np.ndarray]:
    """(n, d) features: the blocks of the module docstring, each times its
    ``settings.block_weights`` entry, in the order shape, variance, position, root causes,
    metric ID (``BLOCK_NAMES``); and the (n, commits) root-cause bitmap as booleans. Also
    ``settings.fourier_terms`` magnitudes; ``settings.seed`` drives the metric ID's
    TruncatedSVD."""
    n = len(candidates)
    terms = max(settings.fourier_terms, 0)
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
        "metric": _metric_block([c.series_id for c in candidates], settings.seed),
    }
    weight = dict(zip(BLOCK_NAMES, settings.block_weights))
    return np.hstack([weight[name] * block for name, block in blocks.items()]), bitmap


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
    changes: np.ndarray | None = None,
    *,
    relative_cap: float,
) -> tuple[np.ndarray, np.ndarray]:
    """ImportanceScore of candidates compared with each other (one group), given each one's
    popularity (n,), whether a root cause was found (n,) bool and the change each one is
    credited with in the group (n,; None: its own delta; see "Stack groups"): (n,) scores and
    the (n, 4) terms (relative change, capped at ``relative_cap``, absolute change,
    1 − popularity, root cause found), each in [0, 1]; see the module docstring."""
    delta = (
        np.array([c.delta for c in candidates], dtype=np.float64)
        if changes is None
        else np.asarray(changes, dtype=np.float64)
    )
    before = np.abs(np.array([c.mean_before for c in candidates], dtype=np.float64))
    new_cost = np.where(delta > 0, relative_cap, 0.0)
    relative = np.where(before > 0, delta / np.where(before > 0, before, 1.0), new_cost)
    relative = np.clip(relative, 0.0, relative_cap)
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


@dataclass(frozen=True, slots=True)
class Election:
    """One group's ImportanceScore election: the representative's position in the group, and
    per member its score, its (n, 4) terms, the change it was credited with and whether a root
    cause was found for it."""

    best: int
    scores: np.ndarray
    terms: np.ndarray
    credited: np.ndarray
    found: np.ndarray


def elect(
    group: Sequence[Candidate],
    context: DedupContext,
    settings: SomSettings,
    credited: np.ndarray | None = None,
) -> Election:
    """The group's representative: the highest ImportanceScore over ``credited`` changes (None:
    the stack links among the group's own members decide them) among its short-term members
    (long-term ones only when it has no other); ties go to the lower popularity, then the
    smaller series id, then the earlier member."""
    if credited is None:
        credited = stack_links(group, context, settings).credited
    popularity = np.array([series_popularity(c.series_id, context) for c in group])
    found = root_cause_bitmap(group, context).any(axis=1)
    scores, terms = importance_scores(
        group, popularity, found, settings.weights, credited, relative_cap=settings.relative_cap
    )
    best = min(
        range(len(group)),
        key=lambda k: (
            group[k].detector == "long-term",
            -scores[k],
            popularity[k],
            group[k].series_id,
            k,
        ),
    )
    return Election(best, scores, terms, np.asarray(credited, dtype=np.float64), found)


# --- stack groups ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class StackLinks:
    """How the candidates of one batch hang together through their stack samples (module
    docstring, "Stack groups"). Per candidate: ``head``, the index of the candidate whose group
    it joins (itself for a head, -1 without stack samples); ``credited``, the change it is
    credited with in that group (its own delta for a head or without stacks; for an ancestor,
    its rise explained by its head, at most its own delta)."""

    head: np.ndarray
    credited: np.ndarray


def stack_links(
    candidates: Sequence[Candidate], context: DedupContext, settings: SomSettings
) -> StackLinks:
    """Leaf-to-ancestor links among ``candidates`` (module docstring, "Stack groups"); change
    points chain into one moment within ``settings.cascade_buckets`` buckets.

    One sparse product gives, for every pair sharing a stack, the weight of one's samples on
    stacks that also hold the other: O(Σ over stacks of (candidates holding it)²), then a pass
    over those pairs."""
    n = len(candidates)
    delta = np.array([c.delta for c in candidates], dtype=np.float64)
    head = np.full(n, -1, dtype=np.int64)
    credited = delta.copy()
    rows: list[int] = []
    shares: list[StackShare] = []
    for i, candidate in enumerate(candidates):
        sub = subroutine_of_series(candidate.series_id)
        share = context.stacks.get(sub) if sub is not None else None
        if share is not None and len(share.stack_ids) > 0:
            rows.append(i)
            shares.append(share)
    if not rows:
        return StackLinks(head, credited)
    head[rows] = rows
    ids = [np.asarray(s.stack_ids, dtype=np.int64) for s in shares]
    columns = np.unique(np.concatenate(ids))
    indptr = np.concatenate(([0], np.cumsum([len(i) for i in ids])))
    indices = np.searchsorted(columns, np.concatenate(ids))
    weights = np.concatenate([np.asarray(s.weights, dtype=np.float64) for s in shares])
    weighted = sparse.csr_matrix((weights, indices, indptr), shape=(len(rows), len(columns)))
    weighted.sum_duplicates()
    present = weighted.copy()
    present.data[:] = 1.0
    inside = (weighted @ present.T).tocoo()  # [a, b]: a's samples on stacks also holding b
    totals = np.asarray(weighted.sum(axis=1)).ravel()

    subs = [subroutine_of_series(candidates[i].series_id) or "" for i in rows]
    names = [candidates[i].series_id for i in rows]
    moment = _moments([candidates[i] for i in rows], inside, settings.cascade_buckets)

    def above(upper: int, lower: int) -> bool:
        """``upper`` is an ancestor of ``lower`` (positions in ``rows``)."""
        up = subs[upper] in context.callers.get(subs[lower], ())
        down = subs[lower] in context.callers.get(subs[upper], ())
        if up != down:
            return up
        return (totals[upper], names[upper]) > (totals[lower], names[lower])

    below_of: dict[int, list[tuple[int, float]]] = {}  # ancestor -> [(below, share inside)]
    for a, b, weight in zip(inside.row.tolist(), inside.col.tolist(), inside.data.tolist()):
        if a == b or weight <= 0 or moment[a] != moment[b] or not above(b, a):
            continue
        below_of.setdefault(b, []).append((a, weight / totals[a] if totals[a] > 0 else 0.0))
    local_delta = delta[rows]
    local_head: dict[int, tuple[int, float]] = {}  # ancestor -> (its head, head's rise inside)
    for upper, below in below_of.items():
        explained = [
            (abs(local_delta[upper] - e), -e, names[lower], lower, e)
            for lower, share in below
            if lower not in below_of
            for e in (max(local_delta[lower], 0.0) * share,)
        ]
        if explained:
            _, _, _, lower, e = min(explained)
            local_head[upper] = (lower, e)
            head[rows[upper]] = rows[lower]
    group = {k: local_head.get(k, (k, 0.0))[0] for k in range(len(rows))}
    below_sets = {upper: {lower for lower, _ in below} for upper, below in below_of.items()}
    for upper, (lower, e) in local_head.items():
        below = below_of[upper]
        mine = [b for b, _ in below if group[b] == group[upper]]
        theirs = [(b, share) for b, share in below if group[b] != group[upper]]
        own = local_delta[upper]
        if shares[upper].rises is not None:
            others = _rise_of_other_groups(upper, mine, theirs, ids, shares[upper].rises)
        else:
            others = _other_groups_inside(theirs, below_sets, local_delta)
        credited[rows[upper]] = _credited(own, others, e)
    return StackLinks(head, credited)


def _credited(own: float, others: float, head: float) -> float:
    """An ancestor's credited change (module docstring): its group's part of its rise (its rise
    less other groups', ``own − others``) when the part that is its own code's (that, less its
    head's rise seen inside it) is larger than the head's; else its head's rise seen inside it.
    Either at most its own delta."""
    mine = own - others
    return min(own, mine if mine - head > head else head)


def _rise_of_other_groups(
    upper: int,
    mine: list[int],
    theirs: list[tuple[int, float]],
    ids: list[np.ndarray],
    rises: np.ndarray,
) -> float:
    """The rise of an ancestor's samples that belongs to other groups, from the stacks' own
    rises (``StackShare.rises``): its stacks that hold a candidate below it of another group
    and none of its own group's (at least 0). Stacks holding its own group's candidates are
    that group's; stacks holding no candidate below are the ancestor's own code."""
    if not theirs:
        return 0.0
    own_ids = ids[upper]
    elsewhere = np.isin(own_ids, np.concatenate([ids[b] for b, _ in theirs]))
    if mine:
        elsewhere &= ~np.isin(own_ids, np.concatenate([ids[b] for b in mine]))
    return max(float(np.asarray(rises, dtype=np.float64)[elsewhere].sum()), 0.0)


def _other_groups_inside(
    theirs: list[tuple[int, float]], below_sets: dict[int, set[int]], delta: np.ndarray
) -> float:
    """Without the stacks' rises: the rises, seen inside an ancestor, of the nearest
    candidates below it of other groups (those not below another of them), each its rise (at
    least 0) times the share of its samples inside the ancestor."""
    members = {b for b, _ in theirs}
    deeper = set().union(*(below_sets.get(m, set()) & members for m in members))
    return sum(max(float(delta[b]), 0.0) * share for b, share in theirs if b not in deeper)


def _moments(
    candidates: Sequence[Candidate], inside: sparse.coo_matrix, cascade_buckets: int
) -> np.ndarray:
    """Per candidate, its moment: candidates connected through shared stacks (``inside``'s
    pattern, directly or through others) whose change points chain within ``cascade_buckets``
    buckets of each other (sorted by change time, a larger gap starts a new moment)."""
    k = len(candidates)
    _, component = connected_components(inside, directed=False)
    times = candidates[0].times_s
    spacing = float(np.median(np.diff(times))) if len(times) > 1 else 0.0
    tolerance = cascade_buckets * spacing
    change = np.array([c.change_time_s for c in candidates])
    order = np.lexsort((change, component))
    gap = np.diff(change[order]) > tolerance
    new_component = np.diff(component[order]) != 0
    starts = np.concatenate(([True], gap | new_component))
    moment = np.empty(k, dtype=np.int64)
    moment[order] = np.cumsum(starts) - 1
    return moment


# --- the stage ------------------------------------------------------------------------------


def som_dedup(
    candidates: list[Candidate], context: DedupContext, settings: SomSettings
) -> list[Candidate]:
    """Every candidate, in input order, with a ``som_dedup`` verdict: each group's
    representative passes, the other members fail as its duplicates. One map per ``kind``."""
    _validate(settings)
    verdicts: dict[int, Verdict] = {}
    by_kind: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        by_kind.setdefault(c.kind, []).append(i)
    load = run_load(candidates, context, settings.load_min_series)
    for indices in by_kind.values():
        found = _kind_verdicts([candidates[i] for i in indices], context, settings, load)
        verdicts.update(zip(indices, found))
    return [c.with_verdict(verdicts[i]) for i, c in enumerate(candidates)]


def reelect(
    group: Sequence[Candidate], context: DedupContext, settings: SomSettings, former: str
) -> list[Candidate]:
    """The remaining members of a group whose representative ``former`` (a series id) the
    cost-shift check removed, with new ``som_dedup`` verdicts: the next representative by the
    same rule (``elect`` over these members, their stack links recomputed among themselves, so
    an ancestor whose head was removed is credited with its own rise) passes, the others are its
    duplicates. Each keeps the ``cell`` of its former verdict."""
    _validate(settings)
    if not group:
        return []
    election = elect(group, context, settings)
    representative = group[election.best]
    out = []
    for k, candidate in enumerate(group):
        former_numbers = candidate.verdicts[STAGE].numbers if STAGE in candidate.verdicts else {}
        cell = former_numbers.get("cell")
        if k == election.best:
            verdict = Verdict(
                STAGE,
                True,
                f"representative of {len(group)} after {former} was removed as a cost shift",
                {
                    "cell": cell,
                    "former_representative": former,
                    **_election_numbers(election, k),
                    "members": [c.series_id for c in group],
                },
            )
        else:
            verdict = Verdict(
                STAGE,
                False,
                f"duplicate of {representative.series_id}",
                {
                    "cell": cell,
                    "unit": former_numbers.get("unit", cell),
                    "representative": representative.series_id,
                    "former_representative": former,
                    "importance": float(election.scores[k]),
                    "representative_importance": float(election.scores[election.best]),
                    "credited_change": float(election.credited[k]),
                },
            )
        out.append(candidate.with_verdict(verdict))
    return out


def rehome(
    orphans: Sequence[Candidate],
    groups: Sequence[Sequence[Candidate]],
    context: DedupContext,
    settings: SomSettings,
) -> list[int]:
    """Per orphan (a member of a group whose representative the cost-shift check removed, not a
    cost shift itself), the index in ``groups`` (the groups that stand, each a list of members)
    of the group it now belongs to, or -1. Stack links are recomputed over the orphans and the
    groups' members, the cost shifts gone (a cost shift moved cost inside its domain, so it
    explains nothing above it): an orphan whose new head is a member of a standing group joins
    that group; one that heads itself, or is headed by another orphan, gets -1."""
    pool = [*orphans, *(member for group in groups for member in group)]
    owner = [-1] * len(orphans) + [g for g, group in enumerate(groups) for _ in group]
    head = stack_links(pool, context, settings).head
    return [owner[int(head[i])] if head[i] >= 0 else -1 for i in range(len(orphans))]


def joined_verdict(candidate: Candidate, representative: Candidate, former: str) -> Verdict:
    """The ``som_dedup`` verdict of an orphan that ``rehome`` moved into ``representative``'s
    group (``former``: the removed representative of its group)."""
    previous = candidate.verdicts.get(STAGE)
    numbers = previous.numbers if previous is not None else {}
    return Verdict(
        STAGE,
        False,
        f"duplicate of {representative.series_id}",
        {
            "cell": numbers.get("cell"),
            "unit": numbers.get("unit", numbers.get("cell")),
            "representative": representative.series_id,
            "former_representative": former,
        },
    )


def run_load(
    candidates: Sequence[Candidate], context: DedupContext, min_series: int
) -> LoadFactor | None:
    """The fleet's load factor over the candidates' windows (``shared_cause.estimate_load``)."""
    spans = [(c.windows.historical_start_s, c.windows.end_s) for c in candidates]
    return load_over_windows(spans, context, min_series)


def _kind_verdicts(
    candidates: list[Candidate],
    context: DedupContext,
    settings: SomSettings,
    load: LoadFactor | None,
) -> list[Verdict]:
    side = grid_side(len(candidates))
    features, _ = som_features(candidates, context, settings)
    _, bmu = train_som(features, side, settings.epochs, settings.seed)
    links = stack_links(candidates, context, settings)
    cells = _merged_cells(features, bmu, settings.merge_distance)
    times = candidates[0].times_s
    spacing = float(np.median(np.diff(times))) if len(times) > 1 else 0.0
    found = cause_groups(
        candidates, cells, links.head, links.credited, context, settings, load,
        settings.cascade_buckets * spacing,
    )
    labels = found.labels
    verdicts: dict[int, Verdict] = {}
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label).tolist()
        group = [candidates[i] for i in members]
        election = elect(group, context, settings, found.credited[members])
        best = election.best
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
                        **_election_numbers(election, k),
                        "members": [c.series_id for c in group],
                        **_evidence_numbers(found.numbers[i]),
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
                        "importance": float(election.scores[k]),
                        "representative_importance": float(election.scores[best]),
                        "credited_change": float(election.credited[k]),
                        **_evidence_numbers(found.numbers[i]),
                    },
                )
    return [verdicts[i] for i in range(len(candidates))]


def _evidence_numbers(numbers: dict[str, object]) -> dict[str, object]:
    """A candidate's evidence numbers (``cause_groups``), prefixed so that they stay apart from
    the election's; the kind of evidence stays ``evidence``."""
    return {k if k == "evidence" else f"evidence_{k}": v for k, v in numbers.items()}


def _election_numbers(election: Election, k: int) -> dict[str, object]:
    return {
        "importance": float(election.scores[k]),
        "relative_change": float(election.terms[k, 0]),
        "absolute_change": float(election.terms[k, 1]),
        "popularity_term": float(election.terms[k, 2]),
        "root_cause_found": bool(election.found[k]),
        "credited_change": float(election.credited[k]),
    }


def _grid_position(unit: int, side: int) -> list[int]:
    return [unit // side, unit % side]


def _validate(settings: SomSettings) -> None:
    if settings.epochs < 1:
        raise InputError("SomSettings.epochs", "at least 1", settings.epochs)
    if settings.fourier_terms < 0:
        raise InputError("SomSettings.fourier_terms", "0 or more", settings.fourier_terms)
    if len(settings.weights) != 4 or not all(math.isfinite(w) for w in settings.weights):
        raise InputError("SomSettings.weights", "four finite numbers", settings.weights)
    if not 0.0 < settings.evidence_alpha < 1.0:
        raise InputError("SomSettings.evidence_alpha", "in (0, 1)", settings.evidence_alpha)
    for name in ("min_noise_correlation", "min_cross_correlation"):
        value = getattr(settings, name)
        if not -1.0 <= value <= 1.0:
            raise InputError(f"SomSettings.{name}", "in [-1, 1]", value)
    if not math.isfinite(settings.rise_z):
        raise InputError("SomSettings.rise_z", "a finite number", settings.rise_z)
    if settings.guard_points < 0:
        raise InputError("SomSettings.guard_points", "0 or more", settings.guard_points)
    if not (math.isfinite(settings.merge_distance) and settings.merge_distance >= 0):
        raise InputError("SomSettings.merge_distance", "a number >= 0", settings.merge_distance)
    if settings.cascade_buckets < 0:
        raise InputError("SomSettings.cascade_buckets", "0 or more", settings.cascade_buckets)
    if not (math.isfinite(settings.relative_cap) and settings.relative_cap > 0):
        raise InputError("SomSettings.relative_cap", "a number > 0", settings.relative_cap)
    blocks = settings.block_weights
    if len(blocks) != len(BLOCK_NAMES) or not all(math.isfinite(w) and w >= 0 for w in blocks):
        raise InputError("SomSettings.block_weights", "five finite numbers >= 0", blocks)
