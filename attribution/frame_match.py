"""Frames ↔ modified subroutines (FBDetect §5.6): which of a deploy's modified functions each
profile subroutine is, so that gCPU attribution can find the samples a change touched.

A profiler names a function in its language's own spelling (py-spy ``Svc.serve (app/svc.py)``,
perf ``std::vector<int, std::allocator<int> >::push_back``, Go ``net/http.(*Client).Do``, JVM
``Lcom/foo/Bar;.baz(I)V``, Rust ``app::Server::handle::h0123456789abcdef``) while a commit names
it by path and dotted qualname (``app/svc.py``, ``Svc.serve``). ``normalize_frame`` reduces a
frame to a ``FrameName``: its qualified name as components, the file, the languages its spelling
allows. ``match_subroutines`` then applies, per profile subroutine (cost O(1) dict lookups for the
exact rules, and one ``rapidfuzz.process.cdist`` per candidate group for the fuzzy rule):

(a) frame with a file: the paths agree (``paths_agree``) and one qualified name is a component
    suffix of the other (``Svc.serve`` vs ``app.svc.Svc.serve``; Go's ``main.crunch`` vs
    ``crunch``): score 1.0.
(b) frame without a file (native, Go, JVM symbols): one name is a suffix of the other, the
    modified file's language is one the frame's spelling allows, and where a language ties
    names to paths they agree (a Java top-level class lives in ``<Class>.java``; a Go symbol's
    import path ends in the file's directory, except package ``main``). A 1-component match
    (``inner`` vs ``inner``) rests on the name and these checks alone: a heuristic, which
    knowingly matches e.g. a C ``main`` of another binary built from the same repository. A
    file of unknown language (``.ixx``) can match with 2+ shared components, never with 1.
(c) fuzzy fallback, for pairs that (a)/(b) would accept but for the name, and only for frames
    whose function is absent from the file's outline (``known_functions``: every function of
    each modified Python file at both sides of its diff). A frame naming a function that exists
    there is that function, modified or not: ``Cls._token_matching`` is never a rename of
    ``Cls.token_not_matching`` when both are in the file. Fuzzy matching is for what the
    outline cannot see (a renamed function whose old name a profile still shows, other
    languages): ``fuzz.ratio`` on the innermost names (qualifiers share most characters and
    inflate the ratio: ``Cls._token_matching``/``Cls.token_not_matching`` 90.6 qualified, 84.8
    by name) at or above ``fuzzy_floor``, score ratio/100; where both names are qualified, the
    qualifiers must be equal (a renamed method stays in its class). At 90 a one-character
    rename of a name of 10+ characters (``handle_request`` → ``handle_requests``: 96.6) or a
    suffix added to a short one (``parse`` → ``parse2``: 90.9) matches, while the pairs that
    differ in meaning do not: ``get``/``set`` score 66.7, ``read``/``load`` 50, ``encode``/
    ``decode`` 83.3, ``Svc.serve``/``Svc.server`` 94.7 (kept), ``Reader.read``/``Writer.read``
    63.6. Two vetoes keep the floor honest where characters mislead: pairs with the same
    innermost name that (a)/(b) rejected are never fuzzy matches (the exact rules saw their
    qualifiers disagree: known to be different functions); and names whose words pair up but
    one word is replaced by another below the floor (``get_handle``/``set_handle`` reach 90.0 by
    characters; ``get``/``set`` is 66.7; ``handler_v1``/``handler_v2``) are different verbs or
    versions, not renames.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz, process

from regbot.attribution.cosmetic import ANONYMOUS_KINDS
from regbot.attribution.model import ModifiedSubroutine
from regbot.errors import InputError
from regbot.profiles.model import parse_frame

# Language families by file extension. ``c`` covers C, C++, Objective-C, CUDA, assembly and
# Fortran: what perf and native profilers name by bare or ``::``-qualified symbols.
_EXTENSIONS: dict[str, str] = {
    **dict.fromkeys(("py", "pyi", "pyx", "pxd"), "python"),
    **dict.fromkeys(
        "c h cc cpp cxx c++ hpp hh hxx h++ ipp inl tcc m mm s S asm cu cuh f f90 f95".split(), "c"
    ),
    "rs": "rust",
    "go": "go",
    **dict.fromkeys(("java", "kt", "kts", "scala", "groovy", "clj"), "jvm"),
    **dict.fromkeys(("js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "cts"), "js"),
}
_NOT_FUNCTION = re.compile(r"^\[.*\]$|^$")  # [unknown], [libc.so.6], [[kernel.kallsyms]]
_PY_ANONYMOUS = frozenset(ANONYMOUS_KINDS.values())
_GCC_LOCAL = re.compile(
    r"(?:\.(?:isra|constprop|part|cold|lto_priv|llvm|localalias|clone|str)(?:\.\d+)*)+$"
)
_PERF_PYTHON = re.compile(r"^py::(?P<function>[^:]+):(?P<file>.+\.py)$")
_COLUMN = re.compile(r":\d+$")
_SYMBOL_VERSION = re.compile(r"@.*$")  # memcpy@plt, clock_gettime@@GLIBC_2.17
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_HIDDEN_CLASS = re.compile(r"/0x[0-9a-fA-F]+")
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_RUST_HASH = re.compile(r"::h[0-9a-f]{8,16}$")
_GO_CLOSURE = re.compile(r"func\d+|gowrap\d+|deferwrap\d+|\d+")
# `pkg.(*T).M`, `pkg.f.func1`, `runtime.goexit.abi0`, `net/http.Get`, generics `pkg.Map[...]`
_GO_LIKE = re.compile(
    r"\.\(\*?\w|\.func\d+(?:\.\d+)*$|\.abi(?:0|internal)$|^[\w.\-~]+/\S+\.\w|^[\w.%\-~]*\.\w+\["
)
_JVM_DESCRIPTOR = re.compile(r"^L[\w/$]+;\.")
_JVM_SPECIAL = re.compile(r"\.<(?:cl)?init>$")
_JAVA_LAMBDA = re.compile(r"^lambda\$(.+?)\$\d+$")
_CPP_QUALIFIERS = frozenset({"const", "volatile", "noexcept", "override", "final", "throw"})
_OPERATORS = sorted(
    "() [] ->* -> <=> <<= >>= << >> <= >= == != && || ++ -- += -= *= /= %= ^= &= |= "
    ", < > + - * / % ^ & | ~ ! =".split(),
    key=len,
    reverse=True,
)


@dataclass(frozen=True, slots=True)
class FrameName:
    """A frame reduced to what matching compares.

    ``parts`` is the qualified name as components, outermost first (``('app', 'views',
    'Handler', 'get')``); empty when the frame is not a function (``[libc.so.6]``, a bare
    ``<lambda>``); a Python module's import-time frame is ``('<module>',)``, matched only to that
    file's ``<module>`` (``python_subroutines``). ``name`` is the innermost component; ``file``
    the frame's file path or None; ``languages`` the language families the frame can be (from the file's extension, or
    from the symbol's spelling); ``namespace`` the leading components that are a package or
    import path (Go, JVM), which ``parts`` includes.
    """

    parts: tuple[str, ...]
    name: str
    file: str | None
    languages: frozenset[str] = frozenset()
    namespace: tuple[str, ...] = ()

    @property
    def is_function(self) -> bool:
        return bool(self.parts)

    @property
    def qualified(self) -> str:
        return ".".join(self.parts)


def language_of(path: str) -> str | None:
    """The language family of a file, from its extension (None when not known)."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    if path.startswith("<") and path.endswith(">"):
        return "python"  # CPython's pseudo-files: `<frozen importlib._bootstrap>`, `<string>`
    if "." not in base:
        return None
    extension = base.rsplit(".", 1)[-1]
    return _EXTENSIONS.get(extension, _EXTENSIONS.get(extension.lower()))


def path_components(path: str) -> tuple[str, ...]:
    """A path as components: ``/``, ``\\`` and ``file://`` understood; ``.`` and empty dropped."""
    path = path.removeprefix("file://")
    return tuple(p for p in re.split(r"[/\\]", path) if p not in ("", "."))


def paths_agree(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two paths can name the same file: the file names are equal and either one path
    is a component suffix of the other (``views.py`` / ``/srv/app/views.py`` vs
    ``app/views.py``) or they share at least the file and its directory (an installed
    ``site-packages/app/views.py`` vs a ``src/app/views.py`` layout). ``app/views.py`` and
    ``admin/views.py`` do not agree: the directories above the file name differ."""
    if not a or not b or a[-1] != b[-1]:
        return False
    shared = _shared_suffix(a, b)
    return shared == min(len(a), len(b)) or shared >= 2


def _shared_suffix(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    for x, y in zip(reversed(a), reversed(b)):
        if x != y:
            break
        n += 1
    return n


# -- normalisation --------------------------------------------------------------------------


@lru_cache(maxsize=1 << 17)
def normalize_frame(text: str) -> FrameName:
    """Parse a frame (``parse_frame``) and reduce its function to qualified-name components.

    Per spelling: Python ``Svc.serve``/``outer.<locals>.inner`` (comprehensions and lambdas of
    3.11+ qualnames count as their enclosing function); C++ with argument lists, templates,
    return types, cv/ref qualifiers, ``[clone .isra.0]`` and ABI tags dropped, ``{lambda(int)#1}``
    as its enclosing function, ``(anonymous namespace)`` dropped; GCC's ``foo.isra.0`` and
    ``memcpy@plt`` suffixes dropped; Rust's ``::h…`` hash dropped and ``<app::Foo as Trait>::bar``
    as ``app.Foo.bar``, closures as the enclosing function; Go import paths, ``(*T)``
    receivers, ``[...]`` type arguments, ``.funcN``/``.gowrapN`` closures (their enclosing
    function), ``.abi0``, ``-fm``; JVM descriptors (``Lcom/foo/Bar;.baz(I)V``), stackcollapse's
    ``com/foo/Bar:.baz``, ``Bar$Inner``, ``lambda$baz$0`` (→ ``baz``), ``<init>`` (→ the class's
    name, as its source spells the constructor); JavaScript ``Object.``/``prototype.``/``async ``
    noise dropped. A JavaScript ``file:line:column`` has its column removed from the file;
    CPython's perf trampoline ``py::Svc.serve:/srv/app/svc.py`` is a Python frame with a file.
    """
    info = parse_frame(text)
    file = info.file
    if file is not None and info.line is not None:
        file = _COLUMN.sub("", file)  # `src/app.js:10:5` parses as file `src/app.js:10`
    function = info.function.strip()
    perf_python = _PERF_PYTHON.match(function) if file is None else None
    if perf_python:  # CPython 3.12+ `-X perf` trampolines: `py::Svc.serve:/srv/app/svc.py`
        function, file = perf_python.group("function"), perf_python.group("file")
    language = language_of(file) if file else None
    if _NOT_FUNCTION.match(function):
        return FrameName((), "", file, frozenset({language}) if language else frozenset())
    parser, languages = _classify(function) if language is None else (language, {language})
    parts, namespace = _PARSERS[parser](function)
    parts = tuple(p for p in parts if p)
    return FrameName(parts, parts[-1] if parts else "", file, frozenset(languages), namespace)


def _classify(symbol: str) -> tuple[str, frozenset[str]]:
    """(parser, languages) for a symbol with no file to say its language."""
    if _JVM_DESCRIPTOR.match(symbol) or ":." in symbol or _JVM_SPECIAL.search(symbol):
        return "jvm", frozenset({"jvm"})
    if "::" in symbol or symbol.startswith("<"):
        rusty = _RUST_HASH.search(symbol) or re.search(r" as |\{\{closure\}\}|\{closure#", symbol)
        return "c", frozenset({"rust"} if rusty else {"c", "rust"})
    if _GO_LIKE.search(symbol):
        last = symbol.rsplit("/", 1)[-1]
        if "/" in symbol and last[:1].isupper() and "(" not in last:
            return "jvm", frozenset({"jvm"})  # async-profiler's `com/foo/Bar.baz`
        return "go", frozenset({"go"})
    if "$" in symbol:
        return "jvm", frozenset({"jvm"})
    bare = _GCC_LOCAL.sub("", _SYMBOL_VERSION.sub("", symbol))
    if "." in bare:
        return "dotted", frozenset({"go", "jvm", "js"})
    return "c", frozenset({"c"})


def _python_parts(function: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    parts = [p for p in function.split(".") if p != "<locals>"]
    while parts and parts[-1] in _PY_ANONYMOUS:
        parts.pop()  # a 3.11+ `handle.<locals>.<lambda>` runs inside `handle`'s body
    if parts == ["<module>"]:
        return ("<module>",), ()  # import-time code: the module's own subroutine
    if not parts or parts[-1].startswith("<"):
        return (), ()  # a bare <lambda> (no enclosing name), <frozen ...> code
    return tuple(parts), ()


def _dotted_parts(function: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    parts = [p for p in function.split(".") if p]
    while len(parts) > 1 and _GO_CLOSURE.fullmatch(parts[-1]):
        parts.pop()
    namespace: list[str] = []
    for part in parts[:-1]:
        if not part[:1].islower():
            break
        namespace.append(part)
    return tuple(parts), tuple(namespace)


def _go_parts(function: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    symbol = _drop_balanced(function, "[", "]").removesuffix("-fm")
    symbol = re.sub(r"\.abi(?:0|internal)$", "", symbol)
    prefix, _, last = symbol.rpartition("/")
    pieces = [p.strip("(*)").replace("%2e", ".") for p in re.findall(r"\([^)]*\)|[^.]+", last)]
    if not pieces:
        return (), ()
    namespace = (*[p for p in prefix.split("/") if p], pieces[0])
    rest = [p for p in pieces[1:] if p]
    while rest and _GO_CLOSURE.fullmatch(rest[-1]):
        rest.pop()  # `handle.func1`, `main.gowrap1`: closures run in their enclosing function
    if not rest:
        return (), ()
    return (*namespace, *rest), namespace


def _jvm_parts(function: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    symbol = _HIDDEN_CLASS.sub("", function)  # hidden classes `Bar$$Lambda$14/0x…`
    if _JVM_DESCRIPTOR.match(symbol):
        cls, _, method = symbol[1:].partition(";.")
    elif ":." in symbol:
        cls, _, method = symbol.partition(":.")
    else:
        cls, _, method = symbol.split("(", 1)[0].rpartition(".")
    method = method.split("(", 1)[0]
    path = [p for p in re.split(r"[/.]", cls) if p]
    namespace: list[str] = []
    for part in path[:-1]:
        if not part[:1].islower():
            break
        namespace.append(part)
    classes = [c for p in path[len(namespace) :] for c in p.split("$") if c]
    lambda_of = _JAVA_LAMBDA.match(method)
    if lambda_of:
        method = lambda_of.group(1)
    if method in ("<init>", "new") and classes:
        method = classes[-1]
    return (*namespace, *classes, method) if method else (), tuple(namespace)


def _js_parts(function: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    symbol = re.sub(r"^(?:async |new |get |set |\*)+", "", function)
    if not symbol or "anonymous" in symbol:
        return (), ()
    parts = [p for p in symbol.split(".") if p and p != "prototype"]
    if len(parts) > 1 and parts[0] == "Object":
        parts = parts[1:]  # V8 names a plain object's method `Object.handle`
    return tuple(parts), ()


def _native_parts(function: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    symbol = _GCC_LOCAL.sub("", _SYMBOL_VERSION.sub("", _OFFSET.sub("", function)))
    symbol = _RUST_HASH.sub("", symbol)
    if not re.search(r"[ <>(){}\[\]]", symbol):
        return tuple(symbol.split("::")), ()  # fast path: plain `ns::Class::method`
    return tuple(_cpp_components(symbol)), ()


def _cpp_components(symbol: str) -> list[str]:
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
                components.extend(_cpp_components(own_type))
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


def _drop_balanced(text: str, opening: str, closing: str) -> str:
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


_PARSERS = {
    "python": _python_parts,
    "go": _go_parts,
    "jvm": _jvm_parts,
    "js": _js_parts,
    "c": _native_parts,
    "rust": _native_parts,
    "dotted": _dotted_parts,
}


def qualname_components(qualname: str, language: str | None) -> tuple[str, ...]:
    """A modified subroutine's qualname as components, read in its file's spelling (a hunk
    header may give ``Parser::parse`` or ``(*Server).Handle``)."""
    if "::" in qualname or (language != "python" and "<" in qualname):
        return tuple(_cpp_components(_RUST_HASH.sub("", qualname)))
    if language == "python" or language is None:
        return _python_parts(qualname)[0] or tuple(qualname.split("."))
    if language == "go" and "(" in qualname:
        return _go_parts("pkg." + qualname)[0][1:]
    return tuple(p for p in re.split(r"[.$]", qualname) if p)


# -- matching -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Target:
    """A modified subroutine prepared for matching: ``full`` is the module's components (Python)
    followed by the qualname's, ``qual`` the qualname's alone."""

    sub: ModifiedSubroutine
    order: int
    language: str | None
    paths: tuple[tuple[str, ...], ...]
    qual: tuple[str, ...]
    full: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.qual[-1]


def _prepare(modified: Iterable[ModifiedSubroutine]) -> list[_Target]:
    targets: list[_Target] = []
    seen: set[ModifiedSubroutine] = set()
    for sub in modified:
        if not isinstance(sub, ModifiedSubroutine):
            raise InputError("modified subroutines", "ModifiedSubroutine values", sub)
        if sub in seen:
            continue
        seen.add(sub)
        language = language_of(sub.path)
        qual = qualname_components(sub.qualname, language)
        if not qual:
            continue
        module = tuple(sub.module.split(".")) if sub.module else ()
        paths = tuple(path_components(p) for p in (sub.path, sub.old_path) if p)
        targets.append(_Target(sub, len(targets), language, paths, qual, (*module, *qual)))
    return targets


def _context_agrees(frame: FrameName, target: _Target) -> bool:
    """Where a language ties a symbol's qualifiers to the file's path, they must agree: Java's
    top-level class is the ``.java`` file's stem; a Go symbol's import path ends in the file's
    directory (package ``main`` is named ``main`` wherever it lives; a file at the repository's
    root says nothing); a C (``.c``) function has no ``::`` qualifiers."""
    if len(frame.parts) > 1 and target.paths[0][-1].endswith(".c"):
        return False
    if target.language == "jvm" and target.paths[0][-1].endswith(".java"):
        k = len(frame.namespace)
        if len(frame.parts) > k + 1:
            stems = {p[-1].rsplit(".", 1)[0] for p in target.paths}
            return frame.parts[k] in stems
    if target.language == "go" and frame.namespace and frame.namespace[-1] != "main":
        dirs = {p[-2] for p in target.paths if len(p) >= 2}
        return not dirs or frame.namespace[-1] in dirs
    return True


def _compatible(frame: FrameName, frame_path: tuple[str, ...], target: _Target, k: int) -> bool:
    """Whether frame and target can be one function, names aside: (a)'s path rule for a frame
    with a file; for one without, (b)'s language and context rules. ``k`` is how many trailing
    name components they share: with ``k >= 2`` a target of an unknown language is allowed (the
    qualified name is evidence enough), with fewer its language must be one the frame allows."""
    if frame.file is not None:
        return any(paths_agree(frame_path, p) for p in target.paths)
    if target.language is None:
        return k >= 2
    return target.language in frame.languages and _context_agrees(frame, target)


def _exact(frame: FrameName, frame_path: tuple[str, ...], target: _Target) -> bool:
    shared = _shared_suffix(frame.parts, target.full)
    if shared == 0 or shared < min(len(frame.parts), len(target.full)):
        return False  # neither name is a suffix of the other: `Svc.serve` vs `serve` ok,
        # `Svc.serve` vs `Other.serve` not
    return _compatible(frame, frame_path, target, shared)


def match_subroutines(
    subroutines: Sequence[str],
    modified: Sequence[ModifiedSubroutine],
    *,
    fuzzy_floor: float = 90.0,
    known_functions: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, list[tuple[ModifiedSubroutine, float]]]:
    """For each profile subroutine that is one of the modified subroutines, those it is, with a
    score: 1.0 for the exact rules (a)/(b), ``ratio/100`` for the fuzzy rule (c), which applies
    only to subroutines no exact rule matched and whose function is not in ``known_functions``
    (file path → the qualnames of every function in it at either side of the diff).
    Subroutines matching nothing are left out. Each list is best first (ties in the order of
    ``modified``); a modified subroutine given twice counts once.

    Cost: one normalisation per distinct subroutine (cached), a dict lookup by innermost name
    for (a)/(b), and for (c) one ``cdist`` per group of candidates sharing a file name (frames
    with a file) or a language set (frames without).
    """
    if isinstance(fuzzy_floor, bool) or not isinstance(fuzzy_floor, int | float):
        raise InputError("fuzzy_floor", "a number in (0, 100]", fuzzy_floor)
    if not 0 < fuzzy_floor <= 100:
        raise InputError("fuzzy_floor", "a number in (0, 100]", fuzzy_floor)
    targets = _prepare(modified)
    if not targets:
        return {}
    by_name: dict[str, list[_Target]] = defaultdict(list)
    by_file_name: dict[str, list[_Target]] = defaultdict(list)
    for target in targets:
        by_name[target.name].append(target)
        for file_name in {p[-1] for p in target.paths if p}:
            by_file_name[file_name].append(target)

    outline = _Outline(known_functions or {})
    result: dict[str, list[tuple[ModifiedSubroutine, float]]] = {}
    unmatched: dict[tuple[str, frozenset[str]], list[tuple[str, FrameName, tuple[str, ...]]]]
    unmatched = defaultdict(list)
    for subroutine in dict.fromkeys(subroutines):
        frame = normalize_frame(subroutine)
        if not frame.is_function:
            continue
        frame_path = path_components(frame.file) if frame.file else ()
        hits = [t for t in by_name.get(frame.name, ()) if _exact(frame, frame_path, t)]
        if hits:
            result[subroutine] = [(t.sub, 1.0) for t in hits]
        elif frame.file is None:
            unmatched[("", frame.languages)].append((subroutine, frame, frame_path))
        elif frame_path and frame_path[-1] in by_file_name and not outline.has(frame, frame_path):
            unmatched[(frame_path[-1], frozenset())].append((subroutine, frame, frame_path))

    for (file_name, languages), frames in unmatched.items():
        if file_name:
            group = by_file_name[file_name]
        else:
            group = [t for t in targets if t.language in languages]
        for i, j, score in _fuzzy_pairs([f for _, f, _ in frames], group, fuzzy_floor):
            subroutine, frame, frame_path = frames[i]
            target = group[j]
            if frame.name == target.name or _word_replaced(frame.name, target.name, fuzzy_floor):
                continue
            if frame.name.startswith("<") or target.name.startswith("<"):
                continue  # `<module>` is only ever the module's own import-time code
            both_qualified = len(frame.parts) > 1 and len(target.qual) > 1
            if both_qualified and frame.parts[-2] != target.qual[-2]:
                continue  # a renamed method stays in its class
            if not _compatible(frame, frame_path, target, 0):
                continue
            result.setdefault(subroutine, []).append((target.sub, score / 100.0))

    order = {t.sub: t.order for t in targets}
    for hits in result.values():
        hits.sort(key=lambda hit: (-hit[1], order[hit[0]]))
    return result


def _fuzzy_pairs(
    frames: Sequence[FrameName], targets: Sequence[_Target], floor: float
) -> Iterable[tuple[int, int, float]]:
    """(frame index, target index, ratio) for every pair whose innermost names reach
    ``floor``."""
    if not frames or not targets:
        return
    queries = [f.parts[-1] for f in frames]
    choices = [t.qual[-1] for t in targets]
    scores = process.cdist(
        queries, choices, scorer=fuzz.ratio, score_cutoff=floor, dtype=np.float32, workers=-1
    )
    for row, col in zip(*np.nonzero(scores >= floor)):
        yield int(row), int(col), float(scores[row, col])


class _Outline:
    """Every function of the modified files (both sides of their diffs), for the question "does
    the file have this frame's function?"."""

    def __init__(self, known: Mapping[str, frozenset[str]]) -> None:
        self.by_file: dict[str, list[tuple[tuple[str, ...], set[tuple[str, ...]]]]] = {}
        for path, qualnames in known.items():
            components = path_components(path)
            if not components:
                continue
            language = language_of(path)
            names = {qualname_components(q, language) for q in qualnames}
            self.by_file.setdefault(components[-1], []).append((components, names))

    def has(self, frame: FrameName, frame_path: tuple[str, ...]) -> bool:
        for path, names in self.by_file.get(frame_path[-1], ()):
            if not paths_agree(frame_path, path):
                continue
            for name in names:
                shared = _shared_suffix(frame.parts, name)
                if shared and shared == min(len(frame.parts), len(name)):
                    return True
        return False


def _word_replaced(a: str, b: str, floor: float) -> bool:
    """Whether two names with the same number of words (``_``, camelCase, digits) differ in a
    word pair that is itself below the floor and not a prefix pair: ``get_handle``/
    ``set_handle`` (``get``/``set``: 66.7), ``handler_v1``/``handler_v2``. A different verb or
    version is a different function, however close the whole names are by characters. A word
    extended or respelled (``request``/``requests``, ``colour``/``color``: 90.9) is a rename."""
    words_a = [w.lower() for w in _WORDS.findall(a)]
    words_b = [w.lower() for w in _WORDS.findall(b)]
    if len(words_a) != len(words_b):
        return False
    return any(
        x != y and not (x.startswith(y) or y.startswith(x)) and fuzz.ratio(x, y) < floor
        for x, y in zip(words_a, words_b)
    )
