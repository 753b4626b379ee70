"""Exact Python subroutine mapping: sources + changed line ranges -> modified functions."""

from __future__ import annotations

import ast
from pathlib import Path

from git_repo import GitRepo
from hypothesis import given, settings
from hypothesis import strategies as st
from line_ranges import ranges_between

from regbot.attribution.diff_drivers import attributes_text, git_diff_config
from regbot.attribution.python_subroutines import module_name, outline, python_subroutines
from regbot.attribution.unified_diff import parse_diff


def changes(old: str | None, new: str | None, path: str = "src/app/views.py", **kw):
    old_ranges, new_ranges = ranges_between(old or "", new or "")
    found = python_subroutines(path, old, new, old_ranges, new_ranges, **kw)
    return {s.qualname: s.change for s in found}, found


BASE = """import functools

LIMIT = 3


def plain(x):
    return x + 1


@functools.lru_cache(maxsize=None)
@staticmethod
def decorated(x):
    return x * 2


async def fetch(url):
    await sleep(1)
    return url


def outer(a):
    b = a + 1

    def inner(c):
        return c * b

    return inner(b)


class Service:
    timeout = 5

    def handle(self, request):
        return request

    class Nested:
        def deep(self):
            return 1

    async def stream(self):
        yield 1


class Other:
    pass
"""


def test_module_names() -> None:
    assert module_name("src/app/views.py") == "app.views"
    assert module_name("app/views.py") == "app.views"
    assert module_name("pkg/__init__.py") == "pkg"
    assert module_name("src/pkg/sub/__init__.py") == "pkg.sub"
    assert module_name("tools/src/x.py") == "tools.src.x"
    assert module_name("setup.py") == "setup"
    assert module_name("README.md") is None


def test_body_change_modifies_the_function_and_sets_module_and_exact() -> None:
    kinds, found = changes(BASE, BASE.replace("return x + 1", "return x + 2"))
    assert kinds == {"plain": "modified"}
    assert found[0].module == "app.views" and found[0].exact
    assert found[0].full_name == "app.views.plain"


def test_decorator_lines_belong_to_the_function() -> None:
    kinds, _ = changes(BASE, BASE.replace("maxsize=None", "maxsize=128"))
    assert kinds == {"decorated": "modified"}


def test_async_functions_and_async_methods() -> None:
    new = BASE.replace("await sleep(1)", "await sleep(2)").replace("yield 1", "yield 2")
    kinds, _ = changes(BASE, new)
    assert kinds == {"fetch": "modified", "Service.stream": "modified"}


def test_innermost_wins_for_nested_functions() -> None:
    kinds, _ = changes(BASE, BASE.replace("return c * b", "return c * b * 2"))
    assert kinds == {"outer.inner": "modified"}
    both = BASE.replace("return c * b", "return c + b").replace("b = a + 1", "b = a + 2")
    kinds, _ = changes(BASE, both)
    assert kinds == {"outer": "modified", "outer.inner": "modified"}


def test_methods_of_nested_classes() -> None:
    kinds, _ = changes(BASE, BASE.replace("return 1\n", "return 2\n"))
    assert kinds == {"Service.Nested.deep": "modified"}


def test_module_and_class_level_changes_are_import_time_work() -> None:
    """Code that runs at import (module level, class bodies, class decorators) is the module's
    ``<module>`` subroutine; a comment or a blank line there, or a new function, is not."""
    new = BASE.replace("LIMIT = 3", "LIMIT = 4").replace("timeout = 5", "timeout = 6")
    kinds, _ = changes(BASE, new.replace("class Other:", "@final\nclass Other:"))
    assert kinds == {"<module>": "modified"}
    kinds, _ = changes(BASE, BASE.replace("LIMIT = 3", "LIMIT = 3  # the most\n\n"))
    assert kinds == {}
    kinds, _ = changes(BASE, BASE + "\n\ndef added(x):\n    return x\n")
    assert kinds == {"added": "added"}


def test_class_body_inside_a_function_belongs_to_the_function() -> None:
    old = (
        "def factory():\n    class Local:\n        size = 1\n\n"
        "        def m(self):\n            return 1\n    return Local\n"
    )
    kinds, _ = changes(old, old.replace("size = 1", "size = 2"))
    assert kinds == {"factory": "modified"}
    kinds, _ = changes(old, old.replace("return 1", "return 2"))
    assert kinds == {"factory.Local.m": "modified"}


def test_added_and_deleted_functions() -> None:
    new = BASE.replace(
        "async def fetch(url):\n    await sleep(1)\n    return url\n\n\n", ""
    ).replace("class Other:\n    pass\n", "class Other:\n    def fresh(self):\n        return 0\n")
    kinds, _ = changes(BASE, new)
    assert kinds == {"fetch": "deleted", "Other.fresh": "added"}


def test_method_moved_between_classes_is_deleted_and_added() -> None:
    new = BASE.replace("    def handle(self, request):\n        return request\n\n", "").replace(
        "class Other:\n    pass\n",
        "class Other:\n    def handle(self, request):\n        return request\n",
    )
    kinds, _ = changes(BASE, new)
    assert kinds == {"Service.handle": "deleted", "Other.handle": "added"}


def test_whole_file_added_or_deleted() -> None:
    kinds, found = changes(None, BASE, path="pkg/__init__.py")
    assert set(kinds.values()) == {"added"}
    assert set(kinds) == {
        "<module>",  # imports, LIMIT and the class bodies run at import
        "plain",
        "decorated",
        "fetch",
        "outer",
        "outer.inner",
        "Service.handle",
        "Service.Nested.deep",
        "Service.stream",
    }
    assert {s.module for s in found} == {"pkg"}
    kinds, _ = changes(BASE, None)
    assert set(kinds.values()) == {"deleted"} and len(kinds) == 9


def test_rename_keeps_qualnames_and_records_the_old_path() -> None:
    kinds, found = changes(
        BASE,
        BASE.replace("return x + 1", "return x - 1"),
        path="src/app/handlers.py",
        old_path="src/app/views.py",
    )
    assert kinds == {"plain": "modified"}
    assert (found[0].path, found[0].old_path, found[0].module) == (
        "src/app/handlers.py",
        "src/app/views.py",
        "app.handlers",
    )


def test_results_follow_source_order() -> None:
    new = BASE.replace("yield 1", "yield 3").replace("return x + 1", "return 0")
    _, found = changes(BASE, new)
    assert [s.qualname for s in found] == ["plain", "Service.stream"]


def test_a_side_that_does_not_parse_falls_back_to_hunk_headers(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    attributes = tmp_path / "attributes"
    attributes.write_text(attributes_text(), encoding="utf-8")
    old = "class Box:\n    def size(self):\n        return 1\n\n    def name(self):\n        return 'b'\n"
    new = (
        "class Box:\n    def size(self):\n        return 2\n\n    def name(self):\n"
        "        print 'b'\n\n    def extra(self):\n        return 3\n"
    )  # Python 2 print: the new side is a syntax error
    repo.commit("old", {"box.py": old})
    repo.write("box.py", new)
    diff = repo.staged_diff("-U0", config=git_diff_config(attributes))
    [file] = parse_diff(diff)
    old_ranges, new_ranges = file.changed_ranges()
    found = python_subroutines("box.py", old, new, old_ranges, new_ranges, file_diff=file)
    kinds = {s.qualname: s.change for s in found}
    # The old side parses: Box.size and Box.name exactly; the new side's hunks add `extra`
    # (a def line) and re-find `name`/`size` by header (dropped as already known).
    assert kinds == {"Box.size": "modified", "Box.name": "modified", "extra": "added"}
    assert all(not s.exact and s.module == "box" for s in found)
    assert python_subroutines("box.py", old, new, old_ranges, new_ranges) == [
        s for s in found if s.qualname != "extra"
    ]


def test_unparsable_sources_have_no_outline() -> None:
    assert outline("def broken(:\n") is None
    assert outline(b"x = 1\x00\n") is None
    assert outline(b"# -*- coding: latin-1 -*-\ndef f():\n    return '\xe9'\n") is not None


# --- property: the region index agrees with a line-by-line innermost search ----------------

_names = st.sampled_from(["a", "b", "c", "run", "go"])


def _block(depth: int) -> st.SearchStrategy[list[str]]:
    statement = st.sampled_from(["x = 1", "pass", "y = (1,\n 2)", "z = 2  # note"]).map(
        lambda s: s.splitlines()
    )
    if depth == 0:
        return st.lists(statement, min_size=1, max_size=3).map(lambda b: sum(b, []))

    def function(parts) -> list[str]:
        decorators, kind, name, body = parts
        head = [f"@d{i}" for i in range(decorators)] + [f"{kind} {name}():"]
        return head + ["    " + line for line in body]

    def klass(parts) -> list[str]:
        name, body = parts
        return [f"class {name.upper()}:"] + ["    " + line for line in body]

    def conditional(body: list[str]) -> list[str]:
        return ["if True:"] + ["    " + line for line in body]

    inner = _block(depth - 1)
    element = st.one_of(
        statement,
        st.tuples(st.integers(0, 2), st.sampled_from(["def", "async def"]), _names, inner).map(
            function
        ),
        st.tuples(_names, inner).map(klass),
        inner.map(conditional),
    )
    return st.lists(element, min_size=1, max_size=4).map(lambda b: sum(b, []))


def _innermost_by_line(source: str) -> dict[int, str]:
    owner: dict[int, tuple[int, str]] = {}

    def visit(node: ast.AST, prefix: str, depth: int) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                for line in range(first, (child.end_lineno or child.lineno) + 1):
                    if line not in owner or owner[line][0] < depth:
                        owner[line] = (depth, name)
                visit(child, name + ".", depth + 1)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", depth)
            else:
                visit(child, prefix, depth)

    visit(ast.parse(source), "", 0)
    return {line: name for line, (_, name) in owner.items()}


@settings(max_examples=150, derandomize=True, deadline=None)
@given(_block(3), st.lists(st.tuples(st.integers(1, 60), st.integers(0, 4)), max_size=5))
def test_touched_equals_the_innermost_function_of_each_changed_line(lines, spans) -> None:
    source = "\n".join(lines) + "\n"
    parsed = outline(source)
    assert parsed is not None
    ranges = [(start, start + length) for start, length in spans]
    owners = _innermost_by_line(source)
    expected = {owners[line] for a, b in ranges for line in range(a, b + 1) if line in owners}
    assert set(parsed.touched(ranges)) == expected
