"""git diff drivers per file suffix: which of git's function-line patterns (``xfuncname``)
chooses the hunk headers of each file (FBDetect §5.6 candidates, approximate path).

The drivers are chosen through a temporary attributes file (``core.attributesFile``): git's
built-in ``cpp``, ``golang``, ``java``, ``rust``, ``php``, ``python``, ... and one
``javascript`` driver defined here (git has none). Nothing is written into the repository.

Design: docs/design/attribution_hunk_subroutines.md
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

DRIVER_BY_SUFFIX: dict[str, str] = {
    **dict.fromkeys(
        (
            ".c",
            ".h",
            ".cc",
            ".cpp",
            ".cxx",
            ".c++",
            ".cp",
            ".hh",
            ".hpp",
            ".hxx",
            ".h++",
            ".inl",
            ".ipp",
            ".tcc",
            ".cu",
            ".cuh",
        ),
        "cpp",
    ),
    **dict.fromkeys((".m", ".mm"), "objc"),
    ".go": "golang",
    ".java": "java",
    **dict.fromkeys((".kt", ".kts"), "kotlin"),
    ".cs": "csharp",
    ".rs": "rust",
    **dict.fromkeys((".php", ".phtml"), "php"),
    **dict.fromkeys((".py", ".pyi", ".pyw"), "python"),
    **dict.fromkeys((".rb", ".rake"), "ruby"),
    **dict.fromkeys((".pl", ".pm"), "perl"),
    **dict.fromkeys((".sh", ".bash"), "bash"),
    **dict.fromkeys(
        (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"),
        "javascript",
    ),
}
"""File suffix -> git diff driver. All but ``javascript`` are built into git (2.35+); files
with other suffixes get git's default function lines (lines starting with a letter, ``_`` or
``$``)."""

_JS_NAME = "[A-Za-z_$#][A-Za-z0-9_$]*"
_B = "[[:blank:]]"
JAVASCRIPT_XFUNCNAME = "\n".join(
    (
        # Statements that look like calls never start a function.
        f"!^{_B}*(if|else|for|while|do|switch|catch|return|throw|with|try|finally|case|default"
        f"|new|await|yield|typeof|delete|void|super)([^A-Za-z0-9_$]|$)",
        # Anonymous functions are not named function lines.
        f"!^{_B}*(async{_B}+)?function{_B}*\\*?{_B}*\\(",
        # function foo(  /  export default async function* foo(
        f"^{_B}*((export{_B}+)?(default{_B}+)?(async{_B}+)?function{_B}*\\*?{_B}*{_JS_NAME}"
        f"{_B}*[(<].*)$",
        # const foo = (a) =>  /  let foo = function(  /  const foo = async x =>  /  const foo = (
        f"^{_B}*((export{_B}+)?(const|let|var){_B}+{_JS_NAME}{_B}*(:[^=]*)?={_B}*(async{_B}+)?"
        f"(function|\\([^)]*\\){_B}*(:[^=]*)?=>|\\({_B}*$|{_JS_NAME}{_B}*=>).*)$",
        # class fields holding arrow functions: handleClick = (e) => {
        f"^{_B}*(((public|private|protected|static|readonly){_B}+)*{_JS_NAME}{_B}*(:[^=]*)?="
        f"{_B}*(async{_B}+)?(\\([^)]*\\)|{_JS_NAME}){_B}*(:[^=]*)?=>.*)$",
        # class Foo / interface Foo (named so that hunks inside a class body are not
        # attributed to the function above the class)
        f"^{_B}*((export{_B}+)?(default{_B}+)?(abstract{_B}+)?(class|interface){_B}+.*)$",
        # methods: foo(a) {  /  async *gen() {  /  get size(): number {
        f"^{_B}*(((public|private|protected|static|async|get|set|readonly|override|abstract)"
        f"{_B}+)*\\*?{_JS_NAME}{_B}*(<[^>]*>)?\\([^;()]*\\){_B}*(:[^;{{]*)?\\{{{_B}*)$",
    )
)
"""git ``xfuncname`` of the ``javascript`` driver (JS and TS), in git's POSIX ERE dialect.
Patterns are tried in order; a ``!`` pattern that matches rejects the line."""


def diff_driver_for(path: str) -> str | None:
    """The git diff driver for ``path`` by its suffix, None for git's default."""
    return DRIVER_BY_SUFFIX.get(PurePosixPath(path).suffix.lower())


def attributes_text() -> str:
    """The attributes file that selects the diff drivers (``*.go diff=golang`` ...)."""
    return "".join(f"*{suffix} diff={driver}\n" for suffix, driver in DRIVER_BY_SUFFIX.items())


def git_diff_config(attributes_file: Path) -> list[str]:
    """``-c`` options for a git command whose hunk headers ``function_lines`` reads.

    ``attributes_file`` must hold :func:`attributes_text`. The repository's own
    ``.gitattributes`` still take precedence over it, as git documents.
    """
    return [
        "-c",
        f"core.attributesFile={attributes_file}",
        "-c",
        f"diff.javascript.xfuncname={JAVASCRIPT_XFUNCNAME}",
        "-c",
        "core.quotePath=false",
    ]
