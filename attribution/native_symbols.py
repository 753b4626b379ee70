"""Demangled C++ and Rust symbols as qualified-name components, for frame normalisation.

``cpp_components`` scans a symbol once, left to right (O(length)), splitting on top-level
``::`` and dropping template arguments, argument lists, clone/ABI tags, qualifiers and return
types; ``drop_balanced`` removes bracketed spans (Go's type arguments).

Design: docs/design/attribution_frame_match.md
"""

from __future__ import annotations

import re

_CPP_QUALIFIERS = frozenset({"const", "volatile", "noexcept", "override", "final", "throw"})
_OPERATORS = sorted(
    "() [] ->* -> <=> <<= >>= << >> <= >= == != && || ++ -- += -= *= /= %= ^= &= |= "
    ", < > + - * / % ^ & | ~ ! =".split(),
    key=len,
    reverse=True,
)


def cpp_components(symbol: str) -> list[str]:
    """Scan a demangled C++ or Rust name, splitting on top-level ``::``.

    Dropped on the way: ``<...>`` template arguments, ``(...)`` argument lists, ``[...]`` clone
    and ABI tags, ``(anonymous namespace)``, cv/ref qualifiers after the arguments, and a return
    type (what precedes a top-level space followed by a name). ``operator<<``, ``operator()``,
    ``operator bool`` are read as one token. A component opening with ``{`` (``{lambda(int)#1}``,
    Rust's ``{{closure}}``) ends the name: the code runs in the enclosing function. A component
    opening with ``<`` is Rust's qualified path ``<Type as Trait>``, read as ``Type``.
    """
    components: list[str] = []
    current: list[str] = []
    i, n = 0, len(symbol)

    def flush() -> None:
        word = "".join(current).strip()
        if word:
            components.append(word)
        current.clear()

    while i < n:
        c = symbol[i]
        if symbol.startswith("::", i):
            flush()
            i += 2
        elif c == "o" and _operator_at(symbol, i):
            i, token = _read_operator(symbol, i + len("operator"))
            current[:] = ["operator" + token]
        elif c == "<":
            end = _balanced_end(symbol, i, "<", ">")
            if not "".join(current).strip():
                inner = symbol[i + 1 : end - 1]
                own_type = re.split(r" as ", inner, maxsplit=1)[0].removeprefix("impl ")
                components.extend(cpp_components(own_type))
            i = end
        elif c == "(":
            if symbol.startswith("(anonymous namespace)", i):
                i += len("(anonymous namespace)")
            else:
                i = _balanced_end(symbol, i, "(", ")")
        elif c == "[":
            i = _balanced_end(symbol, i, "[", "]")
        elif c == "{":
            current.clear()
            break
        elif c == " ":
            while i < n and symbol[i] == " ":
                i += 1
            word = re.match(r"[A-Za-z_~]\w*|\(anonymous namespace\)", symbol[i:])
            if word and word.group() in _CPP_QUALIFIERS:
                i += len(word.group())
            elif word:  # what came before was the return type
                components.clear()
                current.clear()
        elif c in "&*,":
            i += 1
        else:
            current.append(c)
            i += 1
    flush()
    return components


def _operator_at(symbol: str, i: int) -> bool:
    if not symbol.startswith("operator", i):
        return False
    before = symbol[i - 1] if i else " "
    after = symbol[i + 8] if i + 8 < len(symbol) else " "
    return not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_")


def _read_operator(symbol: str, i: int) -> tuple[int, str]:
    """The operator token after ``operator`` (``<<``, ``()``, `` new[]``, `` bool``) and the
    index after it; a truncated ``operator`` at the end gives ``""``."""
    rest = symbol[i:]
    stripped = rest.lstrip(" ")
    offset = len(rest) - len(stripped)
    for op in _OPERATORS:
        if stripped.startswith(op):
            return i + offset + len(op), op
    named = re.match(r'(?:new|delete)(?: ?\[\])?|co_await|"" ?\w+', stripped)
    if named:
        return i + offset + named.end(), " " + named.group()
    j = i + offset
    while j < len(symbol) and symbol[j] != "(":
        j = _balanced_end(symbol, j, "<", ">") if symbol[j] == "<" else j + 1
    conversion = symbol[i + offset : j].strip()
    return j, f" {conversion}" if conversion else ""


def _balanced_end(text: str, start: int, opening: str, closing: str) -> int:
    """Index after the bracket closing the one at ``start`` (the text's end if unbalanced, as
    in stackcollapse's ``RunnableFunction<void `` cut at the first parenthesis)."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] == opening:
            depth += 1
        elif text[j] == closing:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def drop_balanced(text: str, opening: str, closing: str) -> str:
    if opening not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == opening:
            i = _balanced_end(text, i, opening, closing)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
