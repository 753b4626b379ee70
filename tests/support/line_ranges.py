"""Removed and added line ranges between two sources, as a unified diff would show them."""

from __future__ import annotations

import difflib

from regbot.attribution.unified_diff import merge_lines


def ranges_between(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Removed and added line ranges of ``old`` -> ``new`` (difflib, as a diff would show)."""
    removed: list[int] = []
    added: list[int] = []
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += range(i1 + 1, i2 + 1)
        if tag in ("replace", "insert"):
            added += range(j1 + 1, j2 + 1)
    return merge_lines(removed), merge_lines(added)
