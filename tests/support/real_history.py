"""regbot's scenarios on the real histories of two real libraries (sqlparse, Python-Markdown),
profiled with real py-spy recordings: the fixture in ``tests/fixtures/real_history`` (made by its
``record.py``; see its README) laid out as a deploy that ``regbot run --dry-run`` can judge.

``build_real_scenario(library, name, directory, seed)`` makes in ``directory``::

    repo/          a clone of the library's history bundle, the scenario's branch checked out
    profiles/      <epoch>-web01.folded, one per 10-minute bucket (SPEC §3 names): from the
                   previous deploy (the last release, t0) to 10 hours after the regression
                   deploy (3 days after t0, at a seeded time of day on a bucket start); each
                   bucket is one of the 24 real recordings of the code state running then,
                   drawn (seeded, with replacement)
    state/         where `regbot run` keeps its state (its deploy log: the last release, t0)
    regbot.yml     the repository, the profiles, the bucket width and the windows — nothing
                   else: attribution, dedup, thresholds and the gate are regbot's defaults

and returns a ``RealScenario`` with the truth (culprit commits, decoys by kind, the regressed
series) and the ``regbot run`` arguments for the deploy.
"""

from __future__ import annotations

import functools
import io
import json
import lzma
import os
import subprocess
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from service_repo import run_argv

from regbot.bot.state import open_state

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "real_history"
LIBRARIES = ("sqlparse", "markdown")
BUCKET_S = 600
HISTORICAL_S = 3 * 86_400
ANALYSIS_S = 4 * 3_600
EXTENDED_S = 6 * 3_600
HOST = "web01"
FIRST_DAY_S = 1_790_294_400  # 2026-09-25T00:00:00Z; each seed starts a few days later
_DAY_S = 86_400
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}


@dataclass(frozen=True)
class RealScenario:
    """One built scenario and its truth.

    ``culprits``: the commits that caused the regression (two for ``two_culprits``; for
    ``caller_calls_more`` the caller's commit). ``decoys``: decoy kind (docstring_only,
    local_rename, speed_up, caller_edit, names_function) → sha. ``series``: the regressed
    series' ids as regbot names them (``gcpu:<qualname> (<path>)``; for ``caller_calls_more``
    the unchanged callee's). ``commits``: the deploy's commits oldest first, each with
    ``sha``, ``title`` and ``role``; ``touches``: sha → the frames (``qualname (path)``) whose
    code the commit changes."""

    library: str
    name: str
    kind: str
    seed: int
    root: Path
    config_path: Path
    repo_path: Path
    profiles_dir: Path
    state_path: Path
    previous_sha: str
    deploy_sha: str
    deployed_at_s: int
    now_s: int
    culprits: tuple[str, ...]
    decoys: dict[str, str]
    fillers: tuple[str, ...]
    series: tuple[str, ...]
    commits: tuple[dict[str, str], ...]
    touches: dict[str, tuple[str, ...]] = field(default_factory=dict)
    measured: dict[str, object] = field(default_factory=dict)

    def role(self, sha: str) -> str:
        """What a commit of the deploy is: culprit, a decoy kind, filler (or "other")."""
        return next((c["role"] for c in self.commits if c["sha"] == sha), "other")

    def run_arguments(self, output: Path | None = None) -> list[str]:
        """`regbot run --dry-run` arguments for the regression deploy (for
        ``regbot.bot.cli.main``): the deploy, the previous deploy, the deploy time and, as
        ``--now``, the end of the extended window (the last profile bucket's end)."""
        return run_argv(
            self.config_path,
            "--now",
            str(self.now_s),
            "--dry-run",
            deploy=self.deploy_sha,
            previous=self.previous_sha,
            deployed_at=self.deployed_at_s,
            output=output,
        )


@functools.cache
def fixture(library: str) -> dict:
    """The library's ``scenarios.json``."""
    if library not in LIBRARIES:
        raise ValueError(f"unknown library {library!r}; expected one of {', '.join(LIBRARIES)}")
    return json.loads((FIXTURE / library / "scenarios.json").read_text(encoding="utf-8"))


def scenario_names(library: str | None = None) -> list[tuple[str, str]]:
    """(library, scenario name) of every real scenario, or of one library's."""
    libraries = (library,) if library else LIBRARIES
    return [(lib, s["name"]) for lib in libraries for s in fixture(lib)["scenarios"]]


@functools.cache
def recordings(library: str, state: str) -> tuple[bytes, ...]:
    """The raw folded py-spy recordings of one code state, in file-name order."""
    data = lzma.decompress((FIXTURE / library / "profiles" / f"{state}.tar.xz").read_bytes())
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        members = sorted((m for m in archive.getmembers() if m.isfile()), key=lambda m: m.name)
        return tuple(archive.extractfile(m).read() for m in members)  # type: ignore[union-attr]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **_GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def clone(library: str, branch: str, target: Path) -> Path:
    """Clone the library's history bundle into ``target`` with ``branch`` checked out."""
    bundle = FIXTURE / library / "history.bundle"
    target.parent.mkdir(parents=True, exist_ok=True)
    git(target.parent, "clone", "-q", "--branch", branch, str(bundle), str(target))
    return target


def _config_text(library: str, name: str) -> str:
    return (
        f"# regbot on the real history of {library}: scenario {name}.\n"
        "repository:\n"
        "  path: repo\n"
        "sources:\n"
        "  profiles: [profiles/]\n"
        "profiles:\n"
        f"  bucket: {BUCKET_S}s\n"
        "workloads:\n"
        "  default:\n"
        "    windows: {historical: 3d, analysis: 4h, extended: 6h}\n"
        "state: state/regbot.db\n"
    )


# Commits that leave the workload's code behaviour as the release had it: a deploy of only
# these runs the release's code, so its recordings are the release's.
NEUTRAL_ROLES = frozenset({"filler", "names_function", "docstring_only", "local_rename"})


def clean_deploy(spec: dict) -> list[dict[str, str]]:
    """The scenario's leading commits that change no behaviour (``NEUTRAL_ROLES``): a clean
    deploy of them runs the release's code."""
    prefix = []
    for commit in spec["commits"]:
        if commit["role"] not in NEUTRAL_ROLES:
            break
        prefix.append(commit)
    return prefix


def build_real_scenario(
    library: str, name: str, directory: Path, seed: int = 0, clean: bool = False
) -> RealScenario:
    """Build scenario ``name`` of ``library`` in ``directory`` (absent or empty); see the
    module docstring. The same arguments give the same files.

    ``clean``: the deploy is only the scenario's leading neutral commits (``clean_deploy``:
    docstring, rename, README and cold-code edits), so both sides run the release's code and
    every bucket is one of the release's recordings: a deploy with nothing to find, whose
    gate must pass. Its kind is ``clean``, with no culprit and no regressed series."""
    directory = Path(directory)
    if directory.exists() and any(directory.iterdir()):
        raise ValueError(f"{directory} is not empty")
    spec = next((s for s in fixture(library)["scenarios"] if s["name"] == name), None)
    if spec is None:
        raise ValueError(f"no scenario {name!r} for {library}")
    rng = np.random.default_rng([seed, zlib.crc32(f"{library}/{name}".encode())])
    deployed_at = (
        FIRST_DAY_S
        + int(rng.integers(0, 30)) * _DAY_S
        + HISTORICAL_S
        + int(rng.integers(8 * 6, 18 * 6)) * BUCKET_S
    )
    previous_at = deployed_at - HISTORICAL_S
    end = deployed_at + ANALYSIS_S + EXTENDED_S

    repo = clone(library, spec["branch"], directory / "repo")
    profiles = directory / "profiles"
    profiles.mkdir(parents=True)
    before = recordings(library, spec["states"]["before"])
    after = before if clean else recordings(library, spec["states"]["after"])
    if clean:
        commits = clean_deploy(spec)
        if not commits:
            raise ValueError(f"scenario {name!r} of {library} has no clean deploy")
        spec = {
            **spec,
            "kind": "clean",
            "deploy": commits[-1]["sha"],
            "culprits": [],
            "decoys": {k: v for k, v in spec["decoys"].items() if k in NEUTRAL_ROLES},
            "fillers": [c["sha"] for c in commits if c["role"] == "filler"],
            "series": [],
            "commits": commits,
            "touches": {c["sha"]: spec["touches"].get(c["sha"], []) for c in commits},
            "measured": {},
        }
    for at in range(previous_at, end, BUCKET_S):
        pool = before if at < deployed_at else after
        (profiles / f"{at}-{HOST}.folded").write_bytes(pool[int(rng.integers(0, len(pool)))])
    (directory / "state").mkdir()
    with open_state(directory / "state" / "regbot.db") as state:
        state.record_deploy(spec["base"], None, previous_at, previous_at)  # the last release's run
    config = directory / "regbot.yml"
    config.write_text(_config_text(library, name), encoding="utf-8")
    return RealScenario(
        library=library,
        name=name,
        kind=spec["kind"],
        seed=seed,
        root=directory,
        config_path=config,
        repo_path=repo,
        profiles_dir=profiles,
        state_path=directory / "state" / "regbot.db",
        previous_sha=spec["base"],
        deploy_sha=spec["deploy"],
        deployed_at_s=deployed_at,
        now_s=end,
        culprits=tuple(spec["culprits"]),
        decoys=dict(spec["decoys"]),
        fillers=tuple(spec["fillers"]),
        series=tuple(spec["series"]),
        commits=tuple(spec["commits"]),
        touches={sha: tuple(frames) for sha, frames in spec["touches"].items()},
        measured=dict(spec.get("measured", {})),
    )
