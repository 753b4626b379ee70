"""A deploy's change set: the commits of ``previous..deploy`` with what attribution reads from
each one (FBDetect §5.6): title, body, author, time, files, pull request, diff, the identifiers
on its changed lines and the subroutines it modifies.

Three ``git log`` passes over the revision range, whatever its size (``git_log``): commit
headers, the stored diff (``-U3``) and the analysis diff (``-U0 --full-index``, read by
``commit_analysis``). Commits are oldest first; pull request numbers come from
``pull_requests``.

Design: docs/design/attribution_changes.md
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from regbot.attribution.commit_analysis import (
    changed_texts,
    functions_of,
    identifiers_of,
    subroutines_of,
)
from regbot.attribution.diff_drivers import attributes_text, git_diff_config
from regbot.attribution.git_log import GitLog
from regbot.attribution.model import Commit, ModifiedSubroutine
from regbot.attribution.pull_requests import pull_requests
from regbot.attribution.unified_diff import parse_diff
from regbot.errors import InputError
from regbot.git_repository import GitRepository


@dataclass(frozen=True, slots=True)
class _Analysis:
    files: tuple[str, ...]
    identifiers: tuple[str, ...]
    subroutines: tuple[ModifiedSubroutine, ...]
    functions: tuple[tuple[str, frozenset[str]], ...] = ()


def resolve_revision(repo_path: Path, revision: str) -> str:
    """The full sha of the commit ``revision`` names in ``repo_path`` (InputError otherwise)."""
    with GitRepository.open(Path(repo_path)) as repo:
        return repo.resolve_commit(revision)


def read_change_set(
    repo_path: Path, previous: str, deploy: str, *, max_diff_chars: int = 200_000
) -> list[Commit]:
    """The commits of ``previous..deploy`` in ``repo_path``, oldest first
    (docs/design/attribution_changes.md).

    Raises InputError naming the repository for a path that is no git repository, and the
    revision and the repository for a revision that names no commit.
    """
    if not isinstance(max_diff_chars, int) or max_diff_chars < 0:
        raise InputError("max_diff_chars", "a number of characters >= 0", max_diff_chars)
    with GitRepository.open(Path(repo_path)) as repo:
        revisions = f"{repo.resolve_commit(previous)}..{repo.resolve_commit(deploy)}"
        with tempfile.TemporaryDirectory(prefix="regbot-attributes-") as folder:
            attributes = Path(folder) / "attributes"
            attributes.write_text(attributes_text(), encoding="utf-8")
            log = GitLog(repo, git_diff_config(attributes), revisions)
            return _read(repo, log, max_diff_chars)


def _read(repo: GitRepository, log: GitLog, max_diff_chars: int) -> list[Commit]:
    headers = log.headers()
    if not headers:
        return []
    merges = {header.sha for header in headers if header.is_merge}

    @lru_cache(maxsize=128)
    def read_blob(blob: str) -> bytes | None:
        return repo.blob(blob)

    analyses: dict[str, _Analysis] = {}

    def analyse(sha: str, lines: list[str]) -> None:
        files = parse_diff(lines)
        merge = sha in merges
        analyses[sha] = _Analysis(
            files=tuple(dict.fromkeys(file.path for file in files)),
            identifiers=identifiers_of(changed_texts(files)),
            subroutines=() if merge else tuple(subroutines_of(files, read_blob)),
            functions=() if merge else functions_of(files, read_blob),
        )

    log.patches(["-U0", "--inter-hunk-context=0", "--full-index"], analyse)

    diffs: dict[str, str] = {}

    def keep_diff(sha: str, lines: list[str]) -> None:
        text = "\n".join(lines).lstrip("\n")
        diffs[sha] = (text + "\n" if text else "")[:max_diff_chars]

    if max_diff_chars:
        log.patches(["-U3"], keep_diff, max_chars=max_diff_chars)

    numbers = pull_requests(headers)
    commits = []
    for header in headers:
        analysis = analyses.get(header.sha, _Analysis((), (), ()))
        commits.append(
            Commit(
                sha=header.sha,
                title=header.title,
                body=header.body,
                author=header.author,
                authored_at_s=header.authored_at_s,
                files=analysis.files,
                pull_request=numbers[header.sha],
                diff=diffs.get(header.sha, ""),
                subroutines=analysis.subroutines,
                functions=analysis.functions,
                identifiers=analysis.identifiers,
                is_merge=header.is_merge,
            )
        )
    return commits
