"""`regbot detect` in-process: SPEC §2 series files in, SPEC §4 report out, exit codes 0 and 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_runner import run_cli
from series_csv import LongCsv

STEP_S = 600.0
START = 1_763_000_000.0
POINTS = 1440 + 24 + 36  # 10 days, then 4 h analysis and 6 h extended at 10-minute points


def run(*argv: str) -> tuple[int, str, str]:
    return run_cli(*argv, width=250)


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run where the default state store (.regbot/state.db) lands in the test's own folder."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def series_csv(tmp_path: Path) -> Path:
    """A planted step, a transient spike that recovers, a throughput drop, and awkward series."""
    rng = np.random.default_rng(8)
    times = START + STEP_S * np.arange(POINTS)
    analysis = 1440
    csv = LongCsv()

    def add(series_id: str, kind: str, values: np.ndarray, stamps: np.ndarray = times) -> None:
        csv.add(series_id, kind, stamps, values)

    step = 0.010 + rng.normal(0, 0.0005, POINTS)
    step[analysis + 5 :] += 0.002
    add("gcpu:leaf (app/views.py)", "gcpu", step)
    spike = 0.020 + rng.normal(0, 0.0005, POINTS)
    spike[analysis + 5 : analysis + 9] += 0.004
    add("gcpu:spiky (app/jobs.py)", "gcpu", spike)
    qps = 1000 + rng.normal(0, 5, POINTS)
    qps[analysis + 3 :] -= 30
    add("qps:web", "throughput", qps)
    add("gcpu:constant", "gcpu", np.full(POINTS, 0.003))
    add("gcpu:short", "gcpu", np.array([0.1, 0.2]), times[-2:])
    gappy = 0.05 + rng.normal(0, 0.001, POINTS)
    add("gcpu:gappy", "gcpu", gappy[::3], times[::3])
    csv.add_row(times[10], "gcpu:gappy", "nan", "gcpu")  # a missing value
    csv.add_row(times[3], "gcpu:gappy", "0.05", "gcpu")  # a duplicate timestamp
    return csv.write(tmp_path / "metrics.csv")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "regbot.yml"
    path.write_text(
        "workloads:\n  default:\n    threshold: {relative: 0.01}\n"
        "    windows: {historical: 10d, analysis: 4h, extended: 6h}\n"
    )
    return path


def test_detect_reports_the_step_and_the_drop_and_filters_the_spike(
    series_csv, config, tmp_path
) -> None:
    out_path = tmp_path / "report.json"
    code, out, err = run("detect", str(series_csv), "-c", str(config), "-o", str(out_path))
    assert code == 0, err
    report = json.loads(out_path.read_text())
    found = {r["series"] for r in report["regressions"]}
    assert found == {"gcpu:leaf (app/views.py)", "qps:web"}
    assert report["funnel"]["series"] == 6
    # the spike (4 points) is no lasting change: Welch's test at its split (the after points'
    # own variance) rejects it, or a filter removes it with its verdict
    for spiky in (r for r in report["filtered"] if r["series"] == "gcpu:spiky (app/jobs.py)"):
        assert any(v["passed"] is False for v in spiky["verdicts"].values())
    drop = next(r for r in report["regressions"] if r["series"] == "qps:web")
    assert drop["delta"] < 0
    leaf = next(r for r in report["regressions"] if r["series"].startswith("gcpu:leaf"))
    assert leaf["change_time"] == pytest.approx(START + STEP_S * (1440 + 5))
    assert leaf["relative_delta"] == pytest.approx(0.2, abs=0.03)
    assert "gcpu:leaf" in out and "funnel: series 6" in out


def test_now_cuts_data_and_ids_are_stable(series_csv, config, tmp_path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert run("detect", str(series_csv), "-c", str(config), "-o", str(first))[0] == 0
    assert run("detect", str(series_csv), "-c", str(config), "-o", str(second))[0] == 0
    ids = [r["id"] for r in json.loads(first.read_text())["regressions"]]
    assert ids == [r["id"] for r in json.loads(second.read_text())["regressions"]]
    early = tmp_path / "early.json"
    now = START + STEP_S * 1400  # before the step: nothing to see yet
    code, _, err = run(
        "detect", str(series_csv), "-c", str(config), "--now", str(now), "-o", str(early)
    )
    assert code == 0, err
    assert json.loads(early.read_text())["regressions"] == []


def test_presets_and_jsonl_input(series_csv, tmp_path) -> None:
    jsonl = tmp_path / "one.jsonl"
    rng = np.random.default_rng(2)
    values = 0.01 + rng.normal(0, 0.0005, POINTS)
    values[1440 + 5 :] += 0.002
    times = START + STEP_S * np.arange(POINTS)
    jsonl.write_text(
        json.dumps(
            {
                "id": "gcpu:x",
                "kind": "gcpu",
                "timestamps": times.tolist(),
                "values": values.tolist(),
            }
        )
        + "\n"
    )
    code, out, err = run("detect", str(jsonl), "--workload", "frontfaas-small")
    assert code == 0, err
    assert "gcpu:x" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--workload", "nope"], "--workload: expected one of"),
        (["--now", "yesterday"], "--now: expected a time"),
    ],
)
def test_bad_arguments_exit_2(series_csv, extra, message) -> None:
    code, _, err = run("detect", str(series_csv), *extra)
    assert code == 2 and message in err and "Traceback" not in err


def test_missing_and_broken_files_exit_2(tmp_path) -> None:
    code, _, err = run("detect", str(tmp_path / "none.csv"))
    assert code == 2 and "none.csv" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,series,value\n1,a,1\n2,a,oops\n")
    code, _, err = run("detect", str(bad))
    assert code == 2 and "bad.csv:3" in err


def test_dedup_method_and_rules_come_from_the_config(series_csv, tmp_path) -> None:
    config = tmp_path / "kdd.yml"
    config.write_text(
        "workloads:\n  default:\n    threshold: {relative: 0.01}\n"
        "    windows: {historical: 10d, analysis: 4h, extended: 6h}\n"
        "dedup: {method: kdd18}\ncost_shift: {enabled: false}\n"
    )
    out_path = tmp_path / "kdd.json"
    code, _, err = run("detect", str(series_csv), "-c", str(config), "-o", str(out_path))
    assert code == 0, err
    report = json.loads(out_path.read_text())
    assert {r["series"] for r in report["regressions"]} == {"gcpu:leaf (app/views.py)", "qps:web"}
    assert all("stack_dedup" in r["verdicts"] for r in report["regressions"])
    assert report["funnel"]["after_som_dedup"] == report["funnel"]["after_same_regression_merge"]
