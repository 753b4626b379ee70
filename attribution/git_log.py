"""Reading a revision range's history with ``git log``: commit headers (``-z``) and streamed
``git log -p`` passes, one process per pass whatever the range's size (FBDetect §5.6's change
set is read from these). Also opens repositories and resolves revisions to commits.

Design: docs/design/attribution_changes.md
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import git

from regbot.errors import InputError


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
    """Runs ``git log`` passes over one revision range of one repository."""

    def __init__(self, repo: git.Repo, shown_path: Path, config: list[str], revisions: str):
        self.cwd = repo.working_tree_dir or repo.git_dir
        self.shown_path = shown_path
        self.revisions = revisions
        self.base = [
            git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git",
            *config,
            "log",
            "--no-color",
            "--no-show-signature",
            "--date-order",
            "--reverse",
        ]

    def _failure(self, stderr: bytes) -> InputError:
        message = stderr.decode("utf-8", errors="replace").strip().splitlines()
        return InputError(
            f"repository {self.shown_path}",
            f"a readable history for {self.revisions}",
            message[-1] if message else None,
        )

    def headers(self) -> list[CommitHeader]:
        command = [
            *self.base,
            "-z",
            "--format=%H%x00%P%x00%an%x00%at%x00%B",
            self.revisions,
            "--",
        ]
        done = subprocess.run(command, cwd=self.cwd, capture_output=True, check=False)
        if done.returncode != 0:
            raise self._failure(done.stderr)
        text = done.stdout.decode("utf-8", errors="replace")
        if text.endswith("\0"):
            text = text[:-1]
        fields = text.split("\0") if text else []
        if len(fields) % 5:
            raise self._failure(b"unexpected git log output")
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
        with tempfile.TemporaryFile() as stderr:
            process = subprocess.Popen(command, cwd=self.cwd, stdout=subprocess.PIPE, stderr=stderr)
            assert process.stdout is not None
            sha: str | None = None
            lines: list[str] = []
            size = 0
            try:
                for raw in process.stdout:
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
            finally:
                process.stdout.close()
                code = process.wait()
            if code != 0:
                stderr.seek(0)
                raise self._failure(stderr.read())


def open_repository(repo_path: Path) -> git.Repo:
    try:
        return git.Repo(repo_path)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError) as error:
        raise InputError(
            f"repository {repo_path}", "a git repository", type(error).__name__
        ) from None


def resolve_commit(repo: git.Repo, repo_path: Path, revision: str) -> str:
    where = f"revision {revision!r} in repository {repo_path}"
    if not isinstance(revision, str) or not revision.strip() or revision.startswith("-"):
        raise InputError(where, "a commit name (sha, branch or tag)")
    try:
        return repo.git.rev_parse("--verify", "--quiet", f"{revision}^{{commit}}").strip()
    except git.GitCommandError:
        raise InputError(where, "a commit the repository knows") from None
