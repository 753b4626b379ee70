"""`regbot explain` on states made by real runs: `regbot run --dry-run` over a real git repository
and folded profiles written by the test (a function made three times slower by one commit, its
caller a SOMDedup duplicate, hostile markup in a frame, a title and an author), and `regbot
detect` over series files (a step, a spike that goes away, a step under the threshold, and a
throughput drop that pairwise dedup merges into the step's group)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_runner import run_cli
from git_repo import GitRepo
from rich.console import Console
from series_csv import LongCsv
from service_repo import COMPUTE_ROUNDS, RENDER_ECHO, run_argv, service_source, write_regbot_yml

from regbot.bot.views.explain import SeriesChart

SERVICE = service_source(compute=COMPUTE_ROUNDS, render=RENDER_ECHO, tail=["ROUNDS = 1\n"])
ROOT_FRAME = "<module> [bold]boom[/] (app/main.py:1)"
DECOY_TITLE = "Render: [bold]faster[/] render (#8)"
CULPRIT_TITLE = "Use more rounds [/] for checksums (#9)"
CULPRIT_AUTHOR = "Mallory [red]x[/red]"
T0 = 1_800_000_000
DEPLOYED_AT = T0 + 60
BRAILLE = re.compile("[\u2801-\u28ff]")


def explain(*argv: str, width: int = 120, terminal: bool = False) -> tuple[int, str, str]:
    return run_cli("explain", *argv, width=width, color=True, terminal=terminal)


def run_ok(*argv: str) -> None:
    code, _, err = run_cli(*argv)
    assert code == 0, err


@pytest.fixture(scope="module")
def run_state(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`regbot run --dry-run` over 90 one-second folded profiles, the deploy at second 60."""
    base = tmp_path_factory.mktemp("run")
    repo = GitRepo(base / "repo")
    repo.commit("Initial service", {"app/service.py": SERVICE})
    previous = repo.commit("Document the service (#2)", {"README.md": "svc\n"})
    repo.replace("app/service.py", "    return x\n", "    return x + 0\n")
    decoy = repo.commit(DECOY_TITLE)
    repo.replace("app/service.py", "range(n * ROUNDS)", "range(n * ROUNDS * 3)")
    culprit = repo.commit(CULPRIT_TITLE, author=CULPRIT_AUTHOR)
    deploy = repo.commit("Update README (#10)", {"README.md": "svc: demo\n"})
    profiles = base / "profiles"
    profiles.mkdir()
    rng = np.random.default_rng(3)
    for second in range(90):
        at = T0 + second
        compute = 300 if at >= DEPLOYED_AT else 100
        stacks = {
            "handle_request (app/service.py:20);compute (app/service.py:10)": compute,
            "handle_request (app/service.py:19);parse (app/service.py:4)": 150,
            "handle_request (app/service.py:21);render (app/service.py:16)": 100,
            "idle": 600,
        }
        lines = [f"{ROOT_FRAME};{s} {n + rng.integers(0, 20)}\n" for s, n in stacks.items()]
        (profiles / f"{at}-web01.folded").write_text("".join(lines))
    config = write_regbot_yml(
        base, windows="historical: 60s, analysis: 20s, extended: 10s", bucket="1s"
    )
    report_path = base / "report.json"
    run_ok(
        *run_argv(
            config,
            "--dry-run",
            deploy=deploy,
            previous=previous,
            deployed_at=DEPLOYED_AT,
            output=report_path,
        )
    )
    report = json.loads(report_path.read_text())
    by_series = {e["series"]: e for e in report["regressions"] + report["filtered"]}
    return {
        "config": config,
        "state": base / "state" / "regbot.db",
        "report": report,
        "compute": by_series["gcpu:compute (app/service.py)"],
        "caller": by_series["gcpu:handle_request (app/service.py)"],
        "culprit": culprit,
        "decoy": decoy,
        "deploy": deploy,
    }


@pytest.fixture(scope="module")
def detect_state(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`regbot detect` over 10-minute points: 10 days of history, then 4 h and 6 h windows."""
    base = tmp_path_factory.mktemp("detect")
    points, analysis, step_s, start = 1440 + 24 + 36, 1440, 600.0, 1_763_000_000.0
    rng = np.random.default_rng(8)
    times = start + step_s * np.arange(points)
    csv = LongCsv()

    def add(series_id: str, kind: str, values: np.ndarray) -> None:
        csv.add(series_id, kind, times, values)

    step = 0.010 + rng.normal(0, 0.0005, points)
    step[analysis + 5 :] += 0.002
    add("gcpu:leaf (app/views.py)", "gcpu", step)
    spike = 0.020 + rng.normal(0, 0.0005, points)
    spike[analysis + 5 : analysis + 9] += 0.004
    add("gcpu:spiky (app/jobs.py)", "gcpu", spike)
    small = 0.050 + rng.normal(0, 0.0002, points)
    small[analysis + 5 :] += 0.0012
    add("gcpu:small (app/x.py)", "gcpu", small)
    # throughput falls with the leaf's CPU (the same -80 drop, with the leaf's own wiggles: the
    # evidence of one cause that lets dedup merge them without stacks)
    qps = 1000 - 40000 * (step - 0.010) + rng.normal(0, 1, points)
    add("qps:web", "throughput", qps)
    series = csv.write(base / "metrics.csv")
    config = base / "regbot.yml"
    config.write_text(
        "workloads:\n  default:\n    threshold: {relative: 0.05}\n"
        "    windows: {historical: 10d, analysis: 4h, extended: 6h}\n"
        "state: state.db\n"
    )
    report_path = base / "report.json"
    run_ok("detect", str(series), "-c", str(config), "-o", str(report_path))
    report = json.loads(report_path.read_text())
    by_series = {e["series"]: e for e in report["regressions"] + report["filtered"]}
    return {
        "config": config,
        "state": base / "state.db",
        "leaf": by_series["gcpu:leaf (app/views.py)"],
        "spiky": by_series["gcpu:spiky (app/jobs.py)"],
        "small": by_series["gcpu:small (app/x.py)"],
        "qps": by_series["qps:web"],
    }


def test_explain_by_full_id_shows_every_section(run_state: dict) -> None:
    state, rid = run_state["state"], run_state["compute"]["id"]
    before = state.read_bytes()
    code, out, err = explain(rid, "--state", str(state))
    assert code == 0, err
    assert state.read_bytes() == before  # explain only reads
    # header
    assert f"regression {rid}" in out
    assert "gcpu:compute (app/service.py)" in out and "short-term" in out
    assert "2027-01-15T08:01:00Z" in out  # the change time, UTC
    assert re.search(r"before → after\s+1\d(\.\d+)?% → 2\d(\.\d+)?%", out)
    assert re.search(r"delta\s+\+1\d(\.\d+)? pp \(\+1\d\d(\.\d+)?%\)", out)
    assert "status          reported" in out
    # the chart: braille dots, the change marked on the axis, the means in the legend
    chart = out[out.index("series around the change") : out.index("verdicts (pipeline order)")]
    assert BRAILLE.search(chart) and "┴" in chart and "before 1" in chart and "after 2" in chart
    # every stage in pipeline order, each passed, with its numbers
    stages = ["went_away", "seasonality", "threshold", "same_regression", "som_dedup"]
    stages += ["cost_shift", "pairwise_dedup"]
    positions = [out.index(f" {stage} ") for stage in stages]
    assert positions == sorted(positions)
    assert "FAILED" not in out and out.count("passed") >= len(stages)
    assert "mode=relative" in out and "threshold=0.05" in out
    # cost shift: the domains it checked, with kind, before/after/delta and the check
    assert re.search(r"handle_request\s+callers\s+\d+\s+3\d.*%\s+4\d.*%\s+\+\S+ pp\s+real", out)
    # the dedup group: the representative marked, the SOM duplicate listed
    assert f"dedup group {rid}" in out and "representative ◀" in out
    assert run_state["caller"]["id"] in out and "duplicate (som_dedup)" in out
    # the stack path, root to the regressed frame
    assert "→ handle_request (app/service.py:20) → compute (app/service.py:10)" in out
    # every ranked commit, the named one marked, with the score's parts
    assert run_state["culprit"][:10] in out and run_state["decoy"][:10] in out
    assert re.search(rf"1 ✔\s+{run_state['culprit'][:10]}\s+#9", out)
    assert "gCPU attr. 100%" in out and "text sim." in out and "corr. 0%" in out
    assert "compute (app/service.py)" in out and "confidence: high" in out
    # the deploy
    assert run_state["deploy"] in out and "3 commits in previous..deploy, dry run" in out


def test_a_unique_prefix_explains_the_same_regression(run_state: dict) -> None:
    rid = run_state["compute"]["id"]
    full = explain(rid, "--state", str(run_state["state"]))
    for prefix in (rid[:6], rid[2:8].upper()):  # with or without `r-`, case ignored
        assert explain(prefix, "--state", str(run_state["state"])) == full


def test_the_state_path_comes_from_the_config(run_state: dict) -> None:
    code, out, err = explain(run_state["compute"]["id"], "-c", str(run_state["config"]))
    assert code == 0, err
    assert f"regression {run_state['compute']['id']}" in out


def test_hostile_markup_is_shown_as_written(run_state: dict) -> None:
    for terminal in (False, True):
        code, out, err = explain(
            run_state["compute"]["id"], "--state", str(run_state["state"]), terminal=terminal
        )
        assert code == 0, err
        plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
        assert ROOT_FRAME in plain
        assert DECOY_TITLE in plain and CULPRIT_TITLE in plain
        assert f"by {CULPRIT_AUTHOR}" in plain


def test_json_holds_the_entry_verdicts_candidates_group_and_deploy(run_state: dict) -> None:
    rid = run_state["compute"]["id"]
    code, out, err = explain(rid[:8], "--state", str(run_state["state"]), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["id"] == rid and data["query"] == rid[:8]
    assert data["status"]["kind"] == "reported" and data["representative"] is None
    entry = data["entry"]
    assert list(entry["verdicts"]) == [
        "change_point", "went_away", "seasonality", "threshold", "share_inflation",
        "same_regression", "som_dedup", "cost_shift", "pairwise_dedup",
    ]  # fmt: skip
    assert entry["verdicts"]["cost_shift"]["domain_names"] == ["handle_request (app/service.py)"]
    assert entry["candidates"][0]["commit"] == run_state["culprit"]
    assert {c["commit"] for c in entry["ranking"]} >= {run_state["culprit"], run_state["decoy"]}
    assert entry["stack_paths"] and entry["stack_paths"][0][-1] == "compute (app/service.py:10)"
    assert data["deploy"]["sha"] == run_state["deploy"]
    assert data["window"]["analysis"][0] == DEPLOYED_AT
    (member,) = data["group"]["members"]
    assert member["regression_id"] == rid and member["representative"] is True
    assert len(member["times"]) == len(member["values"]) > 0
    assert [d["regression_id"] for d in data["group"]["merged_duplicates"]] == [
        run_state["caller"]["id"]
    ]


def test_the_settings_in_force_are_echoed(detect_state: dict, tmp_path: Path) -> None:
    """With only ``--state``: the stages' defaults; with a config: its values."""
    rid = detect_state["leaf"]["id"]
    code, out, err = explain(rid, "--state", str(detect_state["state"]), "--json")
    assert code == 0, err
    settings = json.loads(out)["settings"]
    assert settings["source"] is None
    assert settings["detection"]["change_point"]["multiple_testing"] == "fdr"
    assert settings["detection"]["fleet_load"]["min_t"] == 5.0
    assert settings["dedup"]["som"]["evidence_alpha"] == 0.05
    assert settings["dedup"]["cost_shift"]["fallen_alpha"] == 0.01
    assert settings["dedup"]["cost_shift"]["new_share"] == 0.01
    inflation = settings["dedup"]["share_inflation"]  # every constant the stage runs with
    assert inflation["alpha"] == 0.01 and inflation["min_series"] == 20
    assert settings["dedup"]["som"]["merge_distance"] == 0.5
    assert settings["dedup"]["som"]["block_weights"] == {
        "shape": 1.0,
        "variance": 0.5,
        "position": 3.0,
        "root_cause": 0.2,
        "metric": 0.2,
    }
    assert (settings["dedup"]["merge_alpha"], settings["dedup"]["kdd18_tolerance"]) == (0.01, 0.05)
    config = tmp_path / "regbot.yml"
    config.write_text(
        f"state: {detect_state['state']}\n"
        "detection: {change_point: {multiple_testing: none}, fleet_load: {min_t: 7}}\n"
        "dedup: {pairwise: {cross_kind_correlation: 0.4}, kdd18_stack_weight: 0.25,\n"
        "  som: {cascade_buckets: 5}}\ncost_shift: {enabled: false}\n"
    )
    code, out, err = explain(rid, "-c", str(config), "--json")
    assert code == 0, err
    settings = json.loads(out)["settings"]
    assert settings["source"] == str(config)
    assert settings["detection"]["change_point"]["multiple_testing"] == "none"
    assert settings["detection"]["fleet_load"]["min_t"] == 7.0
    assert settings["dedup"]["pairwise"]["cross_kind_correlation"] == 0.4
    assert settings["dedup"]["cost_shift"] is None
    assert settings["dedup"]["kdd18_stack_weight"] == 0.25
    assert settings["dedup"]["som"]["cascade_buckets"] == 5
    code, out, err = explain(rid, "-c", str(config), width=400)
    assert code == 0, err
    assert f"settings (from {config})" in out
    assert re.search(r"change_point\s+alpha 0\.01 · max_iterations 10 ·", out)
    assert "multiple_testing none" in out and "min_t 7" in out
    assert re.search(r"cost_shift\s+off", out)
    assert "kdd18_stack_weight 0.25" in out and "cascade_buckets 5" in out


def test_a_som_duplicate_points_to_its_representative(run_state: dict) -> None:
    rep, duplicate = run_state["compute"]["id"], run_state["caller"]["id"]
    code, out, err = explain(duplicate, "--state", str(run_state["state"]))
    assert code == 0, err
    assert f"{duplicate} is a duplicate of {rep} (merged by som_dedup)" in out
    assert f"regression {duplicate}" in out and f"representative {rep}" in out
    own = out[out.index(f"regression {duplicate}") : out.index(f"╭─ representative {rep}")]
    assert re.search(r"som_dedup\s+FAILED\s+duplicate of gcpu:compute", own)
    assert re.search(r"pairwise_dedup\s+not reached", own)
    assert run_state["culprit"][:10] in out[out.index(f"╭─ representative {rep}") :]
    data = json.loads(explain(duplicate, "--state", str(run_state["state"]), "--json")[1])
    assert data["status"]["kind"] == "duplicate" and data["status"]["representative"] == rep
    assert data["representative"]["entry"]["id"] == rep


def test_a_pairwise_duplicate_points_to_its_group_and_keeps_its_direction(
    detect_state: dict,
) -> None:
    leaf, qps = detect_state["leaf"]["id"], detect_state["qps"]["id"]
    code, out, err = explain(qps, "--state", str(detect_state["state"]))
    assert code == 0, err
    assert f"{qps} is a duplicate of {leaf} (merged by pairwise_dedup)" in out
    assert "its series" in out and BRAILLE.search(out)
    assert re.search(rf"member\s+{qps}\s+qps:web\s+throughput", out)
    data = json.loads(explain(qps, "--state", str(detect_state["state"]), "--json")[1])
    members = {m["series"]: m for m in data["group"]["members"]}
    assert members["gcpu:leaf (app/views.py)"]["representative"] is True
    throughput = np.array(members["qps:web"]["values"])
    assert 900 < throughput.mean() < 1010  # shown as written, not negated (higher is better)


@pytest.mark.parametrize(("name", "stage"), [("spiky", "went_away"), ("small", "threshold")])
def test_a_filtered_regression_names_the_stage_that_removed_it(
    detect_state: dict, name: str, stage: str
) -> None:
    rid = detect_state[name]["id"]
    code, out, err = explain(rid, "--state", str(detect_state["state"]))
    assert code == 0, err
    assert f"filtered by {stage}: " in out
    assert re.search(rf"{stage}\s+FAILED", out)
    assert re.search(r"pairwise_dedup\s+not reached", out)
    assert "no series stored for this regression" in out
    assert "not in a stored dedup group" in out
    data = json.loads(explain(rid, "--state", str(detect_state["state"]), "--json")[1])
    assert data["status"]["kind"] == "filtered" and data["status"]["stage"] == stage
    assert data["entry"]["verdicts"][stage]["passed"] is False
    assert data["deploy"] is None and data["window"]["analysis"]


def test_an_unknown_id_suggests_the_closest(detect_state: dict) -> None:
    rid = detect_state["leaf"]["id"]
    typo = rid[:-1] + ("0" if rid[-1] != "0" else "1")
    code, out, err = explain(typo, "--state", str(detect_state["state"]))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"found '{typo}'" in err
    suggested = re.search(r"\(closest: ([^)]*)\)", err).group(1).split(", ")  # type: ignore[union-attr]
    assert suggested[0] == rid and len(suggested) == 4  # every id of the state, best first


def test_an_ambiguous_prefix_lists_its_matches(detect_state: dict) -> None:
    code, _, err = explain("r-", "--state", str(detect_state["state"]))
    assert code == 2 and "a prefix of exactly one regression id (it matches 4" in err


def test_a_missing_state_is_exit_2_and_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "none" / "state.db"
    code, _, err = explain("r-123", "--state", str(missing))
    assert code == 2 and f"no state at {missing}" in err and "regbot run" in err
    monkeypatch.chdir(tmp_path)
    code, _, err = explain("r-123")  # no config: the default .regbot/state.db
    assert code == 2 and str(Path(".regbot") / "state.db") in err
    assert not (tmp_path / ".regbot").exists() and not missing.parent.exists()


def test_a_file_that_is_not_a_state_is_exit_2(tmp_path: Path) -> None:
    bogus = tmp_path / "state.db"
    bogus.write_text("not sqlite\n" * 100)
    code, _, err = explain("r-123", "--state", str(bogus))
    assert code == 2 and str(bogus) in err and "Traceback" not in err


@pytest.mark.parametrize("width", [40, 80, 200])
def test_the_chart_fits_the_console_and_marks_the_step(width: int) -> None:
    times = 1_000.0 + 60.0 * np.arange(100)
    values = np.where(times >= times[60], 2.0, 1.0) + np.random.default_rng(1).normal(0, 0.01, 100)
    values[20] = np.nan  # a missing point
    chart = SeriesChart(times, values, float(times[60]), 1.0, 2.0, "latency", height=8)
    out = io.StringIO()
    Console(file=out, width=width).print(chart)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= width
    rows = lines[:8]
    plot_start = rows[0].index("┤") + 1
    top_dots = [i for i, ch in enumerate(rows[0]) if i >= plot_start and BRAILLE.match(ch)]
    bottom_dots = [i for i, ch in enumerate(rows[-1]) if i >= plot_start and BRAILLE.match(ch)]
    axis = lines[8]
    change_column = axis.index("┴")
    assert top_dots and bottom_dots
    assert min(top_dots) >= change_column - 1  # after the step the series is high
    assert max(bottom_dots) <= change_column + 1  # before it, low
    assert "before 1" in out.getvalue() and "after 2" in out.getvalue()


def test_an_ascii_console_gets_an_ascii_chart() -> None:
    times = np.arange(50, dtype=np.float64)
    values = np.r_[np.zeros(25), np.ones(25)]
    out = io.StringIO()
    Console(file=out, width=60, legacy_windows=False, emoji=False).print(
        *SeriesChart(times, values, 25.0, 0.0, 1.0, "cpu").lines(60, ascii_only=True)
    )
    text = out.getvalue()
    assert not BRAILLE.search(text) and "*" in text and "|" in text


def _entry(rid: str, series: str, **extra: object) -> dict:
    entry = {
        "id": rid, "series": series, "kind": "latency", "detector": "short-term",
        "change_time": 1_000.0, "before": 10.0, "after": 12.0, "delta": 2.0,
        "relative_delta": 0.2, "p_value": 1e-6, "group": rid, "duplicates": [],
        "verdicts": {"threshold": {"passed": True, "reason": "relative change 0.2 >= 0.05"}},
        "candidates": [], "confidence": "none",
    }  # fmt: skip
    entry.update(extra)
    return entry


def test_newest_report_wins_and_ids_known_only_from_duplicates_or_the_table(
    tmp_path: Path,
) -> None:
    """Run 1 reports r-aaaa (its duplicate r-bbbb has no entry of its own); r-tttt is only in
    the regressions table (the report of its run is gone); run 2 filters r-aaaa by the
    threshold."""
    import sqlite3

    from regbot.bot.state import open_state
    from regbot.report import read_report

    def stored(**lists: object) -> object:
        return read_report({"regbot_version": "test", "window": window, "funnel": {}, **lists})

    window = {"historical": [0.0, 900.0], "analysis": [900.0, 1100.0], "extended": [1100.0, 1200.0]}
    first = _entry("r-aaaa", "lat:api", duplicates=["r-bbbb"])
    failed = {"passed": False, "reason": "relative change 0.01 < threshold 0.05"}
    second = _entry("r-aaaa", "lat:api", verdicts={"threshold": failed})
    table_only = _entry("r-tttt", "lat:<b>[/]")
    path = tmp_path / "state.db"
    with open_state(path) as state:
        gone = state.record_run(0.5, stored(regressions=[table_only]), [])
        state.record_run(1.0, stored(regressions=[first]), [])
        state.record_run(2.0, stored(regressions=[], filtered=[second]), [])
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM runs WHERE rowid = ?", (gone,))
    code, out, err = explain("r-aaaa", "--state", str(path))
    assert code == 0, err
    assert "filtered by threshold: relative change 0.01 < threshold 0.05" in out
    assert "run 2 of 2 stored" in out
    data = json.loads(explain("r-bbbb", "--state", str(path), "--json")[1])
    assert data["status"]["kind"] == "duplicate" and data["status"]["representative"] == "r-aaaa"
    assert data["representative"]["status"]["stage"] == "threshold"
    code, out, err = explain("r-tttt", "--state", str(path))
    assert code == 0, err
    assert "lat:<b>[/]" in out and "status          reported" in out
