"""regbot on the real histories of two real libraries (sqlparse, Python-Markdown), profiled with
real py-spy recordings (``tests/fixtures/real_history``, made by its ``record.py``).

The fixture itself: the history bundles clone, every sha the scenarios name exists and the
deploys are exactly their commits, each decoy commit changes what its kind says (checked with
``ast`` on both sides of its diff), and every state's recordings are 24 raw folded py-spy files.

End to end, one scenario per library through ``regbot run --dry-run`` with regbot's default
settings: the regressed function's series is reported (or merged into a reported regression),
and the docstring-only and local-rename edits of it get no gCPU credit (they are cosmetic
touches)."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from real_history import (
    FIXTURE,
    LIBRARIES,
    NEUTRAL_ROLES,
    build_real_scenario,
    clone,
    fixture,
    git,
    recordings,
    scenario_names,
)

from regbot.bot.cli import main

DECOY_KINDS = {"docstring_only", "local_rename", "speed_up", "caller_edit", "names_function"}
FOLDED_LINE = re.compile(r"^(.*) (\d+)$")  # an empty stack: no Python frame


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A clone of a library's history bundle (branch main; the scenarios as origin/...), made
    once per module."""
    root = tmp_path_factory.mktemp("real-history")
    made: dict[str, Path] = {}

    def get(library: str) -> Path:
        if library not in made:
            made[library] = clone(library, "main", root / library)
        return made[library]

    return get


# ---------------------------------------------------------------------------------------------
# Python sources on both sides of a commit.


def functions(source: str) -> dict[str, ast.AST]:
    """Every function by its qualname as py-spy prints it (``Class.method``,
    ``outer.<locals>.inner``); the last definition wins (overloads)."""
    found: dict[str, ast.AST] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found[f"{prefix}{child.name}"] = child
                visit(child, f"{prefix}{child.name}.<locals>.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _copy(node: ast.AST) -> ast.AST:
    tree = ast.parse(ast.unparse(node))
    return tree if isinstance(node, ast.Module) else tree.body[0]


def _strip_docstrings(node: ast.AST) -> ast.AST:
    for item in ast.walk(node):
        body = getattr(item, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            item.body = body[1:] or [ast.Pass()]
    return node


def without_docstrings(node: ast.AST) -> str:
    return ast.dump(_strip_docstrings(_copy(node)))


def own_code(node: ast.AST) -> str:
    """A function's (or module's) code without docstrings and with the bodies of the functions
    and classes nested in it emptied: what a change to this function itself changes."""
    copy = _copy(node)
    for item in ast.walk(copy):
        if item is not copy and isinstance(
            item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ):
            item.body = [ast.Pass()]
    return ast.dump(_strip_docstrings(copy))


def renamed_only(old: ast.AST, new: ast.AST) -> dict[str, str]:
    """The consistent renaming of names that turns ``old`` into ``new`` (same tree otherwise;
    parameters kept); raises AssertionError when there is none."""
    mapping: dict[str, str] = {}
    for a, b in zip(ast.walk(old), ast.walk(new), strict=True):
        assert type(a) is type(b), (type(a), type(b))
        for name, value in ast.iter_fields(a):
            other = getattr(b, name)
            if isinstance(value, ast.AST) or (
                isinstance(value, list) and value and isinstance(value[0], ast.AST)
            ):
                assert isinstance(other, type(value)) and (
                    not isinstance(value, list) or len(value) == len(other)
                )
                continue
            renameable = (isinstance(a, ast.Name) and name == "id") or (
                isinstance(a, ast.FunctionDef) and name == "name" and a is not old
            )
            if renameable and value != other:
                assert mapping.setdefault(value, other) == other, (value, other)
            else:
                assert value == other, (type(a).__name__, name, value, other)
    return mapping


def sides(repo: Path, sha: str) -> dict[str, tuple[str, str]]:
    """Changed file → (source before, source after) for one commit."""
    names = git(repo, "diff", "--name-only", f"{sha}^", sha).splitlines()
    out = {}
    for path in names:
        before = git(repo, "show", f"{sha}^:{path}")
        after = git(repo, "show", f"{sha}:{path}")
        out[path] = (before, after)
    return out


def changed_functions(before: str, after: str) -> set[str]:
    """Functions whose own code (docstrings and nested functions aside) differs, or that exist
    on one side only; ``<module>`` when the module's own code does."""
    old, new = functions(before), functions(after)
    changed = {
        name
        for name in old.keys() | new.keys()
        if name not in old or name not in new or own_code(old[name]) != own_code(new[name])
    }
    if own_code(ast.parse(before)) != own_code(ast.parse(after)):
        changed.add("<module>")
    return changed


def qualname(frame: str) -> tuple[str, str]:
    name, _, path = frame.partition(" (")
    return name, path.rstrip(")")


# ---------------------------------------------------------------------------------------------
# The fixture.


@pytest.mark.parametrize("library", LIBRARIES)
def test_bundle_clones_and_every_sha_is_there(library: str, clones: Callable[[str], Path]) -> None:
    repo = clones(library)
    doc = fixture(library)
    assert git(repo, "rev-parse", "HEAD") == doc["releases"][-1]["sha"]
    first_parents = git(repo, "rev-list", "--first-parent", "--reverse", "HEAD").splitlines()
    assert first_parents == [r["sha"] for r in doc["releases"]]
    assert len(doc["scenarios"]) == 6
    for spec in doc["scenarios"]:
        tip = git(repo, "rev-parse", f"origin/{spec['branch']}")
        assert tip == spec["deploy"]
        assert spec["base"] == doc["releases"][-1]["sha"]
        deploy = git(repo, "rev-list", "--reverse", f"{spec['base']}..{spec['deploy']}")
        assert deploy.splitlines() == [c["sha"] for c in spec["commits"]]
        assert 6 <= len(spec["commits"]) <= 9
        shas = [*spec["culprits"], *spec["decoys"].values(), *spec["fillers"]]
        assert set(shas) <= {c["sha"] for c in spec["commits"]}
        for sha in shas:
            assert git(repo, "cat-file", "-t", sha) == "commit"
        assert set(spec["decoys"]) == DECOY_KINDS
        assert len(spec["culprits"]) == (2 if spec["kind"] == "two_culprits" else 1)
        for series in spec["series"]:
            assert re.fullmatch(r"gcpu:\S+ \(\S+\.py\)", series), series


@pytest.mark.parametrize("library", LIBRARIES)
def test_each_commit_changes_what_its_role_says(
    library: str, clones: Callable[[str], Path]
) -> None:
    repo = clones(library)
    for spec in fixture(library)["scenarios"]:
        regressed = [qualname(s.removeprefix("gcpu:")) for s in spec["series"]]
        for commit in spec["commits"]:
            sha, role = commit["sha"], commit["role"]
            touches = [qualname(f) for f in spec["touches"][sha]]
            files = sides(repo, sha)
            where = f"{library}/{spec['name']} {role} {commit['title']!r}"
            python = {p: s for p, s in files.items() if p.endswith(".py")}
            if role == "filler":
                assert files and not python, where
                continue
            assert python and set(python) == {path for _, path in touches}, where
            changed = {
                (name, path)
                for path, (before, after) in python.items()
                for name in changed_functions(before, after)
            }
            if role == "docstring_only":
                ((name, path),) = touches
                assert (name, path) in regressed, where
                before, after = python[path]
                assert ast.dump(ast.parse(before)) != ast.dump(ast.parse(after)), where
                assert without_docstrings(ast.parse(before)) == without_docstrings(
                    ast.parse(after)
                ), where
                old, new = functions(before)[name], functions(after)[name]
                assert ast.get_docstring(old) != ast.get_docstring(new), where
            elif role == "local_rename":
                ((name, path),) = touches
                assert (name, path) in regressed or spec["kind"] == "caller_calls_more", where
                before, after = python[path]
                old, new = functions(before)[name], functions(after)[name]
                assert renamed_only(old, new), where
                assert ast.get_docstring(old) == ast.get_docstring(new), where
                outside = {
                    n for n, _ in changed if n != name and not n.startswith(f"{name}.<locals>.")
                }
                assert outside == set(), where
            else:
                assert changed == set(touches), (where, changed, touches)
                if role != "culprit" or spec["kind"] == "caller_calls_more":
                    assert not set(regressed) & changed, where
            if role == "names_function":
                names = [n.split(".")[-1] for n, _ in regressed]
                if spec.get("caller"):
                    names.append(qualname(spec["caller"])[0].split(".")[-1])
                assert any(n in commit["title"] for n in names), where


@pytest.mark.parametrize("library", LIBRARIES)
def test_every_state_holds_24_raw_folded_recordings(library: str) -> None:
    doc = fixture(library)
    states = {"base"} | {s["name"] for s in doc["scenarios"]}
    assert {
        p.name.removesuffix(".tar.xz") for p in (FIXTURE / library / "profiles").iterdir()
    } == states
    for state in sorted(states):
        files = recordings(library, state)
        assert len(files) == 24
        for data in files:
            lines = data.decode("utf-8").splitlines()
            counts = [FOLDED_LINE.match(line) for line in lines]
            assert all(counts), state
            total = sum(int(m.group(2)) for m in counts if m)
            assert 300 <= total <= 600, (state, total)  # 2 s at 250 Hz
            assert any("workload.py" in line for line in lines)


def test_a_built_scenario_is_three_days_and_ten_hours_of_buckets_with_default_settings(
    tmp_path: Path,
) -> None:
    scenario = build_real_scenario("sqlparse", "match-normalise", tmp_path / "s", seed=3)
    files = sorted(scenario.profiles_dir.iterdir())
    assert len(files) == (3 * 24 + 10) * 6
    times = [int(f.name.removesuffix("-web01.folded")) for f in files]
    assert times == list(range(scenario.deployed_at_s - 3 * 86_400, scenario.now_s, 600))
    assert scenario.deployed_at_s % 600 == 0
    before, after = set(recordings("sqlparse", "base")), set(recordings("sqlparse", scenario.name))
    for at, path in zip(times, files, strict=True):
        assert path.read_bytes() in (before if at < scenario.deployed_at_s else after)
    config = yaml.safe_load(scenario.config_path.read_text())
    assert config == {
        "repository": {"path": "repo"},
        "sources": {"profiles": ["profiles/"]},
        "profiles": {"bucket": "600s"},
        "workloads": {
            "default": {"windows": {"historical": "3d", "analysis": "4h", "extended": "6h"}}
        },
        "state": "state/regbot.db",
    }
    assert git(scenario.repo_path, "rev-parse", "HEAD") == scenario.deploy_sha
    again = build_real_scenario("sqlparse", "match-normalise", tmp_path / "again", seed=3)
    assert again.deployed_at_s == scenario.deployed_at_s
    assert [f.read_bytes() for f in sorted(again.profiles_dir.iterdir())] == [
        f.read_bytes() for f in files
    ]


# ---------------------------------------------------------------------------------------------
# End to end.


def fate(report: dict, series: str, depth: int = 0) -> str:
    """REPORTED, merged into a reported regression, or where else the series went."""
    if any(r["series"] == series for r in report["regressions"]):
        return "REPORTED"
    entry = next((e for e in report.get("filtered", []) if e["series"] == series), None)
    if entry is None:
        return "no change point"
    for stage, verdict in entry["verdicts"].items():
        if isinstance(verdict, dict) and verdict.get("passed") is False:
            reason = str(verdict.get("reason", ""))
            if reason.startswith("duplicate of ") and depth < 4:
                into = reason.removeprefix("duplicate of ").strip()
                if fate(report, into, depth + 1) in ("REPORTED", "merged"):
                    return "merged"
            return stage
    return "filtered"


END_TO_END = [("sqlparse", "imt-loops"), ("markdown", "serialize-snapshot")]


@pytest.mark.parametrize(("library", "name"), END_TO_END)
def test_regbot_run_reports_the_regressed_function_and_gives_cosmetic_edits_no_credit(
    library: str, name: str, tmp_path: Path
) -> None:
    assert (library, name) in scenario_names(library)
    scenario = build_real_scenario(library, name, tmp_path / "scenario", seed=0)
    output = tmp_path / "report.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(scenario.run_arguments(output)) == 0
    report = json.loads(output.read_text())
    assert report["deploy"]["commits"] == len(scenario.commits)
    for series in scenario.series:
        assert fate(report, series) in ("REPORTED", "merged"), (series, fate(report, series))
    cosmetic = {scenario.decoys["docstring_only"], scenario.decoys["local_rename"]}
    credited = [
        (r["series"], c["title"], c["parts"]["gcpu_attribution"])
        for r in report["regressions"]
        for c in r["ranking"] + r["candidates"]
        if c["commit"] in cosmetic and c["parts"]["gcpu_attribution"] != 0
    ]
    assert credited == []
    assert any(c["commit"] in cosmetic for r in report["regressions"] for c in r["ranking"])


@pytest.mark.parametrize(
    ("library", "name"), [("sqlparse", "match-normalise"), ("markdown", "registry-snapshot")]
)
def test_a_clean_deploy_reports_nothing_and_passes_the_gate(
    library: str, name: str, tmp_path: Path
) -> None:
    """Only the scenario's leading neutral commits (a docstring edit; a README filler and a
    local rename), both sides the release's real recordings: regbot reports no regression and
    its gate passes."""
    scenario = build_real_scenario(library, name, tmp_path / "scenario", seed=0, clean=True)
    assert scenario.kind == "clean" and scenario.culprits == ()
    assert {c["role"] for c in scenario.commits} <= NEUTRAL_ROLES
    output = tmp_path / "report.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(scenario.run_arguments(output)) == 0
    report = json.loads(output.read_text())
    assert report["deploy"]["commits"] == len(scenario.commits)
    assert [r["series"] for r in report["regressions"]] == []
    assert report["gate"]["state"] == "success"
