"""End to end on a real program profiled by a real profiler: a small Python service in a real git
repository (open loop: a fixed request rate, idle between requests, recorded with idle samples,
so a slower function raises the service's CPU as in production), recorded by py-spy at two
deploys; `regbot run` must find the function that got
slower and name the commit that did it, above a decoy that touched the function calling it and
says "compute" in its title, and a decoy that touched a sibling on the same stacks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from git_repo import GitRepo
from service_repo import COMPUTE_ROUNDS, run_argv, service_source, write_regbot_yml

from regbot.bot.cli import main

PY_SPY = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
RECORD_S = 14
DEPLOY_1_AT = 1_800_000_000
DEPLOY_2_AT = DEPLOY_1_AT + RECORD_S

LOOP = """\
def main(seconds):
    # Open loop: a fixed request rate, idle in between (a slower request costs CPU, not rate).
    start = time.monotonic()
    tick = 0
    while tick * TICK_S < seconds:
        for i in range(REQUESTS_PER_TICK):
            handle_request(i)
        tick += 1
        time.sleep(max(0.0, start + tick * TICK_S - time.monotonic()))
"""
SERVICE = service_source(
    compute=COMPUTE_ROUNDS,
    head=["import sys\nimport time\n"],
    tail=[
        LOOP,
        "TICK_S = 0.02\nREQUESTS_PER_TICK = 10\n",
        'ROUNDS = 1\n\nif __name__ == "__main__":\n    main(float(sys.argv[1]))\n',
    ],
)


def build_history(repo: GitRepo) -> dict[str, str]:
    """Deploy 1 after three commits, deploy 2 after a PR merge and squashed PRs: the culprit
    makes compute do three times the work; decoys touch handle_request (compute's only caller)
    and render (a sibling), and a README."""
    shas = {}
    repo.commit("Initial service", {"app/service.py": SERVICE, "README.md": "svc\n"})
    repo.commit(
        "Add request loop timing (#1)",
        {
            "app/service.py": SERVICE.replace(
                "    start = time.monotonic()", "    start = time.monotonic()  # wall clock"
            )
        },
    )
    shas["deploy_1"] = repo.commit("Document the service (#2)", {"README.md": "svc: demo\n"})
    current = (repo.path / "app/service.py").read_text()
    decoy_caller = current.replace(
        "    b = compute(3000)\n",
        "    # compute the checksum of the parsed payload\n    b = compute(3000)\n",
    )
    shas["merge"] = repo.merge_pull_request(
        7,
        "tidy-handler",
        [("Explain the compute step in handle_request", {"app/service.py": decoy_caller})],
    )
    shas["decoy_caller"] = repo.git("rev-parse", "HEAD^2")
    repo.replace("app/service.py", "        s += i ^ x\n", "        s += x ^ i\n")
    shas["decoy_sibling"] = repo.commit("Render: use xor folding for the response (#8)")
    repo.replace("app/service.py", "for i in range(n * ROUNDS):", "for i in range(n * ROUNDS * 3):")
    shas["culprit"] = repo.commit("Use more rounds for stronger checksums (#9)")
    shas["deploy_2"] = repo.commit("Update README (#10)", {"README.md": "svc: demo service\n"})
    return shas


RUN_SERVICE = (
    "import runpy, sys; sys.argv = ['service', sys.argv[1]];"
    " runpy.run_path('app/service.py', run_name='__main__')"
)


def record_both(repo: GitRepo, shas: dict[str, str], profiles: Path) -> None:
    """Both deploys recorded one after the other, each from its own worktree; the service runs
    by its relative path, so both write `app/service.py` as a deployed service always writes
    the same path. One service and one py-spy at a time leave a core each on a two-core
    machine: two at once overload it, and py-spy's wall-clock samples of a descheduled service
    repeat one line in bursts, far noisier than their counts suggest."""
    for name, at in (("deploy_1", DEPLOY_1_AT), ("deploy_2", DEPLOY_2_AT)):
        tree = repo.path.parent / name
        repo.git("worktree", "add", "-q", "--detach", str(tree), shas[name])
        out = profiles / f"{at}-web01.json"  # py-spy's chrometrace has offsets only
        command = [
            PY_SPY,
            "record",
            "--idle",
            "-r",
            "250",
            "-f",
            "chrometrace",
            "-o",
            str(out),
            "--",
            sys.executable,
            "-c",
            RUN_SERVICE,
            str(RECORD_S),
        ]
        recorded = subprocess.run(
            command,
            cwd=tree,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=RECORD_S * 6,
            check=False,
        )
        assert recorded.returncode == 0, recorded.stderr.decode()


def carrying(report: dict, series: str) -> dict | None:
    """The reported regression that carries ``series``: its own entry, or the representative of
    the dedup group it joined (a cascade's representative may be the caller whose rise is the
    slower function's; SOMDedup chooses by importance, and attribution must still name the
    culprit there)."""
    for entry in report["regressions"]:
        if entry["series"] == series:
            return entry
    ids = {e["id"] for e in report["filtered"] if e["series"] == series}
    return next((e for e in report["regressions"] if ids & set(e["duplicates"])), None)


@pytest.mark.skipif(PY_SPY is None, reason="py-spy (the test extra) is not installed")
def test_run_names_the_commit_that_made_compute_slower(tmp_path: Path, capsys) -> None:
    repo = GitRepo(tmp_path / "repo")
    shas = build_history(repo)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    record_both(repo, shas, profiles)
    config = write_regbot_yml(
        tmp_path,
        windows=f"historical: {RECORD_S}s, analysis: {RECORD_S - 4}s, extended: 4s",
        bucket="1s",
    )
    out_json = tmp_path / "report.json"
    code = main(
        run_argv(
            config,
            "--dry-run",
            deploy=shas["deploy_2"],
            previous=shas["deploy_1"],
            deployed_at=DEPLOY_2_AT,
            output=out_json,
        )
    )
    assert code == 0, capsys.readouterr().err
    report = json.loads(out_json.read_text())
    seen = json.dumps(
        {
            "regressions": [
                (
                    r["series"],
                    r["before"],
                    r["after"],
                    r["confidence"],
                    [(c["title"], c["score"], c["parts"]) for c in r.get("ranking", [])],
                )
                for r in report["regressions"]
            ],
            "filtered": [(r["series"], r["before"], r["after"]) for r in report["filtered"]],
            "funnel": report["funnel"],
        },
        indent=1,
    )
    regression = carrying(report, "gcpu:compute (app/service.py)")
    assert regression is not None, seen
    assert regression["relative_delta"] > 0.3
    assert regression["confidence"] == "high", seen
    assert regression["candidates"][0]["commit"] == shas["culprit"], seen
    assert regression["candidates"][0]["pull_request"] == 9
    assert regression["candidates"][0]["parts"]["gcpu_attribution"] > 0.8
    ranking = [c["commit"] for c in regression["ranking"]]
    assert ranking.index(shas["culprit"]) < ranking.index(shas["decoy_caller"])
    assert ranking.index(shas["culprit"]) < ranking.index(shas["decoy_sibling"])
    decoy = next(c for c in regression["ranking"] if c["commit"] == shas["decoy_caller"])
    assert decoy["pull_request"] == 7
    assert shas["merge"] not in ranking  # merge commits are not candidates
    assert report["deploy"]["commits"] == 5
