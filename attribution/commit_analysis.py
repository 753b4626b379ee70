"""What attribution reads from one commit's diff (FBDetect §5.6): the identifiers on its
changed lines, the subroutines it modifies (Python exactly from both blobs, other languages
from hunk headers) and the outline of every Python file it changed.

Design: docs/design/attribution_changes.md
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable, Sequence

from regbot.attribution.diff_drivers import diff_driver_for
from regbot.attribution.hunk_subroutines import hunk_subroutines
from regbot.attribution.model import ModifiedSubroutine
from regbot.attribution.python_subroutines import module_name, outline, python_subroutines
from regbot.attribution.unified_diff import FileDiff

MAX_IDENTIFIERS = 500
_NO_SUBROUTINE_MODES = frozenset({"120000", "160000"})  # symlinks, submodules (gitlinks)


_C_KEYWORDS = (
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic "
    "_Generic _Noreturn _Static_assert _Thread_local"
)
_GO_KEYWORDS = (
    "break case chan const continue default defer else fallthrough for func go goto if import "
    "interface map package range return select struct switch type var"
)
_JAVA_KEYWORDS = (
    "abstract assert boolean break byte case catch char class const continue default do double "
    "else enum extends final finally float for goto if implements import instanceof int "
    "interface long native new package private protected public return short static strictfp "
    "super switch synchronized this throw throws transient try void volatile while true false "
    "null var record yield sealed permits"
)
_JS_KEYWORDS = (
    "break case catch class const continue debugger default delete do else export extends "
    "finally for function if import in instanceof new return super switch this throw try "
    "typeof var void while with yield let static enum await implements package protected "
    "interface private public null true false async of undefined"
)
KEYWORDS = frozenset(
    [
        *keyword.kwlist,
        *(" ".join((_C_KEYWORDS, _GO_KEYWORDS, _JAVA_KEYWORDS, _JS_KEYWORDS))).split(),
    ]
)
"""Language keywords of Python, C, Go, Java and JavaScript (case-sensitive)."""

_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*")


def identifiers_of(lines: Iterable[str], *, limit: int = MAX_IDENTIFIERS) -> tuple[str, ...]:
    """Distinct identifiers of ``lines`` (length >= 3, no keywords), first seen first."""
    found: dict[str, None] = {}
    for line in lines:
        for match in _IDENTIFIER.finditer(line):
            name = match.group()
            if len(name) >= 3 and name not in KEYWORDS and name not in found:
                found[name] = None
                if len(found) >= limit:
                    return tuple(found)
    return tuple(found)


def changed_texts(files: Sequence[FileDiff]) -> Iterable[str]:
    """Removed then added lines of every hunk, in diff order."""
    for file in files:
        for hunk in file.hunks:
            for _, text in hunk.removed:
                yield text
            for _, text in hunk.added:
                yield text


BlobReader = Callable[[str], bytes | None]


def subroutines_of(files: Sequence[FileDiff], read_blob: BlobReader) -> list[ModifiedSubroutine]:
    """The subroutines one (non-merge) commit's file diffs modify: Python files exactly from
    both blobs, others from hunk headers. A Python file whose blob cannot be read is read
    from its hunk headers too."""
    found: list[ModifiedSubroutine] = []
    for file in files:
        if file.binary or not file.hunks:
            continue
        if file.old_mode in _NO_SUBROUTINE_MODES or file.new_mode in _NO_SUBROUTINE_MODES:
            continue
        if diff_driver_for(file.path) != "python":
            found += hunk_subroutines(file)
            continue
        old_source = read_blob(file.old_blob) if file.old_blob else None
        new_source = read_blob(file.new_blob) if file.new_blob else None
        if (file.old_path is not None and old_source is None) or (
            file.new_path is not None and new_source is None
        ):
            found += hunk_subroutines(file, language="python", module=module_name(file.path))
            continue
        old_ranges, new_ranges = file.changed_ranges()
        found += python_subroutines(
            file.path,
            old_source,
            new_source,
            old_ranges,
            new_ranges,
            old_path=file.renamed_from,
            file_diff=file,
        )
    return found


def functions_of(
    files: Sequence[FileDiff], read_blob: BlobReader
) -> tuple[tuple[str, frozenset[str]], ...]:
    """Every function of each Python file one commit changed, at either side of its diff, by
    path (and by the path before a rename): the outline frame matching checks before it
    matches a frame fuzzily (``frame_match``). Files that do not parse on either side give
    what the other side has."""
    found: dict[str, frozenset[str]] = {}
    for file in files:
        if file.binary or diff_driver_for(file.path) != "python":
            continue
        names: frozenset[str] = frozenset()
        for blob in (file.old_blob, file.new_blob):
            source = read_blob(blob) if blob else None
            parsed = outline(source) if source is not None else None
            if parsed is not None:
                names |= parsed.qualnames
        for path in (file.path, file.renamed_from):
            if path and names:
                found[path] = found.get(path, frozenset()) | names
    return tuple(sorted(found.items()))
