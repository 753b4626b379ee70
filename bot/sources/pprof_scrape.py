"""Pulling CPU profiles from pprof HTTP endpoints (Go's net/http/pprof, and the profiling agents
that serve the same ``/debug/pprof/profile``): one round asks every target at once and parses
each answer with the pprof reader.

Rules:

* **Request.** ``GET <target url>?seconds=N``: ``seconds`` joins the target's own query string.
  The endpoint profiles for N seconds and only then answers, so the read may take
  ``N + timeout`` (``sources.scrape.timeout``, also the connect timeout).
* **Retries** (``bot/sources/http_get.py``): a failed connection and HTTP 500, 502, 503, 504 or
  429 are tried ``retries`` more times with backoff. 500 is among them because Go's handler
  answers 500 "cpu profiling already in use" while another CPU profile is being taken, which a
  later attempt gets past; a timeout is not retried.
* **Concurrency.** The targets of a round are asked at once (threads, at most ``MAX_PARALLEL``),
  so a round takes about N seconds however many targets there are.
* **Parsing.** An empty answer or one in text (an HTML page, a proxy's message) is refused as
  such. Each answer is parsed (``profiles.pprof.parse_pprof``: the profile's own
  ``time_nanos`` is its time; a profile without one is refused, as nothing else dates it) into
  a stack table of its own, so a bad answer leaves nothing behind in the store's table.
* **Outcome.** One ``TargetResult`` per target, in the targets' order: the parsed samples, or
  the one-line error (unreachable, timed out, HTTP status, not a pprof profile). A target's
  failure never stops the others.
"""

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import urllib3

from regbot.bot.scrape_targets import ScrapeTarget
from regbot.bot.sources.http_get import GetPolicy, get, pool_manager
from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples
from regbot.profiles.pprof import parse_pprof
from regbot.profiles.stacks import StackTable

MAX_PARALLEL = 32
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
RETRY_SCALE_ENV = "REGBOT_SCRAPE_RETRY_SCALE"


@dataclass(frozen=True, slots=True)
class ScrapeRequest:
    """What every target of a round is asked: a profile of ``seconds``, answered within
    ``seconds + timeout_s``, ``retries`` more attempts, waits multiplied by ``wait_scale``."""

    seconds: int
    timeout_s: float
    retries: int
    wait_scale: float = 1.0
    options: ParseOptions = ParseOptions()


@dataclass(frozen=True, slots=True)
class TargetResult:
    """One target's answer: ``samples`` (against ``table``), the body's size and SHA-256, or
    ``error`` (the one line to print)."""

    target: ScrapeTarget
    url: str
    samples: ProfileSamples | None = None
    table: StackTable | None = None
    size: int = 0
    digest: str = ""
    error: str | None = None

    @property
    def where(self) -> str:
        return f"scrape {self.target.name} ({self.url})"


def profile_url(target: ScrapeTarget, seconds: int) -> str:
    """The target's URL with ``seconds=N`` added to its query string."""
    parts = urllib.parse.urlsplit(target.url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    query.append(("seconds", str(seconds)))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def policy_of(request: ScrapeRequest) -> GetPolicy:
    return GetPolicy(
        connect_timeout_s=request.timeout_s,
        read_timeout_s=request.seconds + request.timeout_s,
        retries=request.retries,
        retry_statuses=RETRY_STATUSES,
        server="pprof endpoint",
        timeout_hint="seconds + sources.scrape.timeout",
        wait_scale=request.wait_scale,
    )


def scrape_round(targets: Sequence[ScrapeTarget], request: ScrapeRequest) -> list[TargetResult]:
    """Every target's profile, asked at once (module rules), in the targets' order."""
    if not targets:
        return []
    policy = policy_of(request)
    hosts = {urllib.parse.urlsplit(t.url).hostname or "" for t in targets}
    pool = pool_manager(policy, hosts)
    try:
        workers = min(len(targets), MAX_PARALLEL)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="regbot-scrape") as run:
            return list(run.map(lambda t: scrape_one(pool, t, request, policy), targets))
    finally:
        pool.clear()


def _looks_like_pprof(body: bytes, where: str) -> None:
    """An empty answer, or text (an HTML page, an error message), is no profile: said as such
    rather than as the protobuf decoder's complaint."""
    expected = "a pprof profile (gzip-compressed protobuf, as /debug/pprof/profile serves)"
    if not body:
        raise InputError(where, expected, "an empty answer")
    if body[:2] != b"\x1f\x8b":
        try:
            text = body[:200].decode("utf-8")
        except UnicodeDecodeError:
            return  # binary: perhaps an uncompressed profile, which the reader decides
        if all(c.isprintable() or c.isspace() for c in text):
            raise InputError(where, expected, " ".join(text.split())[:60])


def scrape_one(
    pool: urllib3.PoolManager, target: ScrapeTarget, request: ScrapeRequest, policy: GetPolicy
) -> TargetResult:
    """One target's profile, fetched and parsed; its error as one line when either fails."""
    url = profile_url(target, request.seconds)
    result = TargetResult(target, url)
    try:
        body = get(pool, url, policy, result.where)
        _looks_like_pprof(body, result.where)
        table = StackTable()
        samples = parse_pprof(
            body, source=result.where, table=table, at_s=None, options=request.options
        )
    except InputError as error:
        return TargetResult(target, url, error=str(error))
    return TargetResult(target, url, samples, table, len(body), hashlib.sha256(body).hexdigest())
