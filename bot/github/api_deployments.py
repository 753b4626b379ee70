"""Deployments through the GitHub API: all of an environment's, newest first with the state of
their latest status, and the baseline of a deploy (``DeploymentCalls``, a part of
``GitHubClient``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from regbot.bot.github.api_session import ApiCall, GitHubSession


@dataclass(frozen=True, slots=True)
class DeploymentInfo:
    """A deployment; ``state`` is the state of its latest status (None: no status yet)."""

    id: int
    sha: str
    environment: str
    created_at_s: float
    state: str | None


class DeploymentCalls(GitHubSession):
    """The deployment calls of ``GitHubClient``."""

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
        call = ApiCall(f"list the deployments{where}", "`deployments: read`")

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
        call = ApiCall(f"read the statuses of deployment {deployment_id}", "`deployments: read`")

        def latest() -> str | None:
            deployment = self._repo.get_deployment(deployment_id)
            statuses = [(s.created_at, s.id, s.state) for s in deployment.get_statuses()]
            return max(statuses)[2] if statuses else None

        return self._run(call, latest)
