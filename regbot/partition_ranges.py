"""How a run's series are cut into partitions: one rule for series in memory and in files."""

from __future__ import annotations

__all__ = ["partition_ranges"]


def partition_ranges(n: int, size: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of the partitions of ``n`` series: as few as hold at most ``size``
    each, balanced (sizes differ by at most one), in order. One partition when ``n <= size``
    (also for ``n == 0``)."""
    count = max(1, -(-n // max(size, 1)))
    edges = [n * k // count for k in range(count + 1)]
    return list(zip(edges, edges[1:]))
