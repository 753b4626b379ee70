"""Sample records, the rows of the sample store: summed weight per (time bucket, stack).

Rules every segment's records keep (both on-disk formats, docs/design/sample_store.md):

* ``bucket_s`` int64 is the start of the bucket, epoch seconds, a multiple of the store's width;
* ``stack`` int64 is a global stack id, below the number of stacks the store holds;
* ``weight`` float64 is finite;
* rows are sorted by bucket, then stack, and each (bucket, stack) is written once per segment.

Two segments may both hold a (bucket, stack): readers sum them. ``BucketCounts`` is what queries
need of the records — a buckets × stacks sparse matrix — built one batch of rows at a time, so
reading a store never holds more than the matrix and one batch (12 bytes a record, against 24 for
the three columns).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse

from regbot.errors import InputError


@dataclass(frozen=True, slots=True)
class Records:
    """Aggregated sample weights: one row per (bucket, stack), sorted by bucket then stack."""

    bucket_s: np.ndarray
    stack: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return len(self.bucket_s)

    @staticmethod
    def empty() -> Records:
        return Records(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))


@dataclass(frozen=True, slots=True)
class BucketCounts:
    """The records as a matrix: ``counts[i, s]`` is the weight of stack ``s`` in the bucket that
    starts at ``bucket_times_s[i]`` (sorted; only buckets that hold records)."""

    bucket_times_s: npt.NDArray[np.int64]
    counts: sparse.csr_matrix


def aggregate_records(bucket_s: np.ndarray, stack: np.ndarray, weight: np.ndarray) -> Records:
    """Sum weights of equal (bucket, stack) pairs; O(n log n) in the number of rows."""
    if len(bucket_s) == 0:
        return Records.empty()
    buckets, bucket_rows = np.unique(bucket_s, return_inverse=True)
    width = int(stack.max()) + 1
    combined = bucket_rows.ravel().astype(np.int64) * width + stack
    order = np.argsort(combined, kind="stable")
    combined = combined[order]
    starts = np.flatnonzero(np.concatenate(([True], combined[1:] != combined[:-1])))
    keys = combined[starts]
    return Records(buckets[keys // width], keys % width, np.add.reduceat(weight[order], starts))


def bucket_start(times_s: np.ndarray, bucket_width_s: int) -> np.ndarray:
    """Start of the bucket each time falls in: floor(t / width) * width, as int64 epoch seconds."""
    return (
        np.floor(np.asarray(times_s, dtype=np.float64) / bucket_width_s) * bucket_width_s
    ).astype(np.int64)


def check_batch(where: str, batch: Records, n_stacks: int, previous_bucket: int | None) -> None:
    """Refuse rows that break the rules above (bucket order within the segment is checked across
    batches through ``previous_bucket``, the last bucket of the batch before)."""
    if not len(batch):
        return
    buckets = batch.bucket_s
    if (previous_bucket is not None and buckets[0] < previous_bucket) or bool(
        np.any(buckets[1:] < buckets[:-1])
    ):
        raise InputError(where, "records sorted by bucket_s", "rows out of order")
    low, high = int(batch.stack.min()), int(batch.stack.max())
    if low < 0 or high >= n_stacks:
        raise InputError(where, f"stack ids in [0, {n_stacks})", low if low < 0 else high)
    if not bool(np.isfinite(batch.weight).all()):
        raise InputError(where, "finite weights", "NaN or infinity")


def segment_counts(
    where: str, rows: int, batches: Iterable[Records], n_stacks: int
) -> BucketCounts:
    """One segment's records (``rows`` of them, in bucket order) as a ``BucketCounts``, filled
    batch by batch into arrays sized once; each batch is checked (``check_batch``)."""
    index_type = np.int32 if max(rows, n_stacks) < np.iinfo(np.int32).max else np.int64
    indices = np.empty(rows, dtype=index_type)
    data = np.empty(rows, dtype=np.float64)
    times: list[np.ndarray] = []
    sizes: list[np.ndarray] = []
    filled = 0
    last: int | None = None
    for batch in batches:
        check_batch(where, batch, n_stacks, last)
        n = len(batch)
        if not n:
            continue
        if filled + n > rows:
            raise InputError(where, f"{rows} records (its metadata)", "more")
        indices[filled : filled + n] = batch.stack
        data[filled : filled + n] = batch.weight
        filled += n
        starts = np.flatnonzero(np.concatenate(([True], batch.bucket_s[1:] != batch.bucket_s[:-1])))
        times.append(batch.bucket_s[starts])
        sizes.append(np.diff(np.append(starts, n)))
        last = int(batch.bucket_s[-1])
    if filled != rows:
        raise InputError(where, f"{rows} records (its metadata)", filled)
    all_times = np.concatenate(times) if times else np.zeros(0, np.int64)
    all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, np.int64)
    # a bucket split across two batches appears twice in a row: merge the runs
    bucket_times, run_bucket = np.unique(all_times, return_inverse=True)
    per_bucket = np.bincount(run_bucket.ravel(), weights=all_sizes, minlength=len(bucket_times))
    indptr = np.zeros(len(bucket_times) + 1, dtype=index_type)
    np.cumsum(per_bucket.astype(index_type), out=indptr[1:])
    counts = sparse.csr_matrix(
        (data, indices, indptr), shape=(len(bucket_times), n_stacks), copy=False
    )
    return BucketCounts(bucket_times.astype(np.int64), counts)


def merge_counts(parts: list[BucketCounts], n_stacks: int) -> BucketCounts:
    """The sum of several segments' counts (each ``n_stacks`` wide), on the union of their
    buckets: each part's rows are spread onto the union without copying its entries, then
    the parts are added."""
    if not parts:
        return BucketCounts(np.zeros(0, np.int64), sparse.csr_matrix((0, n_stacks)))
    if len(parts) == 1:
        return parts[0]
    times = np.unique(np.concatenate([p.bucket_times_s for p in parts]))
    total: sparse.csr_matrix | None = None
    for part in parts:
        matrix = part.counts
        sizes = np.zeros(len(times), dtype=matrix.indptr.dtype)
        sizes[np.searchsorted(times, part.bucket_times_s)] = np.diff(matrix.indptr)
        indptr = np.zeros(len(times) + 1, dtype=matrix.indptr.dtype)
        np.cumsum(sizes, out=indptr[1:])
        spread = sparse.csr_matrix(
            (matrix.data, matrix.indices, indptr), shape=(len(times), n_stacks), copy=False
        )
        total = spread if total is None else sparse.csr_matrix(total + spread)
    assert total is not None
    return BucketCounts(times.astype(np.int64), total)
