"""Cosmetic edits: a touched Python function whose behaviour did not change.

A function whose *behaviour fingerprint* (``ast.dump`` after removing docstrings, emptying
nested functions and renaming locals by first use) is the same at both sides of the diff is a
``cosmetic`` touch, not a modification. Complexity: one deep copy and two walks of the
function's subtree per touched function.

Design: docs/design/attribution_cosmetic.md
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator, Sequence
from functools import lru_cache

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

__all__ = [
    "ANONYMOUS_KINDS",
    "behaviour_fingerprint",
    "function_nodes",
    "is_cosmetic",
    "module_code",
    "renamed_from",
    "unchanged_anonymous",
]

# The frame names CPython gives a function's anonymous code objects (``f.<locals>.<listcomp>``).
ANONYMOUS_KINDS: dict[type, str] = {
    ast.ListComp: "<listcomp>",
    ast.SetComp: "<setcomp>",
    ast.DictComp: "<dictcomp>",
    ast.GeneratorExp: "<genexpr>",
    ast.Lambda: "<lambda>",
}

_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


@lru_cache(maxsize=128)
def function_nodes(source: str | bytes) -> dict[str, tuple[ast.AST, ...]] | None:
    """Every function and method of a source by qualname (as ``python_subroutines.outline``
    names them: ``Class.method``, ``outer.inner``), None when it does not parse.

    A qualname maps to *every* definition of that name in source order: ``@overload`` stubs
    precede the real definition, a ``@property`` getter and its ``@x.setter`` share one name,
    and a conditional ``if``/``else`` may define a function twice. Profiles name all of them
    alike, so a change to any one of them is a change of the frame; comparing only the first
    would call a real edit of the last (the one that runs) cosmetic."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: dict[str, list[ast.AST]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTIONS):
                found.setdefault(prefix + child.name, []).append(child)
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                visit(child, prefix)

    visit(tree, "")
    return {name: tuple(nodes) for name, nodes in found.items()}


def is_cosmetic(qualname: str, old_source: str | bytes, new_source: str | bytes) -> bool:
    """Whether function ``qualname`` exists on both sides with the same behaviour fingerprints
    (design file): every definition of that name, in order; False when either side does
    not parse or lacks it."""
    old, new = function_nodes(old_source), function_nodes(new_source)
    if old is None or new is None or qualname not in old or qualname not in new:
        return False
    if len(old[qualname]) != len(new[qualname]):
        return False
    return all(
        behaviour_fingerprint(a) == behaviour_fingerprint(b)
        for a, b in zip(old[qualname], new[qualname], strict=True)
    )


def renamed_from(
    qualname: str, candidates: Sequence[str], old_source: str | bytes, new_source: str | bytes
) -> str | None:
    """The function among ``candidates`` (qualnames that exist only in the old source) that
    ``qualname`` (only in the new source) is a rename of: same enclosing qualname and the same
    behaviour fingerprint once the function's own name is set aside; None when there is none
    or more than one. A renamed function runs the code it ran before under another frame
    name, so a profile sees a "new" function whose cost is the old one's."""
    old, new = function_nodes(old_source), function_nodes(new_source)
    if old is None or new is None or qualname not in new:
        return None
    parent = qualname.rpartition(".")[0]
    wanted = _nameless(new[qualname])
    found = [
        name
        for name in candidates
        if name in old and name.rpartition(".")[0] == parent and _nameless(old[name]) == wanted
    ]
    return found[0] if len(found) == 1 else None


def _nameless(functions: tuple[ast.AST, ...]) -> tuple[str, ...]:
    prints = []
    for function in functions:
        node = copy.copy(function)
        node.name = "_"  # type: ignore[attr-defined]
        prints.append(behaviour_fingerprint(node))
    return tuple(prints)


def unchanged_anonymous(
    qualname: str, old_source: str | bytes, new_source: str | bytes
) -> frozenset[str]:
    """The kinds of anonymous code (``<listcomp>``, ``<genexpr>``, ``<lambda>``…) of function
    ``qualname`` that run the same code on both sides: a profile names such a frame
    ``qualname.<locals>.<listcomp>``, one frame name for every comprehension of that kind in the
    function, so a kind counts as unchanged when the function has the same sequence of them
    (``ast.dump`` without positions, in source order; nested functions and classes are their own
    qualnames and are left out) at both sides. An edit elsewhere in the function then does not
    make its untouched comprehension a modified frame. Empty when either side does not parse
    or lacks the function."""
    old, new = function_nodes(old_source), function_nodes(new_source)
    if old is None or new is None or qualname not in old or qualname not in new:
        return frozenset()
    before, after = _anonymous_code(old[qualname]), _anonymous_code(new[qualname])
    return frozenset(
        kind for kind in set(before) | set(after) if before.get(kind) == after.get(kind)
    )


def _anonymous_code(functions: tuple[ast.AST, ...]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for function in functions:
        stack = list(ast.iter_child_nodes(function))[::-1]
        while stack:
            node = stack.pop()
            if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
                continue
            kind = ANONYMOUS_KINDS.get(type(node))
            if kind is not None:
                found.setdefault(kind, []).append(ast.dump(node, include_attributes=False))
            stack.extend(list(ast.iter_child_nodes(node))[::-1])
    return found


@lru_cache(maxsize=128)
def module_code(source: str | bytes) -> str | None:
    """What a module runs at import, as text: its AST without function definitions (their
    bodies run when called; defining one costs nothing measurable) and without docstrings,
    layout or comments; "" for a module that only defines functions, None when it does not
    parse. Two sides with different ``module_code`` changed import-time work (the module's
    ``<module>`` frame in a profile)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    _strip_docstrings(tree)
    kept = _without_functions(tree.body)
    return "" if not kept else ast.dump(ast.Module(kept, []), include_attributes=False)


def _without_functions(statements: list[ast.stmt]) -> list[ast.stmt]:
    kept: list[ast.stmt] = []
    for statement in statements:
        if isinstance(statement, _FUNCTIONS):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            if isinstance(statement.value.value, str):
                continue  # a docstring (module, class) or a bare string: no work
        for field in _BLOCKS:
            block = getattr(statement, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(statement, field, _without_functions(block) or [ast.Pass()])
        for handler in getattr(statement, "handlers", None) or ():  # try/except clauses
            handler.body = _without_functions(handler.body) or [ast.Pass()]
        if not isinstance(statement, ast.Pass):
            kept.append(statement)
    return kept


def behaviour_fingerprint(function: ast.AST) -> str:
    """The function's AST as text with docstrings, nested bodies and local names normalised."""
    node = copy.deepcopy(function)
    _strip_docstrings(node)
    _empty_nested(node)
    _rename_locals(node)
    return ast.dump(node, annotate_fields=True, include_attributes=False)


def _strip_docstrings(root: ast.AST) -> None:
    for node in ast.walk(root):
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef, ast.Module)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:] or [ast.Pass()]


def _empty_nested(root: ast.AST) -> None:
    for node in ast.walk(root):
        if node is not root and isinstance(node, _FUNCTIONS):
            node.body = [ast.Pass()]


def _rename_locals(function: ast.AST) -> None:
    assert isinstance(function, _FUNCTIONS)
    declared: set[str] = set()
    parameters = {a.arg for a in _all_args(function.args)}
    bound: list[str] = []
    for node in _own_scope(function):
        if isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.append(node.id)
        elif isinstance(node, ast.alias):
            bound.append(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.append(node.name)
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)) and node is not function:
            bound.append(node.name)
    local = {name for name in bound if name not in declared and name not in parameters}
    order: dict[str, str] = {}
    for node in ast.walk(function):  # first use, anywhere (closures included)
        name = _name_of(node)
        if name in local and name not in order:
            order[name] = f"_local{len(order)}"
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, ast.Name) and node.id in order:
            node.id = order[node.id]
        elif isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) in order:
            node.asname = order[node.asname or node.name.split(".")[0]]
        elif isinstance(node, ast.ExceptHandler) and node.name in order:
            node.name = order[node.name]
        elif isinstance(node, (*_FUNCTIONS, ast.ClassDef)) and node.name in order:
            node.name = order[node.name]


def _own_scope(function: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``function``'s own scope: not inside nested functions, classes, lambdas or
    comprehensions (their names are theirs), but their names and decorators, which bind or
    run in this scope."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                stack.extend(node.decorator_list)
            continue
        if isinstance(node, _COMPREHENSIONS):
            stack.extend(g.iter for g in node.generators[:1])  # evaluated in this scope
            continue
        stack.extend(ast.iter_child_nodes(node))


def _all_args(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if args.vararg:
        found.append(args.vararg)
    if args.kwarg:
        found.append(args.kwarg)
    return found


def _name_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.alias):
        return node.asname or node.name.split(".")[0]
    if isinstance(node, ast.ExceptHandler):
        return node.name
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return node.name
    return None
