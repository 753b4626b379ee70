"""The seeded scenario generator (`regbot demo`, the attribution benchmark): a real git repository
with merges and squashed PRs, profiles whose frames name the real lines of each deploy's source,
a culprit whose diff maps to the regressed function, and a `regbot run` that names it."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from regbot.attribution.changes import read_change_set
from regbot.bot.cli import main
from regbot.bot.sources.profiles import collect_profile_paths, ingest_profiles
from regbot.datasets.service import BUCKET_S, Scenario, build_scenario
from regbot.errors import InputError
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.model import parse_frame
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store

SEED = 9  # `slower`, every decoy kind but `callee`, a cost-shift false alarm; title vague


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    root = tmp_path_factory.mktemp("scenario") / "s"
    return build_scenario(root, SEED, kind="slower", same_function=False)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def tree_digest(root: Path) -> dict[str, str]:
    """SHA-256 of every file outside .git, by relative path."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def test_same_seed_gives_the_same_repository_and_files(tmp_path: Path) -> None:
    first = build_scenario(tmp_path / "a", 7)
    again = build_scenario(tmp_path / "b", 7)
    other = build_scenario(tmp_path / "c", 8)
    assert first.deploys == again.deploys
    assert first.culprit_sha == again.culprit_sha
    assert first.decoys == again.decoys
    assert first.planted_false_alarms == again.planted_false_alarms
    assert first.culprit_function == again.culprit_function
    assert git(first.repo_path, "log", "--format=%H %P %at %s") == git(
        again.repo_path, "log", "--format=%H %P %at %s"
    )
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")
    assert len(tree_digest(tmp_path / "a")) > 400  # the profiles, one per bucket
    assert other.deploy_sha != first.deploy_sha


def test_repository_has_the_stated_history(scenario: Scenario) -> None:
    repo = scenario.repo_path
    titles = git(repo, "log", "--format=%s").splitlines()
    merges = git(repo, "log", "--merges", "--format=%s").splitlines()
    assert 20 <= len(titles) <= 60
    assert merges and all(re.match(r"^Merge pull request #\d+ from \S+/\S+$", t) for t in merges)
    assert any(re.search(r"\(#\d+\)$", t) for t in titles)
    # Deploys are on main's first-parent line, oldest first, their times increasing.
    mainline = git(repo, "rev-list", "--first-parent", "main").split()
    positions = [mainline.index(sha) for sha, _ in scenario.deploys]
    assert positions == sorted(positions, reverse=True) and positions[-1] == 0
    times = [t for _, t in scenario.deploys]
    assert times == sorted(times) and all(t % BUCKET_S == 0 for t in times)
    assert times[-1] - times[0] == scenario.windows_s[0]
    # The service: 8-12 modules, 40-60 functions and methods, all valid Python.
    modules = sorted((repo / "app").glob("*.py"))
    modules = [m for m in modules if m.name != "__init__.py"]
    functions = [
        node
        for m in modules
        for node in ast.walk(ast.parse(m.read_text()))
        if isinstance(node, ast.FunctionDef)
    ]
    assert 8 <= len(modules) <= 12
    assert 40 <= len(functions) <= 60
    assert any(isinstance(n, ast.ClassDef) for m in modules for n in ast.parse(m.read_text()).body)
    # The last deploy's change set: PR numbers from merges and squash titles.
    commits = read_change_set(repo, scenario.previous_sha, scenario.deploy_sha)
    plain = [c for c in commits if not c.is_merge]
    assert 8 <= len(plain) <= 14
    assert all(c.pull_request is not None for c in commits if c.is_merge)
    for commit in commits:
        if re.search(r"\(#(\d+)\)$", commit.title):
            assert commit.pull_request == int(re.search(r"#(\d+)\)$", commit.title).group(1))
    assert {c.sha for c in plain} >= {scenario.culprit_sha, *scenario.decoys.values()}


def _modified(commits, sha: str) -> set[str]:
    commit = next(c for c in commits if c.sha == sha)
    return {f"{s.qualname} ({s.path})" for s in commit.subroutines}


def test_culprit_and_decoys_map_to_the_functions_they_touch(scenario: Scenario) -> None:
    commits = read_change_set(scenario.repo_path, scenario.previous_sha, scenario.deploy_sha)
    regressed = scenario.culprit_function.removeprefix("gcpu:")
    assert regressed in _modified(commits, scenario.culprit_sha)
    name = regressed.split(" (")[0].rsplit(".", 1)[-1]
    decoy = next(c for c in commits if c.sha == scenario.decoys["names_function"])
    assert name in decoy.title and regressed not in _modified(commits, decoy.sha)
    for kind in ("caller_all_stacks", "sibling"):
        touched = _modified(commits, scenario.decoys[kind])
        assert touched and regressed not in touched
    assert "same_function" not in scenario.decoys and scenario.kind == "slower"


def test_a_caller_that_calls_more_is_the_culprit_of_its_callees_rise(tmp_path: Path) -> None:
    built = build_scenario(tmp_path / "s", 3, kind="caller_calls_more")
    commits = read_change_set(built.repo_path, built.previous_sha, built.deploy_sha)
    culprit = next(c for c in commits if c.sha == built.culprit_sha)
    callee = built.culprit_function.removeprefix("gcpu:").split(" (")[0].rsplit(".", 1)[-1]
    assert built.kind == "caller_calls_more"
    assert len(culprit.subroutines) >= 1
    assert built.culprit_function.removeprefix("gcpu:") not in _modified(commits, culprit.sha)
    assert any(callee in line for line in culprit.diff.splitlines() if line.startswith("+"))


def _function_at(source: str, line: int) -> str | None:
    """The qualname of the innermost function whose lines hold ``line``."""
    found = None

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal found
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef):
                if child.lineno <= line <= (child.end_lineno or child.lineno):
                    found = f"{prefix}{child.name}"
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return found


def test_profiles_name_the_lines_of_the_source_each_deploy_ran(
    scenario: Scenario, tmp_path: Path
) -> None:
    for sha, deployed_at in scenario.deploys:
        text = (scenario.profiles_dir / f"{int(deployed_at)}-web01.folded").read_text()
        sources: dict[str, str] = {}
        stacks = [line.rpartition(" ")[0].split(";") for line in text.splitlines()]
        assert len(stacks) > 20
        for frames in stacks:
            assert frames[0].startswith("<module> (app/main.py:")
            for frame in frames[1:]:
                info = parse_frame(frame)
                if info.file not in sources:
                    sources[info.file] = git(scenario.repo_path, "show", f"{sha}:{info.file}")
                assert _function_at(sources[info.file], info.line) == info.function, frame
        idle = min(stacks, key=len)  # idle samples stop at serve_forever's sleep
        file, line = parse_frame(idle[-1]).file, parse_frame(idle[-1]).line
        assert "time.sleep" in sources[file].splitlines()[line - 1]
    summary = ingest_profiles(
        collect_profile_paths([scenario.profiles_dir]), tmp_path / "store", bucket_width_s=BUCKET_S
    )
    assert summary.buckets == len(list(scenario.profiles_dir.iterdir()))
    store = open_store(tmp_path / "store")
    gcpu = build_gcpu(SampleIndex(store.table, store.records()))
    row = gcpu.subroutines.index(scenario.culprit_function.removeprefix("gcpu:"))
    after = gcpu.timestamps_s >= scenario.deployed_at_s
    rise = gcpu.values[row][after].mean() - gcpu.values[row][~after].mean()
    assert rise == pytest.approx(scenario.details["gcpu_rise"], rel=0.25)


def test_run_names_the_culprit_and_reports_no_planted_false_alarm(
    scenario: Scenario, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "report.json"
    assert main(scenario.run_arguments(output)) == 0, capsys.readouterr().err
    report = json.loads(output.read_text())
    by_series = {r["series"]: r for r in report["regressions"]}
    assert scenario.culprit_function in by_series, sorted(by_series)
    found = by_series[scenario.culprit_function]
    assert found["confidence"] == "high"
    assert found["candidates"][0]["commit"] == scenario.culprit_sha
    assert any(s.startswith("gcpu:") for s in scenario.planted_false_alarms)  # the cost shift
    assert len(scenario.planted_false_alarms) == 4
    assert not set(scenario.planted_false_alarms) & set(by_series)
    assert report["deploy"]["sha"] == scenario.deploy_sha


def test_bad_arguments_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="deploys"):
        build_scenario(tmp_path / "a", 1, deploys=1)
    with pytest.raises(InputError, match="commits_per_deploy"):
        build_scenario(tmp_path / "b", 1, commits_per_deploy=(6, 2))
    with pytest.raises(InputError, match="kind"):
        build_scenario(tmp_path / "c", 1, kind="faster")  # type: ignore[arg-type]
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "note.txt").write_text("taken")
    with pytest.raises(InputError, match="empty"):
        build_scenario(tmp_path / "full", 1)
