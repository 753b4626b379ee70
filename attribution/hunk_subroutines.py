"""Modified functions from git's hunk headers: the approximate path of FBDetect §5.6 candidates.

For every language other than Python (which ``python_subroutines`` maps exactly with ``ast``),
the function a change touches is read from the unified diff itself:

* git prints, after each hunk's ``@@ -a,b +c,d @@``, the nearest line *above the hunk* in the
  old file that its diff driver considers a function line (``func (s *Server) Handle(``). The
  drivers are chosen per file extension through a temporary attributes file
  (``core.attributesFile``, see :func:`attributes_text` and :func:`git_diff_config`): git's
  built-in ``cpp``, ``golang``, ``java``, ``rust``, ``php``, ``python``, ... and one
  ``javascript`` driver defined here (git has none). Nothing is written into the repository.
* :func:`function_from_header` turns that header text into a qualname per language: Go receivers
  ``(s *Server) Handle`` -> ``Server.Handle``; C++ ``int ns::Foo::bar(int x) const`` ->
  ``ns.Foo.bar`` (``::`` becomes ``.`` so qualnames are dotted in every language, template
  arguments are dropped); Java/C# ``public void handle(Request r)`` -> ``handle`` (the class is
  not in the header, so the qualname is the bare method); Kotlin extension functions
  ``fun Foo.bar(`` -> ``Foo.bar``; JS/TS ``function foo(``, ``const foo = (...) =>``, methods
  ``foo(a) {``; Rust ``fn foo(``; PHP ``function foo(``. Type-level headers (``class Foo``,
  ``impl Foo``, ``type T struct``, ``namespace x``) name no function, like module- and
  class-level Python code.
* Changed lines that themselves define a function (:func:`function_defined_by`) start that
  function: on the added side it counts as *added*, on the removed side as *deleted*, on both
  as *modified*. Changed lines before the first such definition in a hunk belong to the header's
  function (*modified*), except blank lines and lines of only closing brackets (``}``), and
  comment/annotation lines directly followed by a definition (a doc comment belongs to the
  function it documents).
* A function touched only by hunks whose removed and added lines are the same code once
  comments and whitespace are set aside (``hunk_cosmetic``) is ``cosmetic``: listed, but no
  modification (reading one side alone, every change counts as code).

This is approximate (every result has ``exact=False``): the header names the function where the
hunk *starts*, which for a change at the very top of a function or between two functions may be
the previous function; definitions spread over several lines or methods defined inside a C++
class body are not recognised; and qualnames lack the enclosing class except where the
definition line itself names it (Go receivers, C++ ``Class::method``, Kotlin receivers).
Run the diff with ``-U0`` so that each hunk header is computed right above its change.

This module also parses a git unified diff (:func:`parse_diff`, :class:`FileDiff`) and exposes
the exact changed line ranges per file (:func:`changed_ranges`) that ``python_subroutines``
consumes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from regbot.attribution.hunk_cosmetic import hunk_is_cosmetic
from regbot.attribution.model import ChangeKind, ModifiedSubroutine

LineRange = tuple[int, int]
"""An inclusive range of 1-based line numbers ``(first, last)``."""

ChangedLine = tuple[int, str]
"""A removed or added line: its 1-based number on its side and its text (no newline)."""

OLD = "old"
NEW = "new"

# ---------------------------------------------------------------------------------------------
# Diff drivers: which of git's function-line patterns applies to which file.

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
    """``-c`` options for a git command whose hunk headers this module reads.

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


# ---------------------------------------------------------------------------------------------
# Unified diff parsing.


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` hunk: the function context git printed and the removed and added lines."""

    header: str
    removed: tuple[ChangedLine, ...] = ()
    added: tuple[ChangedLine, ...] = ()


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file's section of a git diff.

    ``old_path`` is None for an added file, ``new_path`` None for a deleted one. Blob ids are
    as printed on the ``index`` line (full with ``--full-index``), None when absent or all
    zeros. ``binary`` is True when git printed no text hunks because the file is binary.
    """

    old_path: str | None
    new_path: str | None
    old_blob: str | None = None
    new_blob: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    binary: bool = False
    hunks: tuple[Hunk, ...] = ()

    @property
    def path(self) -> str:
        """The path after the change; the old path for a deleted file."""
        path = self.new_path if self.new_path is not None else self.old_path
        assert path is not None
        return path

    @property
    def renamed_from(self) -> str | None:
        """The old path when the file was renamed or moved, else None."""
        if self.old_path is not None and self.new_path is not None:
            return self.old_path if self.old_path != self.new_path else None
        return None

    def changed_ranges(self) -> tuple[list[LineRange], list[LineRange]]:
        """The removed lines (old side) and the added lines (new side) as merged ranges."""
        removed = [number for hunk in self.hunks for number, _ in hunk.removed]
        added = [number for hunk in self.hunks for number, _ in hunk.added]
        return merge_lines(removed), merge_lines(added)


def merge_lines(numbers: Iterable[int]) -> list[LineRange]:
    """Line numbers -> sorted inclusive ranges of consecutive lines."""
    ranges: list[LineRange] = []
    for number in sorted(set(numbers)):
        if ranges and ranges[-1][1] == number - 1:
            ranges[-1] = (ranges[-1][0], number)
        else:
            ranges.append((number, number))
    return ranges


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_ZERO_BLOB = re.compile(r"^0+$")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _unquote(text: str) -> tuple[str, str]:
    """Read one path that git may have C-quoted; returns (path, the rest of ``text``)."""
    if not text.startswith('"'):
        return text, ""
    out = bytearray()
    i = 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return out.decode("utf-8", errors="replace"), text[i + 1 :]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _C_ESCAPES:
                out.append(_C_ESCAPES[nxt])
                i += 2
                continue
            if re.match(r"[0-7]{3}", text[i + 1 : i + 4]):
                out.append(int(text[i + 1 : i + 4], 8))
                i += 4
                continue
        out.extend(char.encode("utf-8"))
        i += 1
    return out.decode("utf-8", errors="replace"), ""


def _strip_prefix(path: str, prefix: str) -> str:
    return path[len(prefix) :] if path.startswith(prefix) else path


def _paths_of_git_header(rest: str) -> tuple[str, str]:
    """Paths of ``diff --git a/X b/Y`` (``rest`` is ``a/X b/Y``). Unquoted paths with spaces
    are ambiguous unless equal (git's own rule); renames then get their paths from the
    ``rename from``/``rename to`` lines."""
    if rest.startswith('"'):
        old, tail = _unquote(rest)
        tail = tail.lstrip(" ")
        new = _unquote(tail)[0] if tail.startswith('"') else tail
        return _strip_prefix(old, "a/"), _strip_prefix(new, "b/")
    quoted_new = rest.find(' "b/')
    if quoted_new >= 0:
        return _strip_prefix(rest[:quoted_new], "a/"), _strip_prefix(
            _unquote(rest[quoted_new + 1 :])[0], "b/"
        )
    half = (len(rest) - 1) // 2
    old, new = rest[:half], rest[half + 1 :]
    if len(rest) % 2 == 1 and old[2:] == new[2:] and old.startswith("a/") and new.startswith("b/"):
        return old[2:], new[2:]
    split = rest.rfind(" b/")
    if split < 0:
        return _strip_prefix(rest, "a/"), _strip_prefix(rest, "a/")
    return _strip_prefix(rest[:split], "a/"), rest[split + 3 :]


def _side_path(text: str, prefix: str) -> str | None:
    """The path of a ``--- a/x`` / ``+++ b/x`` line (without the marker), None for /dev/null."""
    if text.endswith("\t"):  # git appends a tab to names containing spaces
        text = text[:-1]
    path = _unquote(text)[0]
    return None if path == "/dev/null" else _strip_prefix(path, prefix)


class _FileBuilder:
    """Mutable state while one file section of a diff is read."""

    def __init__(self, header_rest: str) -> None:
        self.old_path: str | None
        self.new_path: str | None
        self.old_path, self.new_path = _paths_of_git_header(header_rest)
        self.old_blob: str | None = None
        self.new_blob: str | None = None
        self.old_mode: str | None = None
        self.new_mode: str | None = None
        self.binary = False
        self.added_file = False
        self.deleted_file = False
        self.hunks: list[Hunk] = []
        self.hunk_header = ""
        self.removed: list[ChangedLine] = []
        self.added: list[ChangedLine] = []
        self.old_line = 0
        self.new_line = 0
        self.old_left = 0
        self.new_left = 0
        self.in_hunk = False

    def start_hunk(self, match: re.Match[str]) -> None:
        self.end_hunk()
        self.old_line = int(match.group(1))
        self.old_left = int(match.group(2)) if match.group(2) is not None else 1
        self.new_line = int(match.group(3))
        self.new_left = int(match.group(4)) if match.group(4) is not None else 1
        self.hunk_header = match.group(5).rstrip("\r")
        self.in_hunk = True

    def hunk_line(self, line: str) -> None:
        marker, text = line[:1], line[1:].rstrip("\r")
        if marker == "-":
            self.removed.append((self.old_line, text))
            self.old_line += 1
            self.old_left -= 1
        elif marker == "+":
            self.added.append((self.new_line, text))
            self.new_line += 1
            self.new_left -= 1
        elif marker in (" ", ""):  # context; "" when diff.suppressBlankEmpty is set
            self.old_line += 1
            self.new_line += 1
            self.old_left -= 1
            self.new_left -= 1
        if self.old_left <= 0 and self.new_left <= 0:
            self.end_hunk()

    def end_hunk(self) -> None:
        if self.in_hunk:
            self.hunks.append(Hunk(self.hunk_header, tuple(self.removed), tuple(self.added)))
        self.in_hunk = False
        self.removed, self.added = [], []

    def meta_line(self, line: str) -> None:
        if line.startswith("index "):
            blobs, _, mode = line[6:].partition(" ")
            old, _, new = blobs.partition("..")
            self.old_blob = None if _ZERO_BLOB.match(old) else old
            self.new_blob = None if _ZERO_BLOB.match(new) else new
            if mode:
                self.old_mode = self.old_mode or mode.strip()
                self.new_mode = self.new_mode or mode.strip()
        elif line.startswith("new file mode "):
            self.added_file = True
            self.new_mode = line[14:].strip()
        elif line.startswith("deleted file mode "):
            self.deleted_file = True
            self.old_mode = line[18:].strip()
        elif line.startswith("old mode "):
            self.old_mode = line[9:].strip()
        elif line.startswith("new mode "):
            self.new_mode = line[9:].strip()
        elif line.startswith("rename from ") or line.startswith("copy from "):
            self.old_path = _unquote(line.split(" from ", 1)[1])[0]
        elif line.startswith("rename to ") or line.startswith("copy to "):
            self.new_path = _unquote(line.split(" to ", 1)[1])[0]
        elif line.startswith("--- "):
            path = _side_path(line[4:], "a/")
            if path is not None:
                self.old_path = path
        elif line.startswith("+++ "):
            path = _side_path(line[4:], "b/")
            if path is not None:
                self.new_path = path
        elif line.startswith("Binary files ") or line.startswith("GIT binary patch"):
            self.binary = True

    def build(self) -> FileDiff:
        self.end_hunk()
        return FileDiff(
            old_path=None if self.added_file else self.old_path,
            new_path=None if self.deleted_file else self.new_path,
            old_blob=None if self.added_file else self.old_blob,
            new_blob=None if self.deleted_file else self.new_blob,
            old_mode=self.old_mode,
            new_mode=self.new_mode,
            binary=self.binary,
            hunks=tuple(self.hunks),
        )


def parse_diff(diff: str | Iterable[str]) -> list[FileDiff]:
    """Parse a git unified diff (text, or its lines without newlines) into file sections.

    Hunk lines are counted against the ``@@`` header's line counts, so removed lines whose text
    starts with ``--`` are not mistaken for headers. Lines before the first ``diff --git``
    (a commit header) are ignored. Works for any ``-U``; hunk headers are most precise with
    ``-U0``.
    """
    lines = diff.splitlines() if isinstance(diff, str) else diff
    files: list[FileDiff] = []
    current: _FileBuilder | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        if current is not None and current.in_hunk:
            current.hunk_line(line)
            continue
        if line.startswith("diff --git "):
            if current is not None:
                files.append(current.build())
            current = _FileBuilder(line[11:])
            continue
        if current is None or line.startswith("\\"):
            continue
        match = _HUNK_HEADER.match(line)
        if match:
            current.start_hunk(match)
        else:
            current.meta_line(line)
    if current is not None:
        files.append(current.build())
    return files


def changed_ranges(diff: str | Iterable[str]) -> dict[str, tuple[list[LineRange], list[LineRange]]]:
    """Per file path (new path; old path for a deleted file): (old-side ranges, new-side
    ranges) of the removed and added lines."""
    return {file.path: file.changed_ranges() for file in parse_diff(diff)}


# ---------------------------------------------------------------------------------------------
# Function names from header text and from changed lines, per language.

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


# ---------------------------------------------------------------------------------------------
# Hunks -> modified subroutines.

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
    """Attribute one side's changed lines of one hunk (see the module docstring)."""
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
