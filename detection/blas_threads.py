"""One BLAS thread for the per-partition stages.

The detection stages' matrix products are skinny (a few thousand rows by three or four
columns: the fleet load's loadings, its factor's power steps). OpenBLAS splits them over all
cores and its idle threads spin while they wait, so such a product costs about twice the CPU on
two threads and gains no time (the fleet load of a 10,000-series partition: 0.83 CPU s with two
BLAS threads, 0.40 with one). regbot's parallelism comes from above instead (partitions on the
executor, chunks in threads, the filters in processes), so these stages run with one BLAS
thread. The limit is the process's (BLAS has one setting), restored on leaving; the dedup
stages' large products keep every thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["one_blas_thread"]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with BLAS limited to one thread (threadpoolctl), restored after."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    with threadpool_limits(limits=1, user_api="blas"):
        yield
