"""A fake of GitHub's REST API for one repository: a real HTTP server on 127.0.0.1 with its state
in memory, so regbot's GitHub adapter (and `regbot run` in a subprocess) can be tested end to end.

What it speaks (JSON shapes follow GitHub's REST reference, with the fields PyGithub reads):

* ``GET /user``, ``GET /rate_limit``, ``GET /repos/{o}/{r}``
* pulls: ``GET /repos/{o}/{r}/pulls``, ``GET .../pulls/{n}``, ``GET .../commits/{sha}/pulls``
  (list items carry ``merged_at`` but no ``merged`` key, as on GitHub)
* commits: ``GET .../commits/{ref}``, ``GET .../compare/{base}...{head}`` (commits paginated)
* issue comments: list (``since``), create, get, edit, delete; reactions on comments: list
  (``content`` filter) and create; every comment carries its ``reactions`` summary
* ``POST .../check-runs``, ``GET .../commits/{ref}/check-runs``, ``POST .../statuses/{sha}``,
  ``GET .../commits/{ref}/statuses``
* deployments (filters ``sha``, ``ref``, ``task``, ``environment``; newest id first, as on
  GitHub) and deployment statuses (newest first)

Protocol details kept: ``per_page`` (default 30, at most 100) and ``page`` with a ``Link``
header (``next``/``last`` while there are more pages, ``prev``/``first`` after the first);
``X-RateLimit-*`` headers on every response; the token check (``Authorization: token X`` or
``Bearer X``, else 401 ``Bad credentials``); 404 ``Not Found`` for unknown routes and other
repositories. An optional ``path_prefix`` (``/api/v3``) imitates GitHub Enterprise.

Fault injection, applied after the token check in the order the faults were added:
``fail_next`` (5xx), ``secondary_rate_limit_next`` (403 with the secondary-rate-limit message
and ``Retry-After``), and persistent ``forbid`` rules (403 ``Resource not accessible by
integration``). Every request is logged with its arrival time (``time.monotonic()``) and the
status answered, for assertions about what the client sent.

Times in the state are epoch seconds from ``clock`` (``time.time`` unless given), written as
ISO 8601 with second resolution like GitHub.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

DOCS = "https://docs.github.com/rest"
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID."
)
REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
CHECK_CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)
STATUS_STATES = ("error", "failure", "pending", "success")
DEPLOYMENT_STATES = ("error", "failure", "inactive", "in_progress", "queued", "pending", "success")
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
RATE_LIMIT = 5000


def iso(epoch_s: float) -> str:
    """GitHub's time format: UTC, second resolution, ``Z``."""
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request as the server saw it: ``path`` without the prefix and the query string."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    time_s: float
    body: Any = None


@dataclass(slots=True)
class _Commit:
    sha: str
    message: str
    author: str
    time_s: float


@dataclass(slots=True)
class _Pull:
    number: int
    title: str
    head_sha: str
    head_ref: str
    base_ref: str
    author: str
    state: str
    merged: bool
    commits: tuple[str, ...]
    merge_commit_sha: str | None
    created_s: float
    merged_s: float | None


@dataclass(slots=True)
class _Comment:
    id: int
    number: int
    body: str
    user: str
    created_s: float
    updated_s: float


@dataclass(slots=True)
class _Reaction:
    id: int
    comment_id: int
    content: str
    user: str
    created_s: float


@dataclass(slots=True)
class _Deployment:
    id: int
    sha: str
    ref: str
    task: str
    environment: str
    description: str
    creator: str
    created_s: float


@dataclass(slots=True)
class _DeploymentStatus:
    id: int
    deployment_id: int
    state: str
    description: str
    creator: str
    created_s: float


@dataclass(slots=True)
class _Fault:
    kind: str  # "status" or "secondary"
    remaining: int
    status: int
    retry_after: float | None
    method: str | None
    path: re.Pattern[str] | None

    def matches(self, method: str, path: str) -> bool:
        return (
            self.remaining > 0
            and (self.method is None or self.method == method)
            and (self.path is None or self.path.search(path) is not None)
        )


@dataclass(frozen=True, slots=True)
class _Rule:
    method: str
    path: re.Pattern[str]
    message: str


@dataclass(slots=True)
class _Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any


@dataclass(slots=True)
class _Response:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class _ApiError(Exception):
    """Raised by a route: answered as ``{"message": ..., "documentation_url": ...}``."""

    def __init__(self, status: int, message: str, errors: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors


_REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"


class FakeGitHub:
    """GitHub's REST API for the repository ``repository`` (``owner/name``), served on
    ``127.0.0.1`` at a free port once started (``with FakeGitHub() as fake:`` or ``start()``)."""

    def __init__(
        self,
        repository: str = "octo/service",
        token: str = "fake-token",
        *,
        login: str = "regbot[bot]",
        path_prefix: str = "",
        default_branch: str = "main",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.owner, self.name = repository.split("/", 1)
        self.token = token
        self.login = login
        self.path_prefix = path_prefix.rstrip("/")
        self.default_branch = default_branch
        self.clock = clock
        self._lock = threading.RLock()
        self._ids = itertools.count(1001)
        self._history: list[str] = []
        self._commits: dict[str, _Commit] = {}
        self._pulls: dict[int, _Pull] = {}
        self._comments: dict[int, _Comment] = {}
        self._reactions: list[_Reaction] = []
        self._check_runs: list[dict[str, Any]] = []
        self._statuses: list[dict[str, Any]] = []
        self._deployments: dict[int, _Deployment] = {}
        self._deployment_statuses: list[_DeploymentStatus] = []
        self._faults: list[_Fault] = []
        self._forbidden: list[_Rule] = []
        self._log: list[LoggedRequest] = []
        self._used = 0
        self._reset_at = int(time.time()) + 3600
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._routes = self._route_table()

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> FakeGitHub:
        if self._server is not None:
            return self
        handler = _make_handler(self)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-github",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def root_url(self) -> str:
        """The server's root (``http://127.0.0.1:PORT``); web ``html_url``s point below it."""
        if self._server is None:
            raise RuntimeError("FakeGitHub is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        """What a client passes as the API base URL (root plus ``path_prefix``)."""
        return self.root_url + self.path_prefix

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    # ---------------------------------------------------------------- seeding

    def add_commit(
        self,
        sha: str,
        message: str | None = None,
        author: str = "alice",
        time_s: float | None = None,
    ) -> str:
        """Append ``sha`` to the default branch's history (the order ``compare`` walks)."""
        with self._lock:
            when = self.clock() if time_s is None else time_s
            self._commits[sha] = _Commit(sha, message or f"change {sha[:7]}", author, when)
            if sha not in self._history:
                self._history.append(sha)
            return sha

    def add_commits(self, shas: Iterable[str], start_s: float = 1_700_000_000.0) -> list[str]:
        """Append several commits, one minute apart from ``start_s``."""
        return [self.add_commit(sha, time_s=start_s + 60.0 * i) for i, sha in enumerate(shas)]

    def add_pull(
        self,
        number: int,
        title: str,
        head_sha: str,
        commits: Sequence[str] = (),
        author: str = "alice",
        *,
        state: str = "open",
        merged: bool = False,
        head_ref: str | None = None,
        base_ref: str = "main",
        merge_commit_sha: str | None = None,
        created_s: float | None = None,
    ) -> int:
        """A pull request; ``head_sha``, ``commits`` and ``merge_commit_sha`` all list it in
        ``commits/{sha}/pulls``. ``merged`` implies ``state="closed"``."""
        with self._lock:
            now = self.clock() if created_s is None else created_s
            self._pulls[number] = _Pull(
                number=number,
                title=title,
                head_sha=head_sha,
                head_ref=head_ref or f"{author}/change-{number}",
                base_ref=base_ref,
                author=author,
                state="closed" if merged else state,
                merged=merged,
                commits=tuple(commits),
                merge_commit_sha=merge_commit_sha,
                created_s=now,
                merged_s=now if merged else None,
            )
            return number

    def add_comment(
        self,
        number: int,
        body: str,
        user: str = "alice",
        created_s: float | None = None,
        updated_s: float | None = None,
    ) -> int:
        """An issue comment on pull ``number``; returns its id."""
        with self._lock:
            if number not in self._pulls:
                raise KeyError(f"no pull #{number}: add_pull first")
            created = self.clock() if created_s is None else created_s
            comment_id = next(self._ids)
            updated = created if updated_s is None else updated_s
            self._comments[comment_id] = _Comment(comment_id, number, body, user, created, updated)
            return comment_id

    def add_reaction(self, comment_id: int, content: str, user: str) -> int:
        with self._lock:
            if comment_id not in self._comments:
                raise KeyError(f"no comment {comment_id}")
            if content not in REACTION_CONTENTS:
                raise ValueError(f"reaction content must be one of {REACTION_CONTENTS}")
            reaction_id = next(self._ids)
            self._reactions.append(_Reaction(reaction_id, comment_id, content, user, self.clock()))
            return reaction_id

    def add_deployment(
        self,
        sha: str,
        environment: str = "production",
        created_at: float | None = None,
        state: str | None = "success",
        *,
        ref: str = "main",
        task: str = "deploy",
        creator: str = "deployer",
    ) -> int:
        """A deployment (and, unless ``state`` is None, one status with that state at the same
        time); returns the deployment id. Ids increase in call order, whatever ``created_at``."""
        with self._lock:
            when = self.clock() if created_at is None else created_at
            deployment_id = next(self._ids)
            self._deployments[deployment_id] = _Deployment(
                deployment_id, sha, ref, task, environment, "", creator, when
            )
            if state is not None:
                self.add_deployment_status(deployment_id, state, when)
            return deployment_id

    def add_deployment_status(
        self, deployment_id: int, state: str, created_at: float | None = None
    ) -> int:
        with self._lock:
            if deployment_id not in self._deployments:
                raise KeyError(f"no deployment {deployment_id}")
            if state not in DEPLOYMENT_STATES:
                raise ValueError(f"deployment state must be one of {DEPLOYMENT_STATES}")
            status_id = next(self._ids)
            when = self.clock() if created_at is None else created_at
            self._deployment_statuses.append(
                _DeploymentStatus(status_id, deployment_id, state, "", "deployer", when)
            )
            return status_id

    # ---------------------------------------------------------------- faults

    def fail_next(
        self, n: int, status: int = 500, *, method: str | None = None, path: str | None = None
    ) -> None:
        """Answer the next ``n`` requests (matching ``method``/``path`` regex when given) with
        ``status`` before looking at them."""
        with self._lock:
            pattern = re.compile(path) if path else None
            self._faults.append(_Fault("status", n, status, None, method, pattern))

    def secondary_rate_limit_next(
        self,
        n: int,
        retry_after: float | None = 1,
        *,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """Answer the next ``n`` requests with GitHub's secondary rate limit 403, with a
        ``Retry-After`` header unless ``retry_after`` is None."""
        with self._lock:
            pattern = re.compile(path) if path else None
            self._faults.append(_Fault("secondary", n, 403, retry_after, method, pattern))

    def forbid(
        self,
        method: str,
        path_regex: str,
        message: str = "Resource not accessible by integration",
    ) -> None:
        """From now on, answer ``method`` requests whose path matches ``path_regex`` (searched in
        the path without prefix and query) with 403 ``message``."""
        with self._lock:
            self._forbidden.append(_Rule(method.upper(), re.compile(path_regex), message))

    def allow_all(self) -> None:
        with self._lock:
            self._forbidden.clear()
            self._faults.clear()

    # ---------------------------------------------------------------- inspection

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._log)

    def requests_to(self, method: str, path_regex: str) -> list[LoggedRequest]:
        pattern = re.compile(path_regex)
        return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()

    def comments(self, number: int | None = None) -> list[dict[str, Any]]:
        """The comments (as the API shows them), oldest first, of one pull or of all."""
        with self._lock:
            return [
                self._comment_json(c)
                for c in sorted(self._comments.values(), key=lambda c: c.id)
                if number is None or c.number == number
            ]

    @property
    def check_runs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(run) for run in self._check_runs]

    @property
    def statuses(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(status) for status in self._statuses]

    # ---------------------------------------------------------------- request handling

    def _handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw_body: bytes
    ) -> _Response:
        arrived = time.monotonic()
        split = urlsplit(raw_path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        path = split.path
        if self.path_prefix and path.startswith(self.path_prefix + "/"):
            path = path[len(self.path_prefix) :]
        elif self.path_prefix:
            path = "/__outside_prefix__" + path
        body: Any = None
        with self._lock:
            self._used += 1
            try:
                if raw_body:
                    try:
                        body = json.loads(raw_body)
                    except ValueError as error:
                        raise _ApiError(400, "Problems parsing JSON") from error
                response = self._respond(_Request(method, path, query, body), headers)
            except _ApiError as error:
                payload: dict[str, Any] = {
                    "message": error.message,
                    "documentation_url": DOCS,
                    "status": str(error.status),
                }
                if error.errors:
                    payload["errors"] = error.errors
                response = _Response(error.status, payload)
            self._log.append(LoggedRequest(method, path, query, response.status, arrived, body))
            response.headers.update(self._rate_limit_headers())
            return response

    def _rate_limit_headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(RATE_LIMIT),
            "X-RateLimit-Remaining": str(max(0, RATE_LIMIT - self._used)),
            "X-RateLimit-Reset": str(self._reset_at),
            "X-RateLimit-Used": str(min(self._used, RATE_LIMIT)),
            "X-RateLimit-Resource": "core",
        }

    def _respond(self, request: _Request, headers: dict[str, str]) -> _Response:
        authorization = headers.get("authorization", "")
        scheme, _, presented = authorization.partition(" ")
        if scheme.lower() not in ("token", "bearer") or presented.strip() != self.token:
            raise _ApiError(401, "Bad credentials")
        for fault in self._faults:
            if fault.matches(request.method, request.path):
                fault.remaining -= 1
                if fault.kind == "secondary":
                    extra = {}
                    if fault.retry_after is not None:
                        extra["Retry-After"] = _seconds_text(fault.retry_after)
                    return _Response(
                        403,
                        {
                            "message": SECONDARY_RATE_LIMIT_MESSAGE,
                            "documentation_url": "https://docs.github.com/rest/overview/"
                            "rate-limits-for-the-rest-api#about-secondary-rate-limits",
                        },
                        extra,
                    )
                raise _ApiError(fault.status, "Server Error")
        for rule in self._forbidden:
            if rule.method == request.method and rule.path.search(request.path):
                raise _ApiError(403, rule.message)
        for method, pattern, route in self._routes:
            match = pattern.fullmatch(request.path)
            if match is None or method != request.method:
                continue
            params = {k: unquote(v) for k, v in match.groupdict().items()}
            owner, repo = params.pop("owner", None), params.pop("repo", None)
            if owner is not None and (owner.lower(), str(repo).lower()) != (
                self.owner.lower(),
                self.name.lower(),
            ):
                raise _ApiError(404, "Not Found")
            return route(request, **params)
        raise _ApiError(404, "Not Found")

    def _route_table(self) -> list[tuple[str, re.Pattern[str], Callable[..., _Response]]]:
        comment = _REPO + r"/issues/comments/(?P<comment_id>\d+)"
        deployment = _REPO + r"/deployments/(?P<deployment_id>\d+)"
        table: list[tuple[str, str, Callable[..., _Response]]] = [
            ("GET", r"/user", self._get_user),
            ("GET", r"/rate_limit", self._get_rate_limit),
            ("GET", _REPO, self._get_repo),
            ("GET", _REPO + r"/pulls", self._list_pulls),
            ("GET", _REPO + r"/pulls/(?P<number>\d+)", self._get_pull),
            ("GET", _REPO + r"/commits/(?P<ref>[^/]+)", self._get_commit),
            ("GET", _REPO + r"/commits/(?P<ref>[^/]+)/pulls", self._list_commit_pulls),
            ("GET", _REPO + r"/commits/(?P<ref>[^/]+)/check-runs", self._list_check_runs),
            ("GET", _REPO + r"/commits/(?P<ref>[^/]+)/statuses", self._list_statuses),
            ("GET", _REPO + r"/compare/(?P<basehead>.+)", self._compare),
            ("GET", _REPO + r"/issues/(?P<number>\d+)/comments", self._list_comments),
            ("POST", _REPO + r"/issues/(?P<number>\d+)/comments", self._create_comment),
            ("GET", comment, self._get_comment),
            ("PATCH", comment, self._edit_comment),
            ("DELETE", comment, self._delete_comment),
            ("GET", comment + r"/reactions", self._list_reactions),
            ("POST", comment + r"/reactions", self._create_reaction),
            ("POST", _REPO + r"/check-runs", self._create_check_run),
            ("POST", _REPO + r"/statuses/(?P<sha>[^/]+)", self._create_status),
            ("GET", _REPO + r"/deployments", self._list_deployments),
            ("POST", _REPO + r"/deployments", self._create_deployment),
            ("GET", deployment, self._get_deployment),
            ("GET", deployment + r"/statuses", self._list_deployment_statuses),
            ("POST", deployment + r"/statuses", self._create_deployment_status),
        ]
        return [(method, re.compile(pattern), route) for method, pattern, route in table]

    # ---------------------------------------------------------------- pagination

    def _page(
        self, request: _Request, items: Sequence[Any], default_per_page: int = DEFAULT_PER_PAGE
    ) -> tuple[list[Any], dict[str, str]]:
        """One page of ``items`` and the ``Link`` header pointing at the others."""
        per_page = _positive_int(request.query.get("per_page"), default_per_page, "per_page")
        per_page = min(per_page, MAX_PER_PAGE)
        page = _positive_int(request.query.get("page"), 1, "page")
        last = max(1, math.ceil(len(items) / per_page))
        start = (page - 1) * per_page
        chosen = list(items[start : start + per_page])
        links = []

        def link(number: int, rel: str) -> str:
            query = {**request.query, "per_page": str(per_page), "page": str(number)}
            url = f"{self.api_url}{request.path}?{urlencode(query)}"
            return f'<{url}>; rel="{rel}"'

        if page > 1:
            links.append(link(page - 1, "prev"))
        if page < last:
            links.append(link(page + 1, "next"))
            links.append(link(last, "last"))
        if page > 1:
            links.append(link(1, "first"))
        return chosen, ({"Link": ", ".join(links)} if links else {})

    def _listing(
        self, request: _Request, items: Sequence[Any], default_per_page: int = DEFAULT_PER_PAGE
    ) -> _Response:
        chosen, headers = self._page(request, items, default_per_page)
        return _Response(200, chosen, headers)

    # ---------------------------------------------------------------- JSON shapes

    def _user_json(self, login: str) -> dict[str, Any]:
        user_id = zlib.crc32(login.encode()) % 10_000_000 + 1
        return {
            "login": login,
            "id": user_id,
            "node_id": f"U_{user_id}",
            "avatar_url": f"{self.root_url}/avatars/{login}",
            "url": f"{self.api_url}/users/{login}",
            "html_url": f"{self.root_url}/{login}",
            "type": "Bot" if login.endswith("[bot]") else "User",
            "site_admin": False,
        }

    def _repo_json(self) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{self.full_name}"
        return {
            "id": zlib.crc32(self.full_name.encode()),
            "node_id": "R_fake",
            "name": self.name,
            "full_name": self.full_name,
            "owner": self._user_json(self.owner),
            "private": False,
            "html_url": f"{self.root_url}/{self.full_name}",
            "description": None,
            "fork": False,
            "url": base,
            "pulls_url": base + "/pulls{/number}",
            "deployments_url": base + "/deployments",
            "default_branch": self.default_branch,
            "visibility": "public",
            "permissions": {"admin": False, "push": True, "pull": True},
            "created_at": iso(1_600_000_000),
            "updated_at": iso(self.clock()),
        }

    def _commit_json(self, sha: str) -> dict[str, Any]:
        commit = self._commits.get(sha) or _Commit(sha, f"change {sha[:7]}", "alice", self.clock())
        base = f"{self.api_url}/repos/{self.full_name}"
        index = self._history.index(sha) if sha in self._history else -1
        parents = [self._history[index - 1]] if index > 0 else []
        person = {
            "name": commit.author,
            "email": f"{commit.author}@example.com",
            "date": iso(commit.time_s),
        }
        return {
            "sha": sha,
            "node_id": f"C_{sha[:12]}",
            "url": f"{base}/commits/{sha}",
            "html_url": f"{self.root_url}/{self.full_name}/commit/{sha}",
            "comments_url": f"{base}/commits/{sha}/comments",
            "commit": {
                "url": f"{base}/git/commits/{sha}",
                "author": person,
                "committer": person,
                "message": commit.message,
                "tree": {"sha": "0" * 40, "url": f"{base}/git/trees/{'0' * 40}"},
                "comment_count": 0,
            },
            "author": self._user_json(commit.author),
            "committer": self._user_json(commit.author),
            "parents": [{"sha": p, "url": f"{base}/commits/{p}"} for p in parents],
        }

    def _pull_json(self, pull: _Pull, *, full: bool) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{self.full_name}"
        html = f"{self.root_url}/{self.full_name}/pull/{pull.number}"
        base_sha = self._history[-1] if self._history else "0" * 40
        data: dict[str, Any] = {
            "url": f"{base}/pulls/{pull.number}",
            "id": 500_000 + pull.number,
            "node_id": f"PR_{pull.number}",
            "html_url": html,
            "diff_url": html + ".diff",
            "patch_url": html + ".patch",
            "issue_url": f"{base}/issues/{pull.number}",
            "commits_url": f"{base}/pulls/{pull.number}/commits",
            "comments_url": f"{base}/issues/{pull.number}/comments",
            "number": pull.number,
            "state": pull.state,
            "locked": False,
            "title": pull.title,
            "user": self._user_json(pull.author),
            "body": None,
            "labels": [],
            "created_at": iso(pull.created_s),
            "updated_at": iso(pull.merged_s or pull.created_s),
            "closed_at": iso(pull.merged_s) if pull.merged_s is not None else None,
            "merged_at": iso(pull.merged_s) if pull.merged_s is not None else None,
            "merge_commit_sha": pull.merge_commit_sha,
            "draft": False,
            "head": {
                "label": f"{self.owner}:{pull.head_ref}",
                "ref": pull.head_ref,
                "sha": pull.head_sha,
                "user": self._user_json(self.owner),
                "repo": self._repo_json(),
            },
            "base": {
                "label": f"{self.owner}:{pull.base_ref}",
                "ref": pull.base_ref,
                "sha": base_sha,
                "user": self._user_json(self.owner),
                "repo": self._repo_json(),
            },
            "author_association": "CONTRIBUTOR",
        }
        if full:
            data.update(
                {
                    "merged": pull.merged,
                    "mergeable": None if pull.state == "closed" else True,
                    "merged_by": self._user_json(self.owner) if pull.merged else None,
                    "comments": sum(1 for c in self._comments.values() if c.number == pull.number),
                    "commits": len(pull.commits) or 1,
                    "additions": 0,
                    "deletions": 0,
                    "changed_files": 0,
                }
            )
        return data

    def _reaction_summary(self, comment_id: int) -> dict[str, Any]:
        counts = {content: 0 for content in REACTION_CONTENTS}
        for reaction in self._reactions:
            if reaction.comment_id == comment_id:
                counts[reaction.content] += 1
        return {
            "url": f"{self.api_url}/repos/{self.full_name}/issues/comments/{comment_id}/reactions",
            "total_count": sum(counts.values()),
            **counts,
        }

    def _comment_json(self, comment: _Comment) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{self.full_name}"
        return {
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "url": f"{base}/issues/comments/{comment.id}",
            "html_url": f"{self.root_url}/{self.full_name}/pull/{comment.number}"
            f"#issuecomment-{comment.id}",
            "issue_url": f"{base}/issues/{comment.number}",
            "body": comment.body,
            "user": self._user_json(comment.user),
            "created_at": iso(comment.created_s),
            "updated_at": iso(comment.updated_s),
            "author_association": "MEMBER" if comment.user == self.owner else "CONTRIBUTOR",
            "performed_via_github_app": None,
            "reactions": self._reaction_summary(comment.id),
        }

    def _reaction_json(self, reaction: _Reaction) -> dict[str, Any]:
        return {
            "id": reaction.id,
            "node_id": f"REA_{reaction.id}",
            "user": self._user_json(reaction.user),
            "content": reaction.content,
            "created_at": iso(reaction.created_s),
        }

    def _deployment_json(self, deployment: _Deployment) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{self.full_name}"
        latest = max(
            (s for s in self._deployment_statuses if s.deployment_id == deployment.id),
            key=lambda s: s.id,
            default=None,
        )
        updated = latest.created_s if latest else deployment.created_s
        return {
            "url": f"{base}/deployments/{deployment.id}",
            "id": deployment.id,
            "node_id": f"DE_{deployment.id}",
            "sha": deployment.sha,
            "ref": deployment.ref,
            "task": deployment.task,
            "payload": {},
            "original_environment": deployment.environment,
            "environment": deployment.environment,
            "description": deployment.description,
            "creator": self._user_json(deployment.creator),
            "created_at": iso(deployment.created_s),
            "updated_at": iso(updated),
            "statuses_url": f"{base}/deployments/{deployment.id}/statuses",
            "repository_url": base,
            "transient_environment": False,
            "production_environment": deployment.environment == "production",
        }

    def _deployment_status_json(self, status: _DeploymentStatus) -> dict[str, Any]:
        base = f"{self.api_url}/repos/{self.full_name}"
        deployment = self._deployments[status.deployment_id]
        return {
            "url": f"{base}/deployments/{status.deployment_id}/statuses/{status.id}",
            "id": status.id,
            "node_id": f"DES_{status.id}",
            "state": status.state,
            "creator": self._user_json(status.creator),
            "description": status.description,
            "environment": deployment.environment,
            "target_url": "",
            "log_url": "",
            "environment_url": "",
            "created_at": iso(status.created_s),
            "updated_at": iso(status.created_s),
            "deployment_url": f"{base}/deployments/{status.deployment_id}",
            "repository_url": base,
        }

    # ---------------------------------------------------------------- routes

    def _get_user(self, request: _Request) -> _Response:
        return _Response(200, self._user_json(self.login))

    def _get_rate_limit(self, request: _Request) -> _Response:
        core = {
            "limit": RATE_LIMIT,
            "remaining": max(0, RATE_LIMIT - self._used),
            "reset": self._reset_at,
            "used": self._used,
        }
        return _Response(200, {"resources": {"core": core}, "rate": core})

    def _get_repo(self, request: _Request) -> _Response:
        return _Response(200, self._repo_json())

    def _pull(self, number: str) -> _Pull:
        pull = self._pulls.get(int(number))
        if pull is None:
            raise _ApiError(404, "Not Found")
        return pull

    def _list_pulls(self, request: _Request) -> _Response:
        state = request.query.get("state", "open")
        pulls = [
            self._pull_json(p, full=False)
            for p in sorted(self._pulls.values(), key=lambda p: -p.number)
            if state == "all" or p.state == state
        ]
        return self._listing(request, pulls)

    def _get_pull(self, request: _Request, number: str) -> _Response:
        return _Response(200, self._pull_json(self._pull(number), full=True))

    def _resolve(self, ref: str) -> str | None:
        """A full sha, a unique prefix of at least 4 characters, or the default branch."""
        if ref == self.default_branch:
            return self._history[-1] if self._history else None
        known = set(self._history) | set(self._commits)
        for pull in self._pulls.values():
            known.update(pull.commits)
            known.add(pull.head_sha)
            if pull.merge_commit_sha:
                known.add(pull.merge_commit_sha)
        if ref in known:
            return ref
        if len(ref) >= 4:
            matches = [sha for sha in known if sha.startswith(ref)]
            if len(matches) == 1:
                return matches[0]
        return None

    def _get_commit(self, request: _Request, ref: str) -> _Response:
        sha = self._resolve(ref)
        if sha is None:
            raise _ApiError(422, f"No commit found for SHA: {ref}")
        return _Response(200, self._commit_json(sha))

    def _list_commit_pulls(self, request: _Request, ref: str) -> _Response:
        sha = self._resolve(ref)
        if sha is None:
            raise _ApiError(422, f"No commit found for SHA: {ref}")
        pulls = [
            self._pull_json(p, full=False)
            for p in sorted(self._pulls.values(), key=lambda p: p.number)
            if sha == p.head_sha or sha in p.commits or sha == p.merge_commit_sha
        ]
        return self._listing(request, pulls)

    def _compare(self, request: _Request, basehead: str) -> _Response:
        base_ref, separator, head_ref = basehead.partition("...")
        if not separator:
            raise _ApiError(404, "Not Found")
        base, head = self._resolve(base_ref), self._resolve(head_ref)
        if base is None or head is None or base not in self._history or head not in self._history:
            raise _ApiError(404, "Not Found")
        base_index, head_index = self._history.index(base), self._history.index(head)
        between = self._history[base_index + 1 : head_index + 1]
        if head_index == base_index:
            status = "identical"
        elif head_index > base_index:
            status = "ahead"
        else:
            status = "behind"
        chosen, headers = self._page(request, between, default_per_page=250)
        url = f"{self.api_url}/repos/{self.full_name}/compare/{base_ref}...{head_ref}"
        body = {
            "url": url,
            "html_url": f"{self.root_url}/{self.full_name}/compare/{base_ref}...{head_ref}",
            "permalink_url": url,
            "diff_url": url + ".diff",
            "patch_url": url + ".patch",
            "base_commit": self._commit_json(base),
            "merge_base_commit": self._commit_json(base if head_index >= base_index else head),
            "status": status,
            "ahead_by": len(between),
            "behind_by": max(0, base_index - head_index),
            "total_commits": len(between),
            "commits": [self._commit_json(sha) for sha in chosen],
            "files": [],
        }
        return _Response(200, body, headers)

    def _list_comments(self, request: _Request, number: str) -> _Response:
        self._pull(number)
        since = request.query.get("since")
        since_s = parse_iso(since) if since else None
        comments = [
            self._comment_json(c)
            for c in sorted(self._comments.values(), key=lambda c: c.id)
            if c.number == int(number) and (since_s is None or c.updated_s >= since_s)
        ]
        return self._listing(request, comments)

    def _body_text(self, request: _Request, key: str) -> str:
        if not isinstance(request.body, dict) or not isinstance(request.body.get(key), str):
            raise _ApiError(
                422,
                "Invalid request.",
                [{"resource": "IssueComment", "code": "missing_field", "field": key}],
            )
        return request.body[key]

    def _create_comment(self, request: _Request, number: str) -> _Response:
        self._pull(number)
        body = self._body_text(request, "body")
        now = self.clock()
        comment_id = next(self._ids)
        comment = _Comment(comment_id, int(number), body, self.login, now, now)
        self._comments[comment_id] = comment
        return _Response(201, self._comment_json(comment))

    def _comment(self, comment_id: str) -> _Comment:
        comment = self._comments.get(int(comment_id))
        if comment is None:
            raise _ApiError(404, "Not Found")
        return comment

    def _get_comment(self, request: _Request, comment_id: str) -> _Response:
        return _Response(200, self._comment_json(self._comment(comment_id)))

    def _edit_comment(self, request: _Request, comment_id: str) -> _Response:
        comment = self._comment(comment_id)
        comment.body = self._body_text(request, "body")
        comment.updated_s = self.clock()
        return _Response(200, self._comment_json(comment))

    def _delete_comment(self, request: _Request, comment_id: str) -> _Response:
        comment = self._comment(comment_id)
        del self._comments[comment.id]
        return _Response(204, None)

    def _list_reactions(self, request: _Request, comment_id: str) -> _Response:
        comment = self._comment(comment_id)
        content = request.query.get("content")
        reactions = [
            self._reaction_json(r)
            for r in self._reactions
            if r.comment_id == comment.id and (content is None or r.content == content)
        ]
        return self._listing(request, reactions)

    def _create_reaction(self, request: _Request, comment_id: str) -> _Response:
        comment = self._comment(comment_id)
        content = self._body_text(request, "content")
        if content not in REACTION_CONTENTS:
            raise _ApiError(422, "Validation Failed")
        for reaction in self._reactions:
            if (reaction.comment_id, reaction.content, reaction.user) == (
                comment.id,
                content,
                self.login,
            ):
                return _Response(200, self._reaction_json(reaction))
        reaction = _Reaction(next(self._ids), comment.id, content, self.login, self.clock())
        self._reactions.append(reaction)
        return _Response(201, self._reaction_json(reaction))

    def _create_check_run(self, request: _Request) -> _Response:
        body = request.body if isinstance(request.body, dict) else {}
        name, head_sha = body.get("name"), body.get("head_sha")
        if not isinstance(name, str) or not name or not isinstance(head_sha, str):
            raise _ApiError(422, 'Invalid request.\n\n"name", "head_sha" wasn\'t supplied.')
        status = body.get("status", "queued")
        conclusion = body.get("conclusion")
        if status not in ("queued", "in_progress", "completed"):
            raise _ApiError(422, f"Invalid request.\n\n{status!r} is not a valid status.")
        if status == "completed" and conclusion not in CHECK_CONCLUSIONS:
            raise _ApiError(422, "Invalid request.\n\nconclusion is required when completed.")
        output = body.get("output")
        if output is not None and not (
            isinstance(output, dict)
            and isinstance(output.get("title"), str)
            and isinstance(output.get("summary"), str)
        ):
            raise _ApiError(422, "Invalid request.\n\noutput needs title and summary.")
        run_id = next(self._ids)
        now = iso(self.clock())
        base = f"{self.api_url}/repos/{self.full_name}"
        run = {
            "id": run_id,
            "node_id": f"CR_{run_id}",
            "head_sha": head_sha,
            "external_id": body.get("external_id", ""),
            "url": f"{base}/check-runs/{run_id}",
            "html_url": f"{self.root_url}/{self.full_name}/runs/{run_id}",
            "details_url": body.get("details_url"),
            "status": status,
            "conclusion": conclusion,
            "started_at": body.get("started_at", now),
            "completed_at": body.get("completed_at", now) if status == "completed" else None,
            "output": {
                "title": (output or {}).get("title"),
                "summary": (output or {}).get("summary"),
                "text": (output or {}).get("text"),
                "annotations_count": 0,
                "annotations_url": f"{base}/check-runs/{run_id}/annotations",
            },
            "name": name,
            "check_suite": {"id": 1},
            "app": {"id": 1, "slug": "regbot", "name": "regbot"},
            "pull_requests": [],
        }
        self._check_runs.append(run)
        return _Response(201, run)

    def _list_check_runs(self, request: _Request, ref: str) -> _Response:
        sha = self._resolve(ref) or ref
        runs = [r for r in reversed(self._check_runs) if r["head_sha"] == sha]
        chosen, headers = self._page(request, runs)
        return _Response(200, {"total_count": len(runs), "check_runs": chosen}, headers)

    def _create_status(self, request: _Request, sha: str) -> _Response:
        body = request.body if isinstance(request.body, dict) else {}
        state = body.get("state")
        if state not in STATUS_STATES:
            raise _ApiError(422, "Validation Failed", [{"field": "state", "code": "invalid"}])
        description = body.get("description")
        if isinstance(description, str) and len(description) > 140:
            raise _ApiError(
                422,
                "Validation Failed",
                [{"message": "description is too long (maximum is 140 characters)"}],
            )
        status_id = next(self._ids)
        now = iso(self.clock())
        status = {
            "url": f"{self.api_url}/repos/{self.full_name}/statuses/{sha}",
            "avatar_url": None,
            "id": status_id,
            "node_id": f"SC_{status_id}",
            "state": state,
            "description": description,
            "target_url": body.get("target_url"),
            "context": body.get("context", "default"),
            "created_at": now,
            "updated_at": now,
            "creator": self._user_json(self.login),
            "sha": sha,
        }
        self._statuses.append(status)
        return _Response(201, status)

    def _list_statuses(self, request: _Request, ref: str) -> _Response:
        sha = self._resolve(ref) or ref
        return self._listing(request, [s for s in reversed(self._statuses) if s["sha"] == sha])

    def _list_deployments(self, request: _Request) -> _Response:
        filters = {k: request.query.get(k) for k in ("sha", "ref", "task", "environment")}
        deployments = [
            self._deployment_json(d)
            for d in sorted(self._deployments.values(), key=lambda d: -d.id)
            if all(value is None or getattr(d, key) == value for key, value in filters.items())
        ]
        return self._listing(request, deployments)

    def _create_deployment(self, request: _Request) -> _Response:
        body = request.body if isinstance(request.body, dict) else {}
        ref = body.get("ref")
        if not isinstance(ref, str):
            raise _ApiError(422, 'Invalid request.\n\n"ref" wasn\'t supplied.')
        sha = self._resolve(ref)
        if sha is None:
            raise _ApiError(422, f"No ref found for: {ref}")
        deployment_id = next(self._ids)
        deployment = _Deployment(
            deployment_id,
            sha,
            ref,
            body.get("task", "deploy"),
            body.get("environment", "production"),
            body.get("description") or "",
            self.login,
            self.clock(),
        )
        self._deployments[deployment_id] = deployment
        return _Response(201, self._deployment_json(deployment))

    def _deployment(self, deployment_id: str) -> _Deployment:
        deployment = self._deployments.get(int(deployment_id))
        if deployment is None:
            raise _ApiError(404, "Not Found")
        return deployment

    def _get_deployment(self, request: _Request, deployment_id: str) -> _Response:
        return _Response(200, self._deployment_json(self._deployment(deployment_id)))

    def _list_deployment_statuses(self, request: _Request, deployment_id: str) -> _Response:
        deployment = self._deployment(deployment_id)
        statuses = [
            self._deployment_status_json(s)
            for s in sorted(self._deployment_statuses, key=lambda s: -s.id)
            if s.deployment_id == deployment.id
        ]
        return self._listing(request, statuses)

    def _create_deployment_status(self, request: _Request, deployment_id: str) -> _Response:
        deployment = self._deployment(deployment_id)
        state = self._body_text(request, "state")
        if state not in DEPLOYMENT_STATES:
            raise _ApiError(422, "Validation Failed", [{"field": "state", "code": "invalid"}])
        status = _DeploymentStatus(
            next(self._ids), deployment.id, state, "", self.login, self.clock()
        )
        self._deployment_statuses.append(status)
        return _Response(201, self._deployment_status_json(status))


def _positive_int(text: str | None, default: int, name: str) -> int:
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError as error:
        raise _ApiError(422, f"Invalid value for {name}") from error
    return max(1, value)


def _seconds_text(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else str(seconds)


def _make_handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeGitHub/1.0"
        timeout = 30

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw_body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            response = fake._handle(self.command, self.path, headers, raw_body)
            payload = b"" if response.body is None else json.dumps(response.body).encode()
            self.send_response(response.status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if payload:
                self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the request log is the record."""

    return Handler
