"""The composite action (``action.yml``) checked without ``act``: its shape from the YAML, then its
``run:`` steps executed in order in a simulated GitHub Actions environment, against a real git
workspace whose ``origin`` is a bare repository (the state branch is pushed there) and the fake
GitHub REST server; and the example workflows' triggers and permissions.

``run_action`` does what the runner does for a composite action, and no more: input defaults and
``${{ }}`` expressions in ``env:``, ``with:`` and ``outputs:`` evaluated by a tiny evaluator that
knows only the forms the action uses (``inputs.X``, ``github.X``, ``steps.ID.outputs.X``; any
other form fails the test), each ``run:`` script written to a file and run with
``bash --noprofile --norc -eo pipefail`` (GitHub's ``shell: bash``) in the workspace, a fresh
``GITHUB_OUTPUT`` file per step parsed into ``steps.ID.outputs``, one ``GITHUB_STEP_SUMMARY`` per
run, and the first failing step ending the action with its exit code. ``uses:`` steps are not run
(the test's Python stands in for actions/setup-python), and ``REGBOT_ACTION_PYTHON`` — the
action's testing hook — points the install step at this interpreter, which has regbot installed.

The scenario (one module fixture, run once): a service whose ``compute`` got twice as expensive
with a squashed PR (#3) between deploy 1 and deploy 2, folded profiles every 5 minutes around
three deploys, and in order: a dry run of deploy 2; a real run of deploy 2; a real run of deploy 3
without ``previous-sha`` (from the deploy log restored from the state branch) during which a
concurrent run pushes to the state branch; a re-run of deploy 3 with neither ``previous-sha`` nor
``deployed-at``, whose first push ``origin`` refuses (a pre-receive hook); a run with an unknown
deploy sha; and a run with a bad ``dry-run`` input. Every run starts from a workspace without a
local state file, as on an ephemeral runner.

Assertions about PR comments, the gate on GitHub and the job summary's content exercise regbot's
publishing (``bot/github/publish.py``) through the fake GitHub.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from fake_github import FakeGitHub
from git_repo import GitRepo

from regbot.bot.state import open_state

REPO_ROOT = Path(__file__).resolve().parents[2]
ACTION = REPO_ROOT / "action.yml"
WORKFLOWS = REPO_ROOT / ".github" / "workflows"

REPOSITORY = "octo/service"
TOKEN = "fake-token"
TOKEN_ENV = "SERVICE_GITHUB_TOKEN"  # github.token_env; the job environment holds no token
STATE_BRANCH = "regbot-state"
STATE_FILE = ".regbot/state.db"  # the config's `state`, relative to the workspace
GATE_NAME = "regbot/performance"
START_S = 1_800_000_000
STEP_S = 300
DEPLOY_1_AT = START_S + 3600
DEPLOY_2_AT = START_S + 4 * 3600
DEPLOY_3_AT = START_S + 6 * 3600
END_S = START_S + 8 * 3600

SERVICE = """\
def parse(n):
    return sum(i % 7 for i in range(n))


def compute(n):
    return sum((i * i) % 11 for i in range(n * ROUNDS))


def render(x):
    return x ^ 1


def handle(i):
    return render(parse(i) + compute(i))


ROUNDS = 1
"""

CONFIG = f"""\
repository: {{path: ., github: {REPOSITORY}}}
github: {{token_env: {TOKEN_ENV}}}
sources: {{profiles: [profiles/]}}
profiles: {{bucket: 5m}}
workloads:
  default:
    threshold: {{relative: 0.05}}
    windows: {{historical: 4h, analysis: 1h, extended: 30m}}
state: {STATE_FILE}
"""


# --------------------------------------------------------------------------------------------
# The simulated runner


_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}")
_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
_CONTEXT_REFERENCE = re.compile(rf"^(inputs|github)\.({_NAME})$")
_STEP_OUTPUT = re.compile(rf"^steps\.({_NAME})\.outputs\.({_NAME})$")


def evaluate(
    text: str, inputs: Mapping[str, str], github: Mapping[str, str], steps: Mapping
) -> str:
    """``text`` with each ``${{ expr }}`` replaced by its value, for the only forms the action
    uses: ``inputs.NAME``, ``github.NAME``, ``steps.ID.outputs.NAME``. A missing property is the
    empty string (GitHub: null, interpolated as ''); any other form fails the test."""

    def value(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        reference = _CONTEXT_REFERENCE.match(expression)
        if reference:
            context = inputs if reference.group(1) == "inputs" else github
            return str(context.get(reference.group(2), ""))
        output = _STEP_OUTPUT.match(expression)
        if output:
            return str(steps.get(output.group(1), {}).get(output.group(2), ""))
        raise AssertionError(f"expression form the simulated runner does not know: {expression!r}")

    return _EXPRESSION.sub(value, str(text))


def parse_output_file(text: str) -> dict[str, str]:
    """A ``GITHUB_OUTPUT`` file: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    outputs: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            block = []
            while lines[i] != delimiter:
                block.append(lines[i])
                i += 1
            i += 1
            outputs[name] = "\n".join(block)
        else:
            name, _, value = line.partition("=")
            outputs[name] = value
    return outputs


@dataclass
class StepRun:
    name: str
    id: str | None
    returncode: int
    stdout: str
    stderr: str
    duration_s: float = 0.0  # for reading a log, never asserted


@dataclass
class ActionRun:
    """What one run of the action did: the steps run (``uses`` steps as skipped), their
    outputs, the action's outputs, its exit code (0, or the first failing step's), and the job
    summary."""

    exit_code: int
    steps: list[StepRun]
    step_outputs: dict[str, dict[str, str]]
    outputs: dict[str, str]
    summary: str
    skipped_uses: list[str] = field(default_factory=list)

    def log(self) -> str:
        return "\n".join(
            f"--- {s.name} (exit {s.returncode}, {s.duration_s:.1f} s)\n{s.stdout}\n{s.stderr}"
            for s in self.steps
        )


def load_action() -> dict:
    return yaml.safe_load(ACTION.read_text())


def run_action(
    workspace: Path,
    inputs: Mapping[str, str],
    *,
    github: Mapping[str, str],
    environ: Mapping[str, str],
    runner_temp: Path,
    before_step: Mapping[str, Callable[[], None]] | None = None,
) -> ActionRun:
    """Run ``action.yml`` as a composite action in ``workspace``. ``inputs`` are the ``with:``
    values (defaults filled from the action); ``github`` is the github context; ``environ`` the
    job's environment; ``before_step`` maps a step id to a callback run just before it."""
    action = load_action()
    given = dict(inputs)
    unknown = set(given) - set(action["inputs"])
    assert not unknown, f"inputs the action does not declare: {unknown}"
    resolved: dict[str, str] = {}
    for name, spec in action["inputs"].items():
        if name in given:
            resolved[name] = str(given[name])
        else:
            resolved[name] = evaluate(str(spec.get("default", "")), {}, github, {})
    runner_temp.mkdir(parents=True, exist_ok=True)
    summary_file = runner_temp / f"summary-{time.monotonic_ns()}.md"
    summary_file.touch()
    env_file = runner_temp / "github_env"
    env_file.touch()
    steps_context: dict[str, dict[str, str]] = {}
    runs: list[StepRun] = []
    skipped: list[str] = []
    exit_code = 0
    for index, step in enumerate(action["runs"]["steps"]):
        if "uses" in step:
            for value in (step.get("with") or {}).values():
                evaluate(value, resolved, github, steps_context)  # known expression forms only
            skipped.append(step["uses"])
            continue
        step_id = step.get("id")
        if before_step and step_id in before_step:
            before_step[step_id]()
        output_file = runner_temp / f"output-{index}-{time.monotonic_ns()}"
        output_file.touch()
        script = runner_temp / f"step-{index}.sh"
        script.write_text(step["run"])
        step_env = {
            **environ,
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(summary_file),
            "GITHUB_ENV": str(env_file),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_ACTION_PATH": str(REPO_ROOT),
            "RUNNER_TEMP": str(runner_temp),
            **{
                name: evaluate(value, resolved, github, steps_context)
                for name, value in (step.get("env") or {}).items()
            },
        }
        started = time.monotonic()
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        runs.append(
            StepRun(
                step["name"],
                step_id,
                done.returncode,
                done.stdout,
                done.stderr,
                time.monotonic() - started,
            )
        )
        if step_id:
            steps_context[step_id] = parse_output_file(output_file.read_text())
        if done.returncode != 0:
            exit_code = done.returncode
            break
    outputs = {
        name: evaluate(spec["value"], resolved, github, steps_context)
        for name, spec in action["outputs"].items()
    }
    return ActionRun(exit_code, runs, steps_context, outputs, summary_file.read_text(), skipped)


# --------------------------------------------------------------------------------------------
# The scenario


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=_git_env(cwd)
    )
    return done.stdout.strip()


def _git_env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(home),
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
    }


def build_history(repo: GitRepo) -> dict[str, str]:
    """Deploy 1, a sibling change (#2), the culprit (#3: compute does three times the work),
    a README change (#4) = deploy 2, a typo fix (#5) = deploy 3; squash-merge titles."""
    shas = {}
    repo.commit(
        "Initial service",
        {"app/service.py": SERVICE, "README.md": "svc\n", "regbot.yml": CONFIG, ".gitignore": ""},
    )
    shas["deploy_1"] = repo.commit("Document the service (#1)", {"README.md": "svc: demo\n"})
    source = (repo.path / "app/service.py").read_text()
    shas["sibling"] = repo.commit(
        "Render with xor (#2)", {"app/service.py": source.replace("x ^ 1", "x ^ 3")}
    )
    source = (repo.path / "app/service.py").read_text()
    shas["culprit"] = repo.commit(
        "Use more compute rounds for stronger checksums (#3)",
        {"app/service.py": source.replace("n * ROUNDS", "n * ROUNDS * 3")},
    )
    shas["deploy_2"] = repo.commit("Update README (#4)", {"README.md": "svc: demo service\n"})
    shas["deploy_3"] = repo.commit("Typo (#5)", {"README.md": "svc: a demo service\n"})
    return shas


def write_profiles(folder: Path, seed: int = 7) -> None:
    """Folded stacks every 5 minutes from START_S to END_S: compute's share doubles at deploy 2."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    for t in range(START_S, END_S, STEP_S):
        stacks = {
            "main;handle (app/service.py:13);parse (app/service.py:2)": 300,
            "main;handle (app/service.py:13);compute (app/service.py:6)": 200
            if t < DEPLOY_2_AT
            else 400,
            "main;handle (app/service.py:13);render (app/service.py:10)": 150,
            "main;idle": 1000,
        }
        text = "".join(f"{s} {n + rng.randint(-15, 15)}\n" for s, n in stacks.items())
        (folder / f"{t}-web01.folded").write_text(text)


def seed_fake(fake: FakeGitHub, repo: GitRepo, shas: Mapping[str, str]) -> None:
    """The repository's history, its squash-merged pull requests and the three deployments."""
    for line in repo.git("log", "--reverse", "--format=%H %ct %s").splitlines():
        sha, when, title = line.split(" ", 2)
        fake.add_commit(sha, title, time_s=float(when))
        number = re.search(r"\(#(\d+)\)$", title)
        if number:
            fake.add_pull(
                int(number.group(1)),
                title.rsplit(" (#", 1)[0],
                sha,
                [sha],
                merged=True,
                merge_commit_sha=sha,
            )
    for name, at in (
        ("deploy_1", DEPLOY_1_AT),
        ("deploy_2", DEPLOY_2_AT),
        ("deploy_3", DEPLOY_3_AT),
    ):
        fake.add_deployment(shas[name], created_at=float(at))


@dataclass
class Scenario:
    workspace: Path
    origin: Path
    shas: dict[str, str]
    fake: FakeGitHub
    runs: dict[str, ActionRun]
    requests: dict[str, list]  # the fake's request log during each run
    branch_heads: dict[str, str]  # the state branch on origin after each run ("" when none)
    concurrent_commit: str


def remote_head(origin: Path, branch: str = STATE_BRANCH) -> str:
    listing = git(origin, "ls-remote", str(origin), f"refs/heads/{branch}")
    return listing.split()[0] if listing else ""


def state_on_branch(origin: Path, target: Path, rev: str = STATE_BRANCH) -> Path:
    """The state database stored on the state branch (at ``rev``), copied to ``target``."""
    blob = subprocess.run(
        ["git", "--git-dir", str(origin), "show", f"{rev}:{STATE_FILE}"],
        check=True,
        capture_output=True,
        env=_git_env(origin),
    ).stdout
    target.write_bytes(blob)
    return target


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    root = tmp_path_factory.mktemp("action")
    repo = GitRepo(root / "workspace")
    shas = build_history(repo)
    workspace = repo.path
    write_profiles(workspace / "profiles")
    origin = root / "origin.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(origin))
    repo.git("remote", "add", "origin", str(origin))
    repo.git("push", "-q", "origin", "main")
    reject_flag = root / "reject-next-push"
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(
        f'#!/bin/sh\nif [ -e "{reject_flag}" ]; then rm -f "{reject_flag}"; '
        'echo "rejected by the test" >&2; exit 1; fi\n'
    )
    hook.chmod(0o755)
    home = root / "home"
    home.mkdir()
    with FakeGitHub(REPOSITORY, token=TOKEN) as fake:
        seed_fake(fake, repo, shas)
        environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_API_URL": fake.api_url,
            "GITHUB_RUN_ID": "4242",
            "REGBOT_ACTION_PYTHON": sys.executable,  # the action's testing hook
            "REGBOT_GITHUB_RETRY_SCALE": "0",  # no sleeping between GitHub writes in tests
        }
        github = {
            "sha": shas["deploy_3"],
            "token": TOKEN,
            "action_path": str(REPO_ROOT),
            "repository": REPOSITORY,
            "workspace": str(workspace),
        }
        runs: dict[str, ActionRun] = {}
        requests: dict[str, list] = {}
        heads: dict[str, str] = {}
        concurrent: dict[str, str] = {}

        def push_concurrent_state() -> None:
            """Another run of the action pushes to the state branch after this one restored
            it: its state logs deploy 1 (a deploy this run never saw)."""
            other = root / "concurrent"
            git(root, "clone", "-q", "-b", STATE_BRANCH, str(origin), str(other))
            with open_state(other / STATE_FILE) as state:
                state.record_deploy(shas["deploy_1"], None, float(DEPLOY_1_AT), time.time())
            git(other, "commit", "-q", "-am", "regbot state from a concurrent run")
            git(other, "push", "-q", "origin", STATE_BRANCH)
            concurrent["commit"] = git(other, "rev-parse", "HEAD")

        def act(name: str, inputs: dict[str, str], **hooks: Callable[[], None]) -> None:
            shutil.rmtree(workspace / ".regbot", ignore_errors=True)  # an ephemeral runner
            fake.clear_log()
            runs[name] = run_action(
                workspace,
                inputs,
                github=github,
                environ=environ,
                runner_temp=root / "runner-temp" / name,
                before_step=hooks,
            )
            requests[name] = fake.requests
            heads[name] = remote_head(origin)

        deploy_2 = {
            "deploy-sha": shas["deploy_2"],
            "previous-sha": shas["deploy_1"],
            "deployed-at": str(DEPLOY_2_AT),
        }
        act("dry", {**deploy_2, "dry-run": "true"})
        act("deploy_2", deploy_2)
        act(
            "deploy_3",
            {"deploy-sha": shas["deploy_3"], "deployed-at": str(DEPLOY_3_AT)},
            persist=push_concurrent_state,
        )
        act("rerun_3", {"deploy-sha": shas["deploy_3"]}, persist=reject_flag.touch)
        act("unknown_sha", {"deploy-sha": "0" * 40, "deployed-at": str(DEPLOY_3_AT)})
        act("bad_input", {"deploy-sha": shas["deploy_3"], "dry-run": "maybe"})
        yield Scenario(
            workspace, origin, shas, fake, runs, requests, heads, concurrent.get("commit", "")
        )


def report_of(run: ActionRun) -> dict:
    path = run.outputs["report"]
    assert path, run.log()
    return json.loads(Path(path).read_text())


# --------------------------------------------------------------------------------------------
# action.yml's shape


def test_action_declares_the_inputs_outputs_and_composite_steps() -> None:
    action = load_action()
    inputs = action["inputs"]
    assert inputs["config"]["default"] == "regbot.yml"
    assert inputs["deploy-sha"]["default"] == "${{ github.sha }}"
    assert inputs["token"]["default"] == "${{ github.token }}"
    assert inputs["dry-run"]["default"] == "false"
    assert inputs["state-branch"]["default"] == STATE_BRANCH
    for optional in ("previous-sha", "deployed-at"):
        assert inputs[optional].get("required") is False and inputs[optional]["default"] == ""
    assert "python-version" in inputs
    assert {"report", "gate", "regressions"} <= set(action["outputs"])
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert [s["uses"] for s in steps if "uses" in s] == ["actions/setup-python@v6"]
    ids = [s.get("id") for s in steps if "run" in s]
    assert ids[:5] == ["install", "config", "restore", "run", "persist"]
    for step in steps:
        assert "if" not in step, "the simulated runner (and the exit-code flow) assume no `if:`"
        if "run" in step:
            assert step["shell"] == "bash", step["name"]
            # Inputs reach scripts through env: only (no script injection through ${{ }}).
            assert "${{" not in step["run"], step["name"]
    for name, spec in action["outputs"].items():
        step_id = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.[\w-]+ \}\}", spec["value"])
        assert step_id and step_id.group(1) in ids, name


def test_the_install_step_installs_regbot_from_the_actions_own_checkout() -> None:
    install = next(s for s in load_action()["runs"]["steps"] if s.get("id") == "install")
    assert install["env"]["REGBOT_ACTION_PATH"] == "${{ github.action_path }}"
    assert 'pip install --quiet --disable-pip-version-check "$REGBOT_ACTION_PATH"' in install["run"]
    assert "REGBOT_ACTION_PYTHON" in install["run"]  # the testing hook


def test_the_evaluator_refuses_expression_forms_it_does_not_know() -> None:
    assert evaluate("a ${{ inputs.x }} ${{ steps.s.outputs.y }}", {"x": "1"}, {}, {}) == "a 1 "
    with pytest.raises(AssertionError):
        evaluate("${{ inputs.x || 'y' }}", {}, {}, {})


# --------------------------------------------------------------------------------------------
# Running the action


def test_dry_run_writes_the_report_summary_and_outputs_and_pushes_no_state(scenario) -> None:
    run = scenario.runs["dry"]
    assert run.skipped_uses == ["actions/setup-python@v6"]
    assert run.exit_code == 0 == int(run.outputs["exit-code"]), run.log()
    report = report_of(run)
    assert report["deploy"]["sha"] == scenario.shas["deploy_2"]
    assert report["deploy"]["previous"] == scenario.shas["deploy_1"]
    assert report["deploy"]["dry_run"] is True
    assert int(run.outputs["regressions"]) == len(report["regressions"]) == 1
    assert report["regressions"][0]["series"] == "gcpu:compute (app/service.py)"
    assert run.outputs["gate"] in ("success", "failure", "neutral")
    assert run.outputs["state-commit"] == ""
    assert "state not saved" in run.summary
    assert scenario.branch_heads["dry"] == ""  # nothing pushed to origin
    writes = [r for r in scenario.requests["dry"] if r.method != "GET"]
    assert writes == []  # a dry run changes nothing on GitHub


def test_real_run_pushes_the_state_to_the_branch_on_origin(scenario, tmp_path: Path) -> None:
    run = scenario.runs["deploy_2"]
    assert run.exit_code == int(run.outputs["exit-code"]), run.log()
    assert run.step_outputs["restore"]["commit"] == ""  # the first run: no branch yet
    assert "does not exist yet" in run.steps[2].stdout
    head = scenario.branch_heads["deploy_2"]
    assert head and run.outputs["state-commit"] == head
    assert f"@ `{head[:12]}`" in run.summary
    # The branch holds the state file only, in one commit, with no parent.
    assert git(scenario.origin, "ls-tree", "-r", "--name-only", head) == STATE_FILE
    assert git(scenario.origin, "rev-list", "--count", head) == "1"
    assert scenario.shas["deploy_2"][:12] in git(scenario.origin, "log", "-1", "--format=%s", head)
    with open_state(state_on_branch(scenario.origin, tmp_path / "state.db", head)) as state:
        assert state.deploy_time(scenario.shas["deploy_2"]) == DEPLOY_2_AT
    # The workspace's own branch, index and files are as they were.
    assert git(scenario.workspace, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(scenario.workspace, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_later_run_restores_the_deploy_log_so_previous_sha_can_be_omitted(scenario) -> None:
    run = scenario.runs["deploy_3"]
    assert run.exit_code == int(run.outputs["exit-code"]), run.log()
    report = report_of(run)
    assert report["deploy"]["sha"] == scenario.shas["deploy_3"]
    assert report["deploy"]["previous"] == scenario.shas["deploy_2"]  # from the restored log
    restore = run.step_outputs["restore"]
    assert restore["commit"] == scenario.branch_heads["deploy_2"]


def test_a_concurrent_push_is_merged_not_overwritten(scenario, tmp_path: Path) -> None:
    """The branch moved between restore and persist: the run merges the other run's state into
    its own and pushes on top of the other commit (a fast-forward, never forced)."""
    head = scenario.branch_heads["deploy_3"]
    concurrent = scenario.concurrent_commit
    assert concurrent and head != concurrent
    assert git(scenario.origin, "rev-parse", f"{head}^") == concurrent
    assert git(scenario.origin, "rev-list", "--count", head) == "3"
    with open_state(state_on_branch(scenario.origin, tmp_path / "state.db", head)) as state:
        assert state.deploy_time(scenario.shas["deploy_1"]) == DEPLOY_1_AT  # theirs
        assert state.deploy_time(scenario.shas["deploy_2"]) == DEPLOY_2_AT  # both
        assert state.deploy_time(scenario.shas["deploy_3"]) == DEPLOY_3_AT  # ours
        runs = state.reports()
    assert [r.deploy.sha for r in runs if r.deploy is not None] == [
        scenario.shas["deploy_2"],
        scenario.shas["deploy_3"],
    ]
    assert "merging its state" in scenario.runs["deploy_3"].log()


def test_a_rerun_needs_only_the_deploy_sha(scenario, tmp_path: Path) -> None:
    run = scenario.runs["rerun_3"]
    assert run.exit_code == int(run.outputs["exit-code"]), run.log()
    report = report_of(run)
    assert report["deploy"]["deployed_at"] == DEPLOY_3_AT  # from the deploy log
    assert report["deploy"]["previous"] == scenario.shas["deploy_2"]
    head = scenario.branch_heads["rerun_3"]
    assert git(scenario.origin, "rev-parse", f"{head}^") == scenario.branch_heads["deploy_3"]
    # origin refused the first push (the test's pre-receive hook): pushed on the next attempt.
    persist = next(s for s in run.steps if s.id == "persist")
    assert "rejected (attempt 1 of 5)" in persist.stdout
    assert run.outputs["state-commit"] == head
    with open_state(state_on_branch(scenario.origin, tmp_path / "state.db", head)) as state:
        assert len(state.reports()) == 3


def test_bad_input_fails_the_action_with_exit_code_2_and_pushes_nothing(scenario) -> None:
    unknown = scenario.runs["unknown_sha"]
    assert unknown.exit_code == 2 and unknown.outputs["exit-code"] == "2", unknown.log()
    assert unknown.outputs["report"] == "" and unknown.outputs["gate"] == ""
    assert unknown.steps[-1].name == "Gate"  # the state step ran and found nothing to save
    assert "nothing to push" in unknown.steps[-2].stdout
    assert scenario.branch_heads["unknown_sha"] == scenario.branch_heads["rerun_3"]
    # regbot's one-line message, as an annotation, after the stop-commands block ended.
    run_step = next(s for s in unknown.steps if s.id == "run")
    stop = re.search(r"^::stop-commands::(\S+)$", run_step.stdout, re.M)
    assert stop, run_step.stdout
    after = run_step.stdout.split(f"::{stop.group(1)}::", 1)[1]
    assert re.search(r"^::error title=regbot::regbot: .*expected a commit", after, re.M), after
    assert "regbot stopped with exit code 2" in unknown.summary

    bad = scenario.runs["bad_input"]
    assert bad.exit_code == 2
    assert bad.steps[-1].id == "run"  # stopped before regbot ran
    assert "dry-run: expected true or false, found 'maybe'" in bad.steps[-1].stdout
    assert scenario.branch_heads["bad_input"] == scenario.branch_heads["rerun_3"]


def test_the_token_reaches_regbot_under_the_configured_name(scenario) -> None:
    """The `token` input (default: github.token) is exported as github.token_env names it; the
    job environment has no token of its own."""
    for run in scenario.runs.values():
        assert run.step_outputs["config"]["token-env"] == TOKEN_ENV
    for name, requests in scenario.requests.items():
        assert all(r.status != 401 for r in requests), name


def test_regbot_called_github_with_the_token(scenario) -> None:
    requests = scenario.requests["deploy_2"]
    assert requests and all(r.status < 400 for r in requests)


# --------------------------------------------------------------------------------------------
# Publishing (PR comments, the gate, the summary's content): checked once bot/github/publish.py exists


def test_the_summary_shows_the_funnel_and_the_regressions(scenario) -> None:
    for name in ("dry", "deploy_2"):
        summary = scenario.runs[name].summary
        assert "### Funnel" in summary, name
        assert "gcpu:compute" in summary, name


def test_the_real_run_comments_on_the_culprits_pull_request_and_fails_the_gate(scenario) -> None:
    run = scenario.runs["deploy_2"]
    report = report_of(run)
    regression = report["regressions"][0]
    assert regression["confidence"] == "high"
    assert regression["candidates"][0]["commit"] == scenario.shas["culprit"]
    # The default gate policy fails on a reported regression: exit 1, and the
    # action's last step fails the job — after the state was saved.
    assert run.outputs["gate"] == "failure"
    assert run.exit_code == 1 and run.outputs["exit-code"] == "1"
    assert run.outputs["state-commit"] == scenario.branch_heads["deploy_2"]
    assert re.search(r"^::error title=regbot gate::regbot: ", run.log(), re.M)
    comments = scenario.fake.comments(3)
    assert len(comments) == 1
    assert f"regbot explain {regression['id']}" in comments[0]["body"]
    assert all(not scenario.fake.comments(n) for n in (1, 2, 4, 5))
    gates = [
        g
        for g in scenario.fake.check_runs
        if g["name"] == GATE_NAME and g["head_sha"] == scenario.shas["deploy_2"]
    ]
    assert [g["conclusion"] for g in gates] == ["failure"]


def test_runs_without_a_regression_in_their_window_pass_the_gate(scenario) -> None:
    for name in ("deploy_3", "rerun_3"):
        run = scenario.runs[name]
        assert run.outputs["gate"] == "success", run.log()
        assert run.exit_code == 0
    gates = [g for g in scenario.fake.check_runs if g["head_sha"] == scenario.shas["deploy_3"]]
    assert [g["conclusion"] for g in gates] == ["success", "success"]
    assert len(scenario.fake.comments()) == 1  # no new comment, none duplicated


# --------------------------------------------------------------------------------------------
# The example workflows


def load_workflow(name: str) -> tuple[dict, str]:
    text = (WORKFLOWS / name).read_text()
    workflow = yaml.safe_load(text)
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads `on:` as true
    return workflow, text


LEAST_PRIVILEGE = {
    "contents": "write",
    "pull-requests": "write",
    "checks": "write",
    "statuses": "write",
    "deployments": "read",
}


@pytest.mark.parametrize("name", ["regbot-post-deploy.yml", "regbot-rerun.yml"])
def test_workflows_ask_for_least_privilege_with_a_reason_per_permission(name: str) -> None:
    workflow, text = load_workflow(name)
    assert workflow["permissions"] == {}
    job = workflow["jobs"]["regbot"]
    assert job["permissions"] == LEAST_PRIVILEGE
    for permission in LEAST_PRIVILEGE:
        line = next(x for x in text.splitlines() if x.strip().startswith(f"{permission}:"))
        assert re.search(r"#\s*\S.{10,}", line), f"no reason given for {permission}"
    steps = job["steps"]
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    assert any(s.get("uses") == "./" for s in steps)
    for step in steps:
        if "run" in step:
            assert "${{" not in step["run"], step["name"]  # event data only through env:


def test_post_deploy_runs_on_successful_deployment_statuses_with_the_deployments_sha() -> None:
    workflow, _ = load_workflow("regbot-post-deploy.yml")
    assert "deployment_status" in workflow["on"]
    job = workflow["jobs"]["regbot"]
    assert job["if"] == "github.event.deployment_status.state == 'success'"
    regbot = next(s for s in job["steps"] if s.get("uses") == "./")
    assert regbot["with"]["deploy-sha"] == "${{ github.event.deployment.sha }}"
    assert regbot["with"]["deployed-at"] == "${{ github.event.deployment_status.created_at }}"
    assert regbot["with"]["previous-sha"] == "${{ steps.previous.outputs.sha }}"
    assert "concurrency" not in workflow and "concurrency" not in job


def test_rerun_is_scheduled_and_can_be_started_by_hand() -> None:
    workflow, _ = load_workflow("regbot-rerun.yml")
    assert workflow["on"]["schedule"][0]["cron"].split()[1] == "*/2"
    assert {"deploy-sha", "deployed-at", "previous-sha", "dry-run"} <= set(
        workflow["on"]["workflow_dispatch"]["inputs"]
    )
    assert workflow["concurrency"]["cancel-in-progress"] is False
