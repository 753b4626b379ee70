"""`regbot ingest` and `regbot gcpu` driven in-process through main(), with exit codes 0 and 2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from cli_runner import run_cli

from regbot import __version__

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "profiles"


def run(*argv: str) -> tuple[int, str, str]:
    return run_cli(*argv, width=200)


def test_version(capsys) -> None:
    code, _, _ = run("--version")
    assert code == 0
    assert capsys.readouterr().out.strip() == f"regbot {__version__}"


def test_ingest_examples_then_reingest_skips(tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, out, err = run("ingest", str(EXAMPLES), "--store", str(store))
    assert code == 0, err
    assert "folded" in out and "6 time buckets of 60s" in out
    manifest = json.loads((store / "manifest.json").read_text())
    assert len(manifest["ingested"]) == 6
    code, out, _ = run("ingest", str(EXAMPLES), "--store", str(store))
    assert code == 0
    assert json.loads((store / "manifest.json").read_text()) == manifest
    assert "│     6 │                          6 │" in out


def test_gcpu_prints_and_writes_series(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert run("ingest", str(EXAMPLES), "--store", str(store))[0] == 0
    target = tmp_path / "series.jsonl"
    code, out, err = run("gcpu", "--store", str(store), "-o", str(target), "--top", "5")
    assert code == 0, err
    assert "gcpu:serve (svc.py)" in out
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    handle = next(s for s in lines if s["id"] == "gcpu:handle (svc.py)")
    assert handle["kind"] == "gcpu" and len(handle["values"]) == 6
    assert all(0.0 <= v <= 1.0 for s in lines for v in s["values"])


def test_at_overrides_the_file_name(tmp_path: Path) -> None:
    profile = tmp_path / "no-time-here.folded"
    profile.write_text("a;b 3\n")
    code, _, err = run("ingest", str(profile), "--store", str(tmp_path / "s"))
    assert code == 2 and "pass --at" in err
    code, out, _ = run(
        "ingest", str(profile), "--store", str(tmp_path / "s"), "--at", "2026-11-22T10:00:00Z"
    )
    assert code == 0 and "2026-11-22T10:00:00Z" in out


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "1732262400.folded",
            b"a;b 1\na;b oops\n",
            "1732262400.folded:2: expected 'frame;frame;...;frame COUNT'",
        ),
        ("p.pb.gz", gzip.compress(b"\x0a\x02\x08\x01" * 50)[:-9], "p.pb.gz"),
        ("t.json", b'{"shared": {"frames": [', "t.json"),
    ],
)
def test_bad_profiles_exit_2_with_one_line_and_leave_store(
    tmp_path: Path, name, content, message
) -> None:
    store = tmp_path / "store"
    assert run("ingest", str(EXAMPLES), "--store", str(store))[0] == 0
    before = (store / "manifest.json").read_bytes()
    bad = tmp_path / name
    bad.write_bytes(content)
    code, _, err = run("ingest", str(EXAMPLES), str(bad), "--store", str(store), "--at", "0")
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (store / "manifest.json").read_bytes() == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["ingest", "missing.folded", "--store", "S"],
            "missing.folded: expected an existing profile file",
        ),
        (["ingest", "X", "--store", "S", "--at", "yesterday"], "--at: expected a time"),
        (["ingest", "X", "--store", "S", "--bucket", "fast"], "--bucket: expected a duration"),
        (["gcpu", "--store", "nowhere"], "nowhere: expected a sample store"),
        (["ingest"], "regbot ingest"),
    ],
)
def test_bad_arguments_exit_2(tmp_path: Path, monkeypatch, argv, message) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "X").write_text("a 1\n")
    code, _, err = run(*argv)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_config_sets_bucket_and_bad_config_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "regbot.yml"
    config.write_text("profiles:\n  bucket: 5m\n")
    store = tmp_path / "store"
    code, out, err = run("ingest", str(EXAMPLES), "--store", str(store), "-c", str(config))
    assert code == 0, err
    assert "2 time buckets of 300s" in out  # 10:00-10:04 and 10:05
    config.write_text("profiles:\n  bucket: [1, 2]\n")
    code, _, err = run("ingest", str(EXAMPLES), "--store", str(tmp_path / "s2"), "-c", str(config))
    assert code == 2 and "profiles.bucket" in err
    config.write_text("profiles:\n  buckett: 5m\n")
    code, _, err = run("ingest", str(EXAMPLES), "--store", str(tmp_path / "s2"), "-c", str(config))
    assert code == 2 and "buckett" in err and "unknown key" in err


def test_ingest_every_format_in_one_run(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    files = [
        fixtures / "pprof" / "go_cpu.pb.gz",
        fixtures / "perf" / "spin_realtime.perf.txt",
        fixtures / "pyspy" / "workload.speedscope.json",
        fixtures / "pyspy" / "workload.chrometrace.json",
        fixtures / "pyspy" / "workload.folded",
    ]
    store = tmp_path / "store"
    argv = ["ingest", *map(str, files), "--store", str(store), "--at", "2026-11-22T10:00:00Z"]
    code, out, err = run(*argv)
    assert code == 0, err
    for name in ("pprof", "perf-script", "speedscope", "chrometrace", "folded"):
        assert name in out
    assert len(json.loads((store / "manifest.json").read_text())["ingested"]) == 5
    code, out, err = run("gcpu", "--store", str(store), "--top", "40")
    assert code == 0, err
    assert "gcpu:main" in out  # perf's native frame, beside Python and Go frames
