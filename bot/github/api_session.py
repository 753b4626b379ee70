"""The GitHub client's session: PyGithub for one repository ``owner/name``, its request policy,
and every failure of a call turned into a one-line ``GitHubError``.

``GitHubSession`` is the base of ``GitHubClient`` (``api.py``); the calls live in ``api_pulls``,
``api_comments``, ``api_gate`` and ``api_deployments``. The ``api*`` modules are the only regbot
modules that import PyGithub; everything they return is a plain dataclass, and every failure is
a ``GitHubError`` (or ``InputError`` for bad configuration) with a one-line message.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Self, TypeVar
from urllib.parse import urlsplit

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.GithubException import BadCredentialsException, RateLimitExceededException
from urllib3.exceptions import MaxRetryError
from urllib3.util.retry import Retry

from regbot.errors import InputError, RegbotError

DEFAULT_API_URL = "https://api.github.com"
API_URL_ENV = "GITHUB_API_URL"

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
class ApiCall:
    """What a call does (for messages: "could not <what>") and the token permission it needs."""

    what: str
    permission: str


class GitHubSession:
    """PyGithub for one repository ``owner/name``, and ``_run``, which turns every failure of
    a call into a one-line ``GitHubError``; the base of ``GitHubClient``."""

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
    ) -> Self:
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ errors

    def _run(self, call: ApiCall, action: Callable[[], T]) -> T:
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

    def _rate_limited(self, call: ApiCall, error: GithubException) -> GitHubError:
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

    def _github_failure(self, call: ApiCall, error: GithubException) -> GitHubError:
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
