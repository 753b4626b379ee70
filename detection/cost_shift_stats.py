"""Cost-shift check's statistics (FBDetect §5.4): a change and its standard error at a split,
robust to heavy tails and to autocorrelation (lag-1 inflation and batch means), for many rows
at once.

Complexity: O(rows × points), vectorised over rows of one length and split.
Design: docs/design/cost_shift.md ("Changes and their standard errors").
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ChangeBatch", "change_with_se"]

MAD_TO_SD = 1.4826
WINSOR_SD = 5.0
MAX_RHO = 0.95  # the lag-1 autocorrelation's cap: at most a 39x variance inflation
MIN_BLOCKS = 8  # batch means: blocks of min(n_a, n / 8) points
WINDOW_STEPS = 8  # batch means start a block every block / 8 points


def change_with_se(rows: np.ndarray, split: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean before, mean after, standard error of their difference) at ``split`` (the first
    after-point), per row of a ``(k, n)`` array with ``1 <= split < n``
    (docs/design/cost_shift.md)."""
    rows = np.asarray(rows, np.float64)
    k, n = rows.shape
    nb, na = split, n - split
    cums = np.zeros((k, n + 1))
    np.cumsum(rows, axis=1, out=cums[:, 1:])
    mean_b, mean_a = cums[:, nb] / nb, (cums[:, n] - cums[:, nb]) / na
    resid = rows.copy()
    resid[:, :nb] -= mean_b[:, None]
    resid[:, nb:] -= mean_a[:, None]
    rms = np.sqrt(np.einsum("ij,ij->i", resid, resid) / n)
    scale = MAD_TO_SD * _median(np.abs(resid))
    scale = np.where(scale > 0, scale, rms)
    bound = WINSOR_SD * scale[:, None]
    np.minimum(resid, bound, out=resid)
    np.maximum(resid, -bound, out=resid)
    square = np.einsum("ij,ij->i", resid, resid)
    sigma = np.maximum(scale, np.sqrt(square / n))  # heavy tails move means: not the MAD alone
    lag = np.einsum("ij,ij->i", resid[:, :-1], resid[:, 1:])
    lag -= resid[:, nb - 1] * resid[:, nb]  # the pair across the split is not a lag
    rho = np.clip(np.divide(lag, square, out=np.zeros(k), where=square > 0), 0.0, MAX_RHO)
    inverse_n = 1 / nb + 1 / na
    se = sigma * np.sqrt((1 + rho) / (1 - rho) * inverse_n)
    block = min(na, n // MIN_BLOCKS)
    if block >= 2:
        step = max(1, block // WINDOW_STEPS)  # neighbouring windows share all but a few points
        np.cumsum(resid, axis=1, out=cums[:, 1:])
        sums = cums[:, block::step] - cums[:, : n - block + 1 : step]
        blocks = n / block  # each side's mean was removed: two of them are not free
        square = np.einsum("ij,ij->i", sums, sums) / (sums.shape[1] * block)
        long_run = np.sqrt(square * blocks / max(blocks - 2, 1))
        se = np.maximum(se, long_run * math.sqrt(inverse_n))
    return mean_b, mean_a, se


def _median(values: np.ndarray) -> np.ndarray:
    """Row medians (the upper one for an even count), partitioning ``values`` in place."""
    half = values.shape[1] // 2
    values.partition(half, axis=1)
    return values[:, half].copy()


class ChangeBatch:
    """Rows waiting for ``change_with_se``, grouped by (length, split) and run together."""

    def __init__(self) -> None:
        self.groups: dict[tuple[int, int], list[tuple[int, np.ndarray]]] = {}
        self.known: dict[tuple[object, ...], int] = {}
        self.before: list[float] = []
        self.after: list[float] = []
        self.se: list[float] = []

    def add(self, values: np.ndarray, split: int, key: tuple[object, ...] | None = None) -> int:
        """Queue a row; rows with the same ``key`` (a series, an axis and a split) run once."""
        if key is not None and key in self.known:
            return self.known[key]
        job = len(self.se)
        if key is not None:
            self.known[key] = job
        self.before.append(math.nan)
        self.after.append(math.nan)
        self.se.append(math.nan)
        self.groups.setdefault((len(values), split), []).append((job, values))
        return job

    def run(self) -> None:
        for (n, split), rows in self.groups.items():
            step = max(1, 4_000_000 // max(n, 1))  # bound the stacked block's size
            for start in range(0, len(rows), step):
                part = rows[start : start + step]
                before, after, se = change_with_se(np.stack([v for _, v in part]), split)
                for (job, _), b, a, s in zip(part, before.tolist(), after.tolist(), se.tolist()):
                    self.before[job], self.after[job], self.se[job] = b, a, s
        self.groups = {}

    def delta(self, job: int) -> float:
        return self.after[job] - self.before[job]
