"""Function names from hunk headers and from changed lines, per language.

``function_from_header`` turns the function line git printed after a hunk's ``@@ ... @@`` into
a dotted qualname (Go receivers ``(s *Server) Handle`` -> ``Server.Handle``, C++
``ns::Foo::bar`` -> ``ns.Foo.bar``, ...); ``function_defined_by`` tells whether a changed line
itself starts a function definition. One regex search per reader and line.

Design: docs/design/attribution_hunk_subroutines.md
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from regbot.attribution.diff_drivers import diff_driver_for

NameReader = Callable[[str], str | None]


def _qualify(owner: str | None, name: str) -> str:
    """Dotted qualname: ``::`` becomes ``.``, template/generic arguments and spaces go
    (``operator<=`` and ``operator new`` keep their operator text)."""
    text = f"{owner}.{name}" if owner else name
    operator = re.search(r"(?<!\w)operator(?!\w)", text)
    head, tail = (text[: operator.start()], text[operator.start() :]) if operator else (text, "")
    previous = None
    while previous != head:  # nested template arguments, innermost first
        previous = head
        head = re.sub(r"<[^<>]*>", "", head)
    head = re.sub(r"\s*::\s*", ".", head)
    head = re.sub(r"\s+", "", head)
    tail = re.sub(r"^operator\s+(?=\W)", "operator", tail)
    return (head + tail).strip(".")


def _regex_reader(pattern: str, *, owner_group: bool = False) -> NameReader:
    """A reader for a regex with group ``name`` (and ``owner`` when ``owner_group``)."""
    compiled = re.compile(pattern)

    def read(line: str) -> str | None:
        match = compiled.search(line)
        if match is None:
            return None
        owner = match.group("owner") if owner_group else None
        return _qualify(owner, match.group("name"))

    return read


_C_NOT_FUNCTIONS = frozenset(
    "if for while switch return sizeof alignof alignas decltype static_assert __attribute__ "
    "__declspec catch noexcept throw typeof __typeof__ defined _Alignas _Alignof "
    "_Static_assert _Generic do else case goto new delete co_return co_await co_yield "
    "__pragma _Pragma requires".split()
)
_C_STATEMENTS = re.compile(
    r"^\s*(?:return|if|else|for|while|do|switch|case|goto|typedef|using|throw|delete|new"
    r"|co_return|break|continue|default)\b"
)
_C_CANDIDATE = re.compile(
    r"(?<![\w:~.>])(?P<name>(?:::\s*)?(?:[A-Za-z_]\w*\s*(?:<[^<>;()]*>)?\s*::\s*)*"
    r"(?:operator\s*(?:\(\)|\[\]|[^\s\w()]+|\s+[A-Za-z_]\w*)|~?[A-Za-z_]\w*))\s*\("
)
_ASSIGNMENT = re.compile(r"(?<![=!<>])=(?!=)")


def _c_like(line: str, *, strict: bool) -> str | None:
    """The function a C/C++-style definition line names: the (possibly ``ns::Class::``-
    qualified) identifier right before the first ``(`` that is not a keyword, unless an ``=``
    comes first (a variable). ``strict`` (for arbitrary changed lines, not headers git chose)
    also asks for column 0 and no trailing ``;`` (a prototype or a statement)."""
    if strict and (not re.match(r"[A-Za-z_:~]", line) or line.rstrip().endswith(";")):
        return None
    text = line.strip()
    if _C_STATEMENTS.match(text):
        return None
    for match in _C_CANDIDATE.finditer(text):
        if _ASSIGNMENT.search(text[: match.start()]):
            return None
        name = _qualify(None, match.group("name"))
        if name.rsplit(".", 1)[-1] in _C_NOT_FUNCTIONS or not name:
            continue
        return name
    return None


def _c_strict(line: str) -> str | None:
    return _c_like(line, strict=True)


def _c_header(line: str) -> str | None:
    return _c_like(line, strict=False)


_GO = _regex_reader(
    r"^\s*func\s*(?:\(\s*(?:[A-Za-z_]\w*\s+)?\*?\s*(?P<owner>[A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*\)"
    r"\s*)?(?P<name>[A-Za-z_]\w*)\s*(?:[\[(]|$)",
    owner_group=True,
)
_PYTHON = _regex_reader(r"^\s*(?:async\s+)?def\s+(?P<name>[A-Za-z_]\w*)\s*(?:[\[(]|$)")
_RUST = _regex_reader(
    r"^\s*(?:pub(?:\s*\([^)]*\))?\s+)?(?:(?:default|async|const|unsafe|extern(?:\s+\"[^\"]*\")?)"
    r"\s+)*fn\s+(?P<name>[A-Za-z_]\w*)"
)
_PHP = _regex_reader(
    r"^\s*(?:(?:public|private|protected|static|final|abstract)\s+)*function\s+&?\s*"
    r"(?P<name>[A-Za-z_]\w*)\s*\("
)
_RUBY = _regex_reader(r"^\s*def\s+(?:self\.)?(?P<name>[A-Za-z_]\w*[?!=]?)")
_PERL = _regex_reader(r"^\s*sub\s+(?P<name>[A-Za-z_][\w:]*)")
_BASH_KEYWORD = _regex_reader(r"^\s*function\s+(?P<name>[A-Za-z_][\w.-]*)")
_BASH_PARENS = _regex_reader(r"^\s*(?P<name>[A-Za-z_][\w.-]*)\s*\(\s*\)")
_KOTLIN = _regex_reader(
    r"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:(?:public|private|protected|internal|open|override"
    r"|abstract|final|suspend|inline|operator|infix|tailrec|external|actual|expect)\s+)*"
    r"fun\s+(?:<[^>]*>\s*)?(?:(?P<owner>[A-Za-z_][\w.]*(?:<[^()]*>)?)\.)?(?P<name>[A-Za-z_]\w*)"
    r"\s*\(",
    owner_group=True,
)
_JAVA_STATEMENTS = re.compile(
    r"^\s*(?:return|new|throw|else|if|for|while|do|switch|case|catch|try|finally|synchronized"
    r"|assert|yield|await|using|lock|foreach|goto|var|default|package|import)\b"
)
_JAVA_METHOD = re.compile(
    r"^\s*(?:@[\w.]+(?:\([^)]*\))?\s+)*(?:[A-Za-z_$<\[][\w$<>\[\],.?&]*\s+)+"
    r"(?P<name>[A-Za-z_$][\w$]*)\s*(?:<[^()]*>\s*)?\("
)
_JAVA_NOT_NAMES = frozenset("if for while switch catch synchronized return new throw".split())


def _java_like(line: str, *, strict: bool) -> str | None:
    """Java/C# method and constructor lines: type or modifier words, then ``name(``. Strict
    mode (changed lines) also rejects lines ending in ``;`` (declarations, statements)."""
    if _JAVA_STATEMENTS.match(line) or (strict and line.rstrip().endswith(";")):
        return None
    match = _JAVA_METHOD.match(line)
    if match is None or match.group("name") in _JAVA_NOT_NAMES:
        return None
    return match.group("name")


def _java_strict(line: str) -> str | None:
    return _java_like(line, strict=True)


def _java_header(line: str) -> str | None:
    return _java_like(line, strict=False)


_JS_KEYWORDS = frozenset(
    "if else for while do switch catch return throw with try finally case default new await "
    "yield typeof delete void super function class interface import export".split()
)
_JS_STATEMENTS = re.compile(
    r"^\s*(?:if|else|for|while|do|switch|catch|return|throw|with|try|finally|case|default|new"
    r"|await|yield|typeof|delete|void|super)(?![\w$])"
)
_JS_IDENT = r"#?[A-Za-z_$][\w$]*"
_JS_MODIFIERS = (
    r"(?:(?:public|private|protected|static|async|get|set|readonly|override|abstract)\s+)*"
)
_JS_FUNCTION = re.compile(rf"(?:^|[^\w$.])function\s*\*?\s*(?P<name>{_JS_IDENT})\s*[(<]")
_JS_BINDING_STRICT = re.compile(
    rf"^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>{_JS_IDENT})\s*(?::[^=]*)?=\s*(?:async\s+)?"
    rf"(?:function\b|\([^)]*\)\s*(?::[^=]*)?=>|\(\s*$|{_JS_IDENT}\s*=>)"
)
_JS_BINDING_HEADER = re.compile(
    rf"^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>{_JS_IDENT})\s*(?::[^=]*)?=\s*(?:async\s+)?"
    rf"(?:function\b|\(|{_JS_IDENT}\s*=>)"
)
_JS_FIELD_ARROW = re.compile(
    rf"^\s*(?:(?:public|private|protected|static|readonly)\s+)*(?P<name>{_JS_IDENT})\s*"
    rf"(?::[^=]*)?=\s*(?:async\s+)?(?:\([^)]*\)|{_JS_IDENT})\s*(?::[^=]*)?=>"
)
_JS_METHOD_STRICT = re.compile(
    rf"^\s*{_JS_MODIFIERS}\*?(?P<name>{_JS_IDENT})\s*(?:<[^>]*>)?\([^;()]*\)\s*(?::[^;{{]*)?\{{\s*$"
)
_JS_METHOD_HEADER = re.compile(rf"^\s*{_JS_MODIFIERS}\*?(?P<name>{_JS_IDENT})\s*(?:<[^>]*>)?\(")


def _javascript(line: str, *, strict: bool) -> str | None:
    """JS/TS: ``function foo(``, ``const foo = (...) =>`` / ``= function``, class-field arrow
    functions and methods ``foo(a) {``. Strict mode (changed lines) wants method lines to end
    with ``{`` and bindings to hold an arrow or ``function`` on the same line."""
    if _JS_STATEMENTS.match(line):
        return None
    patterns = (
        (_JS_FUNCTION, _JS_BINDING_STRICT, _JS_FIELD_ARROW, _JS_METHOD_STRICT)
        if strict
        else (_JS_FUNCTION, _JS_BINDING_HEADER, _JS_FIELD_ARROW, _JS_METHOD_HEADER)
    )
    for pattern in patterns:
        match = pattern.search(line)
        if match is not None and match.group("name") not in _JS_KEYWORDS:
            return match.group("name")
    return None


def _javascript_strict(line: str) -> str | None:
    return _javascript(line, strict=True)


def _javascript_header(line: str) -> str | None:
    return _javascript(line, strict=False)


_OBJC_METHOD = _regex_reader(r"^\s*[-+]\s*\([^)]*\)\s*(?P<name>[A-Za-z_]\w*)")
_GENERIC_KEYWORD = _regex_reader(
    r"^\s*(?:[\w@]+\s+)*?(?:def|func|fn|function|fun|sub|proc)\s+"
    r"(?:(?P<owner>[A-Za-z_]\w*)[.:])?(?P<name>[A-Za-z_$][\w$]*)",
    owner_group=True,
)


@dataclass(frozen=True, slots=True)
class _Syntax:
    """How one language's definition lines name functions: ``definitions`` are precise
    enough for any changed line; ``headers`` read the lines git chose as function lines."""

    definitions: tuple[NameReader, ...]
    headers: tuple[NameReader, ...]


_SYNTAX: dict[str, _Syntax] = {
    "golang": _Syntax((_GO,), (_GO,)),
    "python": _Syntax((_PYTHON,), (_PYTHON,)),
    "rust": _Syntax((_RUST,), (_RUST,)),
    "php": _Syntax((_PHP,), (_PHP,)),
    "ruby": _Syntax((_RUBY,), (_RUBY,)),
    "perl": _Syntax((_PERL,), (_PERL,)),
    "bash": _Syntax((_BASH_KEYWORD, _BASH_PARENS), (_BASH_KEYWORD, _BASH_PARENS)),
    "kotlin": _Syntax((_KOTLIN,), (_KOTLIN,)),
    "java": _Syntax((_java_strict,), (_java_header,)),
    "csharp": _Syntax((_java_strict,), (_java_header,)),
    "javascript": _Syntax((_javascript_strict,), (_javascript_header,)),
    "cpp": _Syntax((_c_strict,), (_c_header,)),
    "objc": _Syntax((_OBJC_METHOD, _c_strict), (_OBJC_METHOD, _c_header)),
    "default": _Syntax((_GENERIC_KEYWORD,), (_GENERIC_KEYWORD, _c_header)),
}


def language_for(path: str) -> str:
    """The language key for ``path``: its diff driver, or ``default``."""
    driver = diff_driver_for(path)
    return driver if driver in _SYNTAX else "default"


def function_from_header(header: str, language: str) -> str | None:
    """The qualname of the function a hunk header names, None when it names none (type-level
    code such as ``class Foo``, ``impl Foo``, ``type T struct``, or an empty header)."""
    if not header.strip():
        return None
    syntax = _SYNTAX.get(language, _SYNTAX["default"])
    for reader in syntax.headers:
        name = reader(header)
        if name:
            return name
    return None


def function_defined_by(line: str, language: str) -> str | None:
    """The qualname of the function a source line starts defining, else None."""
    syntax = _SYNTAX.get(language, _SYNTAX["default"])
    for reader in syntax.definitions:
        name = reader(line)
        if name:
            return name
    return None
