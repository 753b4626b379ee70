"""GitHub, as regbot uses it: ``GitHubClient``, the REST API for one repository — pull requests
of commits, PR comments (upserted by a hidden marker), the gate (a check run, or a commit status
when check runs are refused) and deployments.

The client is put together from its parts, each a module of its own:

* ``api_session``: PyGithub, the request policy (retries, rate limits, spacing of writes) and
  every failure turned into a one-line ``GitHubError`` (``GitHubSession``);
* ``api_pulls``: pull requests of a commit, compares, a pull request;
* ``api_comments``: listing, creating, editing and upserting comments, 👎 reactions, replies;
* ``api_gate``: check runs and commit statuses;
* ``api_deployments``: deployments and the baseline of a deploy.

Importers take every name from here; the ``api*`` modules are the only ones that import PyGithub,
everything they return is a plain dataclass.
"""

from __future__ import annotations

from regbot.bot.github.api_comments import CommentCalls, CommentInfo
from regbot.bot.github.api_deployments import DeploymentCalls, DeploymentInfo
from regbot.bot.github.api_gate import NEUTRAL_PREFIX, STATUS_DESCRIPTION_MAX, GateCalls, GateKind
from regbot.bot.github.api_pulls import PullRequestCalls, PullRequestInfo
from regbot.bot.github.api_session import (
    API_URL_ENV,
    DEFAULT_API_URL,
    GitHubError,
    RequestPolicy,
)

__all__ = [
    "API_URL_ENV",
    "DEFAULT_API_URL",
    "NEUTRAL_PREFIX",
    "STATUS_DESCRIPTION_MAX",
    "CommentInfo",
    "DeploymentInfo",
    "GateKind",
    "GitHubClient",
    "GitHubError",
    "PullRequestInfo",
    "RequestPolicy",
]


class GitHubClient(PullRequestCalls, CommentCalls, GateCalls, DeploymentCalls):
    """The GitHub REST API for one repository ``owner/name``: ``GitHubClient(repository, token,
    api_url, token_env=..., policy=...)`` or ``GitHubClient.from_environment(...)``; a context
    manager that closes its connections."""
