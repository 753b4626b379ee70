"""read_change_set on real git repositories built in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from git_repo import GitRepo

from regbot.attribution.changes import read_change_set
from regbot.attribution.commit_analysis import KEYWORDS, MAX_IDENTIFIERS, identifiers_of
from regbot.attribution.model import Commit
from regbot.attribution.pull_requests import pull_request_of
from regbot.errors import InputError

START = 1_700_000_000


def by_title(commits: list[Commit]) -> dict[str, Commit]:
    return {c.title: c for c in commits}


def kinds(commit: Commit) -> dict[str, str]:
    return {s.qualname: s.change for s in commit.subroutines}


def one_edit(root: Path, path: str, text: str, old: str, new: str) -> Commit:
    """The change set of one commit that replaces ``old`` by ``new`` in ``path`` (committed
    before as ``text``) in a new repository at ``root``."""
    repo = GitRepo(root)
    base = repo.commit("base", {path: text})
    repo.replace(path, old, new)
    repo.commit("change")
    [commit] = read_change_set(repo.path, base, "main")
    return commit


PY = """import functools


@functools.lru_cache(maxsize=None)
def cached(x):
    return x * 2


def outer(a):
    b = a + 1

    def inner(c):
        return c * b

    return inner(b)


class Service:
    def handle(self, request):
        return request

    async def stream(self):
        yield 1


class Other:
    pass
"""

GO = """package server

func (s *Server) Handle(n int) int {
	x := n * 2
	return x
}
"""

CPP = """namespace ns {

int Foo::bar(int x) const {
  return x + 1;
}

}  // namespace ns
"""

JAVA = """public class Handler {
    public void handle(Request r) {
        count += 1;
    }
}
"""

JS = """function render(items) {
  return items.map((i) => i.name);
}
"""


@pytest.fixture
def project(tmp_path: Path) -> tuple[GitRepo, str, list[Commit]]:
    repo = GitRepo(tmp_path / "project", start_s=START)
    repo.write("src/app/service.py", PY)
    repo.write("server/server.go", GO)
    repo.write("native/foo.cc", CPP)
    repo.write("java/Handler.java", JAVA)
    repo.write("web/render.js", JS)
    repo.write("assets/logo.png", b"\x89PNG\x00\x01\x02")
    repo.write("old/legacy.py", "def legacy():\n    return 0\n")
    base = repo.commit("Base")

    repo.replace("src/app/service.py", "maxsize=None", "maxsize=256")
    repo.replace("src/app/service.py", "return c * b", "return c * b * 2")
    repo.commit("Tune cache\n\nThe cache was too small.\nSee the incident.\n", author="Ada")

    repo.git("mv", "src/app/service.py", "src/app/services.py")
    repo.replace("src/app/services.py", "return request", "return request.strip()")
    repo.replace(
        "src/app/services.py",
        "    async def stream(self):\n        yield 1\n",
        "    async def stream(self):\n        yield 1\n\n    def extra(self):\n        return 3\n",
    )
    repo.commit("Rename service module")

    repo.replace("server/server.go", "n * 2", "n * 3")
    repo.replace("native/foo.cc", "x + 1", "x + 2")
    repo.replace("java/Handler.java", "count += 1", "count += 2")
    repo.replace("web/render.js", "i.name", "i.title")
    repo.write("assets/logo.png", b"\x89PNG\x00\x03\x04")
    repo.commit("Touch every language")

    (repo.path / "old/legacy.py").unlink()
    repo.commit("Fix parser (#12)")
    return repo, base, read_change_set(repo.path, base, "main")


def test_commits_come_oldest_first_with_their_metadata(project) -> None:
    repo, _, commits = project
    assert [c.title for c in commits] == [
        "Tune cache",
        "Rename service module",
        "Touch every language",
        "Fix parser (#12)",
    ]
    first = commits[0]
    assert first.body == "The cache was too small.\nSee the incident."
    assert first.author == "Ada"
    assert first.authored_at_s == START + 120
    assert [c.authored_at_s for c in commits] == sorted(c.authored_at_s for c in commits)
    assert commits[-1].sha == repo.head()
    assert not any(c.is_merge for c in commits)


def test_python_subroutines_are_exact_with_decorators_and_nesting(project) -> None:
    commit = by_title(project[2])["Tune cache"]
    assert kinds(commit) == {"cached": "modified", "outer.inner": "modified"}
    assert all(s.exact and s.module == "app.service" for s in commit.subroutines)
    assert commit.files == ("src/app/service.py",)


def test_renamed_file_follows_the_rename(project) -> None:
    commit = by_title(project[2])["Rename service module"]
    assert commit.files == ("src/app/services.py",)
    assert kinds(commit) == {"Service.handle": "modified", "Service.extra": "added"}
    for sub in commit.subroutines:
        assert (sub.path, sub.old_path, sub.module) == (
            "src/app/services.py",
            "src/app/service.py",
            "app.services",
        )
    assert "rename from src/app/service.py" in commit.diff


def test_other_languages_use_hunk_headers_and_binary_files_are_listed(project) -> None:
    commit = by_title(project[2])["Touch every language"]
    assert set(commit.files) == {
        "server/server.go",
        "native/foo.cc",
        "java/Handler.java",
        "web/render.js",
        "assets/logo.png",
    }
    found = {(s.path, s.qualname, s.change, s.exact) for s in commit.subroutines}
    assert found == {
        ("server/server.go", "Server.Handle", "modified", False),
        ("native/foo.cc", "Foo.bar", "modified", False),
        ("java/Handler.java", "handle", "modified", False),
        ("web/render.js", "render", "modified", False),
    }
    assert "Binary files" in commit.diff


def test_deleted_file_and_squash_pull_request(project) -> None:
    commit = by_title(project[2])["Fix parser (#12)"]
    assert commit.pull_request == 12
    assert commit.files == ("old/legacy.py",)
    assert [(s.path, s.qualname, s.change, s.module) for s in commit.subroutines] == [
        ("old/legacy.py", "legacy", "deleted", "old.legacy")
    ]
    assert all(c.pull_request is None for c in project[2][:-1])


def test_diff_is_unified_with_context_and_truncated(project) -> None:
    repo, base, commits = project
    commit = by_title(commits)["Tune cache"]
    assert commit.diff.startswith("diff --git a/src/app/service.py b/src/app/service.py\n")
    assert " def cached(x):\n" in commit.diff  # a context line: the stored diff has context
    short = read_change_set(repo.path, base, "main", max_diff_chars=50)
    assert all(len(c.diff) == 50 for c in short)
    assert by_title(short)["Tune cache"].diff == commit.diff[:50]
    none = read_change_set(repo.path, base, "main", max_diff_chars=0)
    assert all(c.diff == "" for c in none)
    assert [c.subroutines for c in none] == [c.subroutines for c in commits]


def test_identifiers_come_from_changed_lines_only(tmp_path: Path) -> None:
    commit = one_edit(
        tmp_path / "ids",
        "a.py",
        "def context_only():\n    value = 1\n    return value\n",
        "value = 1",
        "value = compute(0x1f, for_each) if ready else None",
    )
    # context_only and return are on context lines; if/else/None are keywords; 0x1f no name.
    assert commit.identifiers == ("value", "compute", "for_each", "ready")


def test_identifiers_are_capped() -> None:
    lines = [" ".join(f"name_{i}_{j}" for j in range(10)) for i in range(100)]
    found = identifiers_of(lines)
    assert len(found) == MAX_IDENTIFIERS
    assert found[:3] == ("name_0_0", "name_0_1", "name_0_2")
    assert identifiers_of(["while for func def elif"]) == ()
    assert {"while", "func", "def", "elif", "function", "interface"} <= KEYWORDS


def test_pull_request_titles() -> None:
    assert pull_request_of("Merge pull request #123 from org/branch") == 123
    assert pull_request_of("Fix parser (#12)") == 12
    assert pull_request_of("Fix parser (#12) ") == 12
    assert pull_request_of("Refer to (#12) in the middle") is None
    assert pull_request_of("Merge branch 'main' into feat") is None


def test_merge_commit_of_a_pull_request(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "merge")
    repo.write("app.py", "def main():\n    return 1\n")
    repo.write("lib.py", "def helper():\n    return 1\n")
    base = repo.commit("base")
    repo.git("checkout", "-q", "-b", "feat")
    repo.replace("lib.py", "return 1", "return 2")
    repo.commit("Make helper return 2")
    repo.write("lib.py", "def helper():\n    return 2\n\n\ndef added():\n    return 3\n")
    repo.commit("Add a function")
    repo.git("checkout", "-q", "main")
    repo.replace("app.py", "return 1", "return 5")
    repo.commit("Mainline change")
    repo.clock += 60
    repo.git("merge", "-q", "--no-ff", "feat", "-m", "Merge pull request #7 from org/feat")
    commits = read_change_set(repo.path, base, "main")
    titles = by_title(commits)
    assert len(commits) == 4 and commits[-1].title == "Merge pull request #7 from org/feat"
    assert titles["Make helper return 2"].pull_request == 7
    assert titles["Add a function"].pull_request == 7
    assert titles["Mainline change"].pull_request is None
    merge = titles["Merge pull request #7 from org/feat"]
    assert merge.is_merge and merge.pull_request == 7
    assert merge.subroutines == ()
    # Its diff is against the first parent: the PR's changes, not the mainline's.
    assert merge.files == ("lib.py",)
    assert "+def added():" in merge.diff and "return 5" not in merge.diff
    assert "added" in merge.identifiers
    assert kinds(titles["Add a function"]) == {"added": "added"}


def test_root_commit_diffs_against_the_empty_tree(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "root")
    repo.write("first.go", "package x\n\nfunc First() {\n}\n")
    repo.commit("first")
    repo.git("checkout", "-q", "--orphan", "other")
    repo.git("rm", "-q", "-r", "--cached", ".")
    (repo.path / "first.go").unlink()
    unrelated = repo.commit("unrelated history")
    [commit] = read_change_set(repo.path, unrelated, "main")
    assert commit.title == "first" and commit.files == ("first.go",)
    assert commit.diff.startswith("diff --git a/first.go b/first.go\nnew file mode")
    assert kinds(commit) == {"First": "added"}


def test_python_syntax_errors_fall_back_to_hunk_headers(tmp_path: Path) -> None:
    commit = one_edit(tmp_path / "py2", "tool.py", "def show(x):\n    print 'a', x\n", "'a'", "'b'")
    assert [(s.qualname, s.change, s.exact, s.module) for s in commit.subroutines] == [
        ("show", "modified", False, "tool")
    ]


def test_same_revision_gives_no_commits(project) -> None:
    repo = project[0]
    assert read_change_set(repo.path, "main", "main") == []


def test_unknown_revision_and_bad_repository_are_input_errors(project, tmp_path: Path) -> None:
    repo, base, _ = project
    with pytest.raises(InputError) as error:
        read_change_set(repo.path, base, "no-such-branch")
    assert "no-such-branch" in str(error.value) and str(repo.path) in str(error.value)
    with pytest.raises(InputError, match="deadbeef"):
        read_change_set(repo.path, "deadbeef", "main")
    with pytest.raises(InputError, match="--all"):
        read_change_set(repo.path, "--all", "main")
    with pytest.raises(InputError, match="not-a-repo"):
        read_change_set(tmp_path / "not-a-repo", "a", "b")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError, match="git repository"):
        read_change_set(plain, "a", "b")
    with pytest.raises(InputError, match="max_diff_chars"):
        read_change_set(repo.path, base, "main", max_diff_chars=-1)


def _fast_import_history(repo: GitRepo, rounds: int) -> tuple[list[str], dict[int, str]]:
    """Build ``rounds`` x (3 mainline commits + a 2-commit PR merged by a merge commit) with
    ``git fast-import``; returns the stream's expectations: per mark, its title."""
    functions = 12
    module = [f"def f{i}(x):\n    return x + 0\n" for i in range(functions)]
    stream: list[bytes] = []
    titles: dict[int, str] = {}
    mark = 0
    clock = START

    def blob(text: str) -> bytes:
        data = text.encode()
        return b"data %d\n%s\n" % (len(data), data)

    def commit(branch: str, title: str, parents: list[int], files: dict[str, str]) -> int:
        nonlocal mark, clock
        mark += 1
        clock += 60
        titles[mark] = title
        message = title.encode()
        lines = [
            b"commit refs/heads/%s\n" % branch.encode(),
            b"mark :%d\n" % mark,
            b"author t <t@e> %d +0000\n" % clock,
            b"committer t <t@e> %d +0000\n" % clock,
            b"data %d\n%s\n" % (len(message), message),
        ]
        if parents:
            lines.append(b"from :%d\n" % parents[0])
        lines += [b"merge :%d\n" % p for p in parents[1:]]
        for path, text in files.items():
            lines.append(b"M 100644 inline %s\n" % path.encode())
            lines.append(blob(text))
        stream.append(b"".join(lines))
        return mark

    tip = commit("main", "root", [], {"pkg/mod.py": "\n\n".join(module), "side.go": "package s\n"})
    step = 0
    for round_ in range(rounds):
        for _ in range(3):
            index = step % functions
            module[index] = f"def f{index}(x):\n    return x + {step + 1}\n"
            tip = commit(
                "main", f"change f{index} step {step}", [tip], {"pkg/mod.py": "\n\n".join(module)}
            )
            step += 1
        side = tip
        for k in range(2):
            side = commit(
                f"pr{round_}",
                f"pr {round_} commit {k}",
                [side],
                {"side.go": f"package s\n\nfunc Side{round_}x{k}() {{\n}}\n"},
            )
        tip = commit(
            "main",
            f"Merge pull request #{100 + round_} from org/pr{round_}",
            [tip, side],
            {"side.go": f"package s\n\nfunc Side{round_}x1() {{\n}}\n"},
        )
    marks = repo.path / ".." / "marks"
    repo.git(
        "fast-import", "--quiet", f"--export-marks={marks}", stdin=b"".join(stream) + b"done\n"
    )
    shas = {}
    for line in marks.read_text().splitlines():
        number, sha = line.split()
        shas[int(number[1:])] = sha
    return [shas[m] for m in sorted(shas)], titles


def test_a_deploy_of_hundreds_of_commits(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "big")
    rounds = 50
    shas, titles = _fast_import_history(repo, rounds)
    commits = read_change_set(repo.path, shas[0], "main")
    assert len(commits) == len(shas) - 1 == rounds * 6
    assert {c.sha for c in commits} == set(shas[1:])
    position = {c.sha: i for i, c in enumerate(commits)}
    for commit in commits:
        parents = repo.git("rev-list", "--parents", "-n", "1", commit.sha).split()[1:]
        assert all(position.get(p, -1) < position[commit.sha] for p in parents)
    for commit in commits:
        if commit.title.startswith("change f"):
            name = commit.title.split()[1]
            assert kinds(commit) == {name: "modified"}
            assert commit.subroutines[0].module == "pkg.mod" and commit.pull_request is None
        elif commit.title.startswith("pr "):
            round_ = int(commit.title.split()[1])
            assert commit.pull_request == 100 + round_
            assert commit.files == ("side.go",)
        else:
            assert commit.is_merge and commit.subroutines == ()
    assert sum(c.is_merge for c in commits) == rounds
