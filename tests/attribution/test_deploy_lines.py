"""The deploy's line facts: loops around each line, lines across the deploy, and the commit that
last changed each line's behaviour (real git blame on a repository made by the test)."""

from __future__ import annotations

from pathlib import Path

from git_repo import GitRepo

from regbot.attribution.changes import read_change_set
from regbot.attribution.deploy_lines import (
    cosmetic_only,
    line_map,
    loop_structure,
    parse_blame,
    read_deploy_lines,
)

ORDERS = '''"""Orders."""


def price(items):
    """Sum the items."""
    total = 0
    for i in range(100):
        total = (total * 31 + i) % 1000003
    for item in items:
        while item > 0:
            item -= 1
    return total
'''


def test_loops_around_each_line() -> None:
    header, loops = loop_structure(ORDERS)
    assert header == {7: 7, 9: 9, 10: 10}
    assert loops[8] == (7,)
    assert loops[11] == (10, 9)  # innermost first
    assert loops[10] == (9,)  # a header is enclosed by the loops around its loop only
    assert 7 not in loops and 9 not in loops and 12 not in loops


def test_a_header_over_several_lines_is_its_first_line() -> None:
    source = "def f():\n    for x in range(\n        10,\n    ):\n        g(x)\n"
    header, loops = loop_structure(source)
    assert header == {2: 2, 3: 2, 4: 2}
    assert loops[5] == (2,)


def test_source_that_does_not_parse_has_no_loops() -> None:
    assert loop_structure("def f(:\n    for x in y:\n        pass\n") == ({}, {})


def test_lines_across_an_edit() -> None:
    old = ORDERS.splitlines()
    new = ORDERS.replace("def price", "def helper():\n    return 1\n\n\ndef price")
    new = new.replace("range(100)", "range(200)").splitlines()
    mapped = line_map(old, new)
    assert mapped[7] == 11  # the edited header keeps its samples, four lines lower
    assert mapped[8] == 12 and mapped[12] == 16
    assert mapped[1] == 1
    unlike = line_map(["x = compute_everything(a, b)"], ["return None"])
    assert unlike == {}


def test_parse_blame_leaves_out_boundary_commits() -> None:
    old, new = "a" * 40, "b" * 40
    porcelain = (
        f"{old} 1 1 1\nauthor X\nboundary\nfilename f.py\n\tline one\n"
        f"{new} 2 2 1\nauthor Y\nfilename f.py\n\tline two\n"
        f"{old} 3 3 1\n\tline three\n"
    )
    assert parse_blame(porcelain) == {2: new}


def _history(tmp_path: Path) -> tuple[GitRepo, str, dict[str, str]]:
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("orders", {"app/__init__.py": "", "app/orders.py": ORDERS})
    shas = {}
    repo.replace("app/orders.py", "range(100)", "range(200)")
    shas["bound"] = repo.commit("perf: price over more rounds")
    repo.replace("app/orders.py", "* 31 +", "* 37 +")
    shas["salt"] = repo.commit("use a prime multiplier in price")
    text = (repo.path / "app/orders.py").read_text()
    repo.write("app/orders.py", text.replace("total", "acc"))
    shas["rename"] = repo.commit("tidy: rename the accumulator")
    repo.replace("app/orders.py", "def price", "def helper():\n    return 1\n\n\ndef price")
    shas["helper"] = repo.commit("add helper")
    return repo, base, shas


def test_owners_are_the_last_behaviour_changes(tmp_path: Path) -> None:
    repo, base, shas = _history(tmp_path)
    commits = read_change_set(repo.path, base, "main")
    assert cosmetic_only(commits, "app/orders.py") == [shas["rename"]]
    facts = read_deploy_lines(repo.path, base, "main", {"app/orders.py"}, commits, 123.0)
    assert facts.since_s == 123.0
    lines = facts.files["app/orders.py"]
    # helper() pushed price four lines down.
    assert lines.owner[11] == shas["bound"]  # for i in range(200):
    assert lines.owner[12] == shas["salt"]  # the rename passes through to the salt
    assert 10 not in lines.owner  # `acc = 0`: renamed only, older than the deploy
    assert lines.owner[5] == shas["helper"]
    assert lines.from_previous[7] == 11 and lines.from_previous[8] == 12
    assert lines.loops[12] == (11,)


def test_files_git_cannot_show_are_left_out(tmp_path: Path) -> None:
    repo, base, _ = _history(tmp_path)
    commits = read_change_set(repo.path, base, "main")
    facts = read_deploy_lines(repo.path, base, "main", {"app/gone.py", "README.md"}, commits, 0.0)
    assert facts.files == {}
