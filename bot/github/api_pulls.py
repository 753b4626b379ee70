"""Pull requests and commits through the GitHub API: the pull requests of a commit, a compare,
one pull request (``PullRequestCalls``, a part of ``GitHubClient``)."""

from __future__ import annotations

from dataclasses import dataclass

from github.PullRequest import PullRequest

from regbot.bot.github.api_session import ApiCall, GitHubSession


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


class PullRequestCalls(GitHubSession):
    """The pull request and commit calls of ``GitHubClient``."""

    def pulls_for_commit(self, sha: str) -> list[PullRequestInfo]:
        """The pull requests GitHub associates with commit ``sha`` (merged ones containing it,
        open ones whose head it is)."""
        call = ApiCall(
            f"list the pull requests of commit {sha}", "`contents: read` and `pull-requests: read`"
        )
        return self._run(
            call, lambda: [_pull_info(p) for p in self._repo.get_commit(sha).get_pulls()]
        )

    def compare(self, base: str, head: str) -> list[str]:
        """The shas reachable from ``head`` and not from ``base``, oldest first as GitHub lists
        them (``base`` excluded, ``head`` included), over all pages."""
        call = ApiCall(f"compare {base}...{head}", "`contents: read`")

        def shas() -> list[str]:
            return [commit.sha for commit in self._repo.compare(base, head).commits]

        return self._run(call, shas)

    def pull_request(self, number: int) -> PullRequestInfo:
        call = ApiCall(f"read pull request #{number}", "`pull-requests: read`")
        return self._run(call, lambda: _pull_info(self._repo.get_pull(number)))


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
