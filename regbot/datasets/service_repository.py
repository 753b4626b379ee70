"""Writing the scenario's history as a git repository: one ``git fast-import`` stream (the same
objects ``git commit`` and ``git merge --no-ff`` would make), then a checkout of main; git runs
through ``regbot.git_repository``.

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

import os
from pathlib import Path

from regbot.datasets.service_history import RepoCommit
from regbot.git_repository import GitFailure, GitRepository

_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}
_GIT_IDENTITY = ("-c", "user.name=regbot", "-c", "user.email=regbot@example.com")
NEEDS_GIT = "regbot's scenarios make a repository"


def _git(repo: GitRepository, *args: str, stdin: bytes | None = None) -> str:
    failure = GitFailure(f"git {args[0]} in {repo.path}", "success")
    out = repo.run([*_GIT_IDENTITY, *args], failure, stdin=stdin)
    return out.decode("utf-8", "replace").strip()


def _fast_import_stream(commits: list[RepoCommit]) -> bytes:
    out = bytearray()

    def data(payload: bytes) -> None:
        out.extend(b"data %d\n" % len(payload))
        out.extend(payload)
        out.extend(b"\n")

    for c in commits:
        name, handle = c.author
        person = f"{name} <{handle}@example.com> {c.time_s} +0000".encode()
        out.extend(b"commit refs/heads/main\nmark :%d\n" % c.mark)
        out.extend(b"author " + person + b"\ncommitter " + person + b"\n")
        data(c.message.encode())
        if c.parents:
            out.extend(b"from :%d\n" % c.parents[0])
        for parent in c.parents[1:]:
            out.extend(b"merge :%d\n" % parent)
        for path, text in sorted(c.changed.items()):
            if text is None:
                out.extend(f"D {path}\n".encode())
            else:
                out.extend(f"M 100644 inline {path}\n".encode())
                data(text.encode())
        out.extend(b"\n")
    return bytes(out)


def write_repository(repo: Path, commits: list[RepoCommit]) -> dict[int, str]:
    """The commits as a git repository (branch main, checked out); mark -> sha."""
    repo.mkdir(parents=True)
    repository = GitRepository(repo, env=_GIT_ENV, needs=NEEDS_GIT)
    _git(repository, "init", "-q", "-b", "main")
    marks = repo / ".git" / "scenario-marks"
    _git(
        repository,
        "fast-import",
        "--quiet",
        f"--export-marks={marks}",
        stdin=_fast_import_stream(commits),
    )
    shas = {}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        shas[int(mark[1:])] = sha
    marks.unlink()
    _git(repository, "reset", "-q", "--hard", "main")
    return shas
