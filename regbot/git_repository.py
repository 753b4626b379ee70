"""regbot's one way to run git: ``GitRepository``, a repository (or a folder about to become
one) and the git commands regbot runs in it, through GitPython (``git.Repo`` and
``git.Git.execute``). Attribution reads a deploy's history and blame with it; the seeded
scenarios write their repositories with it.

Every git failure becomes a one-line ``InputError`` in one place (``input_error``): a missing
git binary (GitPython's ``GitCommandNotFound``) names the git command on PATH; a command that
fails (``GitCommandError``) names what the caller expected (a ``GitFailure``) and git's last
line of stderr; a path that is no repository and a revision that names no commit have their
own messages (``GitRepository.open``, ``GitRepository.resolve_commit``).

Streamed output (``GitRepository.lines``) is read line by line while git writes it, with only
the last lines of stderr kept, so memory stays bounded whatever the output's size.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, BinaryIO

import git
from gitdb.exc import BadName, BadObject

from regbot.errors import InputError

READS_HISTORY = "regbot reads the deploy's commits with it"
_STDERR_LINES = 64  # of a streamed command's stderr, the last lines are kept for its error
_STDERR_PREFIX = "\n  stderr: '"  # how GitCommandError.stderr wraps git's stderr


@dataclass(frozen=True, slots=True)
class GitFailure:
    """What a failed git command means to regbot's user: the ``InputError``'s ``where`` and
    ``expected``; its ``found`` is git's last line of stderr unless ``shows_stderr`` is false."""

    where: str
    expected: str
    shows_stderr: bool = True

    def error(self, found: str | None = None) -> InputError:
        return InputError(self.where, self.expected, found)


def input_error(error: git.CommandError, failure: GitFailure, needs: str) -> InputError:
    """The one-line ``InputError`` of a git command that could not run (no git binary:
    ``needs`` says why regbot wants one) or that failed (``failure``)."""
    if isinstance(error, git.GitCommandNotFound):
        return missing_git(needs)
    found = None
    if failure.shows_stderr:
        stderr = error.stderr
        if stderr.startswith(_STDERR_PREFIX) and stderr.endswith("'"):
            stderr = stderr[len(_STDERR_PREFIX) : -1]
        lines = stderr.strip().splitlines()
        found = lines[-1] if lines else None
    return failure.error(found)


def missing_git(needs: str) -> InputError:
    return InputError("git", f"the git command on PATH ({needs})")


def require_git(needs: str) -> None:
    """Raise the missing-git ``InputError`` unless the git command is on PATH."""
    if shutil.which(_executable()) is None:
        raise missing_git(needs)


def _executable() -> str:
    return str(git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git")


class GitRepository:
    """Git commands run in ``path`` (a repository, or an existing folder for ``git init``).

    ``env`` is added to every command's environment; ``needs`` says why regbot wants git, in
    the error for a missing git binary. Commands are the arguments after ``git``."""

    def __init__(
        self,
        path: Path,
        *,
        repo: git.Repo | None = None,
        env: Mapping[str, str] | None = None,
        needs: str = READS_HISTORY,
    ) -> None:
        self.path = Path(path)
        if repo is None and not self.path.is_dir():
            raise InputError(str(self.path), "a folder for git to run in")
        self._repo = repo
        self._git = repo.git if repo is not None else git.Git(self.path)
        self._env = dict(env) if env is not None else None
        self.needs = needs

    @classmethod
    def open(cls, path: Path, *, needs: str = READS_HISTORY) -> GitRepository:
        """The repository at ``path``; InputError naming it when it is no git repository."""
        path = Path(path)
        try:
            repo = git.Repo(path)
        except (git.NoSuchPathError, git.InvalidGitRepositoryError) as error:
            raise InputError(
                f"repository {path}", "a git repository", type(error).__name__
            ) from None
        return cls(path, repo=repo, needs=needs)

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()

    def __enter__(self) -> GitRepository:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def run(self, args: Sequence[str], failure: GitFailure, *, stdin: bytes | None = None) -> bytes:
        """``git *args``'s standard output, as git wrote it; ``stdin`` is fed to its input.
        InputError (``failure``) when git fails."""
        try:
            return self._execute(args, stdin)
        except git.GitCommandError as error:
            raise input_error(error, failure, self.needs) from None

    def output(self, args: Sequence[str]) -> bytes | None:
        """``git *args``'s standard output, or None when git fails (no git binary is still an
        InputError)."""
        try:
            return self._execute(args, None)
        except git.GitCommandError:
            return None

    @contextmanager
    def lines(self, args: Sequence[str], failure: GitFailure) -> Iterator[Iterator[bytes]]:
        """``git *args``'s standard output, line by line (with their ``\\n``) as git writes
        them. Leaving the block stops git; InputError (``failure``) after the block when git
        failed."""
        try:
            process = self._git.execute(self._command(args), as_process=True, env=self._env)
        except git.CommandError as error:
            raise input_error(error, failure, self.needs) from None
        proc = process.proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        stdout: IO[bytes] = proc.stdout
        stderr: IO[bytes] = proc.stderr
        tail: deque[bytes] = deque(maxlen=_STDERR_LINES)
        drain = threading.Thread(target=tail.extend, args=(stderr,), daemon=True)
        drain.start()
        try:
            yield iter(stdout)
        finally:
            stdout.close()
            proc.wait()
            drain.join()
            stderr.close()
        try:
            process.wait(stderr=b"".join(tail))
        except git.GitCommandError as error:
            raise input_error(error, failure, self.needs) from None

    def resolve_commit(self, revision: str) -> str:
        """The full sha of the commit ``revision`` names; InputError naming the revision and
        the repository otherwise."""
        where = f"revision {revision!r} in repository {self.path}"
        if not isinstance(revision, str) or not revision.strip() or revision.startswith("-"):
            raise InputError(where, "a commit name (sha, branch or tag)")
        failure = GitFailure(where, "a commit the repository knows", shows_stderr=False)
        out = self.run(["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], failure)
        return out.decode("ascii", errors="replace").strip()

    def blob(self, sha: str) -> bytes | None:
        """The content of the object ``sha`` (hex) from the object database (GitPython's
        persistent ``cat-file``), or None when the repository has no such object."""
        if self._repo is None:
            self._repo = git.Repo(self.path)
        try:
            data: bytes = self._repo.odb.stream(bytes.fromhex(sha)).read()
            return data
        except (ValueError, BadName, BadObject, git.GitError):
            return None

    def _command(self, args: Sequence[str]) -> list[str]:
        return [_executable(), *args]

    def _execute(self, args: Sequence[str], stdin: bytes | None) -> bytes:
        """Run git to its end; GitCommandError when it fails."""
        if stdin is None:
            return self._call(args, None)
        with tempfile.TemporaryFile() as istream:
            istream.write(stdin)
            istream.seek(0)
            return self._call(args, istream)

    def _call(self, args: Sequence[str], istream: BinaryIO | None) -> bytes:
        try:
            return self._git.execute(
                self._command(args),
                istream=istream,
                stdout_as_string=False,
                strip_newline_in_stdout=False,
                env=self._env,
            )
        except git.GitCommandNotFound:
            raise missing_git(self.needs) from None
