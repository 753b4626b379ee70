"""gCPU series (FBDetect §2, §4): per bucket, the share of samples whose stack contains a subroutine."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regbot.profiles.model import Series
from regbot.profiles.sample_index import SampleIndex

TRIVIALITY_FLOOR = 0.00001  # 0.001% gCPU: FBDetect §2's "non-trivial" subroutines


@dataclass(frozen=True, slots=True)
class GcpuMatrix:
    """gCPU of many subroutines as one array: ``values[i, j]`` is the share of subroutine
    ``subroutines[i]`` in bucket ``timestamps_s[j]`` (a share in [0, 1]); ``overall[i]`` is its
    share over all buckets together, the number the triviality floor is compared with."""

    subroutines: list[str]
    timestamps_s: np.ndarray
    values: np.ndarray
    overall: np.ndarray
    self_share: bool = False

    def series(self, prefix: str = "gcpu:") -> list[Series]:
        kind = "gcpu_self" if self.self_share else "gcpu"
        return [
            Series(f"{prefix}{name}", kind, self.timestamps_s, self.values[i], unit="share")
            for i, name in enumerate(self.subroutines)
        ]


def build_gcpu(
    index: SampleIndex, *, floor: float = TRIVIALITY_FLOOR, self_share: bool = False
) -> GcpuMatrix:
    """Inclusive (or, with ``self_share``, leaf-only) gCPU of every non-trivial subroutine.

    A subroutine is emitted when its share over the store's whole range is at least ``floor``
    (default 0.001%). A bucket where a subroutine was not seen has gCPU 0 (it was sampled and not
    found); buckets with no samples at all are not in the store and so are not points. Idle and
    empty stacks count toward a bucket's total. One sparse product, buckets × stacks × subroutines,
    O(records × mean stack depth); the dense result is the one array of its size made.
    """
    basis = index.leaf if self_share else index.membership
    inclusive = index.counts @ basis  # buckets × subroutines
    totals = index.totals
    grand_total = float(totals.sum())
    column_sums = np.asarray(inclusive.sum(axis=0)).ravel()
    overall = column_sums / grand_total if grand_total else np.zeros_like(column_sums)
    keep = np.flatnonzero((overall >= floor) & (overall > 0))
    chosen = inclusive[:, keep]
    del inclusive
    # Fortran order, transposed: subroutines × buckets, C-contiguous, with no copy; divided in place
    values = chosen.toarray(order="F").T
    del chosen
    sampled = totals > 0
    np.divide(values, np.where(sampled, totals, 1.0), out=values)
    values[:, ~sampled] = 0.0
    names = [index.subroutines[i] for i in keep]
    return GcpuMatrix(
        names, index.bucket_times_s.astype(np.float64), values, overall[keep], self_share
    )
