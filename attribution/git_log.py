"""Reading a revision range's history with ``git log``: commit headers (``-z``) and streamed
``git log -p`` passes, one process per pass whatever the range's size (FBDetect §5.6's change
set is read from these). Git runs through ``regbot.git_repository``; a pass's output is read
line by line while git writes it (memory bounded by one commit's diff).

Design: docs/design/attribution_changes.md
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from regbot.git_repository import GitFailure, GitRepository


@dataclass(frozen=True, slots=True)
class CommitHeader:
    """What ``git log`` says of a commit before its diff."""

    sha: str
    parents: tuple[str, ...]
    author: str
    authored_at_s: float
    title: str
    body: str

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1


class GitLog:
    """Runs ``git log`` passes over one revision range of one repository; ``config`` holds
    ``-c`` options for every pass."""

    def __init__(self, repo: GitRepository, config: Sequence[str], revisions: str) -> None:
        self.repo = repo
        self.revisions = revisions
        self.failure = GitFailure(f"repository {repo.path}", f"a readable history for {revisions}")
        self.base = [
            *config,
            "log",
            "--no-color",
            "--no-show-signature",
            "--date-order",
            "--reverse",
        ]

    def headers(self) -> list[CommitHeader]:
        command = [
            *self.base,
            "-z",
            "--format=%H%x00%P%x00%an%x00%at%x00%B",
            self.revisions,
            "--",
        ]
        text = self.repo.run(command, self.failure).decode("utf-8", errors="replace")
        if text.endswith("\0"):
            text = text[:-1]
        fields = text.split("\0") if text else []
        if len(fields) % 5:
            raise self.failure.error("unexpected git log output")
        headers = []
        for i in range(0, len(fields), 5):
            sha, parents, author, authored, message = fields[i : i + 5]
            title, _, body = message.strip("\n").partition("\n")
            headers.append(
                CommitHeader(
                    sha=sha.strip(),
                    parents=tuple(parents.split()),
                    author=author,
                    authored_at_s=float(authored),
                    title=title.strip(),
                    body=body.strip(),
                )
            )
        return headers

    def patches(
        self,
        options: Sequence[str],
        handle: Callable[[str, list[str]], None],
        *,
        max_chars: int | None = None,
    ) -> None:
        """Stream ``git log -p`` and call ``handle(sha, diff lines)`` per commit; lines past
        ``max_chars`` characters of a commit are dropped while reading."""
        command = [
            *self.base,
            "--format=%x00%H",
            "-p",
            "-M",
            "--root",
            "--diff-merges=first-parent",
            "--no-ext-diff",
            "--no-textconv",
            "--submodule=short",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--no-relative",
            *options,
            self.revisions,
            "--",
        ]
        with self.repo.lines(command, self.failure) as output:
            sha: str | None = None
            lines: list[str] = []
            size = 0
            for raw in output:
                if raw.startswith(b"\0"):
                    if sha is not None:
                        handle(sha, lines)
                    sha, lines, size = raw[1:].strip().decode("ascii"), [], 0
                elif sha is not None and (max_chars is None or size <= max_chars):
                    line = raw.decode("utf-8", errors="replace").rstrip("\n")
                    lines.append(line)
                    size += len(line) + 1
            if sha is not None:
                handle(sha, lines)
