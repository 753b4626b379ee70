"""Frames ↔ modified subroutines: normalisation per language, the exact rules (a)/(b), the fuzzy
rule (c) and its floor, on hand-written names and on frames from the recorded fixtures."""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

import pytest
from rapidfuzz import fuzz

from regbot.attribution.frame_match import match_subroutines
from regbot.attribution.frame_names import (
    language_of,
    normalize_frame,
    path_components,
    paths_agree,
)
from regbot.attribution.model import ModifiedSubroutine
from regbot.errors import InputError
from regbot.profiles.formats import detect_format, parse_profile, read_profile_bytes
from regbot.profiles.model import ParseOptions, subroutine_of
from regbot.profiles.stacks import StackTable


def parts(text: str) -> tuple[str, ...]:
    return normalize_frame(text).parts


# -- normalisation ----------------------------------------------------------------------------

PYTHON = [
    ("handle (app/views.py)", ("handle",)),
    ("handle (app/views.py:42)", ("handle",)),
    ("Svc.serve (/srv/app/svc.py)", ("Svc", "serve")),
    ("outer.<locals>.inner (app/x.py)", ("outer", "inner")),
    ("handle.<locals>.<lambda> (app/x.py)", ("handle",)),
    ("handle.<locals>.<listcomp> (app/x.py)", ("handle",)),
    ("<lambda> (app/x.py)", ()),
    ("<module> (app/x.py)", ("<module>",)),  # import-time code: the module's own
    ("py::Svc.serve:/srv/app/svc.py", ("Svc", "serve")),  # CPython 3.12 `-X perf` in perf
]
CPP = [
    ("std::vector<int, std::allocator<int> >::push_back", ("std", "vector", "push_back")),
    (
        "std::vector<int, std::allocator<int> >::push_back(int const&)",
        ("std", "vector", "push_back"),
    ),
    ("Parser::parse(char const*) [clone .constprop.0]", ("Parser", "parse")),
    ("Parser::parse(char const*) [clone .isra.0] [clone .cold]", ("Parser", "parse")),
    ("ns::(anonymous namespace)::route(std::string const&)", ("ns", "route")),
    ("(anonymous namespace)::Handler::serve(Request const&)", ("Handler", "serve")),
    ("void std::vector<int>::emplace_back<int>(int&&)", ("std", "vector", "emplace_back")),
    ("std::vector<int> foo::bar(int) const", ("foo", "bar")),
    ("unsigned long foo::size() const &&", ("foo", "size")),
    ("std::string& Foo::name[abi:cxx11]() &", ("Foo", "name")),
    ("std::ostream& std::operator<< <char>(std::ostream&, char const*)", ("std", "operator<<")),
    ("bool operator< <Foo>(Foo const&, Foo const&)", ("operator<",)),
    ("bool ns::operator<(ns::A const&, ns::A const&)", ("ns", "operator<")),
    ("foo::Bar::operator()(int) const", ("foo", "Bar", "operator()")),
    ("foo::Bar::operator->() const", ("foo", "Bar", "operator->")),
    ("foo::Bar::operator bool() const", ("foo", "Bar", "operator bool")),
    ("foo::Bar::operator new[](unsigned long)", ("foo", "Bar", "operator new[]")),
    ("foo::bar(int)::{lambda(int)#1}::operator()(int) const", ("foo", "bar")),
    ("foo::Bar::~Bar()", ("foo", "Bar", "~Bar")),
    ("mozilla::detail::RunnableFunction<void ", ("mozilla", "detail", "RunnableFunction")),
    (
        "std::unique_ptr<Foo, std::default_delete<Foo> >::operator",
        ("std", "unique_ptr", "operator"),
    ),
    ("finish_task_switch.isra.0", ("finish_task_switch",)),
    ("clock_gettime@@GLIBC_2.17", ("clock_gettime",)),
    ("memcpy@plt", ("memcpy",)),
    ("inner", ("inner",)),
]
GO = [
    (
        "github.com/org/repo/pkg.(*Server).Handle",
        ("github.com", "org", "repo", "pkg", "Server", "Handle"),
    ),
    ("net/http.(*Client).Do", ("net", "http", "Client", "Do")),
    ("main.handle.func1", ("main", "handle")),
    ("main.handle.func1.2", ("main", "handle")),
    ("main.main.gowrap1", ("main", "main")),
    ("main.(*T).M-fm", ("main", "T", "M")),
    ("runtime.goexit.abi0", ("runtime", "goexit")),
    ("pkg.Map[...]", ("pkg", "Map")),
    ("pkg.(*List[...]).Push", ("pkg", "List", "Push")),
    ("pkg.Map[go.shape.int,go.shape.string].Get", ("pkg", "Map", "Get")),
    ("gopkg.in/yaml%2ev2.(*decoder).unmarshal", ("gopkg.in", "yaml.v2", "decoder", "unmarshal")),
    ("main.crunch (./cpuwork.go)", ("main", "crunch")),
]
JVM = [
    ("java.lang.String.hashCode", ("java", "lang", "String", "hashCode")),
    ("Lcom/foo/Bar;.baz(I)V", ("com", "foo", "Bar", "baz")),
    (
        "org/mozilla/javascript/ContextFactory:.call",
        ("org", "mozilla", "javascript", "ContextFactory", "call"),
    ),
    ("com/foo/Bar.baz", ("com", "foo", "Bar", "baz")),
    ("com.foo.Bar$Inner.baz", ("com", "foo", "Bar", "Inner", "baz")),
    ("com.foo.Bar.lambda$baz$0", ("com", "foo", "Bar", "baz")),
    ("com.foo.Bar.<init>", ("com", "foo", "Bar", "Bar")),
]
RUST = [
    ("app::server::Server::handle::h0123456789abcdef", ("app", "server", "Server", "handle")),
    ("app::server::Server::handle::h1234abcd", ("app", "server", "Server", "handle")),
    ("<app::Foo as core::fmt::Display>::fmt", ("app", "Foo", "fmt")),
    ("<app::Foo>::bar", ("app", "Foo", "bar")),
    ("app::handle::{{closure}}", ("app", "handle")),
    ("app::handle::{closure#0}", ("app", "handle")),
    ("core::ptr::drop_in_place<app::Foo>", ("core", "ptr", "drop_in_place")),
]
JS = [
    ("handle (src/app.js:10:5)", ("handle",)),
    ("Object.handle (src/app.js:10:5)", ("handle",)),
    ("Server.handle (src/server.ts:3:1)", ("Server", "handle")),
    ("Object.<anonymous> (src/app.js:1:1)", ()),
]
NOT_FUNCTIONS = ["[unknown]", "[libc.so.6]", "[[kernel.kallsyms]]", "_[i]"]


@pytest.mark.parametrize(("frame", "expected"), PYTHON + CPP + GO + JVM + RUST + JS)
def test_normalised_parts(frame: str, expected: tuple[str, ...]) -> None:
    name = normalize_frame(frame)
    assert name.parts == expected
    assert name.name == (expected[-1] if expected else "")
    assert name.is_function == bool(expected)


@pytest.mark.parametrize("frame", NOT_FUNCTIONS)
def test_what_is_not_a_function(frame: str) -> None:
    assert not normalize_frame(frame).is_function


def test_file_and_languages() -> None:
    assert normalize_frame("handle (/srv/app/views.py:42)").file == "/srv/app/views.py"
    assert normalize_frame("handle (src/app.js:10:5)").file == "src/app.js"
    assert normalize_frame("py::Svc.serve:/srv/app/svc.py").file == "/srv/app/svc.py"
    assert normalize_frame("inner").file is None
    assert normalize_frame("inner").languages == {"c"}
    assert normalize_frame("Parser::parse").languages == {"c", "rust"}
    assert normalize_frame("app::Server::handle::h0123456789abcdef").languages == {"rust"}
    assert normalize_frame("net/http.(*Client).Do").languages == {"go"}
    assert normalize_frame("Lcom/foo/Bar;.baz(I)V").languages == {"jvm"}
    assert normalize_frame("main.main").languages == {"go", "jvm", "js"}
    assert normalize_frame("handle (app/views.py)").languages == {"python"}
    assert normalize_frame("net/http.(*Client).Do").namespace == ("net", "http")
    assert language_of("src/parser.cc") == "c" and language_of("Makefile") is None


def test_path_agreement() -> None:
    def agree(a: str, b: str) -> bool:
        return paths_agree(path_components(a), path_components(b))

    assert agree("/srv/app/views.py", "app/views.py")
    assert agree("views.py", "app/views.py")
    assert agree("./cpuwork.go", "cmd/cpuwork/cpuwork.go")
    assert agree("/usr/lib/python3/site-packages/app/views.py", "src/app/views.py")
    assert agree("C:\\srv\\app\\views.py", "app/views.py")
    assert not agree("/srv/admin/views.py", "app/views.py")
    assert not agree("app/views.py", "app/other.py")
    assert not agree("<frozen site>", "site.py")


PROFILE_FIXTURES = ("perf", "pprof", "pyspy", "speedscope")


@lru_cache(maxsize=1)
def fixture_subroutines(fixtures_dir: Path) -> frozenset[str]:
    """The subroutines of every recorded profile fixture, read by regbot's own readers."""
    names: set[str] = set()
    paths = sorted(p for d in PROFILE_FIXTURES for p in (fixtures_dir / d).iterdir())
    for path in paths:
        if path.suffix in {".md", ".go", ".c", ".py", ".sh"} or path.name == "perf_version.txt":
            continue
        data = read_profile_bytes(path)
        table = StackTable()
        fmt = detect_format(path, data[:4096])
        parse_profile(fmt, data, source=str(path), table=table, at_s=1.7e9, options=ParseOptions())
        names.update(subroutine_of(frame) for frame in table.frames)
    return frozenset(names)


def test_every_fixture_frame_normalises(fixtures_dir: Path) -> None:
    names = fixture_subroutines(fixtures_dir)
    assert len(names) > 80
    for text in names:
        name = normalize_frame(text)
        for part in name.parts:
            assert part and "::" not in part and "(" not in part.removeprefix("operator")
            assert "<" not in part.removeprefix("operator") or part.startswith("<")
    expected = {
        "main.crunch (./cpuwork.go)": ("main", "crunch"),
        "compress/flate.(*compressor).init (compress/flate/deflate.go)": (
            "compress",
            "flate",
            "compressor",
            "init",
        ),
        "runtime.newproc.func1 (runtime/proc.go)": ("runtime", "newproc"),
        "Svc.serve (workload.py)": ("Svc", "serve"),
        "Svc.serve (/work/main/tests/fixtures/pyspy/workload.py)": ("Svc", "serve"),
        "std::vector<int, std::allocator<int> >::push_back": ("std", "vector", "push_back"),
        "ns::(anonymous namespace)::route": ("ns", "route"),
        "net/http.(*Client).Do": ("net", "http", "Client", "Do"),
        "org/mozilla/javascript/ContextFactory:.call": (
            "org",
            "mozilla",
            "javascript",
            "ContextFactory",
            "call",
        ),
        "finish_task_switch.isra.0": ("finish_task_switch",),
        "clock_gettime@@GLIBC_2.17": ("clock_gettime",),
    }
    for text, want in expected.items():
        assert text in names
        assert parts(text) == want
    for text in ("[libc.so.6]", "[unknown]", "[[kernel.kallsyms]]"):
        assert text in names and not normalize_frame(text).is_function
    assert normalize_frame("<module> (workload.py)").parts == ("<module>",)


def test_fixture_frames_match_their_sources(fixtures_dir: Path) -> None:
    names = sorted(fixture_subroutines(fixtures_dir))
    serve = ModifiedSubroutine(
        "tests/fixtures/pyspy/workload.py", "Svc.serve", module="tests.fixtures.pyspy.workload"
    )
    main_py = ModifiedSubroutine(
        "tests/fixtures/pyspy/workload.py", "main", module="tests.fixtures.pyspy.workload"
    )
    crunch = ModifiedSubroutine("tests/fixtures/pprof/cpuwork.go", "crunch", exact=False)
    inner = ModifiedSubroutine("tests/fixtures/perf/spin.c", "inner", exact=False)
    result = match_subroutines(names, [serve, main_py, crunch, inner])
    matched = {name: [m for m, _ in hits] for name, hits in result.items()}
    assert matched == {
        "Svc.serve (workload.py)": [serve],
        "Svc.serve (/work/main/tests/fixtures/pyspy/workload.py)": [serve],
        "main (workload.py)": [main_py],
        "main (/work/main/tests/fixtures/pyspy/workload.py)": [main_py],
        "main.crunch (./cpuwork.go)": [crunch],
        "inner": [inner],
    }
    assert all(score == 1.0 for hits in result.values() for _, score in hits)


# -- exact rules ------------------------------------------------------------------------------


def matches(frame: str, *modified: ModifiedSubroutine, floor: float = 90.0) -> list:
    return match_subroutines([frame], modified, fuzzy_floor=floor).get(frame, [])


def test_exact_with_a_file_needs_agreeing_paths() -> None:
    handle = ModifiedSubroutine("app/views.py", "handle", module="app.views")
    assert matches("handle (/srv/app/views.py)", handle) == [(handle, 1.0)]
    assert matches("handle (views.py)", handle) == [(handle, 1.0)]
    assert matches("handle (app/other.py)", handle) == []  # same name, another file
    assert matches("handle (/srv/admin/views.py)", handle) == []  # same file name, other dir
    moved = ModifiedSubroutine("app/views/main.py", "handle", old_path="app/views.py")
    assert matches("handle (/srv/app/views.py)", moved) == [(moved, 1.0)]


def test_exact_with_a_file_compares_qualnames_as_suffixes() -> None:
    serve = ModifiedSubroutine("app/svc.py", "Svc.serve", module="app.svc")
    module_serve = ModifiedSubroutine("app/svc.py", "serve", module="app.svc")
    other = ModifiedSubroutine("app/svc.py", "Other.serve", module="app.svc")
    everything = (serve, module_serve, other)
    assert matches("Svc.serve (app/svc.py)", *everything) == [(serve, 1.0)]
    # py-spy before Python 3.11 gives only the function's name: any of them may be it
    assert matches("serve (app/svc.py)", *everything) == [(s, 1.0) for s in everything]
    inner = ModifiedSubroutine("app/svc.py", "outer.inner", module="app.svc")
    assert matches("outer.<locals>.inner (app/svc.py)", inner) == [(inner, 1.0)]
    closure = ModifiedSubroutine("app/svc.py", "handle", module="app.svc")
    assert matches("handle.<locals>.<lambda> (app/svc.py)", closure) == [(closure, 1.0)]


def test_go_frames_with_files_carry_their_package() -> None:
    crunch = ModifiedSubroutine("cmd/cpuwork/cpuwork.go", "crunch", exact=False)
    assert matches("main.crunch (./cpuwork.go)", crunch) == [(crunch, 1.0)]
    method = ModifiedSubroutine("internal/api/client.go", "(*Client).Do", exact=False)
    frame = "github.com/org/repo/internal/api.(*Client).Do (internal/api/client.go)"
    assert matches(frame, method) == [(method, 1.0)]


def test_native_frames_without_files() -> None:
    parse = ModifiedSubroutine("src/parser.cc", "Parser::parse", exact=False)
    assert matches("ns::Parser::parse(char const*) [clone .constprop.0]", parse) == [(parse, 1.0)]
    assert matches("Lexer::parse(char const*)", parse) == []  # qualifier disagrees
    inner = ModifiedSubroutine("spin.c", "inner", exact=False)
    assert matches("inner", inner) == [(inner, 1.0)]
    assert matches("Cls::inner", inner) == []  # a C function has no `::` qualifier
    python_inner = ModifiedSubroutine("spin.py", "inner", module="spin")
    assert matches("inner", python_inner) == []  # a bare native symbol is not Python
    unknown = ModifiedSubroutine("src/parser.ixx", "Parser::parse", exact=False)
    assert matches("Parser::parse", unknown) == [(unknown, 1.0)]  # 2 components suffice
    assert matches("parse", ModifiedSubroutine("src/parser.ixx", "parse")) == []


def test_rust_frames() -> None:
    handle = ModifiedSubroutine("src/server.rs", "Server::handle", exact=False)
    frame = "app::server::Server::handle::h0123456789abcdef"
    assert matches(frame, handle) == [(handle, 1.0)]
    fmt = ModifiedSubroutine("src/foo.rs", "Foo::fmt", exact=False)
    assert matches("<app::Foo as core::fmt::Display>::fmt", fmt) == [(fmt, 1.0)]


def test_jvm_class_must_be_the_java_file() -> None:
    baz = ModifiedSubroutine("src/main/java/com/foo/Bar.java", "baz", exact=False)
    assert matches("Lcom/foo/Bar;.baz(I)V", baz) == [(baz, 1.0)]
    assert matches("com.foo.Bar$Inner.baz", baz) == [(baz, 1.0)]
    assert matches("com.foo.Bar.lambda$baz$0", baz) == [(baz, 1.0)]
    assert matches("com.foo.Other.baz", baz) == []


def test_go_import_path_must_end_in_the_files_directory() -> None:
    do = ModifiedSubroutine("internal/api/client.go", "Client.Do", exact=False)
    assert matches("github.com/org/repo/internal/api.(*Client).Do", do) == [(do, 1.0)]
    assert matches("net/http.(*Client).Do", do) == []
    handle = ModifiedSubroutine("cmd/server/main.go", "handle", exact=False)
    assert matches("main.handle.func1", handle) == [(handle, 1.0)]
    mallocgc = ModifiedSubroutine("internal/rt/alloc.go", "mallocgc", exact=False)
    assert matches("runtime.mallocgc", mallocgc) == []


def test_results_are_sparse_deduplicated_and_sorted() -> None:
    handle = ModifiedSubroutine("app/views.py", "handle", module="app.views")
    fuzzy = ModifiedSubroutine("app/views.py", "handles", module="app.views")
    result = match_subroutines(
        ["handle (app/views.py)", "[unknown]", "leaf (app/views.py)"], [handle, handle, fuzzy]
    )
    assert result == {"handle (app/views.py)": [(handle, 1.0)]}  # exact wins: no fuzzy entry
    assert match_subroutines(["handle (app/views.py)"], []) == {}


@pytest.mark.parametrize("floor", [0, -1, 100.5, "90", True, float("nan")])
def test_bad_fuzzy_floor_is_an_input_error(floor: object) -> None:
    with pytest.raises(InputError, match="fuzzy_floor"):
        match_subroutines(["x"], [ModifiedSubroutine("x.c", "x")], fuzzy_floor=floor)


# -- fuzzy rule -------------------------------------------------------------------------------


def test_fuzzy_floor_behaviour() -> None:
    request = ModifiedSubroutine("app/views.py", "handle_request", module="app.views")
    frame = "handle_requests (app/views.py)"
    ratio = fuzz.ratio("handle_requests", "handle_request")
    assert ratio == pytest.approx(96.55, abs=0.01)
    assert matches(frame, request) == [(request, pytest.approx(ratio / 100))]
    assert matches(frame, request, floor=96) == [(request, pytest.approx(ratio / 100))]
    assert matches(frame, request, floor=97) == []
    parse = ModifiedSubroutine("lib/parse.c", "parse", exact=False)
    assert matches("parse2", parse) == [(parse, pytest.approx(10 / 11))]
    assert matches("parse2", parse, floor=91) == []
    # the fuzzy rule keeps the exact rules' file and language conditions
    assert matches("handle_requests (app/other.py)", request) == []
    assert matches("handle_requests", request) == []


def test_fuzzy_does_not_match_different_verbs_or_qualifiers() -> None:
    setter = ModifiedSubroutine("app/x.py", "set_handle", module="app.x")
    assert fuzz.ratio("get_handle", "set_handle") == 90.0  # at the floor by characters alone
    assert matches("get_handle (app/x.py)", setter) == []
    assert matches("getHandle (app/x.py)", ModifiedSubroutine("app/x.py", "setHandle")) == []
    set_ = ModifiedSubroutine("app/x.py", "set")
    assert matches("get (app/x.py)", set_) == []
    # why the floor is 90: lower, the unrelated short pairs come in
    assert matches("get (app/x.py)", set_, floor=60) == [(set_, pytest.approx(2 / 3))]
    v2 = ModifiedSubroutine("app/x.py", "handler_v2")
    assert matches("handler_v1 (app/x.py)", v2) == []
    serve = ModifiedSubroutine("app/svc.py", "Svc1.serve", module="app.svc")
    assert matches("Svc2.serve (app/svc.py)", serve) == []  # same name: the exact rules decide
    server = ModifiedSubroutine("app/svc.py", "Svc.server", module="app.svc")
    assert matches("Svc.serve (app/svc.py)", server) == [(server, pytest.approx(10 / 11))]
    assert matches("Other.serve (app/svc.py)", server) == []  # a rename stays in its class


def test_module_frames_match_only_their_own_modules_import_time_code() -> None:
    compiler = ModifiedSubroutine("re/_compiler.py", "<module>", module="re._compiler")
    frames = [
        "<module> (re/_compiler.py)",
        "<module> (/usr/lib/python3.11/re/_compiler.py)",
        "<module> (re/_parser.py)",
        "compile (re/_compiler.py)",
        "module (re/_compiler.py)",  # never a fuzzy match of `<module>`
    ]
    result = match_subroutines(frames, [compiler], fuzzy_floor=50)
    assert result == {frames[0]: [(compiler, 1.0)], frames[1]: [(compiler, 1.0)]}


def test_a_function_in_the_files_outline_is_only_itself() -> None:
    """Frame identity before fuzziness: ``TokenList._token_matching`` and
    ``TokenList.token_not_matching`` (sqlparse)
    both exist in the file, so the modified one is never matched to the other's frame (90.6 by
    qualified name; the innermost names score 84.8, under the floor, too). A frame whose
    function the outline lacks (renamed away) may still match fuzzily, by innermost name."""
    path = "sqlparse/sql.py"
    qualified = ("TokenList._token_matching", "TokenList.token_not_matching")
    modified = ModifiedSubroutine(path, qualified[1], module="sqlparse.sql")
    frame = f"{qualified[0]} ({path})"
    assert fuzz.ratio(*qualified) == pytest.approx(90.6, abs=0.05)
    outline = {path: frozenset({*qualified, "group"})}
    assert match_subroutines([frame], [modified], known_functions=outline) == {}
    by_name = fuzz.ratio("_token_matching", "token_not_matching") / 100  # 0.848
    assert match_subroutines([frame], [modified]) == {}
    assert match_subroutines([frame], [modified], fuzzy_floor=80) == {
        frame: [(modified, pytest.approx(by_name))]
    }
    assert match_subroutines([frame], [modified], fuzzy_floor=80, known_functions=outline) == {}
    renamed = ModifiedSubroutine("app/views.py", "handle_request", module="app.views")
    old_frame = "handle_requests (app/views.py)"  # the old name, gone from both sides
    known = {"app/views.py": frozenset({"handle_request", "other"})}
    score = fuzz.ratio("handle_requests", "handle_request") / 100
    assert match_subroutines([old_frame], [renamed], known_functions=known) == {
        old_frame: [(renamed, pytest.approx(score))]
    }
    known = {"app/views.py": frozenset({"handle_request", "handle_requests"})}
    assert match_subroutines([old_frame], [renamed], known_functions=known) == {}


def test_fuzzy_scores_match_rapidfuzz_on_many_random_names() -> None:
    rng = random.Random(7)
    letters = "abcdefgh"
    words = ["".join(rng.choices(letters, k=rng.randint(4, 9))) for _ in range(60)]
    modified = [ModifiedSubroutine("src/m.c", w, exact=False) for w in words]
    frames = []
    for w in words * 3:
        i = rng.randrange(len(w))
        frames.append(w[:i] + rng.choice(letters) + w[i:])  # one character inserted
    result = match_subroutines(frames, modified)
    assert result, "single insertions into 9-letter names reach 90"
    for frame, hits in result.items():
        for sub, score in hits:
            if frame == sub.qualname:
                assert score == 1.0
            else:
                assert 0.9 <= score < 1.0
                assert score == pytest.approx(fuzz.ratio(frame, sub.qualname) / 100, abs=1e-6)
    for frame in frames:  # every pair the rules allow is found
        best = max(fuzz.ratio(frame, w) for w in words)
        if best >= 90:
            assert frame in result


def test_fifty_thousand_subroutines_against_two_hundred_changes() -> None:
    rng = random.Random(3)
    subroutines = [f"fn_{i} (app/mod{i % 500}/file{i % 97}.py)" for i in range(25_000)]
    subroutines += [f"ns{i % 40}::Cls{i % 300}<int>::method_{i}(int const&)" for i in range(25_000)]
    rng.shuffle(subroutines)
    modified = [
        ModifiedSubroutine(f"app/mod{i % 500}/file{i % 97}.py", f"fn_{i}", module="m")
        for i in range(0, 25_000, 250)
    ]
    modified += [
        ModifiedSubroutine(f"src/cls{i}.cc", f"Cls{i % 300}::method_{i}", exact=False)
        for i in range(0, 25_000, 250)
    ]
    result = match_subroutines(subroutines, modified)
    for sub in modified:
        if sub.path.endswith(".py"):
            frame = f"{sub.qualname} ({sub.path})"
        else:
            i = int(sub.qualname.rsplit("_", 1)[1])
            frame = f"ns{i % 40}::Cls{i % 300}<int>::method_{i}(int const&)"
        assert (sub, 1.0) in result[frame]
    exact = sum(1 for hits in result.values() for _, s in hits if s == 1.0)
    assert exact == len(modified)
