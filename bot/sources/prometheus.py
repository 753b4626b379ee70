"""The Prometheus source: the configured PromQL queries over the release window, as series.

``fetch_prometheus_series`` reads each query with the HTTP API's range query (``POST
/api/v1/query_range``), in requests of at most 10,000 points on one step grid, and returns one
``Series`` per series answered, id ``<query name>{label=value,...}``; NaN and ±Inf points are
dropped. HTTP and retries (urllib3's ``Retry``; ``REGBOT_PROMETHEUS_RETRY_SCALE`` scales the
waits) live in ``prometheus_http``. Errors are one-line ``InputError`` naming the query.

Design (step and chunks, series ids, values, errors, retries): docs/design/sources_prometheus.md
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import urllib3

from regbot.bot.config import PrometheusQuery, PrometheusSource
from regbot.bot.sources.prometheus_http import (
    PrometheusRetry,
    pool_manager,
    post_form,
    prometheus_retry,
)
from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_files import normalise_points

MAX_POINTS_PER_REQUEST = 10_000  # Prometheus refuses more than 11,000 points per series
MAX_POINTS_PER_SERIES = 100_000  # beyond this the step widens instead of sending more requests
QUERY_RANGE_PATH = "/api/v1/query_range"


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """One ``query_range`` request: evaluation times ``start_ms, start_ms + step_ms, ... ≤ end_ms``."""

    start_ms: int
    end_ms: int
    step_ms: int

    @property
    def points(self) -> int:
        return (self.end_ms - self.start_ms) // self.step_ms + 1


def query_step_s(step_s: float, start_s: float, end_s: float) -> float:
    """The step to query with: the configured one, unless the window would then need more than
    ``MAX_POINTS_PER_SERIES`` points per series; then ``ceil((end - start) / MAX_POINTS_PER_SERIES)``
    whole seconds. (Applied only when needed, so a sub-second step over a short window stays.)"""
    if (end_s - start_s) / step_s + 1 <= MAX_POINTS_PER_SERIES:
        return step_s
    return max(step_s, float(math.ceil((end_s - start_s) / MAX_POINTS_PER_SERIES)))


def plan_requests(start_s: float, end_s: float, step_s: float) -> list[RangeRequest]:
    """The requests that cover ``[start_s, end_s]`` at ``step_s`` (already chosen by
    ``query_step_s``), each of at most ``MAX_POINTS_PER_REQUEST`` points, on one grid and without
    a shared point. Times are whole milliseconds: the start rounded up and the end rounded down,
    so every point lies inside the window; the step is at least 1 ms."""
    start_ms = math.ceil(round(start_s * 1000, 6))
    end_ms = math.floor(round(end_s * 1000, 6))
    step_ms = max(1, round(step_s * 1000))
    if end_ms < start_ms:
        return []
    last = (end_ms - start_ms) // step_ms  # index of the last grid point
    return [
        RangeRequest(
            start_ms + first * step_ms,
            start_ms + min(first + MAX_POINTS_PER_REQUEST - 1, last) * step_ms,
            step_ms,
        )
        for first in range(0, last + 1, MAX_POINTS_PER_REQUEST)
    ]


def fetch_prometheus_series(
    source: PrometheusSource,
    start_s: float,
    end_s: float,
    *,
    retry: PrometheusRetry | None = None,
) -> list[Series]:
    """Every series each configured query answers over ``[start_s, end_s]`` (epoch seconds), in
    query order and then by id; see the module docstring for steps, ids, values and errors.
    ``retry`` defaults to ``prometheus_retry()`` (waits scaled by the environment)."""
    if not (math.isfinite(start_s) and math.isfinite(end_s)) or end_s < start_s:
        raise InputError(
            "prometheus window", "finite times with end not before start", (start_s, end_s)
        )
    endpoint = source.url.rstrip("/") + QUERY_RANGE_PATH
    requests = plan_requests(start_s, end_s, query_step_s(source.step_s, start_s, end_s))
    retry = prometheus_retry() if retry is None else retry
    with pool_manager(source.url, source.timeout_s, retry) as pool:
        return _fetch_queries(pool, retry, source, endpoint, requests)


def _fetch_queries(
    pool: urllib3.PoolManager,
    retry: PrometheusRetry,
    source: PrometheusSource,
    endpoint: str,
    requests: list[RangeRequest],
) -> list[Series]:
    """Each query's ``requests`` in turn, its answers joined into series."""
    series: list[Series] = []
    for query in source.queries:
        where = f"prometheus query {query.name!r} ({endpoint})"
        points: dict[tuple[tuple[str, str], ...], list[tuple[np.ndarray, np.ndarray]]] = {}
        for request in requests:
            form = {
                "query": query.query,
                "start": _seconds_text(request.start_ms),
                "end": _seconds_text(request.end_ms),
                "step": f"{request.step_ms}ms",
                "timeout": f"{max(1, round(source.timeout_s * 1000))}ms",
            }
            answer = post_form(pool, retry, endpoint, form, source.timeout_s, where)
            for metric, times, values in _matrix(answer, where):
                points.setdefault(metric, []).append((times, values))
        series.extend(_query_series(query, points, where))
    return series


def _seconds_text(ms: int) -> str:
    """Whole milliseconds as decimal seconds, exactly (``1700000000.250``)."""
    return f"{ms // 1000}.{ms % 1000:03d}"


# --- answers to series ------------------------------------------------------------------------

Metric = tuple[tuple[str, str], ...]


def _matrix(data: object, where: str) -> list[tuple[Metric, np.ndarray, np.ndarray]]:
    """``(sorted labels, times, values)`` of each series of a ``matrix`` answer; ±Inf become NaN
    so that ``normalise_points`` drops them with the NaN points."""
    expected = 'a "matrix" answer of {"metric": {...}, "values": [[time, "value"], ...]} series'
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        found = data.get("resultType") if isinstance(data, dict) else data
        raise InputError(where, expected, found)
    result = data.get("result")
    if not isinstance(result, list):
        raise InputError(where, expected, result)
    rows = []
    for item in result:
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
            raise InputError(where, expected, item)
        if item.get("histograms"):
            raise InputError(
                where, "float samples (turn native histograms into numbers, e.g. histogram_sum)"
            )
        samples = item.get("values") or []
        try:
            times = np.array([sample[0] for sample in samples], dtype=np.float64)
            values = np.array([sample[1] for sample in samples], dtype=np.float64)
        except (TypeError, ValueError, IndexError, KeyError):
            raise InputError(where, expected, item) from None
        values[np.isinf(values)] = np.nan
        metric = tuple(sorted((str(k), str(v)) for k, v in item["metric"].items()))
        rows.append((metric, times, values))
    return rows


def _query_series(
    query: PrometheusQuery,
    points: dict[Metric, list[tuple[np.ndarray, np.ndarray]]],
    where: str,
) -> list[Series]:
    """One ``Series`` per label set a query answered with, across all its requests."""
    names = {dict(metric).get("__name__") for metric in points}
    keep_name = len(names) > 1
    series = []
    for metric, parts in points.items():
        labels = {k: v for k, v in metric if keep_name or k != "__name__"}
        series_id = series_id_for(query.name, labels)
        times, values = normalise_points(
            np.concatenate([times for times, _ in parts]),
            np.concatenate([values for _, values in parts]),
            where=f"{where}: {series_id}",
        )
        if times.size:
            series.append(Series(series_id, query.kind, times, values, query.unit, labels))
    return sorted(series, key=lambda item: item.id)


def series_id_for(name: str, labels: dict[str, str]) -> str:
    """``name{a=1,b=2}`` with labels sorted by name; ``name`` alone when there are none."""
    if not labels:
        return name
    return name + "{" + ",".join(f"{k}={labels[k]}" for k in sorted(labels)) + "}"
