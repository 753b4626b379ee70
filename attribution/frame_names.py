"""Frame normalisation (FBDetect §5.6): a profiler's frame text, in its language's own
spelling, reduced to a ``FrameName`` (qualified-name components, file, possible languages)
that ``frame_match`` compares with the qualnames of modified subroutines.

``normalize_frame`` is cached (``lru_cache``); each call is one pass over the frame's text.

Design: docs/design/attribution_frame_match.md
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from regbot.attribution.cosmetic import ANONYMOUS_KINDS
from regbot.attribution.native_symbols import cpp_components, drop_balanced
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
_RUST_HASH = re.compile(r"::h[0-9a-f]{8,16}$")
_GO_CLOSURE = re.compile(r"func\d+|gowrap\d+|deferwrap\d+|\d+")
# `pkg.(*T).M`, `pkg.f.func1`, `runtime.goexit.abi0`, `net/http.Get`, generics `pkg.Map[...]`
_GO_LIKE = re.compile(
    r"\.\(\*?\w|\.func\d+(?:\.\d+)*$|\.abi(?:0|internal)$|^[\w.\-~]+/\S+\.\w|^[\w.%\-~]*\.\w+\["
)
_JVM_DESCRIPTOR = re.compile(r"^L[\w/$]+;\.")
_JVM_SPECIAL = re.compile(r"\.<(?:cl)?init>$")
_JAVA_LAMBDA = re.compile(r"^lambda\$(.+?)\$\d+$")


@dataclass(frozen=True, slots=True)
class FrameName:
    """A frame reduced to what matching compares.

    ``parts`` is the qualified name as components, outermost first (``('app', 'views',
    'Handler', 'get')``); empty when the frame is not a function (``[libc.so.6]``, a bare
    ``<lambda>``); a Python module's import-time frame is ``('<module>',)``, matched only to that
    file's ``<module>`` (``python_subroutines``). ``name`` is the innermost component; ``file``
    the frame's file path or None; ``languages`` the language families the frame can be (from
    the file's extension, or from the symbol's spelling); ``namespace`` the leading components
    that are a package or import path (Go, JVM), which ``parts`` includes.
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
    shared = shared_suffix(a, b)
    return shared == min(len(a), len(b)) or shared >= 2


def shared_suffix(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    for x, y in zip(reversed(a), reversed(b)):
        if x != y:
            break
        n += 1
    return n


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
    symbol = drop_balanced(function, "[", "]").removesuffix("-fm")
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
    return tuple(cpp_components(symbol)), ()


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
        return tuple(cpp_components(_RUST_HASH.sub("", qualname)))
    if language == "python" or language is None:
        return _python_parts(qualname)[0] or tuple(qualname.split("."))
    if language == "go" and "(" in qualname:
        return _go_parts("pkg." + qualname)[0][1:]
    return tuple(p for p in re.split(r"[.$]", qualname) if p)
