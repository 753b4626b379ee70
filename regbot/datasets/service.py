"""A seeded, self-contained scenario of a Python service deployed several times, for `regbot demo`
and the attribution benchmark (``build_scenario(directory, seed)``): a real git repository,
py-spy-style folded profiles, metric series and a ``regbot.yml``, with one planted regression,
decoy commits and planted false alarms; ``Scenario`` holds the truth behind it.

Built by the ``service_*`` modules: ``service_model`` (the model and constants),
``service_graph`` (the call graph), ``service_source`` (the Python source),
``service_stacks`` (costs and folded stacks), ``service_edits`` and ``service_messages`` (what
commits do and say), ``service_planner`` (the last deploy's culprit and decoys),
``service_history`` (pushes, squashes and merges), ``service_repository`` (git) and
``service_observations`` (profiles and metrics).

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from regbot.bot.state import open_state
from regbot.datasets.service_graph import generate_service
from regbot.datasets.service_history import (
    History,
    PullRequests,
    commit_count,
    commit_times,
    group_events,
)
from regbot.datasets.service_messages import Messages
from regbot.datasets.service_model import (
    ANALYSIS_S,
    BUCKET_S,
    CALLER_CALLS_MORE_SHARE,
    DAY_S,
    EXTENDED_S,
    FIRST_DAY_S,
    HISTORICAL_S,
    HOST,
    MAX_STACKS,
    MIN_FUNCTIONS,
    REGRESSED_FUNCTION_SHARE,
    SAME_FUNCTION_SHARE,
    SCENARIO_KINDS,
    ScenarioKind,
    State,
)
from regbot.datasets.service_observations import write_observations
from regbot.datasets.service_planner import LastDeploy, Planner, plan_last_deploy
from regbot.datasets.service_repository import NEEDS_GIT, write_repository
from regbot.datasets.service_stacks import costs_of
from regbot.errors import InputError
from regbot.git_repository import require_git

__all__ = [
    "ANALYSIS_S",
    "BUCKET_S",
    "CALLER_CALLS_MORE_SHARE",
    "EXTENDED_S",
    "FIRST_DAY_S",
    "HISTORICAL_S",
    "HOST",
    "MAX_STACKS",
    "MIN_FUNCTIONS",
    "REGRESSED_FUNCTION_SHARE",
    "SAME_FUNCTION_SHARE",
    "SCENARIO_KINDS",
    "THRESHOLD",
    "Scenario",
    "ScenarioKind",
    "build_scenario",
]

THRESHOLD = 0.002  # absolute gCPU (0.2 points): the plants rise by 0.4-3 points


@dataclass
class Scenario:
    """What ``build_scenario`` made, and the truth behind it.

    ``deploys`` are ``(sha, time_s)`` oldest first; the last one holds the culprit.
    ``culprit_function`` is the regressed subroutine's gCPU series id
    (``gcpu:qualname (app/module.py)``); ``decoys`` maps a decoy kind (see
    docs/design/datasets_service.md) to its commit; ``planted_false_alarms`` are series ids
    that must not be reported. ``details`` holds the numbers behind the plant (factor, gCPU
    rise, whether it is ambiguous, the culprit's position among the deploy's commits, ...).
    """

    root: Path
    config_path: Path
    repo_path: Path
    deploys: list[tuple[str, float]]
    culprit_sha: str
    culprit_function: str
    decoys: dict[str, str]
    planted_false_alarms: list[str]
    kind: ScenarioKind
    seed: int = 0
    profiles_dir: Path = Path()
    series_dir: Path = Path()
    state_path: Path = Path()
    windows_s: tuple[float, float, float] = (HISTORICAL_S, ANALYSIS_S, EXTENDED_S)
    details: dict[str, object] = field(default_factory=dict)

    @property
    def deploy_sha(self) -> str:
        return self.deploys[-1][0]

    @property
    def previous_sha(self) -> str:
        return self.deploys[-2][0]

    @property
    def deployed_at_s(self) -> float:
        return self.deploys[-1][1]

    @property
    def window_s(self) -> tuple[float, float]:
        """The last deploy's run windows, historical start to extended end."""
        historical, analysis, extended = self.windows_s
        return self.deployed_at_s - historical, self.deployed_at_s + analysis + extended

    def run_arguments(self, output: Path | None = None) -> list[str]:
        """`regbot run --dry-run` arguments for the last deploy (for ``regbot.bot.cli.main``)."""
        arguments = [
            "run",
            "-c",
            str(self.config_path),
            "--deploy",
            self.deploy_sha,
            "--previous",
            self.previous_sha,
            "--deployed-at",
            str(int(self.deployed_at_s)),
            "--dry-run",
        ]
        return arguments + (["-o", str(output)] if output is not None else [])


def _config_text(seed: int, threshold: float) -> str:
    def duration(seconds: int) -> str:
        return f"{seconds // 3600}h" if seconds % DAY_S else f"{seconds // DAY_S}d"

    return (
        f"# regbot scenario, seed {seed}: a service, its history and its profiles.\n"
        "repository:\n"
        "  path: repo\n"
        "sources:\n"
        "  profiles: [profiles/]\n"
        "  series: [metrics/]\n"
        "profiles:\n"
        f"  bucket: {BUCKET_S}s\n"
        "workloads:\n"
        "  default:\n"
        f"    threshold: {{absolute: {threshold}}}\n"
        f"    windows: {{historical: {duration(HISTORICAL_S)}, analysis: {duration(ANALYSIS_S)},"
        f" extended: {duration(EXTENDED_S)}}}\n"
        "attribution:\n"
        "  weights: {gcpu_attribution: 0.5, text_similarity: 0.25, correlation: 0.25}\n"
        "  confidence_floor: 0.5\n"
        "  top1_margin: 0.1\n"
        "  max_candidates: 3\n"
        "  scope: informative\n"
        "dedup:\n"
        "  method: fbdetect\n"
        "  seed: 0\n"
        "state: state/regbot.db\n"
    )


@dataclass
class _Written:
    """The repository as written: mark -> sha, each deploy's mark and state, the roles' marks,
    the last deploy's non-merge marks in creation order."""

    shas: dict[int, str]
    deploy_marks: list[int]
    snapshots: list[State]
    roles: dict[str, int]
    last_order: list[int]


def _write_history(
    rng: np.random.Generator,
    repo: Path,
    messages: Messages,
    planner: Planner,
    deploy_times: list[int],
    last: LastDeploy,
    commits: tuple[int, int],
) -> _Written:
    """The initial import, then each deploy's changes as direct pushes, squash merges and merged
    PRs, written with ``git fast-import``."""
    history = History(messages)
    prs = PullRequests(int(rng.integers(10, 400)))
    initial_s = deploy_times[0] - int(rng.integers(2, 6)) * DAY_S
    history.initial(planner.state, initial_s)
    deploy_marks: list[int] = []
    snapshots: list[State] = []
    first_of_last = 0
    for k, deploy_s in enumerate(deploy_times):
        if k == 0:
            changes = [planner.filler(set()) for _ in range(int(rng.integers(1, 4)))]
        elif k < len(deploy_times) - 1:
            changes = [
                planner.filler(set()) for _ in range(int(rng.integers(commits[0], commits[1] + 1)))
            ]
        else:
            changes = last.changes
        events = group_events(rng, changes, prs)
        start = initial_s if k == 0 else deploy_times[k - 1]
        times = commit_times(rng, commit_count(events), start, deploy_s)
        first_of_last = len(history.order)
        for event in events:
            history.event(event, times)
        deploy_marks.append(history.main_mark)
        assert history.main_state is not None
        snapshots.append(history.main_state)
    shas = write_repository(repo, history.commits)
    return _Written(
        shas, deploy_marks, snapshots, dict(history.roles), history.order[first_of_last:]
    )


def _log_earlier_deploys(state_path: Path, deploys: list[tuple[str, float]]) -> None:
    """The deploy log of the deploys before the last, as `regbot run` after each of them would
    have left it (the last one is logged by the run that judges it)."""
    with open_state(state_path) as state:
        previous: str | None = None
        for sha, at in deploys[:-1]:
            state.record_deploy(sha, previous, at, at)
            previous = sha


def build_scenario(
    directory: Path,
    seed: int,
    *,
    deploys: int = 3,
    commits_per_deploy: tuple[int, int] = (8, 14),
    kind: ScenarioKind | None = None,
    same_function: bool | None = None,
) -> Scenario:
    """Build the scenario of ``seed`` in ``directory`` (absent or empty); see
    docs/design/datasets_service.md. ``commits_per_deploy`` bounds the non-merge commits of
    each deploy after the first. ``kind`` and ``same_function`` force what the seed would
    otherwise draw (the culprit's kind; whether a second commit touches the culprit's
    function); the rest of the scenario is drawn as without them. The same arguments give the
    same files and commit shas. Raises InputError for bad arguments, a directory that is not
    empty, or no git on PATH."""
    directory = Path(directory)
    if deploys < 2:
        raise InputError("deploys", "at least 2 (the last deploy and the one before it)", deploys)
    low, high = commits_per_deploy
    if not 1 <= low <= high:
        raise InputError(
            "commits_per_deploy", "(low, high) with 1 <= low <= high", commits_per_deploy
        )
    if kind is not None and kind not in SCENARIO_KINDS:
        raise InputError("kind", "one of " + ", ".join(SCENARIO_KINDS), kind)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise InputError(str(directory), "an empty or absent directory for the scenario")
    require_git(NEEDS_GIT)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 20261122]))
    messages = Messages(rng)
    state = generate_service(rng)

    # Timeline: the last deploy at a random time of day, the others evenly before it.
    last_s = (
        FIRST_DAY_S
        + int(rng.integers(0, 60)) * DAY_S
        + HISTORICAL_S
        + int(rng.integers(8 * 6, 18 * 6)) * BUCKET_S
    )
    first_s = last_s - HISTORICAL_S
    step = HISTORICAL_S / (deploys - 1)
    deploy_times = [first_s + int(round(k * step / BUCKET_S)) * BUCKET_S for k in range(deploys)]

    busy = float(rng.uniform(0.35, 0.55))
    kappa = busy / costs_of(state).total
    planner = Planner(rng, state, messages, kappa)
    last = plan_last_deploy(rng, planner, kind, same_function, (low, high))
    written = _write_history(
        rng, directory / "repo", messages, planner, deploy_times, last, (low, high)
    )
    false_alarms = write_observations(rng, directory, state, written.snapshots, deploy_times, kappa)
    if last.shifted is not None:
        false_alarms.insert(0, f"gcpu:{state.functions[last.shifted].subroutine}")
    (directory / "state").mkdir()
    config = directory / "regbot.yml"
    config.write_text(_config_text(seed, THRESHOLD))
    _log_earlier_deploys(
        directory / "state" / "regbot.db",
        [
            (written.shas[m], float(t))
            for m, t in zip(written.deploy_marks, deploy_times, strict=True)
        ],
    )

    culprit_mark = written.roles["culprit"]
    details = dict(last.details)
    details.update(
        {
            "ambiguous": last.ambiguous,
            "culprit_position": written.last_order.index(culprit_mark),
            "deploy_commits": len(written.last_order),
            "culprit_title": next(c.title for c in last.changes if c.role == "culprit"),
            "functions": len(state.functions) + 2,  # with main and serve_forever
            "modules": len(state.modules) + 1,  # with main
            "busy_share": busy,
        }
    )
    if last.shift_rise is not None:
        details["cost_shift_rise"] = last.shift_rise
    shas = written.shas
    return Scenario(
        root=directory,
        config_path=config,
        repo_path=directory / "repo",
        deploys=[
            (shas[m], float(t)) for m, t in zip(written.deploy_marks, deploy_times, strict=True)
        ],
        culprit_sha=shas[culprit_mark],
        culprit_function=f"gcpu:{state.functions[last.target].subroutine}",
        decoys={
            role: shas[mark]
            for role, mark in written.roles.items()
            if role not in ("culprit", "filler")
        },
        planted_false_alarms=false_alarms,
        kind=last.kind,
        seed=seed,
        profiles_dir=directory / "profiles",
        series_dir=directory / "metrics",
        state_path=directory / "state" / "regbot.db",
        details=details,
    )
