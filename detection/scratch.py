"""Scratch arrays lent to one chunk of rows at a time and reused by the next.

A chunk's big working arrays — its prefix sums (2,048 rows × 1,501 columns, twice: 49 MB), its
seasonally adjusted values — would otherwise be fresh memory for every chunk, each page of which
the kernel maps and zeroes on first touch: milliseconds a chunk, and page-fault contention
between the threads that run chunks side by side. ``borrowed`` lends an array from a pool and
takes it back when the chunk is done with it; its contents are whatever the last borrower left
(callers write every element they read). The pool keeps at most ``KEPT_BYTES`` of idle arrays
(as many as chunks ran at once, for a process's usual chunk shapes), arrays over
``LARGEST_BYTES`` are never kept.

Complexity: O(1) a loan (plus one allocation when no idle array is large enough).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

__all__ = ["KEPT_BYTES", "LARGEST_BYTES", "borrowed"]

LARGEST_BYTES = 1 << 27  # 128 MB
KEPT_BYTES = 1 << 28  # 256 MB

_idle: list[np.ndarray] = []
_lock = threading.Lock()


@contextmanager
def borrowed(shape: tuple[int, ...]) -> Iterator[np.ndarray]:
    """An uninitialised C-contiguous float64 array of ``shape``, this ``with`` block's alone."""
    size = math.prod(shape)
    flat = _take(size) if size * 8 <= LARGEST_BYTES else np.empty(size)
    try:
        yield flat[:size].reshape(shape)
    finally:
        if flat.nbytes <= LARGEST_BYTES:
            _give_back(flat)


def _take(size: int) -> np.ndarray:
    """The smallest idle array of at least ``size`` elements, or a new one."""
    with _lock:
        fits = [i for i, a in enumerate(_idle) if a.size >= size]
        if fits:
            return _idle.pop(min(fits, key=lambda i: _idle[i].size))
    return np.empty(size)


def _give_back(flat: np.ndarray) -> None:
    """Keep ``flat`` for the next loan, dropping the smallest idle arrays beyond KEPT_BYTES."""
    with _lock:
        _idle.append(flat)
        _idle.sort(key=lambda a: a.size, reverse=True)
        kept = 0
        for i, a in enumerate(_idle):
            kept += a.nbytes
            if kept > KEPT_BYTES:
                del _idle[i:]
                break
