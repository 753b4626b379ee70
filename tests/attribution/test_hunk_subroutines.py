"""Diff parsing and hunk-header subroutines, on diffs made by real git in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_repo import GitRepo

from regbot.attribution.diff_drivers import attributes_text, diff_driver_for, git_diff_config
from regbot.attribution.function_lines import function_defined_by, function_from_header
from regbot.attribution.hunk_subroutines import hunk_subroutines
from regbot.attribution.unified_diff import changed_ranges, merge_lines, parse_diff


class Workdir(GitRepo):
    """A real git repository whose ``diff`` is the staged edit against the last commit, with
    regbot's hunk-header drivers (``attributes_text``) and rename detection."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.attributes = path.parent / f"{path.name}-attributes"
        self.attributes.write_text(attributes_text(), encoding="utf-8")

    def diff(self, *options: str) -> str:
        return self.staged_diff("-M", *options, config=git_diff_config(self.attributes))


@pytest.fixture
def work(tmp_path: Path) -> Workdir:
    return Workdir(tmp_path / "repo")


def names(found) -> dict[str, str]:
    return {s.qualname: s.change for s in found}


# --- parse_diff -------------------------------------------------------------------------------


def test_changed_ranges_are_the_removed_and_added_lines_for_any_context(work: Workdir) -> None:
    old = [f"line {i}" for i in range(1, 41)]
    work.write("notes.txt", "\n".join(old) + "\n")
    work.commit("state")
    new = list(old)
    new[4] = "changed 5"  # line 5 replaced
    del new[19:21]  # old lines 20-21 removed
    new.insert(30, "inserted")  # a line added (new numbering)
    work.write("notes.txt", "\n".join(new) + "\n")
    expected_old = [(5, 5), (20, 21)]
    expected_new = [(5, 5), (31, 31)]
    for context in ("-U0", "-U3", "-U10"):
        ranges = changed_ranges(work.diff(context))
        assert ranges == {"notes.txt": (expected_old, expected_new)}, context


def test_removed_lines_that_look_like_file_headers_stay_hunk_lines(work: Workdir) -> None:
    work.write("a.sql", "-- a comment\n--- not a header\nselect 1;\n")
    work.commit("state")
    work.write("a.sql", "select 1;\n")
    [file] = parse_diff(work.diff("-U0"))
    assert file.path == "a.sql"
    assert [text for _, text in file.hunks[0].removed] == ["-- a comment", "--- not a header"]


def test_added_deleted_renamed_binary_and_mode_changes(work: Workdir) -> None:
    work.write("gone.go", "package x\n")
    work.write("old name.go", "package x\n\nfunc A() {\n\treturn\n}\n")
    work.write("run.sh", "echo hi\n")
    work.commit("state")
    (work.path / "gone.go").unlink()
    work.git("mv", "old name.go", "new näme.go")
    work.write("new näme.go", "package x\n\nfunc A() {\n\tprintln(1)\n}\n")
    work.write("blob.bin", b"\x00\x01\x02binary\x00")
    (work.path / "run.sh").chmod(0o755)
    files = {f.path: f for f in parse_diff(work.diff("-U0", "--full-index"))}
    assert set(files) == {"gone.go", "new näme.go", "blob.bin", "run.sh"}
    assert files["gone.go"].new_path is None and files["gone.go"].old_blob is not None
    renamed = files["new näme.go"]
    assert renamed.renamed_from == "old name.go"
    assert len(renamed.old_blob or "") == 40 and len(renamed.new_blob or "") == 40
    assert files["blob.bin"].binary and files["blob.bin"].old_path is None
    assert files["run.sh"].old_mode == "100644" and files["run.sh"].new_mode == "100755"
    assert files["run.sh"].hunks == ()
    assert hunk_subroutines(files["blob.bin"]) == []
    [sub] = hunk_subroutines(renamed)
    assert (sub.path, sub.old_path, sub.qualname, sub.change) == (
        "new näme.go",
        "old name.go",
        "A",
        "modified",
    )


def test_quoted_and_spaced_paths(work: Workdir) -> None:
    body = "package x\n\nfunc F() {\n\treturn\n}\n"
    work.write("with space.go", body)
    work.write('quo"te.go', body)
    work.commit("state")
    work.write("with space.go", body.replace("return", "println()"))
    work.write('quo"te.go', body.replace("return", "println()"))
    diff = work.diff("-U0")
    assert '"a/quo\\"te.go"' in diff  # git C-quotes the name
    files = {f.path: f for f in parse_diff(diff)}
    assert set(files) == {"with space.go", 'quo"te.go'}
    assert all(f.old_path == f.new_path and f.hunks for f in files.values())


def test_merge_lines() -> None:
    assert merge_lines([5, 3, 4, 9, 9, 11, 10]) == [(3, 5), (9, 11)]
    assert merge_lines([]) == []


# --- names from headers and lines -------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "language", "expected"),
    [
        (
            "func (s *Server) Handle(w http.ResponseWriter, r *http.Request) {",
            "golang",
            "Server.Handle",
        ),
        ("func (l List[T]) Len() int {", "golang", "List.Len"),
        ("func Parse(text string) (*Doc, error) {", "golang", "Parse"),
        ("type Server struct {", "golang", None),
        ("int ns::Foo::bar(int x) const", "cpp", "ns.Foo.bar"),
        ("std::vector<int> Cache<K, V>::keys() const {", "cpp", "Cache.keys"),
        ("Foo::~Foo()", "cpp", "Foo.~Foo"),
        ("bool Foo::operator==(const Foo& other) const {", "cpp", "Foo.operator=="),
        ("static int limit = compute_limit(3);", "cpp", None),
        ("class Foo : public Bar {", "cpp", None),
        ("public void handle(Request r) {", "java", "handle"),
        ("    public static <T> List<T> copy(List<T> items) {", "java", "copy"),
        ("public class Handler implements Runnable {", "java", None),
        ("function foo(a, b) {", "javascript", "foo"),
        ("export default async function load(url) {", "javascript", "load"),
        ("const foo = (a) => {", "javascript", "foo"),
        ("handle(req) {", "javascript", "handle"),
        ("class Widget extends Base {", "javascript", None),
        ("pub fn parse(&self, input: &str) -> Result<Doc> {", "rust", "parse"),
        ("impl Parser {", "rust", None),
        ("public static function render($view) {", "php", "render"),
        ("async def fetch(self, url):", "python", "fetch"),
        ("class Client:", "python", None),
        ("fun String.shout(): String {", "kotlin", "String.shout"),
        ("", "golang", None),
    ],
)
def test_function_from_header(header: str, language: str, expected: str | None) -> None:
    assert function_from_header(header, language) == expected


@pytest.mark.parametrize(
    ("line", "language", "expected"),
    [
        ("func B() {", "golang", "B"),
        ("\tb()", "golang", None),
        ("int main(int argc, char **argv) {", "cpp", "main"),
        ("int prototype(int);", "cpp", None),
        ("    total = sum(values);", "cpp", None),
        ("    private int count(String s) {", "java", "count"),
        ("        return count(s);", "java", None),
        ("        String s = read(", "java", None),
        ("  async load(url) {", "javascript", "load"),
        ("  if (ready) {", "javascript", None),
        ("  items.forEach(function (item) {", "javascript", None),
        ("  run(a, function() {", "javascript", None),
        ("const total = (a + b) * 2;", "javascript", None),
        ("export const double = (x) => x * 2;", "javascript", "double"),
        ("    fn helper(x: u32) -> u32 {", "rust", "helper"),
        ("    def method(self):", "python", "method"),
    ],
)
def test_function_defined_by(line: str, language: str, expected: str | None) -> None:
    assert function_defined_by(line, language) == expected


def test_drivers_by_suffix() -> None:
    assert diff_driver_for("a/b/server.go") == "golang"
    assert diff_driver_for("x.cc") == "cpp" and diff_driver_for("x.H".lower()) == "cpp"
    assert diff_driver_for("app.tsx") == "javascript"
    assert diff_driver_for("README") is None
    assert "*.go diff=golang\n" in attributes_text()


# --- real hunk headers per language -----------------------------------------------------------

GO_OLD = """package server

type Server struct {
	name string
}

func (s *Server) Handle(n int) int {
	x := n * 2
	return x
}

func helper() int {
	return 1
}

func unused() int {
	return 3
}
"""

GO_NEW = """package server

type Server struct {
	name string
	port int
}

func (s *Server) Handle(n int) int {
	x := n * 3
	return x
}

func helper() int {
	return 1
}

// Added does a new thing.
func Added() int {
	return 2
}
"""


def test_go_hunk_headers(work: Workdir) -> None:
    work.write("server.go", GO_OLD)
    work.commit("state")
    work.write("server.go", GO_NEW)
    [file] = parse_diff(work.diff("-U0"))
    assert any(h.header.startswith("func (s *Server) Handle(") for h in file.hunks)
    found = hunk_subroutines(file)
    assert names(found) == {"Server.Handle": "modified", "Added": "added", "unused": "deleted"}
    assert all(not s.exact and s.module is None for s in found)


CPP_OLD = """#include <vector>

namespace ns {

int Foo::bar(int x) const {
  int y = x + 1;
  return y;
}

std::vector<int> Foo::keys() const {
  return {1, 2};
}

}  // namespace ns
"""

CPP_NEW = CPP_OLD.replace("x + 1", "x + 2").replace("{1, 2}", "{1, 2, 3}")


def test_cpp_hunk_headers(work: Workdir) -> None:
    work.write("src/foo.cc", CPP_OLD)
    work.commit("state")
    work.write("src/foo.cc", CPP_NEW)
    [file] = parse_diff(work.diff("-U0"))
    assert [h.header for h in file.hunks] == [
        "int Foo::bar(int x) const {",
        "std::vector<int> Foo::keys() const {",
    ]
    assert names(hunk_subroutines(file)) == {"Foo.bar": "modified", "Foo.keys": "modified"}


JAVA_OLD = """package app;

public class Handler {
    private int count = 0;

    public void handle(Request r) {
        count += 1;
        log(r);
    }

    private static String name(Request r) {
        return r.name();
    }
}
"""

JAVA_NEW = (
    JAVA_OLD.replace("count += 1;", "count += 2;")
    .replace("private int count = 0;", "private int count = 1;")
    .replace(
        "    private static String name",
        "    protected int size(Request r) {\n        return r.size();\n    }\n\n"
        "    private static String name",
    )
)


def test_java_hunk_headers(work: Workdir) -> None:
    work.write("src/app/Handler.java", JAVA_OLD)
    work.commit("state")
    work.write("src/app/Handler.java", JAVA_NEW)
    [file] = parse_diff(work.diff("-U0"))
    found = names(hunk_subroutines(file))
    # The field change sits in the class body: its header is the class line, no function.
    assert found == {"handle": "modified", "size": "added"}


JS_OLD = """class Widget {
  constructor(el) {
    this.el = el;
  }

  render(data) {
    const html = data.map((d) => d.name);
    return html;
  }
}

function outer(a) {
  let b = a;
  return b;
}

const double = (x) => {
  return x * 2;
};
"""

JS_NEW = (
    JS_OLD.replace("d.name", "d.title")
    .replace("let b = a;", "let b = a + 1;")
    .replace("x * 2", "x * 3")
)


def test_javascript_hunk_headers_use_the_custom_driver(work: Workdir) -> None:
    work.write("web/widget.ts", JS_OLD)
    work.commit("state")
    work.write("web/widget.ts", JS_NEW)
    [file] = parse_diff(work.diff("-U0"))
    assert [h.header for h in file.hunks] == [
        "render(data) {",
        "function outer(a) {",
        "const double = (x) => {",
    ]
    assert names(hunk_subroutines(file)) == {
        "render": "modified",
        "outer": "modified",
        "double": "modified",
    }


def test_rust_and_php_hunk_headers(work: Workdir) -> None:
    rust = (
        "impl Parser {\n    pub fn parse(&self) -> u32 {\n        let x = 1;\n        x\n    }\n}\n"
    )
    php = "<?php\nclass A {\n    public function run($x) {\n        return $x + 1;\n    }\n}\n"
    work.write("lib.rs", rust)
    work.write("a.php", php)
    work.commit("state")
    work.write("lib.rs", rust.replace("let x = 1", "let x = 2"))
    work.write("a.php", php.replace("$x + 1", "$x + 2"))
    found = {f.path: names(hunk_subroutines(f)) for f in parse_diff(work.diff("-U0"))}
    assert found == {"lib.rs": {"parse": "modified"}, "a.php": {"run": "modified"}}


def test_new_and_deleted_files_name_their_functions(work: Workdir) -> None:
    work.write("old.go", "package x\n\nfunc Old() {\n}\n")
    work.commit("state")
    (work.path / "old.go").unlink()
    work.write("new.js", "// helpers\nfunction fresh(a) {\n  return a;\n}\n")
    found = {f.path: names(hunk_subroutines(f)) for f in parse_diff(work.diff("-U0"))}
    assert found == {"old.go": {"Old": "deleted"}, "new.js": {"fresh": "added"}}


def test_signature_change_is_a_modification(work: Workdir) -> None:
    work.write("m.go", "package x\n\nfunc Sum(a int) int {\n\treturn a\n}\n")
    work.commit("state")
    work.write("m.go", "package x\n\nfunc Sum(a, b int) int {\n\treturn a + b\n}\n")
    [file] = parse_diff(work.diff("-U0"))
    assert names(hunk_subroutines(file)) == {"Sum": "modified"}


def test_sides_limit_what_is_read(work: Workdir) -> None:
    work.write("m.go", "package x\n\nfunc Old() {\n}\n")
    work.commit("state")
    work.write("m.go", "package x\n\nfunc New() {\n}\n")
    [file] = parse_diff(work.diff("-U0"))
    assert names(hunk_subroutines(file)) == {"Old": "deleted", "New": "added"}
    assert names(hunk_subroutines(file, sides=("new",))) == {"New": "added"}
    assert names(hunk_subroutines(file, sides=("old",))) == {"Old": "deleted"}
