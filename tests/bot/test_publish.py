"""`regbot run` publishing to GitHub, end to end: a real git repository and folded profiles with a
planted regression (written by the test, no profiler), the local fake GitHub (real HTTP on
127.0.0.1) seeded with the pull requests, and `regbot run` through the command line's `main`.

Shown: one comment per (group, PR), created once and edited or left alone on re-runs; nothing on
PRs with nothing to report; the per-run cap; 500s and a secondary rate limit survived; the gate as
a check run (failure → exit 1), as a commit status when check runs are forbidden, and neutral
with a warning for a missing baseline; a refused permission → exit 2 naming it, with the run kept
in the state; feedback read on the next run; dry-run and offline exit codes."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
from fake_github import FakeGitHub
from git_repo import GitRepo
from rich.console import Console
from service_repo import run_argv, service_source, write_regbot_yml

from regbot.bot.cli import main
from regbot.bot.github.api import CommentInfo, RequestPolicy
from regbot.bot.github.publish import (
    RETRY_SCALE_ENV,
    comment_order,
    details_url,
    planned_outcome,
    request_policy,
    stack_path_of,
)
from regbot.bot.state import open_state
from regbot.errors import InputError
from regbot.report import RegressionEntry, read_regression

REPO = "octo/service"
TOKEN = "fake-token"
T0 = 1_800_000_000
BUCKET_S = 60
HISTORY = 40  # buckets before the deploy
AFTER = 20  # buckets after it
DEPLOY_AT = T0 + HISTORY * BUCKET_S

SERVICE = service_source()
FRAME_LINES = {"parse": 2, "compute": 9, "render": 16}


@dataclass(frozen=True)
class Scenario:
    root: Path
    config: Path
    shas: dict[str, str]


def build_repo(root: Path, second_suspect: bool) -> dict[str, str]:
    """Deploy 1, then: a sibling change to render (#8), the culprit tripling compute's work (#9),
    optionally a second change to compute whose title names no PR (GitHub knows it as #12), and
    a README change (#10) as deploy 2."""
    repo = GitRepo(root / "repo")
    shas = {}
    repo.commit("Initial service", {"app/service.py": SERVICE, "README.md": "svc\n"})
    shas["deploy_1"] = repo.commit("Document the service (#2)", {"README.md": "svc: demo\n"})
    source = SERVICE.replace("s += i ^ x", "s += x ^ i")
    shas["sibling"] = repo.commit("Render: use xor folding (#8)", {"app/service.py": source})
    source = source.replace(
        "for i in range(n):\n        total += (i * i)",
        "for i in range(n * 3):\n        total += (i * i)",
    )
    shas["culprit"] = repo.commit(
        "Use more rounds for stronger checksums (#9)", {"app/service.py": source}
    )
    if second_suspect:
        source = source.replace("(i * i) % 11", "(i * i) % 13")
        shas["second"] = repo.commit(
            "Use stronger checksums in compute", {"app/service.py": source}
        )
    shas["deploy_2"] = repo.commit("Update README (#10)", {"README.md": "svc: demo service\n"})
    return shas


def write_profiles(folder: Path, *, regression: bool, history: int, seed: int = 3) -> None:
    """One folded file per minute: parse, compute and render each take 15% of the samples
    (4% noise), compute 30% after the deploy when ``regression``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    first = HISTORY - history
    for b in range(first, HISTORY + AFTER):
        share = {"parse": 0.15, "compute": 0.15, "render": 0.15}
        if regression and b >= HISTORY:
            share["compute"] = 0.30
        total = 2000
        lines = [
            f"main (app/main.py:3);handle_request (app/service.py:23);{name} "
            f"(app/service.py:{line}) {int(total * share[name] * (1 + rng.gauss(0, 0.04)))}"
            for name, line in FRAME_LINES.items()
        ]
        lines.append(f"main (app/main.py:3);handle_request (app/service.py:23) {total // 20}")
        lines.append(f"idle {int(total * 0.4)}")
        (folder / f"{T0 + b * BUCKET_S}.folded").write_text("\n".join(lines) + "\n")


def build_scenario(
    root: Path,
    api_url: str,
    *,
    second_suspect: bool = False,
    regression: bool = True,
    history: int = HISTORY,
    github: bool = True,
    extra_sources: str = "",
    comments: str = "{}",
    extra: str = "",
) -> Scenario:
    shas = build_repo(root, second_suspect)
    write_profiles(root / "profiles", regression=regression, history=history)
    config = write_regbot_yml(
        root,
        windows=f"historical: {HISTORY}m, analysis: 15m, extended: 5m",
        repository=f"{{path: repo, github: {REPO}}}" if github else "{path: repo}",
        extra_sources=extra_sources,
        extra=f"github: {{api_url: '{api_url}', comments: {comments}}}\n" + extra,
    )
    return Scenario(root, config, shas)


def seed_pulls(fake: FakeGitHub, scn: Scenario) -> None:
    shas = scn.shas
    fake.add_pull(8, "Render: use xor folding", shas["sibling"], [shas["sibling"]], merged=True)
    fake.add_pull(
        9, "Use more rounds", shas["culprit"], [shas["culprit"]], author="bob", merged=True
    )
    fake.add_pull(10, "Update README", shas["deploy_2"], [shas["deploy_2"]], merged=True)
    if "second" in shas:
        fake.add_pull(
            12, "Stronger checksums", shas["second"], [shas["second"]], author="erin", merged=True
        )


@dataclass(frozen=True)
class Ran:
    code: int
    report: dict
    out: str
    err: str


def regbot_run(scn: Scenario, *extra: str, now_min: int | None = None) -> Ran:
    """`regbot run` for deploy 2; ``now_min``: minutes after the deploy that the data ends."""
    output = scn.root / "report.json"
    output.unlink(missing_ok=True)
    out, err = StringIO(), StringIO()
    args = run_argv(
        scn.config,
        *extra,
        deploy=scn.shas["deploy_2"],
        previous=scn.shas["deploy_1"],
        deployed_at=DEPLOY_AT,
        output=output,
    )
    if now_min is not None:
        args += ["--now", str(DEPLOY_AT + now_min * 60)]
    code = main(
        args,
        out=Console(file=out, width=200),
        err=Console(file=err, width=400, soft_wrap=True),
    )
    report = json.loads(output.read_text()) if output.is_file() else {}
    return Ran(code, report, out.getvalue(), err.getvalue())


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("REGBOT_GITHUB_RETRY_SCALE", "0")
    for name in ("GITHUB_API_URL", "GITHUB_STEP_SUMMARY", "GITHUB_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    with FakeGitHub(REPO, TOKEN) as server:
        yield server


def compute_regression(report: dict) -> dict:
    [entry] = [r for r in report["regressions"] if r["series"].startswith("gcpu:compute ")]
    return entry


# ---------------------------------------------------------------- comments


def test_one_comment_per_group_and_pr_created_once_then_edited_never_duplicated(tmp_path, fake):
    scn = build_scenario(tmp_path, fake.api_url)
    seed_pulls(fake, scn)
    outcomes = []
    for now_min in (12, 15, 18, 20):  # later data each time: the comment's numbers change
        ran = regbot_run(scn, now_min=now_min)
        assert ran.code == 1, ran.err  # a high-confidence regression fails the default gate
        outcomes.append([(c["pull_request"], c["outcome"]) for c in ran.report["comments"]])
    assert outcomes[0] == [(9, "created")]
    assert all(o == [(9, "edited")] for o in outcomes[1:]), outcomes
    again = regbot_run(scn, now_min=20)  # same data as the last run: nothing to write
    assert [(c["pull_request"], c["outcome"]) for c in again.report["comments"]] == [
        (9, "unchanged")
    ]

    [comment] = fake.comments(9)
    group = compute_regression(again.report)["group"]
    assert comment["body"].startswith(f"<!-- regbot:v1 group={group} pr=9 -->\n")
    assert "regbot explain" in comment["body"] and "xychart-beta" in comment["body"]
    assert "`compute (app/service.py:9)`" in comment["body"]  # the stack path, root → frame
    assert len(fake.requests_to("POST", r"/issues/9/comments$")) == 1
    assert len(fake.requests_to("PATCH", r"/issues/comments/\d+$")) == 3
    # Nothing to report on the sibling change nor the README change.
    assert fake.comments(8) == [] and fake.comments(10) == []
    assert len(fake.comments()) == 1
    with open_state(scn.root / "state/regbot.db") as state:
        [stored] = state.comments()
    assert (stored.group_id, stored.pull_request, stored.comment_id) == (group, 9, comment["id"])


def test_gate_failure_is_a_check_run_on_the_deploy_commit_and_exit_1(tmp_path, fake):
    scn = build_scenario(tmp_path, fake.api_url)
    seed_pulls(fake, scn)
    ran = regbot_run(scn)
    assert ran.code == 1
    [run] = fake.check_runs
    assert run["head_sha"] == scn.shas["deploy_2"]
    assert (run["name"], run["status"], run["conclusion"]) == (
        "regbot/performance",
        "completed",
        "failure",
    )
    assert run["output"]["title"] == "1 performance regression fails the gate"
    assert "gcpu:compute (app/service.py)" in run["output"]["summary"]
    gate = ran.report["gate"]
    assert gate["state"] == "failure" and gate["published_as"] == "check_run"
    assert gate["failing"] == [compute_regression(ran.report)["id"]]
    assert "regbot: gate failed: 1 performance regression fails the gate" in ran.err
    assert fake.statuses == []


def test_cap_per_run_counts_writes_and_commit_without_pr_number_is_looked_up(tmp_path, fake):
    """Two commits changed compute: a low-confidence regression naming both; the second one's
    title has no PR number, so its PR (#12) comes from GitHub. One write per run."""
    scn = build_scenario(
        tmp_path,
        fake.api_url,
        second_suspect=True,
        comments="{max_per_run: 1, min_confidence: low}",
    )
    seed_pulls(fake, scn)
    first = regbot_run(scn)
    entry = compute_regression(first.report)
    assert entry["confidence"] == "low"
    named = {c["commit"]: c for c in entry["candidates"]}
    assert set(named) == {scn.shas["culprit"], scn.shas["second"]}
    assert named[scn.shas["second"]]["pull_request"] == 12
    assert named[scn.shas["second"]]["pull_request_from"] == "github"
    assert first.code == 1  # a tie names both; the default gate follows size, not confidence
    assert len(first.report["comments"]) == 1
    [skipped] = first.report["comments_skipped"]
    assert skipped["reason"] == "github.comments.max_per_run (1) reached"
    commented = first.report["comments"][0]["pull_request"]
    assert {commented, skipped["pull_request"]} == {9, 12}
    assert len(fake.comments()) == 1

    # The next run sees the regression as known (its "why" changes): the edit is the one write.
    second = regbot_run(scn)
    assert [(c["pull_request"], c["outcome"]) for c in second.report["comments"]] == [
        (commented, "edited")
    ]
    assert [s["pull_request"] for s in second.report["comments_skipped"]] == [
        skipped["pull_request"]
    ]
    # Then the first comment is up to date (free), and the other is written.
    third = regbot_run(scn)
    assert [(c["pull_request"], c["outcome"]) for c in third.report["comments"]] == [
        (commented, "unchanged"),
        (skipped["pull_request"], "created"),
    ]
    assert third.report["comments_skipped"] == []
    assert len(fake.comments(9)) == 1 and len(fake.comments(12)) == 1
    assert fake.requests_to("GET", r"/commits/[0-9a-f]{40}/pulls$")  # the lookup of #12


def test_500s_and_a_secondary_rate_limit_during_a_run_are_survived(tmp_path, fake):
    scn = build_scenario(tmp_path, fake.api_url)
    seed_pulls(fake, scn)
    fake.fail_next(2, 500, method="POST", path=r"/issues/9/comments$")
    fake.fail_next(1, 502, method="GET", path=r"/issues/9/comments$")
    fake.secondary_rate_limit_next(1, retry_after=None, path=r"/check-runs$")
    ran = regbot_run(scn)
    assert ran.code == 1, ran.err  # the gate's failure, not a GitHub error
    assert len(fake.comments(9)) == 1
    assert [r["conclusion"] for r in fake.check_runs] == ["failure"]
    statuses = [r.status for r in fake.requests_to("POST", r"/issues/9/comments$")]
    assert statuses == [500, 500, 201]
    assert [r.status for r in fake.requests_to("POST", r"/check-runs$")] == [403, 201]


def test_gate_falls_back_to_a_commit_status_when_check_runs_are_forbidden(tmp_path, fake):
    scn = build_scenario(tmp_path, fake.api_url)
    seed_pulls(fake, scn)
    fake.forbid("POST", r"/check-runs$", "Resource not accessible by personal access token")
    ran = regbot_run(scn)
    assert ran.code == 1
    [status] = fake.statuses
    assert (status["sha"], status["context"], status["state"]) == (
        scn.shas["deploy_2"],
        "regbot/performance",
        "failure",
    )
    assert status["description"] == "1 performance regression fails the gate"
    assert ran.report["gate"]["published_as"] == "status"


def test_missing_comment_permission_exits_2_naming_it_and_keeps_the_run(tmp_path, fake):
    scn = build_scenario(tmp_path, fake.api_url)
    seed_pulls(fake, scn)
    fake.forbid("POST", r"/issues/\d+/comments$")
    ran = regbot_run(scn)
    assert ran.code == 2
    [line] = [x for x in ran.err.splitlines() if x.startswith("regbot: ")]
    assert "comment on pull request #9" in line
    assert "`pull-requests: write`" in line and "$GITHUB_TOKEN" in line
    assert "Traceback" not in ran.err
    # The report and the state were written: nothing of the run is lost.
    assert "pull-requests: write" in ran.report["publishing"]["error"]
    assert compute_regression(ran.report)["confidence"] == "high"
    with open_state(scn.root / "state/regbot.db") as state:
        [stored] = state.reports()
        assert stored.publishing is not None
        assert stored.publishing.error == ran.report["publishing"]["error"]
        assert state.comments() == []
    assert fake.check_runs == [] and fake.statuses == []


def test_missing_token_is_bad_configuration(tmp_path, fake, monkeypatch):
    scn = build_scenario(tmp_path, fake.api_url)
    monkeypatch.delenv("GITHUB_TOKEN")
    ran = regbot_run(scn)
    assert ran.code == 2
    assert "$GITHUB_TOKEN" in ran.err
    assert fake.requests == []


def test_comments_disabled_still_sets_the_gate_and_writes_the_step_summary(
    tmp_path, fake, monkeypatch
):
    scn = build_scenario(tmp_path, fake.api_url, comments="{enabled: false}")
    seed_pulls(fake, scn)
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    ran = regbot_run(scn)
    assert ran.code == 1
    assert fake.comments() == [] and ran.report["comments"] == []
    assert [s["reason"] for s in ran.report["comments_skipped"]] == [
        "github.comments.enabled is false"
    ]
    assert [r["conclusion"] for r in fake.check_runs] == ["failure"]
    assert "gate regbot/performance: failure" in ran.err and "(set as a check run)" in ran.err
    text = summary.read_text()
    assert text.startswith("earlier step\n## regbot")  # appended
    assert "### Gate: failure" in text and "1 comment(s) not posted" in text


# ---------------------------------------------------------------- missing baseline


@pytest.mark.parametrize(
    ("policy", "state", "code"),
    [("neutral", "neutral", 0), ("fail", "failure", 1), ("pass", "success", 0)],
)
def test_missing_baseline_is_never_a_silent_pass(tmp_path, fake, policy, state, code):
    """Two minutes of profiles before the deploy and a latency series that starts after it."""
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    rows = [f"{DEPLOY_AT + 60 * i},latency:p99,{120 + i % 3},latency" for i in range(AFTER)]
    (metrics / "latency.csv").write_text("timestamp,series,value,kind\n" + "\n".join(rows) + "\n")
    scn = build_scenario(
        tmp_path,
        fake.api_url,
        regression=False,
        history=2,
        extra_sources=", series: [metrics/]",
        extra=f"gate: {{on_missing_baseline: {policy}}}\n",
    )
    seed_pulls(fake, scn)
    ran = regbot_run(scn)
    assert ran.code == code, ran.err
    assert ran.report["regressions"] == []
    missing = {(m["scope"], m["name"]): m for m in ran.report["missing_baseline"]}
    assert set(missing) == {("source", "profiles"), ("series", "latency:p99")}
    assert missing[("source", "profiles")]["points"] == 2
    assert missing[("series", "latency:p99")]["points"] == 0
    [run] = fake.check_runs
    assert run["conclusion"] == state
    title = run["output"]["title"]
    assert "missing baseline for 2 series or sources" in title
    assert "profiles" in run["output"]["summary"] and "latency:p99" in run["output"]["summary"]
    warnings = [x for x in ran.err.splitlines() if x.startswith("regbot: warning: ")]
    assert len(warnings) == 1 and "profiles, latency:p99" in warnings[0]
    assert fake.comments() == []


# ---------------------------------------------------------------- feedback


def test_feedback_is_read_on_the_next_run_recorded_once_and_stops_comments(tmp_path, fake):
    scn = build_scenario(tmp_path, fake.api_url)
    seed_pulls(fake, scn)
    first = regbot_run(scn, now_min=15)
    [comment] = fake.comments(9)
    fake.add_reaction(comment["id"], "-1", "carol")
    fake.add_reaction(comment["id"], "+1", "dave")
    fake.add_comment(9, "/regbot false-positive the benchmark host was noisy", user="dave")
    fake.add_comment(9, "looks right to me", user="erin")

    second = regbot_run(scn, now_min=20)  # new data: the comment would be edited
    entry = compute_regression(second.report)
    assert entry["group"] == compute_regression(first.report)["group"]
    assert entry["feedback"] == "false-positive"
    assert entry["feedback_from"] == ["carol", "dave"]
    assert second.report["comments"] == []
    assert [s["reason"] for s in second.report["comments_skipped"]] == [
        "feedback: false-positive (not commented on again)"
    ]
    assert fake.comments(9)[0]["body"] == comment["body"]  # left as it was
    assert second.code == 1  # feedback never unblocks the gate
    assert "marked false positive" in fake.check_runs[-1]["output"]["summary"]
    assert "recorded 2 new false-positive feedback entries" in second.err

    third = regbot_run(scn, now_min=20)
    assert "new false-positive" not in third.err
    listing = StringIO()
    code = main(
        ["feedback", "-c", str(scn.config), "--json"],
        out=Console(file=listing, width=200),
        err=Console(file=StringIO()),
    )
    assert code == 0
    rows = json.loads(listing.getvalue())["feedback"]
    assert sorted((r["user"], r["kind"], r["reason"]) for r in rows) == [
        ("carol", "reaction", ""),
        ("dave", "command", "the benchmark host was noisy"),
    ]
    assert {r["pull_request"] for r in rows} == {9}
    assert {r["comment_url"] for r in rows} == {comment["html_url"]}


# ---------------------------------------------------------------- without publishing


def test_dry_run_publishes_nothing_and_does_not_fail_the_gate(tmp_path, fake):
    scn = build_scenario(tmp_path, fake.api_url)
    seed_pulls(fake, scn)
    summary = tmp_path / "summary.md"
    ran = regbot_run(scn, "--dry-run", "--summary", str(summary))
    assert ran.code == 0
    assert "publishing is off: --dry-run" in ran.err
    assert "(dry run: not set on GitHub, exit code unaffected)" in ran.err
    assert ran.report["gate"]["state"] == "failure"
    assert ran.report["gate"]["enforced"] is False
    assert fake.requests == []
    text = summary.read_text()
    assert "### Gate: failure" in text and "gcpu:compute (app/service.py)" in text


def test_offline_run_enforces_the_gate_through_the_exit_code(tmp_path, fake, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")  # no token needed without repository.github
    scn = build_scenario(tmp_path, fake.api_url, github=False)
    ran = regbot_run(scn)
    assert ran.code == 1
    assert "publishing is off: repository.github is not set" in ran.err
    assert ran.report["gate"]["enforced"] is True
    assert ran.report["gate"]["published_as"] is None
    assert fake.requests == []


# ---------------------------------------------------------------- the pure parts


def test_planned_outcome_matches_what_the_upsert_does():
    marker = "<!-- regbot:v1 group=r-a pr=9 -->"
    body = f"{marker}\nnew"
    other = CommentInfo(1, "<!-- regbot:v1 group=r-b pr=9 -->\nx", "regbot[bot]", "u1")
    mine = CommentInfo(2, f"{marker}\nold", "regbot[bot]", "u2")
    later = CommentInfo(3, f"{marker}\nnew", "regbot[bot]", "u3")
    assert planned_outcome([other], marker, body) == ("create", None)
    assert planned_outcome([other, mine, later], marker, body) == ("edit", mine)  # the first
    same = CommentInfo(2, f"{marker}\r\nnew\n", "regbot[bot]", "u2")
    assert planned_outcome([same], marker, body) == ("unchanged", same)


def _entry(**fields: object) -> RegressionEntry:
    """A SPEC §4 entry with the fields given (the rest: a plain gCPU regression)."""
    entry = {"id": "r-1", "series": "gcpu:f", "kind": "gcpu", "detector": "short-term"}
    entry |= {"change_time": 0.0, "confidence": "none", **fields}
    return read_regression(entry)


def test_comment_order_spends_the_cap_on_the_clearest_findings():
    entries = [
        {"id": "r-1", "confidence": "low", "relative_delta": 0.9},
        {"id": "r-2", "confidence": "high", "relative_delta": 0.1},
        {"id": "r-3", "confidence": "high", "relative_delta": -0.5},
        {"id": "r-4", "confidence": "high", "relative_delta": None},
    ]
    typed = [_entry(**e) for e in entries]
    assert [e.id for e in comment_order(typed)] == ["r-3", "r-2", "r-4", "r-1"]


def test_retry_scale_from_the_environment():
    assert request_policy({}) == RequestPolicy()
    fast = request_policy({RETRY_SCALE_ENV: "0"})
    assert (fast.backoff_factor_s, fast.secondary_rate_wait_s, fast.seconds_between_writes_s) == (
        0.0,
        0.0,
        0.0,
    )
    assert fast.retries == RequestPolicy().retries
    assert request_policy({RETRY_SCALE_ENV: "0.5"}).secondary_rate_wait_s == 30.0
    for bad in ("-1", "fast", "nan", "inf"):
        with pytest.raises(InputError, match=RETRY_SCALE_ENV):
            request_policy({RETRY_SCALE_ENV: bad})


def test_stack_path_runs_from_the_root_to_the_regressed_frame():
    entry = {
        "series": "gcpu:compute (app/service.py)",
        "stack_paths": [["main", "handle (app/s.py:3)", "compute (app/service.py:9)", "leaf"]],
    }
    assert stack_path_of(_entry(**entry)) == [
        "main",
        "handle (app/s.py:3)",
        "compute (app/service.py:9)",
    ]
    assert stack_path_of(_entry(series="latency:p99", stack_paths=[])) == []


def test_details_url_points_at_the_actions_run():
    env = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "octo/service",
        "GITHUB_RUN_ID": "42",
    }
    assert details_url(env) == "https://github.com/octo/service/actions/runs/42"
    assert details_url({**env, "GITHUB_RUN_ID": ""}) is None
    assert details_url({}) is None
