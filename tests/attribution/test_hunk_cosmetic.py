"""Comment- and layout-only hunks in languages read from hunk headers are cosmetic touches."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_repo import GitRepo

from regbot.attribution.changes import read_change_set
from regbot.attribution.hunk_cosmetic import code_of, hunk_is_cosmetic


@pytest.mark.parametrize(
    ("removed", "added", "language"),
    [
        (["    x := 1 // one"], ["    x := 1 // the first value"], "golang"),
        (["  int y = a+b;"], ["  int y = a + b;  /* sum */"], "cpp"),
        (["   * Returns the sum."], ["   * Returns both."], "java"),  # inside a doc block
        (["  /* old", "     note */ call();"], ["  call(); // new note"], "cpp"),
        (["  echo hi # greet"], ["  echo hi"], "bash"),
        (["    foo(a, b)"], ["    foo(", "        a,", "        b", "    )"], "default"),
    ],
)
def test_comment_and_layout_changes_are_cosmetic(removed, added, language) -> None:
    assert hunk_is_cosmetic(removed, added, language)


@pytest.mark.parametrize(
    ("removed", "added", "language"),
    [
        (['  fetch("http://a.example/x");'], ['  fetch("http://b.example/x");'], "javascript"),
        (["  s = 'a # b'"], ["  s = 'a # c'"], "ruby"),  # a '#' inside a literal is code
        (["  x = y;"], ["  x = y * 2;"], "cpp"),
        (["  *p = 5;"], ["  *p = 6;"], "cpp"),  # a dereference, not a comment line
        (['  msg := "a  b"'], ['  msg := "a b"'], "golang"),  # whitespace inside a literal
    ],
)
def test_code_changes_are_not(removed, added, language) -> None:
    assert not hunk_is_cosmetic(removed, added, language)


def test_code_of_keeps_literals_and_drops_comments() -> None:
    assert code_of(['a = "x // y"; // z', "b = 1 /* c */ + 2"], "cpp") == 'a="x // y";b=1+2'


def test_a_commit_that_only_edits_comments_is_a_cosmetic_touch(tmp_path: Path) -> None:
    source = (
        "package server\n\n"
        "// Handle serves one request.\n"
        "func (s *Server) Handle(r *Request) error {\n"
        "\tn := len(r.Body) // bytes\n"
        "\treturn s.write(n)\n"
        "}\n\n"
        "func (s *Server) Close() error {\n"
        "\treturn nil\n"
        "}\n"
    )
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("base", {"server/server.go": source})
    repo.replace("server/server.go", "// bytes", "// the body's length in bytes")
    repo.commit("Explain n")
    repo.replace("server/server.go", "return nil", "return s.flush()")
    repo.replace("server/server.go", "\treturn s.write(n)", "\treturn s.write(n)  ")
    repo.commit("Flush on close")
    explain, flush = read_change_set(repo.path, base, "main")
    assert [(s.qualname, s.change, s.exact) for s in explain.subroutines] == [
        ("Server.Handle", "cosmetic", False)
    ]
    assert {(s.qualname, s.change) for s in flush.subroutines} == {
        ("Server.Handle", "cosmetic"),
        ("Server.Close", "modified"),
    }
