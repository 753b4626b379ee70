"""Real git repositories for tests: commits with fixed authors and dates, merges of PR branches."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class GitRepo:
    """A git repository in ``path`` driven through the git command line, with deterministic
    commit times (``clock`` advances one minute per commit)."""

    def __init__(self, path: Path, start_s: int = 1_700_000_000) -> None:
        self.path = path
        self.clock = start_s
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_DATE": f"@{self.clock} +0000",
            "GIT_COMMITTER_DATE": f"@{self.clock} +0000",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.path),
        }
        done = subprocess.run(
            ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args],
            cwd=self.path,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip()

    def write(self, relative: str, text: str) -> None:
        target = self.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def commit(self, message: str, files: dict[str, str] | None = None, author: str = "Dev") -> str:
        """Write ``files`` (path → text), commit everything, return the sha."""
        for relative, text in (files or {}).items():
            self.write(relative, text)
        self.clock += 60
        self.git("add", "-A")
        self.git("-c", f"user.name={author}", "commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

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
        return self.git("rev-parse", "HEAD")
