"""Real git repositories for tests: commits with fixed authors and dates, merges of PR branches,
edits in place, binary files and staged diffs."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


class GitRepo:
    """A git repository in ``path`` driven through the git command line, with deterministic
    commit times (``clock`` starts at ``start_s`` and advances one minute per commit).

    Git runs with no system or global configuration (``GIT_CONFIG_NOSYSTEM``,
    ``GIT_CONFIG_GLOBAL=/dev/null``, ``HOME`` inside the repository), so the machine's settings
    cannot change what a test sees."""

    def __init__(self, path: Path, start_s: int = 1_700_000_000) -> None:
        self.path = path
        self.clock = start_s
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, stdin: bytes | None = None, strip: bool = True) -> str:
        """Run ``git *args`` dated at ``clock``; its standard output as UTF-8 text, stripped of
        surrounding white space unless ``strip`` is false (a diff keeps its last newline)."""
        env = {
            **os.environ,
            "GIT_AUTHOR_DATE": f"@{self.clock} +0000",
            "GIT_COMMITTER_DATE": f"@{self.clock} +0000",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.path),
        }
        done = subprocess.run(
            ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args],
            cwd=self.path,
            env=env,
            input=stdin,
            check=True,
            capture_output=True,
        )
        out = done.stdout.decode("utf-8")
        return out.strip() if strip else out

    def write(self, relative: str, content: str | bytes) -> None:
        """Write ``content`` to ``relative`` (parents made): text as UTF-8, bytes as they are."""
        target = self.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")

    def replace(self, relative: str, old: str, new: str) -> None:
        """Edit ``relative`` in place: every ``old`` becomes ``new``; ``old`` must be there, so a
        test whose planted edit no longer applies fails here rather than testing nothing."""
        text = (self.path / relative).read_text(encoding="utf-8")
        assert old in text, (relative, old)
        self.write(relative, text.replace(old, new))

    def commit(
        self,
        message: str,
        files: Mapping[str, str | bytes] | None = None,
        author: str = "Dev",
    ) -> str:
        """Write ``files`` (path → text or bytes), commit everything one minute after the last
        commit, return the sha."""
        for relative, content in (files or {}).items():
            self.write(relative, content)
        self.clock += 60
        self.git("add", "-A")
        self.git("-c", f"user.name={author}", "commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def staged_diff(self, *options: str, config: Sequence[str] = ()) -> str:
        """Stage everything and return ``git [config] diff --cached [options]`` unstripped:
        the uncommitted edit against the last commit, as a diff reader is given it."""
        self.git("add", "-A")
        return self.git(*config, "diff", "--cached", *options, strip=False)

    def merge_pull_request(
        self, number: int, branch: str, commits: list[tuple[str, dict[str, str]]]
    ) -> str:
        """A PR branch with ``commits`` merged with ``--no-ff`` as GitHub does."""
        self.git("checkout", "-q", "-b", branch)
        for message, files in commits:
            self.commit(message, files)
        self.git("checkout", "-q", "main")
        self.clock += 60
        self.git(
            "merge",
            "-q",
            "--no-ff",
            branch,
            "-m",
            f"Merge pull request #{number} from org/{branch}",
        )
        return self.head()
