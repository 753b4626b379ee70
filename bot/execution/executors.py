"""Executors: run one function over many items, here, in a process pool, or on Dask.

One seam, three engines (``execution.engine`` in regbot.yml):

* ``local``: in this process, one item after another.
* ``processes``: a pool of ``workers`` processes on this machine (``fork`` where the platform
  has it, so workers start in milliseconds with regbot already imported).
* ``dask``: ``distributed`` tasks on the cluster at ``execution.scheduler``, else on a
  ``LocalCluster`` of ``workers`` single-threaded worker processes started for the run and
  closed after it. Items travel to the workers pickled, so an item should describe its work
  (a file's row ranges) rather than carry it.

``map`` keeps the items' order whatever finishes first, so a result never depends on the
engine. ``on_done(k)`` is called in the caller's process as each item finishes (progress).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from regbot.errors import InputError

__all__ = ["DaskExecutor", "Executor", "LocalExecutor", "ProcessExecutor", "open_executor"]

T = TypeVar("T")
R = TypeVar("R")
Done = Callable[[int], None]


class Executor(Protocol):
    """Runs ``function`` over ``items``; results in the items' order."""

    name: str
    workers: int

    def map(
        self, function: Callable[[T], R], items: Sequence[T], on_done: Done | None = None
    ) -> list[R]: ...


class LocalExecutor:
    """In this process, in order."""

    name = "local"
    workers = 1

    def map(
        self, function: Callable[[T], R], items: Sequence[T], on_done: Done | None = None
    ) -> list[R]:
        results = []
        for k, item in enumerate(items):
            results.append(function(item))
            if on_done is not None:
                on_done(k)
        return results


class ProcessExecutor:
    """A pool of worker processes on this machine, kept for the executor's life."""

    name = "processes"

    def __init__(self, workers: int) -> None:
        self.workers = workers
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method))

    def map(
        self, function: Callable[[T], R], items: Sequence[T], on_done: Done | None = None
    ) -> list[R]:
        futures = [self._pool.submit(function, item) for item in items]
        index = {future: k for k, future in enumerate(futures)}
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                future.result()  # raise a worker's error here, in order of finishing
                if on_done is not None:
                    on_done(index[future])
        return [future.result() for future in futures]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """``distributed`` tasks on a cluster (``client``); ``cluster`` when this executor started
    a local one (closed with it)."""

    name = "dask"

    def __init__(self, client: Any, cluster: Any | None = None) -> None:
        self.client, self.cluster = client, cluster
        self.workers = max(1, len(client.scheduler_info().get("workers", {})))

    def map(
        self, function: Callable[[T], R], items: Sequence[T], on_done: Done | None = None
    ) -> list[R]:
        from distributed import as_completed

        futures = [self.client.submit(function, item, pure=False) for item in items]
        index = {future.key: k for k, future in enumerate(futures)}
        for future in as_completed(futures):
            if future.status == "error":
                future.result()
            if on_done is not None:
                on_done(index[future.key])
        results: list[R] = self.client.gather(futures)
        return results

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _workers(count: int) -> int:
    return count or os.cpu_count() or 1


@contextmanager
def open_executor(engine: str, workers: int = 0, scheduler: str | None = None) -> Iterator[Any]:
    """The executor for ``engine`` (``local``, ``processes``, ``dask``), closed on exit. A Dask
    scheduler that cannot be reached is an InputError naming ``execution.scheduler``."""
    if engine == "local":
        yield LocalExecutor()
        return
    if engine == "processes":
        pool = ProcessExecutor(_workers(workers))
        try:
            yield pool
        finally:
            pool.close()
        return
    executor = _dask_executor(workers, scheduler)
    try:
        yield executor
    finally:
        executor.close()


def _dask_executor(workers: int, scheduler: str | None) -> DaskExecutor:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError(
            "execution.engine", "dask installed (pip install 'regbot[dask]')", "dask"
        ) from None
    if scheduler is not None:
        try:
            return DaskExecutor(Client(scheduler, timeout="5s"))
        except (OSError, TimeoutError) as error:
            message = " ".join(str(error).split()) or type(error).__name__
            raise InputError(
                "execution.scheduler", "a reachable Dask scheduler", f"{scheduler}: {message}"
            ) from None
    cluster = LocalCluster(
        n_workers=_workers(workers),
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,
    )
    return DaskExecutor(Client(cluster), cluster)
