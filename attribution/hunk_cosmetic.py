"""Cosmetic hunks in languages read from hunk headers: changes confined to comments and layout.

The counterpart of ``cosmetic`` (Python, exact by ``ast``) for every other language: a hunk whose
removed and added lines hold the same code once comments and whitespace outside string
literals are set aside changed no behaviour, so the function it touches is a ``cosmetic``
touch, not a modification (unless another hunk of the commit changed its code).

The comparison scans each side's changed lines as one text (``code_of``), keeping string and
character literals as they are (``"a // b"`` is code) and dropping:

* line comments: ``//`` in C-like languages (C, C++, Objective-C, Java, C#, Kotlin, JS/TS, Go,
  Rust, PHP and the default), ``#`` in shell, Perl, Ruby, PHP and Python, ``--`` in SQL/Lua
  (the default reader does not use it: ``x--`` is code in C);
* block comments ``/* … */`` in C-like languages, also when the hunk holds only part of one:
  a line starting with ``*`` followed by a space, ``/`` or the end of the line continues a block
  comment (the ``-U0`` hunk of a doc-comment edit holds only such lines), as does text before a
  ``*/`` that has no opener in the hunk;
* every whitespace character outside literals.

Approximate by nature (no parser): a language whose whitespace is code (Python's indentation,
read here only when a side does not parse) would need the exact path, which it has.
"""

from __future__ import annotations

import re

__all__ = ["code_of", "hunk_is_cosmetic"]

_HASH_COMMENTS = frozenset({"bash", "perl", "ruby", "php", "python"})
_NO_SLASH_COMMENTS = frozenset({"bash", "perl", "ruby", "python"})
_CONTINUATION = re.compile(r"^\s*\*(?:\s|/|$)")
_QUOTES = "\"'`"


def hunk_is_cosmetic(removed: list[str], added: list[str], language: str) -> bool:
    """Whether a hunk's removed and added lines are the same code (module docstring)."""
    return code_of(removed, language) == code_of(added, language)


def code_of(lines: list[str], language: str) -> str:
    """The code of ``lines`` with comments and whitespace outside literals removed."""
    slash = language not in _NO_SLASH_COMMENTS
    hash_ = language in _HASH_COMMENTS
    kept = []
    inside = False  # a block comment opened by an earlier line of the hunk is still open
    for line in lines:
        if slash and not inside:
            if _CONTINUATION.match(line):
                continue
            if "*/" in line and "/*" not in line.split("*/", 1)[0]:
                line = line.split("*/", 1)[1]  # the end of a block comment opened above the hunk
        if slash:
            inside = line.rfind("/*") > line.rfind("*/") or (inside and "*/" not in line)
        kept.append(line)
    return _scan("\n".join(kept), slash, hash_)


def _scan(text: str, slash: bool, hash_: bool) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _QUOTES:
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif slash and text.startswith("//", i) or hash_ and c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif slash and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c.isspace():
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
