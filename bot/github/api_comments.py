"""PR comments through the GitHub API: list (with who reacted 👎), create, edit, upsert by a
hidden marker, and replies since a time (``CommentCalls``, a part of ``GitHubClient``).

Comments are issue comments (a pull request is an issue to GitHub's comment API); the token needs
``pull-requests`` (or ``issues``) read or write. Rendering a comment is ``comment.py``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from github.IssueComment import IssueComment
from github.PaginatedList import PaginatedList
from github.Reaction import Reaction

from regbot.bot.github.api_session import ApiCall, GitHubSession

_COMMENTS_READ = "`pull-requests: read` (or `issues: read`)"
_COMMENTS_WRITE = "`pull-requests: write` (or `issues: write`)"


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


class CommentCalls(GitHubSession):
    """The comment calls of ``GitHubClient``."""

    def list_comments(
        self, number: int, with_reactions_for: str | None = None
    ) -> list[CommentInfo]:
        """All issue comments of pull request ``number``, oldest first. For the comments whose
        body contains ``with_reactions_for`` (a marker), who reacted 👎 is read as well (one
        request per such comment); other comments get ``minus_one_users=()``."""
        call = ApiCall(f"list the comments of pull request #{number}", _COMMENTS_READ)

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
        call = ApiCall(f"comment on pull request #{number}", _COMMENTS_WRITE)
        return self._run(
            call, lambda: _comment_info(self._repo.get_issue(number).create_comment(body), ())
        )

    def edit_comment(self, comment_id: int, body: str) -> CommentInfo:
        call = ApiCall(f"edit comment {comment_id}", _COMMENTS_WRITE)

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
        call = ApiCall(f"list the comments of pull request #{number}", _COMMENTS_READ)
        since = datetime.fromtimestamp(max(0.0, since_s), UTC).replace(microsecond=0)

        def read() -> list[CommentInfo]:
            infos = (
                _comment_info(c, ()) for c in self._repo.get_issue(number).get_comments(since=since)
            )
            return [c for c in infos if c.created_at_s is not None and c.created_at_s >= since_s]

        return self._run(call, read)


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
