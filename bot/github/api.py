"""GitHub, as regbot uses it: pull requests of commits, PR comments (upserted by a hidden
marker), the gate (a check run, or a commit status when check runs are refused) and deployments.

This is the only regbot module that imports PyGithub; everything it returns is a plain
dataclass, and every failure is a ``GitHubError`` (or ``InputError`` for bad configuration) with a
one-line message.

Choices made here:

* Requests go through PyGithub's ``GithubRetry`` (a urllib3 ``Retry``): 5xx and 429 answers and
  connection errors are retried with exponential backoff; a 403 is retried only when it is a rate
  limit (a ``Retry-After`` header, which is honoured, or a rate-limit message: secondary limits
  wait ``secondary_rate_wait_s``, the primary limit waits for ``X-RateLimit-Reset`` but at most
  ``max_rate_limit_wait_s``). GET, POST and PATCH are retried (PATCH of a comment body is
  idempotent). A POST that GitHub carried out but answered with a 5xx can therefore be
  repeated; ``upsert_comment`` then edits the first marked comment on later runs.
* Writes are spaced ``seconds_between_writes_s`` apart (GitHub's advice against secondary rate
  limits is one second); tests set it to 0.
* The repository object is lazy: no ``GET /repos/{o}/{r}`` in the normal path. Only when a call
  answers 404 is the repository fetched, to tell "repository not found (or not visible to the
  token)" from "that pull request / commit / comment does not exist".
* Lists are read in pages of 100 (GitHub's maximum) following the ``Link`` headers.
* PyGithub logs every retried request at INFO on its own stderr handler; a client lowers the
  ``github`` logger to WARNING, since regbot reports what finally failed itself.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeVar, get_args
from urllib.parse import urlsplit

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.GithubException import BadCredentialsException, RateLimitExceededException
from github.IssueComment import IssueComment
from github.PaginatedList import PaginatedList
from github.PullRequest import PullRequest
from github.Reaction import Reaction
from urllib3.exceptions import MaxRetryError
from urllib3.util.retry import Retry

from regbot.bot.gate import GateState
from regbot.errors import InputError, RegbotError

DEFAULT_API_URL = "https://api.github.com"
API_URL_ENV = "GITHUB_API_URL"
GateKind = Literal["check_run", "status"]
STATUS_DESCRIPTION_MAX = 140  # GitHub rejects longer commit status descriptions (422).
NEUTRAL_PREFIX = "neutral: "

_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")\]]*")
T = TypeVar("T")


class GitHubError(RegbotError):
    """A GitHub API call failed; ``str(error)`` is one line saying which call and why.

    ``status`` is the HTTP status GitHub answered (None when GitHub could not be reached);
    ``rate_limited`` tells a rate limit (retried until the retries ran out) from a refusal."""

    def __init__(self, message: str, status: int | None = None, rate_limited: bool = False) -> None:
        super().__init__(_one_line(message))
        self.status = status
        self.rate_limited = rate_limited


@dataclass(frozen=True, slots=True)
class PullRequestInfo:
    """A pull request: ``state`` is ``open`` or ``closed``; ``url`` is the web page."""

    number: int
    title: str
    state: str
    merged: bool
    author: str
    head_ref: str
    base_ref: str
    url: str


@dataclass(frozen=True, slots=True)
class CommentInfo:
    """An issue comment on a pull request. ``minus_one_users`` lists who reacted 👎 (``-1``), in
    reaction order; it is read only where asked (``list_comments(with_reactions_for=...)``) and
    is empty otherwise. ``created_at_s`` is epoch seconds."""

    id: int
    body: str
    author: str
    url: str
    minus_one_users: tuple[str, ...] = ()
    created_at_s: float | None = None


@dataclass(frozen=True, slots=True)
class DeploymentInfo:
    """A deployment; ``state`` is the state of its latest status (None: no status yet)."""

    id: int
    sha: str
    environment: str
    created_at_s: float
    state: str | None


@dataclass(frozen=True, slots=True)
class RequestPolicy:
    """How the client talks to GitHub: retries (``retries`` in total per request, exponential
    ``backoff_factor_s``), rate-limit waits, request timeout, spacing of requests and writes."""

    retries: int = 5
    backoff_factor_s: float = 1.0
    secondary_rate_wait_s: float = 60.0
    max_rate_limit_wait_s: float = 300.0
    timeout_s: int = 15
    seconds_between_requests_s: float = 0.0
    seconds_between_writes_s: float = 1.0


@dataclass(frozen=True, slots=True)
class _Call:
    """What a call does (for messages: "could not <what>") and the token permission it needs."""

    what: str
    permission: str


_COMMENTS_READ = "`pull-requests: read` (or `issues: read`)"
_COMMENTS_WRITE = "`pull-requests: write` (or `issues: write`)"


class GitHubClient:
    """The GitHub REST API for one repository ``owner/name``."""

    def __init__(
        self,
        repository: str,
        token: str,
        api_url: str = DEFAULT_API_URL,
        *,
        token_env: str = "GITHUB_TOKEN",
        policy: RequestPolicy = RequestPolicy(),
    ) -> None:
        if not _REPOSITORY.match(repository or ""):
            raise InputError("repository.github", "owner/name", repository)
        self.repository = repository
        self.api_url = _checked_url(api_url, "github.api_url")
        self.token_env = token_env
        self.policy = policy
        logging.getLogger("github").setLevel(logging.WARNING)
        retry = GithubRetry(
            secondary_rate_wait=policy.secondary_rate_wait_s,
            max_rate_limit_wait=policy.max_rate_limit_wait_s,
            total=policy.retries,
            backoff_factor=policy.backoff_factor_s,
            status_forcelist=[429, *range(500, 600)],
            allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"GET", "POST", "PATCH"},
            raise_on_status=False,
        )
        self._github = Github(
            auth=Auth.Token(token),
            base_url=self.api_url,
            timeout=policy.timeout_s,
            user_agent="regbot",
            per_page=100,
            retry=retry,
            seconds_between_requests=policy.seconds_between_requests_s or None,
            seconds_between_writes=policy.seconds_between_writes_s or None,
            lazy=True,
        )
        self._repo = self._github.get_repo(repository)
        self._repo_path = f"/repos/{repository}"

    @classmethod
    def from_environment(
        cls,
        repository: str,
        api_url: str | None,
        token_env: str = "GITHUB_TOKEN",
        environ: Mapping[str, str] = os.environ,
        *,
        policy: RequestPolicy = RequestPolicy(),
    ) -> GitHubClient:
        """A client with the token from ``environ[token_env]`` (missing or empty: InputError
        naming the variable). ``GITHUB_API_URL``, set by GitHub Actions and on GitHub Enterprise,
        overrides ``api_url``; with neither, ``https://api.github.com``."""
        token = (environ.get(token_env) or "").strip()
        if not token:
            raise InputError(
                f"${token_env}",
                f"a GitHub token in the environment variable {token_env} (it is not set or empty)",
            )
        from_env = (environ.get(API_URL_ENV) or "").strip()
        if from_env:
            url = _checked_url(from_env, f"${API_URL_ENV}")
        else:
            url = api_url or DEFAULT_API_URL
        return cls(repository, token, url, token_env=token_env, policy=policy)

    def close(self) -> None:
        self._github.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ pull requests and commits

    def pulls_for_commit(self, sha: str) -> list[PullRequestInfo]:
        """The pull requests GitHub associates with commit ``sha`` (merged ones containing it,
        open ones whose head it is)."""
        call = _Call(
            f"list the pull requests of commit {sha}", "`contents: read` and `pull-requests: read`"
        )
        return self._run(
            call, lambda: [_pull_info(p) for p in self._repo.get_commit(sha).get_pulls()]
        )

    def compare(self, base: str, head: str) -> list[str]:
        """The shas reachable from ``head`` and not from ``base``, oldest first as GitHub lists
        them (``base`` excluded, ``head`` included), over all pages."""
        call = _Call(f"compare {base}...{head}", "`contents: read`")

        def shas() -> list[str]:
            return [commit.sha for commit in self._repo.compare(base, head).commits]

        return self._run(call, shas)

    def pull_request(self, number: int) -> PullRequestInfo:
        call = _Call(f"read pull request #{number}", "`pull-requests: read`")
        return self._run(call, lambda: _pull_info(self._repo.get_pull(number)))

    # ------------------------------------------------------------ comments

    def list_comments(
        self, number: int, with_reactions_for: str | None = None
    ) -> list[CommentInfo]:
        """All issue comments of pull request ``number``, oldest first. For the comments whose
        body contains ``with_reactions_for`` (a marker), who reacted 👎 is read as well (one
        request per such comment); other comments get ``minus_one_users=()``."""
        call = _Call(f"list the comments of pull request #{number}", _COMMENTS_READ)

        def read() -> list[CommentInfo]:
            comments = []
            for comment in self._repo.get_issue(number).get_comments():
                minus_one: tuple[str, ...] = ()
                if with_reactions_for and with_reactions_for in (comment.body or ""):
                    minus_one = self._minus_one_users(comment.id)
                comments.append(_comment_info(comment, minus_one))
            return comments

        return self._run(call, read)

    def _minus_one_users(self, comment_id: int) -> tuple[str, ...]:
        reactions: PaginatedList[Reaction] = PaginatedList(
            Reaction,
            self._github.requester,
            f"{self._repo_path}/issues/comments/{comment_id}/reactions",
            {"content": "-1"},
        )
        users: list[str] = []
        for reaction in reactions:
            login = reaction.user.login if reaction.user else None
            if reaction.content == "-1" and login and login not in users:
                users.append(login)
        return tuple(users)

    def create_comment(self, number: int, body: str) -> CommentInfo:
        call = _Call(f"comment on pull request #{number}", _COMMENTS_WRITE)
        return self._run(
            call, lambda: _comment_info(self._repo.get_issue(number).create_comment(body), ())
        )

    def edit_comment(self, comment_id: int, body: str) -> CommentInfo:
        call = _Call(f"edit comment {comment_id}", _COMMENTS_WRITE)

        def edit() -> CommentInfo:
            comment = IssueComment(
                self._github.requester, url=f"{self._repo_path}/issues/comments/{comment_id}"
            )
            comment.edit(body)
            return _comment_info(comment, ())

        return self._run(call, edit)

    def upsert_comment(self, number: int, marker: str, body: str) -> tuple[CommentInfo, bool]:
        """Keep one comment per ``marker`` on pull request ``number``: the first comment whose
        body contains ``marker`` (whoever wrote it) is edited to ``body`` — no request when it
        already reads ``body``, line endings aside — else a comment is created. Returns the
        comment and whether it was created. ``body`` must contain ``marker``, or the next run
        could not find the comment."""
        if not marker:
            raise ValueError("upsert_comment needs a non-empty marker")
        if marker not in body:
            raise ValueError(f"the comment body must contain its marker {marker!r}")
        for comment in self.list_comments(number):
            if marker in comment.body:
                if _normalized(comment.body) == _normalized(body):
                    return comment, False
                return self.edit_comment(comment.id, body), False
        return self.create_comment(number, body), True

    def replies_since(self, number: int, since_s: float) -> list[CommentInfo]:
        """Comments on pull request ``number`` created at or after ``since_s`` (epoch seconds),
        oldest first. GitHub's ``since`` filters on the update time, so it narrows the listing
        and the creation time decides."""
        call = _Call(f"list the comments of pull request #{number}", _COMMENTS_READ)
        since = datetime.fromtimestamp(max(0.0, since_s), UTC).replace(microsecond=0)

        def read() -> list[CommentInfo]:
            infos = (
                _comment_info(c, ()) for c in self._repo.get_issue(number).get_comments(since=since)
            )
            return [c for c in infos if c.created_at_s is not None and c.created_at_s >= since_s]

        return self._run(call, read)

    # ------------------------------------------------------------ the gate

    def set_gate(
        self,
        sha: str,
        name: str,
        state: GateState,
        title: str,
        summary: str,
        details_url: str | None = None,
    ) -> GateKind:
        """Report the gate on commit ``sha`` as a completed check run ``name`` (conclusion
        ``state``, output title and summary). When GitHub refuses check runs with a 403 that is
        not a rate limit (a personal token, or a workflow without ``checks: write``), a commit
        status with context ``name`` is set instead: commit statuses have no neutral state, so
        ``neutral`` becomes ``success`` with the description prefixed ``neutral: ``; the
        description is ``title`` cut to GitHub's 140 characters. Returns what was used."""
        if state not in get_args(GateState):
            raise ValueError(f"gate state must be one of {get_args(GateState)}, not {state!r}")
        output = {"title": title, "summary": summary}
        check_call = _Call(f"create check run {name!r} on {sha}", "`checks: write`")

        def create_check_run() -> None:
            if details_url is None:
                self._repo.create_check_run(
                    name, sha, status="completed", conclusion=state, output=output
                )
            else:
                self._repo.create_check_run(
                    name,
                    sha,
                    status="completed",
                    conclusion=state,
                    output=output,
                    details_url=details_url,
                )

        try:
            self._run(check_call, create_check_run)
            return "check_run"
        except GitHubError as error:
            if error.status != 403 or error.rate_limited:
                raise
        description = title if state != "neutral" else NEUTRAL_PREFIX + title
        if len(description) > STATUS_DESCRIPTION_MAX:
            description = description[: STATUS_DESCRIPTION_MAX - 1] + "…"
        status_call = _Call(
            f"set the gate {name!r} on {sha} as a check run or as a commit status",
            "`checks: write` or `statuses: write`",
        )
        commit_state = "failure" if state == "failure" else "success"

        def create_status() -> None:
            commit = self._repo.get_commit(sha)
            if details_url is None:
                commit.create_status(commit_state, description=description, context=name)
            else:
                commit.create_status(
                    commit_state, target_url=details_url, description=description, context=name
                )

        self._run(status_call, create_status)
        return "status"

    # ------------------------------------------------------------ deployments

    def deployments(self, environment: str | None = None) -> list[DeploymentInfo]:
        """All deployments (of ``environment``, or of every environment), newest first by
        creation time (then id), each with the state of its latest status: one request per
        deployment on top of the listing."""
        return list(self._deployments_newest_first(environment))

    def previous_successful_deployment(
        self, environment: str | None, before_sha: str
    ) -> DeploymentInfo | None:
        """The baseline for the deployment of ``before_sha``: the newest deployment created
        before the newest deployment of ``before_sha`` whose latest status is ``success``,
        skipping deployments of ``before_sha`` itself (a redeploy of the same commit is no
        baseline). None when ``before_sha`` has no deployment or no earlier one succeeded."""
        found_anchor = False
        for deployment in self._deployments_newest_first(environment, with_states=False):
            if deployment.sha == before_sha:
                found_anchor = True
                continue
            if not found_anchor:
                continue
            state = self._latest_deployment_state(deployment.id)
            if state == "success":
                return DeploymentInfo(
                    deployment.id,
                    deployment.sha,
                    deployment.environment,
                    deployment.created_at_s,
                    state,
                )
        return None

    def _deployments_newest_first(
        self, environment: str | None, *, with_states: bool = True
    ) -> Iterator[DeploymentInfo]:
        where = f" of environment {environment!r}" if environment else ""
        call = _Call(f"list the deployments{where}", "`deployments: read`")

        def listing() -> list[DeploymentInfo]:
            if environment is None:
                found = self._repo.get_deployments()
            else:
                found = self._repo.get_deployments(environment=environment)
            return [
                DeploymentInfo(d.id, d.sha, d.environment, d.created_at.timestamp(), None)
                for d in found
            ]

        listed = sorted(
            self._run(call, listing), key=lambda d: (d.created_at_s, d.id), reverse=True
        )
        for deployment in listed:
            if with_states:
                state = self._latest_deployment_state(deployment.id)
                yield DeploymentInfo(
                    deployment.id,
                    deployment.sha,
                    deployment.environment,
                    deployment.created_at_s,
                    state,
                )
            else:
                yield deployment

    def _latest_deployment_state(self, deployment_id: int) -> str | None:
        call = _Call(f"read the statuses of deployment {deployment_id}", "`deployments: read`")

        def latest() -> str | None:
            deployment = self._repo.get_deployment(deployment_id)
            statuses = [(s.created_at, s.id, s.state) for s in deployment.get_statuses()]
            return max(statuses)[2] if statuses else None

        return self._run(call, latest)

    # ------------------------------------------------------------ errors

    def _run(self, call: _Call, action: Callable[[], T]) -> T:
        """Run ``action`` (PyGithub calls), turning every failure into a one-line GitHubError."""
        try:
            return action()
        except GitHubError:
            raise
        except BadCredentialsException:
            raise self._refused_token() from None
        except RateLimitExceededException as error:
            raise self._rate_limited(call, error) from None
        except GithubException as error:
            raise self._github_failure(call, error) from None
        except requests.exceptions.RequestException as error:
            raise GitHubError(
                f"could not reach the GitHub API at {self.api_url} to {call.what}: "
                f"{_network_reason(error)}"
            ) from None

    def _refused_token(self) -> GitHubError:
        return GitHubError(
            f"the token in ${self.token_env} was refused by {self.api_url} (401 Bad credentials)",
            status=401,
        )

    def _rate_limited(self, call: _Call, error: GithubException) -> GitHubError:
        headers = {str(k).lower(): str(v) for k, v in (error.headers or {}).items()}
        reset = headers.get("x-ratelimit-reset", "")
        when = ""
        if headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
            when = f"; the limit resets at {datetime.fromtimestamp(int(reset), UTC):%H:%M:%S} UTC"
        data = error.data
        said = f" {_message(error)}" if isinstance(data, dict) and data.get("message") else ""
        return GitHubError(
            f"GitHub's rate limit stopped the attempt to {call.what} after "
            f"{_retries(self.policy.retries)} ({error.status}{said}){when}",
            status=error.status,
            rate_limited=True,
        )

    def _github_failure(self, call: _Call, error: GithubException) -> GitHubError:
        status = error.status
        message = _message(error)
        if status == 401:
            return self._refused_token()
        if status == 403 and _is_rate_limit(error):
            return self._rate_limited(call, error)
        if status == 403:
            return GitHubError(
                f"GitHub refused to {call.what} (403 {message}): the token in ${self.token_env} "
                f"needs {call.permission}",
                status=403,
            )
        if status == 404:
            if not self._repository_visible():
                return GitHubError(
                    f"repository {self.repository} not found at {self.api_url} (404), "
                    f"or the token in ${self.token_env} cannot see it",
                    status=404,
                )
            return GitHubError(f"could not {call.what}: not found (404 {message})", status=404)
        if status is not None and status >= 500:
            return GitHubError(
                f"GitHub failed to {call.what}: {status} {message} "
                f"(after {_retries(self.policy.retries)})",
                status=status,
            )
        return GitHubError(
            f"GitHub rejected the request to {call.what}: {status} {message}", status
        )

    def _repository_visible(self) -> bool:
        """Whether ``GET /repos/{o}/{r}`` answers (anything but 404 counts as visible)."""
        try:
            self._github.requester.requestJsonAndCheck("GET", self._repo_path)
        except GithubException as error:
            return error.status != 404
        except requests.exceptions.RequestException:
            return True
        return True


def _checked_url(url: str, where: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(where, "an http(s) URL of the GitHub API", url)
    return url.strip().rstrip("/")


def _pull_info(pull: PullRequest) -> PullRequestInfo:
    """List items of pull requests carry ``merged_at`` but no ``merged``: merged is read from
    ``merged_at`` so no extra request is made."""
    return PullRequestInfo(
        number=pull.number,
        title=pull.title,
        state=pull.state,
        merged=pull.merged_at is not None,
        author=pull.user.login if pull.user else "ghost",
        head_ref=pull.head.ref,
        base_ref=pull.base.ref,
        url=pull.html_url,
    )


def _comment_info(comment: IssueComment, minus_one_users: tuple[str, ...]) -> CommentInfo:
    created = comment.created_at
    return CommentInfo(
        id=comment.id,
        body=comment.body or "",
        author=comment.user.login if comment.user else "ghost",
        url=comment.html_url,
        minus_one_users=minus_one_users,
        created_at_s=created.timestamp() if created is not None else None,
    )


def _normalized(body: str) -> str:
    return body.replace("\r\n", "\n").strip()


def _is_rate_limit(error: GithubException) -> bool:
    """Whether a 403 that came back after the retries is a rate limit: a rate-limit message, a
    ``Retry-After`` header, no requests left, or no body at all — ``GithubRetry`` reads the body
    of a 403 to find a rate-limit message, so when such a 403 exhausts the retries the response
    reaches PyGithub empty; a refusal keeps its JSON body."""
    headers = {str(k).lower(): str(v) for k, v in (error.headers or {}).items()}
    data = error.data
    message = str(data.get("message") or "") if isinstance(data, dict) else str(data or "")
    return (
        "rate limit" in message.lower()
        or "retry-after" in headers
        or headers.get("x-ratelimit-remaining") == "0"
        or not message
    )


def _message(error: GithubException) -> str:
    data = error.data
    if isinstance(data, dict) and data.get("message"):
        return _one_line(str(data["message"]))
    if isinstance(data, str) and data:
        return _one_line(data)
    return "no message"


def _network_reason(error: requests.exceptions.RequestException) -> str:
    if isinstance(error, requests.exceptions.Timeout):
        return "the request timed out"
    reason: object = error
    if error.args and isinstance(error.args[0], MaxRetryError):
        reason = error.args[0].reason or error.args[0]
    text = str(reason)
    found = _ERRNO.search(text)
    if found:
        return found.group(0).strip()
    return _one_line(text)[:200]


def _retries(count: int) -> str:
    return f"{count} retry" if count == 1 else f"{count} retries"


def _one_line(text: str) -> str:
    return " ".join(text.split())
