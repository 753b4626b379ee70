"""One HTTP GET for the live profile sources (``pprof_scrape``, ``pyroscope``): urllib3, its
retries and timeouts, and every failure one ``InputError`` line.

Rules:

* **Retries** are urllib3's (a ``Retry`` on the pool): a connection that fails (refused, reset,
  closed before an answer) and an answer whose status the caller lists (``retry_statuses``) are
  tried again ``retries`` times, after urllib3's exponential backoff (factor
  ``BACKOFF_FACTOR_S``, 1 s: no wait before the first retry, 2 s before the second, 4 s before
  the third) or the answer's ``Retry-After`` (at most ``MAX_RETRY_AFTER_S``, 60 s). Other
  answers are not retried: a 404 or a 400 would come back the same.
* **Timeouts**: ``connect_timeout_s`` to connect, ``read_timeout_s`` for each read. A timeout is
  not tried again: the same request would wait as long again, and a retry would multiply the
  wait of a run that has other targets to finish.
* **Waits in tests.** An environment variable the caller names (``REGBOT_SCRAPE_RETRY_SCALE``,
  ``REGBOT_PYROSCOPE_RETRY_SCALE``; a number >= 0, default 1) multiplies every wait, as
  ``REGBOT_PROMETHEUS_RETRY_SCALE`` does for Prometheus; tests set it to 0.
* **Messages.** Every failure is an ``InputError`` at the caller's ``where`` (the target and its
  URL), saying what was expected and how many attempts were made. urllib3's warning about each
  retried connection is dropped for these hosts: the final error says it all.
* **Size.** An answer larger than ``MAX_BODY_BYTES`` (256 MiB) is refused, not read whole.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import urllib3
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    MaxRetryError,
    NewConnectionError,
    ReadTimeoutError,
)
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from regbot import __version__
from regbot.errors import InputError

BACKOFF_FACTOR_S = 1.0
MAX_RETRY_AFTER_S = 60.0
MAX_BODY_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class GetPolicy:
    """How one source asks: timeouts, retries, which statuses are worth a retry, and the words
    its messages use (``server``: "pprof endpoint"; ``timeout_hint``: the setting that made
    the read timeout)."""

    connect_timeout_s: float
    read_timeout_s: float
    retries: int
    retry_statuses: frozenset[int]
    server: str
    timeout_hint: str
    wait_scale: float = 1.0


def wait_scale(variable: str, environ: Mapping[str, str] = os.environ) -> float:
    """``$variable`` as a finite number >= 0 (1 when unset or empty)."""
    text = (environ.get(variable) or "").strip()
    if not text:
        return 1.0
    try:
        scale = float(text)
    except ValueError:
        scale = -1.0
    if not scale >= 0 or scale == math.inf:
        raise InputError(f"${variable}", "a finite number >= 0", text)
    return scale


class ScaledRetry(Retry):
    """urllib3's ``Retry`` that never retries a timeout (the client's own), caps a
    ``Retry-After`` wait at ``max_retry_after_s`` and multiplies it by ``wait_scale``, like the
    backoff. The HTTP sources' one retry policy (the Prometheus client adds its own answers)."""

    def __init__(
        self,
        *args: Any,
        wait_scale: float = 1.0,
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
        **kw: Any,
    ) -> None:
        super().__init__(*args, **kw)
        self.wait_scale = wait_scale
        self.max_retry_after_s = max_retry_after_s

    def new(self, **kw: Any) -> Self:
        kw.setdefault("wait_scale", self.wait_scale)
        kw.setdefault("max_retry_after_s", self.max_retry_after_s)
        return super().new(**kw)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        if error is not None and is_timeout(error):
            raise error.with_traceback(_stacktrace)
        return super().increment(method, url, response, error, _pool, _stacktrace)

    def sleep_for_retry(self, response: BaseHTTPResponse) -> bool:
        retry_after = self.get_retry_after(response)
        if retry_after is None:
            return False
        time.sleep(min(retry_after, self.max_retry_after_s) * self.wait_scale)
        return True


class QuietRetryWarnings(logging.Filter):
    """Drops urllib3's warning about each retried connection to the hosts listed."""

    def __init__(self) -> None:
        super().__init__()
        self.hosts: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        marker = record.__dict__.get("__urllib3-retry-warning")
        return not (isinstance(marker, dict) and marker.get("host") in self.hosts)


_RETRY_WARNINGS = QuietRetryWarnings()


def pool_manager(policy: GetPolicy, hosts: set[str]) -> urllib3.PoolManager:
    """A pool for the requests of one round (thread-safe), retrying and timing out by
    ``policy``; urllib3's retry warnings for ``hosts`` are silenced."""
    _RETRY_WARNINGS.hosts.update(hosts)
    logging.getLogger("urllib3.connectionpool").addFilter(_RETRY_WARNINGS)
    retry = ScaledRetry(
        total=policy.retries,
        connect=policy.retries,
        read=policy.retries,
        status=policy.retries,
        other=0,
        backoff_factor=BACKOFF_FACTOR_S * policy.wait_scale,
        status_forcelist=policy.retry_statuses,
        allowed_methods=frozenset({"GET"}),
        respect_retry_after_header=True,
        raise_on_status=False,
        wait_scale=policy.wait_scale,
    )
    return urllib3.PoolManager(
        retries=retry,
        timeout=urllib3.Timeout(connect=policy.connect_timeout_s, read=policy.read_timeout_s),
        headers={"User-Agent": f"regbot/{__version__}"},
    )


def get(pool: urllib3.PoolManager, url: str, policy: GetPolicy, where: str) -> bytes:
    """The body of a 2xx answer to ``GET url``, retries included; an ``InputError`` at
    ``where`` otherwise (module rules)."""
    tries = f" ({policy.retries + 1} attempts)" if policy.retries else ""
    try:
        response = pool.request("GET", url, preload_content=False)
    except MaxRetryError as error:
        reason = error.reason
        if isinstance(reason, NewConnectionError):
            raise InputError(
                where, f"a reachable {policy.server}{tries}", _reason(reason)
            ) from None
        expected = f"a complete answer from the {policy.server}{tries}"
        raise InputError(where, expected, _reason(reason)) from None
    except HTTPError as error:
        if is_timeout(error):
            expected = f"an answer within {policy.read_timeout_s:g} s ({policy.timeout_hint})"
            if isinstance(error, ConnectTimeoutError):
                expected = f"a connection within {policy.connect_timeout_s:g} s"
            raise InputError(where, expected) from None
        raise InputError(
            where, f"a complete answer from the {policy.server}", _reason(error)
        ) from None
    try:
        body = _read_body(response, where, policy)
    finally:
        response.release_conn()
    if not 200 <= response.status < 300:
        earlier = response.retries.history if response.retries is not None else ()
        attempts = f" ({len(earlier) + 1} attempts)" if earlier else ""
        text = body[:300].decode("utf-8", "replace").strip().splitlines()
        said = f": {text[0]}" if text else ""
        expected = f"HTTP 200 from the {policy.server}{attempts}"
        raise InputError(where, expected, f"HTTP {response.status}{said}")
    return body


def _read_body(response: BaseHTTPResponse, where: str, policy: GetPolicy) -> bytes:
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.stream(1 << 16):
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise InputError(where, f"an answer of at most {MAX_BODY_BYTES >> 20} MiB")
            chunks.append(chunk)
    except HTTPError as error:
        if is_timeout(error):
            expected = f"an answer within {policy.read_timeout_s:g} s ({policy.timeout_hint})"
            raise InputError(where, expected) from None
        raise InputError(
            where, f"a complete answer from the {policy.server}", _reason(error)
        ) from None
    return b"".join(chunks)


def is_timeout(error: BaseException) -> bool:
    """A read or connect timeout (a refused connection is a ``NewConnectionError``, which
    urllib3 makes a ``ConnectTimeoutError`` too, but it is no timeout)."""
    return isinstance(error, ReadTimeoutError | ConnectTimeoutError) and not isinstance(
        error, NewConnectionError
    )


def _reason(reason: BaseException | None) -> str:
    """urllib3's reason without the connection object (the URL is in ``where``):
    ``[Errno 111] Connection refused``."""
    text = str(reason)
    return text.split("): ", 1)[1] if "): " in text else text
