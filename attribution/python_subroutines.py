"""Modified Python functions, exactly, from the old and new source and the changed lines
(FBDetect §5.6: the subroutines a commit modifies are its root-cause candidates' keys).

Each side is parsed with ``ast`` into an ``Outline`` (every function with its qualname and line
span, decorators included); a changed line belongs to the innermost function whose span holds
it; import-time code is the module's own ``<module>`` subroutine. A side that does not parse
falls back to ``hunk_subroutines`` (``exact=False``). One parse and one walk per side.

Design: docs/design/attribution_python_subroutines.md
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import PurePosixPath

from regbot.attribution.cosmetic import (
    is_cosmetic,
    module_code,
    renamed_from,
    unchanged_anonymous,
)
from regbot.attribution.hunk_subroutines import NEW, OLD, hunk_subroutines
from regbot.attribution.model import ChangeKind, ModifiedSubroutine
from regbot.attribution.unified_diff import FileDiff, LineRange

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
MODULE = "<module>"  # the qualname of a module's import-time code (py-spy's frame name)


def module_name(path: str) -> str | None:
    """The dotted module of a Python file path: ``src/app/views.py`` -> ``app.views`` (one
    leading ``src/`` is dropped), ``pkg/__init__.py`` -> ``pkg``; None for a non-Python path
    or a top-level ``__init__.py``."""
    pure = PurePosixPath(path)
    if pure.suffix.lower() not in PYTHON_SUFFIXES:
        return None
    parts = list(pure.parts)
    if len(parts) > 1 and parts[0] == "src":
        parts = parts[1:]
    stem = PurePosixPath(parts[-1]).stem
    parts = parts[:-1] if stem == "__init__" else [*parts[:-1], stem]
    return ".".join(parts) or None


@dataclass(frozen=True, slots=True)
class FunctionSpan:
    """One function of a source: qualname, first line (its first decorator's, if any), last
    line, and the index of the nearest enclosing function (None at module or class level)."""

    qualname: str
    first_line: int
    last_line: int
    parent: int | None


@dataclass(frozen=True, slots=True)
class Outline:
    """A parsed source's functions and, for each line a function owns innermost, which one.

    ``regions`` are sorted, disjoint ``(first, last, function index)`` ranges: a function's
    span minus the spans of the functions nested in it.
    """

    functions: tuple[FunctionSpan, ...]
    regions: tuple[tuple[int, int, int], ...]
    qualnames: frozenset[str]

    def touched(self, ranges: Sequence[LineRange]) -> list[str]:
        """Qualnames of the functions owning a line in ``ranges``, in source order."""
        starts = [region[0] for region in self.regions]
        hit: set[int] = set()
        for first, last in ranges:
            index = bisect_right(starts, last) - 1
            while index >= 0 and self.regions[index][1] >= first:
                hit.add(self.regions[index][2])
                index -= 1
        ordered = sorted(hit, key=lambda i: (self.functions[i].first_line, i))
        return list(dict.fromkeys(self.functions[i].qualname for i in ordered))


_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _child_statements(node: ast.AST) -> list[ast.AST]:
    """The statements (and except/case clauses) directly in ``node``'s blocks: definitions
    only ever appear there, so expressions are not walked."""
    children: list[ast.AST] = []
    for field in _BLOCK_FIELDS:
        value = getattr(node, field, None)
        if isinstance(value, list):
            children += [item for item in value if isinstance(item, ast.AST)]
    return children


def _collect(node: ast.AST, prefix: str, parent: int | None, functions: list[FunctionSpan]) -> None:
    for child in _child_statements(node):
        if isinstance(child, _FUNCTION_NODES):
            first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            last = child.end_lineno or child.lineno
            functions.append(FunctionSpan(prefix + child.name, first, last, parent))
            _collect(child, f"{prefix}{child.name}.", len(functions) - 1, functions)
        elif isinstance(child, ast.ClassDef):
            _collect(child, f"{prefix}{child.name}.", parent, functions)
        else:
            _collect(child, prefix, parent, functions)


def _regions(functions: Sequence[FunctionSpan]) -> tuple[tuple[int, int, int], ...]:
    children: dict[int, list[FunctionSpan]] = {}
    for function in functions:
        if function.parent is not None:
            children.setdefault(function.parent, []).append(function)
    regions: list[tuple[int, int, int]] = []
    for index, function in enumerate(functions):
        cursor = function.first_line
        for child in sorted(children.get(index, ()), key=lambda f: f.first_line):
            if child.first_line > cursor:
                regions.append((cursor, child.first_line - 1, index))
            cursor = max(cursor, child.last_line + 1)
        if cursor <= function.last_line:
            regions.append((cursor, function.last_line, index))
    return tuple(sorted(regions))


@lru_cache(maxsize=256)
def outline(source: str | bytes) -> Outline | None:
    """The :class:`Outline` of a Python source, None when it does not parse. Bytes honour a
    PEP 263 coding line. Cached: consecutive commits share most sources."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions: list[FunctionSpan] = []
    _collect(tree, "", None, functions)
    return Outline(tuple(functions), _regions(functions), frozenset(f.qualname for f in functions))


_EMPTY = Outline((), (), frozenset())


def _kind(qualname: str, old: Outline, new: Outline) -> ChangeKind:
    in_old, in_new = qualname in old.qualnames, qualname in new.qualnames
    if in_old and in_new:
        return "modified"
    return "added" if in_new else "deleted"


def python_subroutines(
    path: str,
    old_source: str | bytes | None,
    new_source: str | bytes | None,
    old_ranges: Sequence[LineRange],
    new_ranges: Sequence[LineRange],
    *,
    old_path: str | None = None,
    file_diff: FileDiff | None = None,
) -> list[ModifiedSubroutine]:
    """The functions a change to one Python file touches (see the design file).

    ``old_source``/``new_source`` are None when the file does not exist on that side (added,
    deleted). ``old_ranges``/``new_ranges`` are the removed and added line ranges;
    ``old_path`` is the path before a rename. ``file_diff`` (this file's diff with its hunk
    headers) is what a side that fails to parse falls back to; without it such a side yields
    nothing.
    """
    module = module_name(path)
    old = outline(old_source) if old_source is not None else _EMPTY
    new = outline(new_source) if new_source is not None else _EMPTY
    if old is not None and new is not None:
        touched = new.touched(new_ranges) + old.touched(old_ranges)
        found = []
        for qualname in dict.fromkeys(touched):
            kind = _kind(qualname, old, new)
            same: frozenset[str] = frozenset()
            if kind == "modified":
                if is_cosmetic(qualname, old_source or "", new_source or ""):
                    kind = "cosmetic"
                else:
                    same = unchanged_anonymous(qualname, old_source or "", new_source or "")
            found.append(ModifiedSubroutine(path, qualname, kind, old_path, module, True, same))
        found = _renames_as_cosmetic(found, old_source or "", new_source or "")
        import_time = _module_change(old_source, new_source)
        if import_time is not None:
            found.append(ModifiedSubroutine(path, MODULE, import_time, old_path, module, True))
        return found
    return _with_fallback(path, old, new, old_ranges, new_ranges, old_path, module, file_diff)


def _renames_as_cosmetic(
    found: list[ModifiedSubroutine], old_source: str | bytes, new_source: str | bytes
) -> list[ModifiedSubroutine]:
    """A function added under a new name whose code is a deleted one's (``cosmetic.renamed_from``:
    same parent, same behaviour) is a rename: the added name is a ``cosmetic`` touch and the
    deleted one is dropped. Its frame is new to the profile, but its cost is the old frame's."""
    deleted = [m.qualname for m in found if m.change == "deleted"]
    if not deleted:
        return found
    renamed: dict[str, str] = {}
    for m in found:
        if m.change == "added":
            old_name = renamed_from(m.qualname, deleted, old_source, new_source)
            if old_name is not None and old_name not in renamed.values():
                renamed[m.qualname] = old_name
    if not renamed:
        return found
    gone = set(renamed.values())
    return [
        replace(m, change="cosmetic") if m.qualname in renamed else m
        for m in found
        if not (m.change == "deleted" and m.qualname in gone)
    ]


def _module_change(old: str | bytes | None, new: str | bytes | None) -> ChangeKind | None:
    """How the module's import-time code changed (``cosmetic.module_code``): ``modified`` when
    both sides have it and it differs, ``added``/``deleted`` for a file whose one side has it;
    None when it did not change (or there is none)."""
    before = module_code(old) if old is not None else ""
    after = module_code(new) if new is not None else ""
    if before is None or after is None or before == after:
        return None
    if before and after:
        return "modified"
    return "added" if after else "deleted"


def _with_fallback(
    path: str,
    old: Outline | None,
    new: Outline | None,
    old_ranges: Sequence[LineRange],
    new_ranges: Sequence[LineRange],
    old_path: str | None,
    module: str | None,
    file_diff: FileDiff | None,
) -> list[ModifiedSubroutine]:
    """One or both sides did not parse: parsed sides by ``ast``, the others by hunk headers."""
    touched: list[str] = []
    if new is not None:
        touched += new.touched(new_ranges)
    if old is not None:
        touched += old.touched(old_ranges)
    results = [
        ModifiedSubroutine(path, qualname, "modified", old_path, module, False)
        for qualname in dict.fromkeys(touched)
    ]
    failed_sides = [side for side, parsed in ((OLD, old), (NEW, new)) if parsed is None]
    if file_diff is not None:
        known = {r.qualname for r in results} | {r.name for r in results}
        for found in hunk_subroutines(
            file_diff, sides=failed_sides, language="python", module=module
        ):
            if found.qualname not in known:
                known.add(found.qualname)
                results.append(
                    ModifiedSubroutine(path, found.qualname, found.change, old_path, module, False)
                )
    return results
