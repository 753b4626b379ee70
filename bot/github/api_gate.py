"""The gate through the GitHub API: a completed check run, or a commit status when check runs
are refused (``GateCalls``, a part of ``GitHubClient``)."""

from __future__ import annotations

from typing import Literal, get_args

from regbot.bot.gate import GateState
from regbot.bot.github.api_session import ApiCall, GitHubError, GitHubSession

GateKind = Literal["check_run", "status"]
STATUS_DESCRIPTION_MAX = 140  # GitHub rejects longer commit status descriptions (422).
NEUTRAL_PREFIX = "neutral: "


class GateCalls(GitHubSession):
    """The gate call of ``GitHubClient``."""

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
        output: dict[str, str | list[dict[str, str | int]]] = {"title": title, "summary": summary}
        check_call = ApiCall(f"create check run {name!r} on {sha}", "`checks: write`")

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
        status_call = ApiCall(
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
