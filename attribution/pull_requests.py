"""Pull request numbers of a change set's commits: from a commit's own title, else from the
oldest PR merge commit that brought it in. O(commits × merges) over the change set.

Design: docs/design/attribution_changes.md
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from regbot.attribution.git_log import CommitHeader

_MERGE_PR = re.compile(r"^Merge pull request #(\d+) from \S")
_SQUASH_PR = re.compile(r"\(#(\d+)\)\s*$")


def pull_request_of(title: str) -> int | None:
    """The PR number a commit title shows: ``Merge pull request #123 from org/branch`` or a
    squash title ending ``(#123)``; None otherwise."""
    match = _MERGE_PR.match(title) or _SQUASH_PR.search(title)
    return int(match.group(1)) if match else None


def _ancestors_in(start: str, parents: dict[str, tuple[str, ...]]) -> set[str]:
    """``start`` and its ancestors among the keys of ``parents`` (the change set). Within
    ``previous..deploy`` that is exact: every commit between an in-range commit and an
    in-range ancestor is in range too."""
    seen: set[str] = set()
    stack = [start] if start in parents else []
    while stack:
        sha = stack.pop()
        if sha in seen:
            continue
        seen.add(sha)
        stack.extend(parent for parent in parents[sha] if parent in parents)
    return seen


def pull_requests(headers: Sequence[CommitHeader]) -> dict[str, int | None]:
    """PR number per commit sha: its own title's, else the one of the oldest PR merge commit
    that brought it in (reachable from one of the merge's other parents, not the first)."""
    numbers = {header.sha: pull_request_of(header.title) for header in headers}
    parents = {header.sha: header.parents for header in headers}
    for header in headers:  # oldest first
        number = numbers[header.sha]
        if not header.is_merge or number is None:
            continue
        mainline = _ancestors_in(header.parents[0], parents)
        for side_parent in header.parents[1:]:
            for sha in _ancestors_in(side_parent, parents) - mainline:
                if numbers[sha] is None:
                    numbers[sha] = number
    return numbers
