"""Cosmetic edits: docstrings, comments, layout and consistent renames of locals leave a
function's behaviour fingerprint alone; anything that changes what it does does not."""

from __future__ import annotations

import pytest
from line_ranges import ranges_between

from regbot.attribution.cosmetic import is_cosmetic, unchanged_anonymous
from regbot.attribution.python_subroutines import python_subroutines

OLD = '''
import re

PATTERN = re.compile("a+")


def tokens(text, limit=10):
    """Split text into tokens."""
    found = []  # the tokens so far
    for match in PATTERN.finditer(text):
        found.append(match.group(0))
        if len(found) >= limit:
            break
    return found


def counter(items):
    total = 0

    def bump(step):
        nonlocal total
        total += step

    for item in items:
        bump(item)
    return total
'''


def edited(old: str, new: str, qualname: str = "tokens") -> bool:
    return is_cosmetic(qualname, old, new)


@pytest.mark.parametrize(
    "new",
    [
        OLD.replace('"""Split text into tokens."""', '"""Split ``text``.\n\n    Long.\n    """'),
        OLD.replace("  # the tokens so far", ""),
        OLD.replace("found = []", "found = [\n    ]"),
        OLD.replace("found", "result"),  # a consistent rename of a local
        OLD.replace("match", "hit"),
        OLD.replace('    """Split text into tokens."""\n', ""),  # docstring removed
    ],
)
def test_cosmetic_edits(new: str) -> None:
    assert new != OLD
    assert edited(OLD, new)


@pytest.mark.parametrize(
    "new",
    [
        OLD.replace(">= limit", "> limit"),
        OLD.replace("limit=10", "limit=20"),  # a default value is behaviour
        OLD.replace("limit", "maximum"),  # a parameter: callers pass it by keyword
        OLD.replace("found.append(match.group(0))", "found.append(match.group(0).lower())"),
        OLD.replace("    return found\n", "    return list(found)\n"),
        OLD.replace("found = []  # the tokens so far", "found = []\n    text = text * 2"),
        OLD.replace("PATTERN.finditer", "re.finditer"),  # a global, not a local
        # a local renamed to a global it then shadows
        OLD.replace(
            "found.append(match.group(0))",
            "PATTERN = match\n        found.append(PATTERN.group(0))",
        ),
    ],
)
def test_behaviour_changes(new: str) -> None:
    assert not edited(OLD, new)


def test_renames_must_be_consistent() -> None:
    swapped = OLD.replace("for match in PATTERN", "for found2 in PATTERN")
    assert not edited(OLD, swapped)  # the loop variable renamed at its binding only


def test_closures_and_nonlocal() -> None:
    # the nested function's body is its own; a nonlocal name stays a name of the outer scope
    assert edited(OLD, OLD.replace("total", "count"), "counter")
    assert edited(OLD, OLD.replace("total += step", "total += step * 2"), "counter")
    assert not edited(OLD, OLD.replace("total += step", "total += step * 2"), "counter.bump")
    assert not edited(OLD, OLD.replace("bump(item)", "bump(item + 1)"), "counter")


def test_python_subroutines_reports_cosmetic_touches_as_such() -> None:
    new = OLD.replace('"""Split text into tokens."""', '"""Tokens."""').replace(
        "total += step", "total += 2 * step"
    )
    old_ranges, new_ranges = ranges_between(OLD, new)
    found = python_subroutines("src/lib/text.py", OLD, new, old_ranges, new_ranges)
    kinds = {s.qualname: s.change for s in found}
    assert kinds == {"tokens": "cosmetic", "counter.bump": "modified"}


def test_missing_or_unparsable_sides_are_not_cosmetic() -> None:
    assert not is_cosmetic("tokens", OLD, "def (")
    assert not is_cosmetic("tokens", OLD, OLD.replace("def tokens", "def words"))


OVERLOADED = '''
from typing import overload


class Registry:
    @overload
    def __getitem__(self, key: str) -> object: ...

    @overload
    def __getitem__(self, key: int) -> object: ...

    def __getitem__(self, key):
    """Item by name or index."""
        return self._data[key]

    @property
    def size(self):
        return len(self._data)

    @size.setter
    def size(self, value):
        self._limit = value
'''.replace('    """Item', '        """Item')


def test_every_definition_of_a_name_counts() -> None:
    # the real definition follows its @overload stubs: an edit of it is behaviour
    real_edit = OVERLOADED.replace("return self._data[key]", "return list(self._data)[key]")
    assert not edited(OVERLOADED, real_edit, "Registry.__getitem__")
    assert edited(OVERLOADED, OVERLOADED.replace("by name", "by its name"), "Registry.__getitem__")
    # a property's setter shares the getter's frame name
    setter_edit = OVERLOADED.replace("self._limit = value", "self._limit = int(value)")
    assert not edited(OVERLOADED, setter_edit, "Registry.size")
    # a stub removed is a change of the name's definitions
    assert not edited(
        OVERLOADED,
        OVERLOADED.replace(
            "    @overload\n    def __getitem__(self, key: int) -> object: ...\n", ""
        ),
        "Registry.__getitem__",
    )


def test_untouched_comprehensions_of_an_edited_function_stay_unchanged() -> None:
    source = """
def compile_all(rules):
    table = [(compile(r), kind) for r, kind in rules]
    return table
"""
    extra_loop = source.replace(
        "    return table", "    for entry in table:\n        entry[0]('x')\n    return table"
    )
    assert not edited(source, extra_loop, "compile_all")
    assert unchanged_anonymous("compile_all", source, extra_loop) == {"<listcomp>"}
    faster = source.replace("[(compile(r), kind)", "[(compile(r, 0), kind)")
    assert unchanged_anonymous("compile_all", source, faster) == frozenset()
    # a new comprehension of another kind: that kind changed, the list comprehension did not
    with_set = extra_loop.replace(
        "    return table", "    seen = {k for _, k in table}\n    return table"
    )
    assert unchanged_anonymous("compile_all", source, with_set) == {"<listcomp>"}
    old_ranges, new_ranges = ranges_between(source, extra_loop)
    (found,) = python_subroutines("lib/rules.py", source, extra_loop, old_ranges, new_ranges)
    assert found.change == "modified" and found.unchanged_anonymous == {"<listcomp>"}


def test_a_renamed_nested_function_is_a_cosmetic_touch() -> None:
    source = """
def token_next(tokens, skip_ws=True):
    def matcher(tk):
        return not (skip_ws and tk.is_whitespace)

    return [t for t in tokens if matcher(t)]
"""
    renamed = source.replace("matcher", "wanted")
    old_ranges, new_ranges = ranges_between(source, renamed)
    found = python_subroutines("lib/tokens.py", source, renamed, old_ranges, new_ranges)
    assert {(m.qualname, m.change) for m in found} == {
        ("token_next", "cosmetic"),
        ("token_next.wanted", "cosmetic"),
    }
    # renamed *and* changed: the old name deleted, the new one added
    changed = renamed.replace("tk.is_whitespace)", "tk.is_whitespace or tk.is_newline)")
    old_ranges, new_ranges = ranges_between(source, changed)
    found = python_subroutines("lib/tokens.py", source, changed, old_ranges, new_ranges)
    assert {(m.qualname, m.change) for m in found} == {
        ("token_next", "cosmetic"),
        ("token_next.matcher", "deleted"),
        ("token_next.wanted", "added"),
    }
