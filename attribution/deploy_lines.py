"""What a deploy did to each line of a Python file: which of its commits last changed the line's
behaviour (``git blame``, cosmetic commits ignored), where each line of the previous deploy's
source went (``difflib``), and which loops enclose it (``ast``). Used by
``attribution.line_credit`` to split a stack's rise between two commits of one function.

Design: docs/design/attribution_deploy_lines.md
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from regbot.attribution.model import Commit
from regbot.git_repository import GitRepository

_PAIR_FLOOR = 0.5  # a replaced line keeps its samples when at least this alike to its new form


@dataclass(frozen=True, slots=True)
class FileLines:
    """One file's line facts at the deploy (design file). Lines are 1-based."""

    owner: Mapping[int, str] = field(default_factory=dict)
    from_previous: Mapping[int, int] = field(default_factory=dict)
    header: Mapping[int, int] = field(default_factory=dict)
    loops: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeployLines:
    """Line facts of the deploy's files (repository path → facts), and ``since_s``: when the
    previous deploy started, after which before-window frames carry its line numbers."""

    files: Mapping[str, FileLines]
    since_s: float


def loop_structure(source: str) -> tuple[dict[int, int], dict[int, tuple[int, ...]]]:
    """``header`` and ``loops`` of a Python source (design file); empty when it does not
    parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}, {}
    header: dict[int, int] = {}
    spans: list[tuple[int, int, int]] = []  # header line, first and last line of the body
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node.body:
            first_body = node.body[0].lineno
            for line in range(node.lineno, max(first_body, node.lineno + 1)):
                header.setdefault(line, node.lineno)
            last = max(getattr(n, "end_lineno", None) or n.lineno for n in node.body)
            spans.append((node.lineno, first_body, last))
    spans.sort(key=lambda s: s[2] - s[1])  # innermost (shortest body) first
    lines = len(source.splitlines())
    loops: dict[int, tuple[int, ...]] = {}
    for line in range(1, lines + 1):
        # A loop's body never holds its own header, so a header line gets the loops around
        # its loop only.
        around = tuple(start for start, first, last in spans if first <= line <= last)
        if around:
            loops[line] = around
    return header, loops


def line_map(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    """Old line → new line (1-based) across one file's edit (design file)."""
    mapped: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            mapped.update({i1 + k + 1: j1 + k + 1 for k in range(i2 - i1)})
        elif tag == "replace":
            for k in range(min(i2 - i1, j2 - j1)):
                alike = difflib.SequenceMatcher(None, old[i1 + k], new[j1 + k], autojunk=False)
                if alike.ratio() >= _PAIR_FLOOR:
                    mapped[i1 + k + 1] = j1 + k + 1
    return mapped


def parse_blame(porcelain: str) -> dict[int, str]:
    """Final line → sha from ``git blame --porcelain``, boundary commits (older than the range)
    left out."""
    owner: dict[int, str] = {}
    boundary: set[str] = set()
    sha = ""
    for row in porcelain.splitlines():
        if row.startswith("\t"):
            continue
        parts = row.split(" ")
        if len(parts) >= 3 and len(parts[0]) >= 40 and _is_hex(parts[0]) and parts[2].isdigit():
            sha = parts[0]
            owner[int(parts[2])] = sha
        elif row == "boundary":
            boundary.add(sha)
    return {line: s for line, s in owner.items() if s not in boundary}


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def cosmetic_only(commits: Sequence[Commit], path: str) -> list[str]:
    """Shas of the commits whose every function touched in ``path`` was touched cosmetically
    (blame passes through them)."""
    out = []
    for commit in commits:
        touched = [s for s in commit.subroutines if s.path == path]
        if touched and all(s.change == "cosmetic" for s in touched):
            out.append(commit.sha)
    return out


def read_deploy_lines(
    repo_path: Path,
    previous: str,
    deploy: str,
    paths: Collection[str],
    commits: Sequence[Commit],
    since_s: float,
) -> DeployLines:
    """Line facts of the Python files ``paths`` (repository paths at the deploy) for the
    deploy ``previous..deploy``; a file git cannot show at the deploy is left out. InputError
    when ``repo_path`` is no git repository."""
    files: dict[str, FileLines] = {}
    python = sorted(p for p in paths if p.endswith(".py"))
    if not python:
        return DeployLines(files, since_s)
    with GitRepository.open(Path(repo_path)) as repo:
        for path in python:
            new = _show(repo, deploy, path)
            if new is None:
                continue
            old = _show(repo, previous, path) or ""
            ignored = [arg for sha in cosmetic_only(commits, path) for arg in ("--ignore-rev", sha)]
            blame = _git(
                repo, ["blame", "--porcelain", *ignored, f"{previous}..{deploy}", "--", path]
            )
            header, loops = loop_structure(new)
            files[path] = FileLines(
                owner=parse_blame(blame or ""),
                from_previous=line_map(old.splitlines(), new.splitlines()),
                header=header,
                loops=loops,
            )
    return DeployLines(files, since_s)


def _show(repo: GitRepository, revision: str, path: str) -> str | None:
    return _git(repo, ["show", f"{revision}:{path}"])


def _git(repo: GitRepository, args: list[str]) -> str | None:
    """``git args``'s output as text, None when git fails (the file is then left out)."""
    out = repo.output(["-c", "core.quotepath=off", *args])
    return None if out is None else out.decode("utf-8", errors="replace")
