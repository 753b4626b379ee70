"""SOMDedup's map (FBDetect §5.5.1): a batch SOM on an L×L grid, L = ⌈n^¼⌉, and the merge of
its tight units into cells.

Complexity: O(epochs · n · L² · d) for the training, O(n · d + L⁴ · d) for the cells.
Design: docs/design/som_dedup.md ("SOM", "Cells").
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy.cluster.hierarchy import fcluster, linkage

__all__ = ["grid_side", "merged_cells", "train_som"]

FINAL_RADIUS = 0.5
BMU_CHUNK = 8192


def grid_side(n: int) -> int:
    """L = ⌈n^¼⌉ (at least 1), exact for perfect fourth powers."""
    side: int = max(1, math.ceil(n**0.25))
    while side > 1 and (side - 1) ** 4 >= n:
        side -= 1
    return side


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
    grid: npt.NDArray[np.float64] = (
        mean + steps[cols][:, None] * axes[0] + steps[rows][:, None] * axes[1]
    )
    return grid


def merged_cells(features: np.ndarray, bmu: np.ndarray, threshold: float) -> np.ndarray:
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
