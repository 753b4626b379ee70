"""Grafana Pyroscope as a source (``sources.pyroscope``): per-bucket stacks from its render API,
turned into the same samples, sample index and gCPU series as a sample store's.

Rules:

* **Buckets.** The run's window is cut into buckets of ``step`` (whole seconds, aligned to
  multiples of it in epoch seconds, like the store's buckets); each bucket is one request,
  ``GET <url><path>?query=Q&from=B&until=B+step&format=json&max-nodes=N`` (``from``/``until``
  in epoch seconds, which Pyroscope reads as such), whose flamebearer
  (``profiles/flamebearer.py``) gives the bucket's stacks at time ``B``. A bucket whose answer
  holds no samples is no point, as an empty bucket of the store is none. Pyroscope's own range
  rule decides where a profile stamped exactly on a bucket's edge falls.
* **At most** ``MAX_BUCKETS`` (10,000) buckets per fetch: a longer window asks for a larger
  ``step`` (an error naming it), rather than tens of thousands of requests.
* **Requests** go ``PARALLEL`` (4) at a time, at most ``AHEAD`` (8) asked ahead of the bucket
  being parsed (so memory does not grow with the window, and a failure stops the asking);
  answers are parsed in bucket order, so frame and stack ids do not depend on which came first.
  HTTP (``bot/sources/http_get.py``): ``timeout`` to connect and for each read, failed
  connections and 429/502/503/504 retried twice with backoff (``REGBOT_PYROSCOPE_RETRY_SCALE``
  scales the waits). Any failure ends the fetch with one line naming the request, as the
  Prometheus source's do.
* **Series** are ``gcpu:<subroutine>`` over the fetched buckets (``profiles/gcpu.py``, the
  configured triviality floor), exactly as from a sample store; the sample index stays on the
  source (``index``) for attribution, as a store's does.
"""

from __future__ import annotations

import math
import urllib.parse
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from regbot.bot.config import PyroscopeSource
from regbot.bot.sources.http_get import GetPolicy, get, pool_manager, wait_scale
from regbot.bot.sources.source import FetchWindow
from regbot.errors import InputError
from regbot.profiles.flamebearer import parse_flamebearer
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.model import Series
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.stacks import StackTable
from regbot.profiles.store import Records, aggregate_records
from regbot.timefmt import format_time

MAX_BUCKETS = 10_000
PARALLEL = 4
AHEAD = 2 * PARALLEL  # requests asked ahead of the bucket being parsed
RETRIES = 2
RETRY_STATUSES = frozenset({429, 502, 503, 504})
RETRY_SCALE_ENV = "REGBOT_PYROSCOPE_RETRY_SCALE"


def bucket_starts(settings: PyroscopeSource, window: FetchWindow) -> list[float]:
    """Start of every ``step`` bucket that overlaps ``[start_s, end_s]`` (module rules)."""
    step = settings.step_s
    if step < 1 or step != int(step):
        raise InputError("sources.pyroscope.step", "a whole number of seconds, at least 1s", step)
    if not window.end_s > window.start_s:
        return []
    first = math.floor(window.start_s / step)
    last = math.ceil(window.end_s / step)
    if last - first > MAX_BUCKETS:
        raise InputError(
            "sources.pyroscope.step",
            f"a step giving at most {MAX_BUCKETS:,} requests over the window "
            f"({window.end_s - window.start_s:,.0f} s asks for "
            f"{(window.end_s - window.start_s) / MAX_BUCKETS:,.0f} s or more)",
            f"{step:g} s",
        )
    return [k * step for k in range(first, last)]


def render_url(settings: PyroscopeSource, start_s: float) -> str:
    """The render request of the bucket starting at ``start_s``."""
    query = urllib.parse.urlencode(
        {
            "query": settings.query,
            "from": str(int(start_s)),
            "until": str(int(start_s + settings.step_s)),
            "format": "json",
            "max-nodes": str(settings.max_nodes),
        }
    )
    path = settings.path if settings.path.startswith("/") else "/" + settings.path
    return f"{settings.url.rstrip('/')}{path}?{query}"


def fetch_index(settings: PyroscopeSource, window: FetchWindow) -> SampleIndex:
    """The stacks of every bucket of the window, as a sample index (module rules)."""
    starts = bucket_starts(settings, window)
    policy = GetPolicy(
        connect_timeout_s=settings.timeout_s,
        read_timeout_s=settings.timeout_s,
        retries=RETRIES,
        retry_statuses=RETRY_STATUSES,
        server="Pyroscope server",
        timeout_hint="sources.pyroscope.timeout",
        wait_scale=wait_scale(RETRY_SCALE_ENV),
    )
    host = urllib.parse.urlsplit(settings.url).hostname or ""
    pool = pool_manager(policy, {host})
    table = StackTable()
    parts: list[Records] = []
    run = ThreadPoolExecutor(PARALLEL, thread_name_prefix="regbot-pyroscope")

    waiting = deque(starts)
    pending: deque[tuple[float, Future[bytes]]] = deque()

    def ask_next() -> None:
        start = waiting.popleft()
        url = render_url(settings, start)
        pending.append((start, run.submit(get, pool, url, policy, f"sources.pyroscope ({url})")))

    try:
        while waiting and len(pending) < AHEAD:
            ask_next()
        while pending:
            start, answer = pending.popleft()
            if waiting:
                ask_next()
            where = (
                f"sources.pyroscope ({render_url(settings, start)}, bucket {format_time(start)})"
            )
            samples = parse_flamebearer(answer.result(), source=where, table=table, at_s=start)
            keep = samples.weights > 0
            if keep.any():
                parts.append(
                    Records(
                        np.full(int(keep.sum()), int(start), np.int64),
                        samples.stack_ids[keep],
                        samples.weights[keep],
                    )
                )
    finally:
        run.shutdown(wait=True, cancel_futures=True)  # after a failure, no more requests
        pool.clear()
    records = (
        aggregate_records(
            np.concatenate([p.bucket_s for p in parts]),
            np.concatenate([p.stack for p in parts]),
            np.concatenate([p.weight for p in parts]),
        )
        if parts
        else Records.empty()
    )
    return SampleIndex(table, records)


@dataclass(slots=True)
class PyroscopeStacks:
    """gCPU series of a Pyroscope query over the window; after ``fetch``, ``index`` holds the
    stacks fetched (None before)."""

    settings: PyroscopeSource
    gcpu_floor: float
    name: str = "pyroscope"
    index: SampleIndex | None = field(default=None, init=False)

    def fetch(self, window: FetchWindow) -> list[Series]:
        self.index = fetch_index(self.settings, window)
        if not len(self.index.bucket_times_s):
            return []
        return build_gcpu(self.index, floor=self.gcpu_floor).series()
