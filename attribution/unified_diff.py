"""Parsing a git unified diff into file sections, hunks and changed line ranges.

``parse_diff`` reads the output of ``git diff``/``git log -p`` (one pass, O(lines));
``changed_ranges`` gives the exact removed and added line ranges per file that
``python_subroutines`` consumes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

LineRange = tuple[int, int]
"""An inclusive range of 1-based line numbers ``(first, last)``."""

ChangedLine = tuple[int, str]
"""A removed or added line: its 1-based number on its side and its text (no newline)."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` hunk: the function context git printed and the removed and added lines."""

    header: str
    removed: tuple[ChangedLine, ...] = ()
    added: tuple[ChangedLine, ...] = ()


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file's section of a git diff.

    ``old_path`` is None for an added file, ``new_path`` None for a deleted one. Blob ids are
    as printed on the ``index`` line (full with ``--full-index``), None when absent or all
    zeros. ``binary`` is True when git printed no text hunks because the file is binary.
    """

    old_path: str | None
    new_path: str | None
    old_blob: str | None = None
    new_blob: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    binary: bool = False
    hunks: tuple[Hunk, ...] = ()

    @property
    def path(self) -> str:
        """The path after the change; the old path for a deleted file."""
        path = self.new_path if self.new_path is not None else self.old_path
        assert path is not None
        return path

    @property
    def renamed_from(self) -> str | None:
        """The old path when the file was renamed or moved, else None."""
        if self.old_path is not None and self.new_path is not None:
            return self.old_path if self.old_path != self.new_path else None
        return None

    def changed_ranges(self) -> tuple[list[LineRange], list[LineRange]]:
        """The removed lines (old side) and the added lines (new side) as merged ranges."""
        removed = [number for hunk in self.hunks for number, _ in hunk.removed]
        added = [number for hunk in self.hunks for number, _ in hunk.added]
        return merge_lines(removed), merge_lines(added)


def merge_lines(numbers: Iterable[int]) -> list[LineRange]:
    """Line numbers -> sorted inclusive ranges of consecutive lines."""
    ranges: list[LineRange] = []
    for number in sorted(set(numbers)):
        if ranges and ranges[-1][1] == number - 1:
            ranges[-1] = (ranges[-1][0], number)
        else:
            ranges.append((number, number))
    return ranges


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_ZERO_BLOB = re.compile(r"^0+$")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> tuple[str, str]:
    """Read one path that git may have C-quoted; returns (path, the rest of ``text``)."""
    if not text.startswith('"'):
        return text, ""
    out = bytearray()
    i = 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return out.decode("utf-8", errors="replace"), text[i + 1 :]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _C_ESCAPES:
                out.append(_C_ESCAPES[nxt])
                i += 2
                continue
            if re.match(r"[0-7]{3}", text[i + 1 : i + 4]):
                out.append(int(text[i + 1 : i + 4], 8))
                i += 4
                continue
        out.extend(char.encode("utf-8"))
        i += 1
    return out.decode("utf-8", errors="replace"), ""


def _strip_prefix(path: str, prefix: str) -> str:
    return path[len(prefix) :] if path.startswith(prefix) else path


def _paths_of_git_header(rest: str) -> tuple[str, str]:
    """Paths of ``diff --git a/X b/Y`` (``rest`` is ``a/X b/Y``). Unquoted paths with spaces
    are ambiguous unless equal (git's own rule); renames then get their paths from the
    ``rename from``/``rename to`` lines."""
    if rest.startswith('"'):
        old, tail = _unquote(rest)
        tail = tail.lstrip(" ")
        new = _unquote(tail)[0] if tail.startswith('"') else tail
        return _strip_prefix(old, "a/"), _strip_prefix(new, "b/")
    quoted_new = rest.find(' "b/')
    if quoted_new >= 0:
        return _strip_prefix(rest[:quoted_new], "a/"), _strip_prefix(
            _unquote(rest[quoted_new + 1 :])[0], "b/"
        )
    half = (len(rest) - 1) // 2
    old, new = rest[:half], rest[half + 1 :]
    if len(rest) % 2 == 1 and old[2:] == new[2:] and old.startswith("a/") and new.startswith("b/"):
        return old[2:], new[2:]
    split = rest.rfind(" b/")
    if split < 0:
        return _strip_prefix(rest, "a/"), _strip_prefix(rest, "a/")
    return _strip_prefix(rest[:split], "a/"), rest[split + 3 :]


def _side_path(text: str, prefix: str) -> str | None:
    """The path of a ``--- a/x`` / ``+++ b/x`` line (without the marker), None for /dev/null."""
    if text.endswith("\t"):  # git appends a tab to names containing spaces
        text = text[:-1]
    path = _unquote(text)[0]
    return None if path == "/dev/null" else _strip_prefix(path, prefix)


class _FileBuilder:
    """Mutable state while one file section of a diff is read."""

    def __init__(self, header_rest: str) -> None:
        self.old_path: str | None
        self.new_path: str | None
        self.old_path, self.new_path = _paths_of_git_header(header_rest)
        self.old_blob: str | None = None
        self.new_blob: str | None = None
        self.old_mode: str | None = None
        self.new_mode: str | None = None
        self.binary = False
        self.added_file = False
        self.deleted_file = False
        self.hunks: list[Hunk] = []
        self.hunk_header = ""
        self.removed: list[ChangedLine] = []
        self.added: list[ChangedLine] = []
        self.old_line = 0
        self.new_line = 0
        self.old_left = 0
        self.new_left = 0
        self.in_hunk = False

    def start_hunk(self, match: re.Match[str]) -> None:
        self.end_hunk()
        self.old_line = int(match.group(1))
        self.old_left = int(match.group(2)) if match.group(2) is not None else 1
        self.new_line = int(match.group(3))
        self.new_left = int(match.group(4)) if match.group(4) is not None else 1
        self.hunk_header = match.group(5).rstrip("\r")
        self.in_hunk = True

    def hunk_line(self, line: str) -> None:
        marker, text = line[:1], line[1:].rstrip("\r")
        if marker == "-":
            self.removed.append((self.old_line, text))
            self.old_line += 1
            self.old_left -= 1
        elif marker == "+":
            self.added.append((self.new_line, text))
            self.new_line += 1
            self.new_left -= 1
        elif marker in (" ", ""):  # context; "" when diff.suppressBlankEmpty is set
            self.old_line += 1
            self.new_line += 1
            self.old_left -= 1
            self.new_left -= 1
        if self.old_left <= 0 and self.new_left <= 0:
            self.end_hunk()

    def end_hunk(self) -> None:
        if self.in_hunk:
            self.hunks.append(Hunk(self.hunk_header, tuple(self.removed), tuple(self.added)))
        self.in_hunk = False
        self.removed, self.added = [], []

    def meta_line(self, line: str) -> None:
        if line.startswith("index "):
            blobs, _, mode = line[6:].partition(" ")
            old, _, new = blobs.partition("..")
            self.old_blob = None if _ZERO_BLOB.match(old) else old
            self.new_blob = None if _ZERO_BLOB.match(new) else new
            if mode:
                self.old_mode = self.old_mode or mode.strip()
                self.new_mode = self.new_mode or mode.strip()
        elif line.startswith("new file mode "):
            self.added_file = True
            self.new_mode = line[14:].strip()
        elif line.startswith("deleted file mode "):
            self.deleted_file = True
            self.old_mode = line[18:].strip()
        elif line.startswith("old mode "):
            self.old_mode = line[9:].strip()
        elif line.startswith("new mode "):
            self.new_mode = line[9:].strip()
        elif line.startswith("rename from ") or line.startswith("copy from "):
            self.old_path = _unquote(line.split(" from ", 1)[1])[0]
        elif line.startswith("rename to ") or line.startswith("copy to "):
            self.new_path = _unquote(line.split(" to ", 1)[1])[0]
        elif line.startswith("--- "):
            path = _side_path(line[4:], "a/")
            if path is not None:
                self.old_path = path
        elif line.startswith("+++ "):
            path = _side_path(line[4:], "b/")
            if path is not None:
                self.new_path = path
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            self.binary = True

    def build(self) -> FileDiff:
        self.end_hunk()
        return FileDiff(
            old_path=None if self.added_file else self.old_path,
            new_path=None if self.deleted_file else self.new_path,
            old_blob=None if self.added_file else self.old_blob,
            new_blob=None if self.deleted_file else self.new_blob,
            old_mode=self.old_mode,
            new_mode=self.new_mode,
            binary=self.binary,
            hunks=tuple(self.hunks),
        )


def parse_diff(diff: str | Iterable[str]) -> list[FileDiff]:
    """Parse a git unified diff (text, or its lines without newlines) into file sections.

    Hunk lines are counted against the ``@@`` header's line counts, so removed lines whose text
    starts with ``--`` are not mistaken for headers. Lines before the first ``diff --git``
    (a commit header) are ignored. Works for any ``-U``; hunk headers are most precise with
    ``-U0``.
    """
    lines = diff.splitlines() if isinstance(diff, str) else diff
    files: list[FileDiff] = []
    current: _FileBuilder | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        if current is not None and current.in_hunk:
            current.hunk_line(line)
            continue
        if line.startswith("diff --git "):
            if current is not None:
                files.append(current.build())
            current = _FileBuilder(line[11:])
            continue
        if current is None or line.startswith("\\"):
            continue
        match = _HUNK_HEADER.match(line)
        if match:
            current.start_hunk(match)
        else:
            current.meta_line(line)
    if current is not None:
        files.append(current.build())
    return files


def changed_ranges(diff: str | Iterable[str]) -> dict[str, tuple[list[LineRange], list[LineRange]]]:
    """Per file path (new path; old path for a deleted file): (old-side ranges, new-side
    ranges) of the removed and added lines."""
    return {file.path: file.changed_ranges() for file in parse_diff(diff)}
