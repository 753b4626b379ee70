"""Modified functions from git's hunk headers: the approximate path of FBDetect §5.6 candidates.

For every language other than Python (which ``python_subroutines`` maps exactly with ``ast``),
the functions a change touches are read from the unified diff itself (``unified_diff``): the
function line git printed above each hunk (``diff_drivers``, ``function_lines``) and the
changed lines that define functions. Every result has ``exact=False``. Run the diff with
``-U0`` so that each hunk header is computed right above its change. One pass over the hunks'
lines.

Design: docs/design/attribution_hunk_subroutines.md
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from regbot.attribution.function_lines import (
    function_defined_by,
    function_from_header,
    language_for,
)
from regbot.attribution.hunk_cosmetic import hunk_is_cosmetic
from regbot.attribution.model import ChangeKind, ModifiedSubroutine
from regbot.attribution.unified_diff import ChangedLine, FileDiff

OLD = "old"
NEW = "new"


_CLOSING_ONLY = re.compile(r"^[\s})\];,]*(?:end\s*)?$")
_ATTACHES_FORWARD = re.compile(r"^\s*(?://|/\*|\*|#|--|@|\[\[|\"\"\"|''')")


@dataclass(slots=True)
class _Names:
    """Names one file's hunks touch: header functions with a changed line before any
    definition, and functions whose definition line was removed or added."""

    header_touched: dict[str, None]
    removed_defs: dict[str, None]
    added_defs: dict[str, None]
    order: dict[str, None]
    code_changed: set[str] = field(default_factory=set)  # touched by a hunk that changed code


def _walk(
    lines: tuple[ChangedLine, ...],
    header_function: str | None,
    language: str,
    names: _Names,
    defs: dict[str, None],
) -> None:
    """Attribute one side's changed lines of one hunk (see the design file)."""
    before_definition = True
    pending = False  # comment/annotation lines waiting to see whether a definition follows
    for _, text in lines:
        defined = function_defined_by(text, language)
        if defined is not None:
            defs[defined] = None
            names.order[defined] = None
            before_definition, pending = False, False
            continue
        if _CLOSING_ONLY.match(text):
            continue
        if _ATTACHES_FORWARD.match(text):
            pending = True
            continue
        pending = False
        if before_definition and header_function is not None:
            names.header_touched[header_function] = None
            names.order[header_function] = None
    if pending and before_definition and header_function is not None:
        names.header_touched[header_function] = None
        names.order[header_function] = None


def _change_kind(name: str, names: _Names) -> ChangeKind:
    removed, added = name in names.removed_defs, name in names.added_defs
    if removed and not added:
        return "deleted"
    if added and not removed and name not in names.header_touched:
        return "added"
    if not removed and not added and name not in names.code_changed:
        return "cosmetic"
    return "modified"


def hunk_subroutines(
    file: FileDiff,
    *,
    sides: Collection[str] = (OLD, NEW),
    language: str | None = None,
    module: str | None = None,
) -> list[ModifiedSubroutine]:
    """The functions one file's hunks touch, approximately (``exact=False``).

    ``sides`` limits the reading to the removed (``"old"``) and/or added (``"new"``) lines;
    ``language`` defaults to the one of the file's suffix; ``module`` is copied into the
    results (the Python fallback sets it). A binary file has no subroutines.
    """
    if file.binary:
        return []
    language = language or language_for(file.path)
    names = _Names({}, {}, {}, {})
    for hunk in file.hunks:
        header_function = function_from_header(hunk.header, language)
        touched = set(names.order)
        if OLD in sides:
            _walk(hunk.removed, header_function, language, names, names.removed_defs)
        if NEW in sides:
            _walk(hunk.added, header_function, language, names, names.added_defs)
        both_sides = OLD in sides and NEW in sides
        removed, added = [t for _, t in hunk.removed], [t for _, t in hunk.added]
        if not both_sides or not hunk_is_cosmetic(removed, added, language):
            names.code_changed |= set(names.order) - touched
            if header_function in names.header_touched:
                names.code_changed.add(header_function)
    return [
        ModifiedSubroutine(
            path=file.path,
            qualname=name,
            change=_change_kind(name, names),
            old_path=file.renamed_from,
            module=module,
            exact=False,
        )
        for name in names.order
    ]
