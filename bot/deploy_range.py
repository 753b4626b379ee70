"""Which deploy a ``regbot run`` looks at, and what it replaced, from the command's arguments and
the state's deploy log; and the reader of the deploy's line facts, which needs the deploy log's
time of the replaced deploy.

* the deploy: ``--deploy`` (default: the repository's HEAD), resolved to a full sha;
* when it happened: ``--deployed-at``, else the deploy log's time of that sha;
* what it replaced: ``--previous``, else the newest logged deploy before it.

Every run logs its deploy, so after the first run of a service only the sha is needed. Missing
facts are bad input (:class:`regbot.errors.InputError` naming the argument that would give them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from regbot.attribution.changes import resolve_revision
from regbot.attribution.deploy_lines import DeployLines, read_deploy_lines
from regbot.attribution.model import Commit
from regbot.bot.state import StateStore
from regbot.errors import InputError
from regbot.timefmt import parse_time

__all__ = ["DeployRange", "deploy_line_reader", "resolve_deploy_range"]


@dataclass(frozen=True, slots=True)
class DeployRange:
    """A deploy (full sha), the deploy it replaced (full sha) and when it happened (epoch s)."""

    deploy: str
    previous: str
    deployed_at_s: float


def resolve_deploy_range(
    repo: Path,
    state: StateStore,
    state_path: Path,
    *,
    deploy: str | None,
    previous: str | None,
    deployed_at: str | None,
) -> DeployRange:
    """The run's deploy range from the arguments as given (None when absent) and the deploy log
    of ``state`` (stored at ``state_path``, named in the messages)."""
    sha = resolve_revision(repo, deploy or "HEAD")
    if deployed_at is not None:
        deployed_at_s = parse_time(deployed_at, "--deployed-at")
    else:
        logged = state.deploy_time(sha)
        if logged is None:
            raise InputError(
                "--deployed-at",
                f"the deploy time of {sha[:12]} (it is not in the deploy log of {state_path})",
            )
        deployed_at_s = logged
    if previous is not None:
        previous_sha = resolve_revision(repo, previous)
    else:
        logged_previous = state.previous_deploy(deployed_at_s)
        if logged_previous is None:
            raise InputError(
                "--previous",
                f"the sha deployed before {sha[:12]} (the deploy log of {state_path} has none)",
            )
        previous_sha = resolve_revision(repo, logged_previous[0])
    return DeployRange(sha, previous_sha, deployed_at_s)


def deploy_line_reader(
    repo: Path, state: StateStore, deploy: DeployRange, commits: Sequence[Commit]
) -> Callable[[set[str]], DeployLines] | None:
    """Reads the deploy's line facts (``attribution.deploy_lines``) when the deploy log knows
    when ``deploy.previous`` was deployed: before-window frames carry its line numbers only
    after that. None otherwise (ties on one function then stand)."""
    since_s = state.deploy_time(deploy.previous)
    if since_s is None:
        return None
    return lambda paths: read_deploy_lines(
        repo, deploy.previous, deploy.deploy, paths, commits, since_s
    )
