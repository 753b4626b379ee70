"""HTTP for the Prometheus source: one urllib3 pool per fetch, its retries, and Prometheus'
answers decoded or turned into one-line ``InputError``s.

Choices made here:

* **Retries** are urllib3's (``urllib3.PoolManager`` with ``PrometheusRetry``, a
  ``urllib3.util.Retry``), as the GitHub client's are (PyGithub's ``GithubRetry``): a connection
  that fails (refused, reset, broken answer) and an HTTP 429, 502, 503 or 504 answer are tried
  again ``RETRIES`` (2) times, POST included, after urllib3's exponential backoff (no wait before
  the first retry, ``BACKOFF_FACTOR_S``·2 = 2 s before the second) or the answer's
  ``Retry-After`` (at most ``MAX_RETRY_AFTER_S``, 60 s); the final error says how many attempts
  were made. Other answers are not retried: a 4xx (400 bad PromQL, 422 execution error) or a 500
  (Prometheus' ``internal`` error) would come back the same.
* **Timeouts** are ``sources.prometheus.timeout`` for connecting and for each read, and are not
  retried, nor is Prometheus' own ``errorType: timeout`` answer (a 503): the same query would
  take as long again, and three tries would triple the wait.
* **Waits in tests.** ``REGBOT_PROMETHEUS_RETRY_SCALE`` (a number ≥ 0, default 1) multiplies
  every retry wait (backoff and ``Retry-After``), as ``REGBOT_GITHUB_RETRY_SCALE`` does for the
  GitHub client; tests set it to 0 to retry without sleeping.
* **Messages.** Every failure is an ``InputError`` naming the query and the endpoint (``where``)
  and what was expected. urllib3 warns on the ``urllib3.connectionpool`` logger about each
  connection it retries; those warnings are filtered out for Prometheus hosts, since the final
  error says it all.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.parse
from collections.abc import Mapping
from types import TracebackType
from typing import Self

import urllib3
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import (
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ResponseError,
)
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from regbot import __version__
from regbot.bot.sources.http_get import QuietRetryWarnings, ScaledRetry, is_timeout, wait_scale
from regbot.errors import InputError

RETRIES = 2  # three attempts at most
BACKOFF_FACTOR_S = 1.0  # urllib3: no wait before the first retry, 2 s before the second
RETRY_STATUSES = frozenset({429, 502, 503, 504})

RETRY_SCALE_ENV = "REGBOT_PROMETHEUS_RETRY_SCALE"


def retry_scale(environ: Mapping[str, str] = os.environ) -> float:
    """``$REGBOT_PROMETHEUS_RETRY_SCALE`` as a number (1 when unset or empty)."""
    return wait_scale(RETRY_SCALE_ENV, environ)


class PrometheusRetry(ScaledRetry):
    """The HTTP sources' retry policy (``ScaledRetry``) with Prometheus' own ``errorType:
    timeout`` answer also never tried again."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        if response is not None and _error_type(response.data) == "timeout":
            # raise_on_status=False: urllib3 hands this answer back instead of retrying.
            reason = ResponseError("Prometheus' query timed out")
            raise MaxRetryError(_pool, url or "", reason)  # type: ignore[arg-type]  # as urllib3
        return super().increment(method, url, response, error, _pool, _stacktrace)


def prometheus_retry(environ: Mapping[str, str] = os.environ) -> PrometheusRetry:
    """The retry policy of every request: ``RETRIES`` retries of connection failures, broken
    answers and ``RETRY_STATUSES`` answers, waits scaled by ``$REGBOT_PROMETHEUS_RETRY_SCALE``."""
    scale = retry_scale(environ)
    return PrometheusRetry(
        total=RETRIES,
        connect=RETRIES,
        read=RETRIES,
        status=RETRIES,
        backoff_factor=BACKOFF_FACTOR_S * scale,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET", "POST"}),
        respect_retry_after_header=True,
        raise_on_status=False,
        wait_scale=scale,
    )


_RETRY_WARNINGS = QuietRetryWarnings()


def pool_manager(url: str, timeout_s: float, retry: PrometheusRetry) -> urllib3.PoolManager:
    """A pool for one fetch (its requests reuse connections), retrying with ``retry`` and
    waiting ``timeout_s`` at most to connect and for each read."""
    host = urllib3.util.parse_url(url).host
    if host:
        _RETRY_WARNINGS.hosts.add(host)
        logging.getLogger("urllib3.connectionpool").addFilter(_RETRY_WARNINGS)
    return urllib3.PoolManager(
        retries=retry,
        timeout=urllib3.Timeout(connect=timeout_s, read=timeout_s),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
            "User-Agent": f"regbot/{__version__}",
        },
    )


def post_form(
    pool: urllib3.PoolManager,
    retry: PrometheusRetry,
    endpoint: str,
    form: Mapping[str, str],
    timeout_s: float,
    where: str,
) -> object:
    """The ``data`` of the ``status: success`` answer to one form POST, retries included; an
    ``InputError`` at ``where`` otherwise."""
    body = urllib.parse.urlencode(form).encode("utf-8")
    try:
        response = pool.request("POST", endpoint, body=body)
    except MaxRetryError as error:
        reason = error.reason
        tries = _tries(_attempts(retry))
        if isinstance(reason, NewConnectionError):
            raise InputError(
                where, "a reachable Prometheus server" + tries, _reason_text(reason)
            ) from None
        raise InputError(where, "a complete answer from Prometheus" + tries, repr(reason)) from None
    except HTTPError as error:
        if is_timeout(error):
            raise InputError(
                where, f"an answer within {timeout_s:g} s (sources.prometheus.timeout)"
            ) from None
        raise InputError(where, "a complete answer from Prometheus", repr(error)) from None
    earlier = response.retries.history if response.retries is not None else ()
    return _answer(response.status, response.data, where, len(earlier) + 1)


def _attempts(retry: Retry) -> int:
    """The attempts ``retry`` allows a connection or read failure."""
    counts = [c for c in (retry.total, retry.connect, retry.read) if type(c) is int]
    return min(counts, default=0) + 1


def _tries(attempts: int) -> str:
    return f" ({attempts} attempts)" if attempts > 1 else ""


def _reason_text(reason: BaseException) -> str:
    """urllib3's ``HTTPConnection(host=..., port=...): Failed to establish a new connection:
    [Errno 111] Connection refused`` without the connection object: the URL is in ``where``."""
    text = str(reason)
    return text.split("): ", 1)[1] if "): " in text else text


def _error_type(body: bytes) -> object:
    """``errorType`` of a Prometheus JSON error answer; None for anything else."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return payload.get("errorType") if isinstance(payload, dict) else None


def _answer(status: int, body: bytes, where: str, attempts: int) -> object:
    """The ``data`` of a successful answer; Prometheus' own error otherwise, with the number of
    ``attempts`` when the answer came after retries."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        payload = None
    if not isinstance(payload, dict):
        text = body[:200].decode("utf-8", "replace").strip()
        expected = f"a JSON answer from the Prometheus HTTP API (HTTP {status})"
        raise InputError(where, expected + _tries(attempts), text)
    if 200 <= status < 300 and payload.get("status") == "success":
        return payload.get("data")
    said = f"{payload.get('errorType', 'error')}: {payload.get('error', 'no error message')}"
    # Prometheus' message goes in `expected`, which InputError does not shorten.
    expected = f"a successful answer, Prometheus said (HTTP {status}) {said}"
    raise InputError(where, expected + _tries(attempts))
