"""``regbot scrape``'s failures and rules, through the command line, against a scripted HTTP
server serving a real Go CPU profile (``tests/fixtures/pprof/go_cpu.pb.gz``) and the answers a
healthy Go service does not give on demand: garbage, 5xx then success, 404, silence. Its
endpoints are named by path (``http://host/good``: a URL with a path is used as written). The real Go
service is in ``test_scrape_go.py``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import run_cli
from scripted_http import Scripted, always, scripted_server

from regbot.bot.config import load_config
from regbot.bot.sources.baseline import configured_source_names
from regbot.bot.sources.gather import configured_sources
from regbot.bot.sources.pprof_scrape import RETRY_SCALE_ENV
from regbot.bot.sources.source import FetchWindow, ProfileSource
from regbot.profiles.store import open_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROFILE = (FIXTURES / "pprof" / "go_cpu.pb.gz").read_bytes()
BUSY = b"Could not enable CPU profiling: cpu profiling already in use\n"


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RETRY_SCALE_ENV, "0")


@pytest.fixture
def server() -> Iterator[Scripted]:
    scripts = {
        "/good": always(200, PROFILE),
        "/garbage": always(200, b"<html><body>It works!</body></html>\n", "text/html"),
        "/empty": always(200, b""),
        "/flaky": lambda n, _: (503, b"warming up\n", {}) if n < 2 else (200, PROFILE, {}),
        "/busy": always(500, BUSY, "text/plain"),
    }
    with scripted_server(scripts) as state:
        state.scripts["/silent"] = lambda n, _: (state.release.wait(30), (200, b"", {}))[1]
        yield state


def scrape(*argv: str) -> tuple[int, str, str]:
    return run_cli("scrape", "--seconds", "1", "--once", *argv)


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store holding one ingested profile."""
    (tmp_path / "profile.pb.gz").write_bytes(PROFILE)
    code, _, err = run_cli(
        "ingest", str(tmp_path / "profile.pb.gz"), "--store", str(tmp_path / "s")
    )
    assert code == 0, err
    return tmp_path / "s"


def test_an_unreachable_target_is_one_line_and_leaves_the_store_as_it_was(store: Path) -> None:
    before = tree(store)
    code, out, err = scrape("--target", "http://127.0.0.1:1", "--store", str(store))
    assert code == 2
    assert err.splitlines() == [
        "regbot: scrape 127.0.0.1:1 (http://127.0.0.1:1/debug/pprof/profile?seconds=1): expected a "
        "reachable pprof endpoint (3 attempts), found 'Failed to establish a new connection: "
        "[Errno 111] Connection refused'",
        "regbot: scrape: expected at least one target to answer with a profile, none did "
        f"(1 targets, 1 round); {store} unchanged",
    ]
    assert "nothing written" in out
    assert tree(store) == before


def test_nothing_scraped_creates_no_store_folder(tmp_path: Path) -> None:
    code, _, _ = scrape("--target", "http://127.0.0.1:1", "--store", str(tmp_path / "new"))
    assert code == 2 and not (tmp_path / "new").exists()


def test_garbage_and_empty_answers_say_what_came_instead(server: Scripted, store: Path) -> None:
    before = tree(store)
    code, _, err = scrape(
        "--target",
        f"{server.url}/garbage",
        "--target",
        f"{server.url}/empty",
        "--store",
        str(store),
    )
    assert code == 2
    garbage, empty, _summary = err.splitlines()
    expected = "expected a pprof profile (gzip-compressed protobuf, as /debug/pprof/profile serves)"
    assert garbage == (
        f"regbot: scrape 127.0.0.1:{server.url.rsplit(':', 1)[1]}/garbage "
        f"({server.url}/garbage?seconds=1): {expected}, "
        "found '<html><body>It works!</body></html>'"
    )
    assert empty.endswith(f"{expected}, found 'an empty answer'")
    assert tree(store) == before


def test_a_profile_is_stored_labelled_by_its_target_and_dated_by_its_own_clock(
    server: Scripted, tmp_path: Path
) -> None:
    code, out, err = scrape(
        "--target", f"web-1={server.url}/good?debug=0", "--store", str(tmp_path)
    )
    assert (code, err) == (0, "")
    assert server.requests == [("/good", {"debug": "0", "seconds": "1"})]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (key, entry), *_ = manifest["ingested"].items()
    assert key == hashlib.sha256(PROFILE).hexdigest()  # as `regbot ingest` keys a pprof file
    assert entry["source"] == f"web-1 ({server.url}/good?debug=0&seconds=1)"
    assert "web-1" in out and "stored" in out
    # the fixture's time_nanos (2026-11-22), not the time of the scrape
    assert open_store(tmp_path).records().bucket_s.tolist()[0] < 1_800_000_000


def test_the_same_answer_twice_counts_once(server: Scripted, tmp_path: Path) -> None:
    target = ("--target", f"{server.url}/good", "--store", str(tmp_path))
    assert scrape(*target)[0] == 0
    weights = open_store(tmp_path).records().weight.sum()
    code, out, _ = scrape(*target)
    assert code == 0 and "(1 already there)" in out
    assert open_store(tmp_path).records().weight.sum() == weights
    assert (
        run_cli("ingest", str(FIXTURES / "pprof" / "go_cpu.pb.gz"), "--store", str(tmp_path))[0]
        == 0
    )
    assert open_store(tmp_path).records().weight.sum() == weights


def test_5xx_answers_are_retried_until_the_profile_comes(server: Scripted, tmp_path: Path) -> None:
    code, _, err = scrape("--target", f"{server.url}/flaky", "--store", str(tmp_path))
    assert (code, err) == (0, "")
    assert server.count("/flaky") == 3


def test_retries_are_counted_and_a_lasting_5xx_is_one_line(
    server: Scripted, tmp_path: Path
) -> None:
    code, _, err = scrape("--target", f"{server.url}/busy", "--store", str(tmp_path))
    assert code == 2
    assert err.splitlines()[0].endswith(
        "expected HTTP 200 from the pprof endpoint (3 attempts), found 'HTTP 500: Could not "
        "enable CPU profiling: cpu profiling already in use'"
    )
    assert server.count("/busy") == 3
    code, _, err = scrape(
        "--target", f"{server.url}/flaky", "--store", str(tmp_path), "--retries", "0"
    )
    assert code == 2 and "found 'HTTP 503: warming up'" in err
    assert server.count("/flaky") == 1


def test_a_404_is_not_retried(server: Scripted, tmp_path: Path) -> None:
    code, _, err = scrape("--target", f"{server.url}/nowhere", "--store", str(tmp_path))
    assert code == 2 and "found 'HTTP 404: 404 page not found'" in err
    assert server.count("/nowhere") == 1


def test_a_silent_endpoint_times_out_after_seconds_plus_timeout_and_is_not_retried(
    server: Scripted, tmp_path: Path
) -> None:
    code, _, err = scrape(
        "--target",
        f"{server.url}/silent",
        "--timeout",
        "0.3s",
        "--store",
        str(tmp_path),
        "--target",
        f"{server.url}/good",
    )
    assert code == 0
    assert err.splitlines() == [
        f"regbot: scrape 127.0.0.1:{server.url.rsplit(':', 1)[1]}/silent "
        f"({server.url}/silent?seconds=1): expected an answer within 1.3 s "
        "(seconds + sources.scrape.timeout)"
    ]
    assert server.count("/silent") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "--target: expected at least one target (--target URL)"),
        (("--target", "ftp://x"), "--target: expected an http:// or https:// URL with a host"),
        (("--target", "http://h?seconds=5"), "--target: expected a URL without seconds="),
        (("--target", "a=http://h", "--target", "a=http://i"), "distinct names"),
        (("--target", "http://h", "--seconds", "0"), "--seconds: expected a whole number >= 1"),
        (("--target", "http://h", "--retries", "-1"), "--retries: expected a whole number >= 0"),
        (("--target", "http://h", "--interval", "0s"), "--interval: expected a positive duration"),
        (("--target", "http://h", "--count", "0"), "--count: expected a whole number >= 1"),
        (("--target", "http://h", "--once", "--count", "2"), "not allowed with argument"),
    ],
)
def test_bad_arguments_are_one_line_before_any_request(
    argv: tuple[str, ...], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("scrape", "--store", str(tmp_path / "s"), *argv)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "s").exists()


def test_a_store_that_cannot_take_the_profiles_is_refused_before_any_request(
    server: Scripted, store: Path, tmp_path: Path
) -> None:
    target = ("--target", f"{server.url}/good")
    code, _, err = scrape(*target, "--store", str(store), "--bucket", "30s")
    assert code == 2 and "bucket width 60s (the store's own); it cannot change" in err
    (tmp_path / "a-file").write_text("x")
    code, _, err = scrape(*target, "--store", str(tmp_path / "a-file"))
    assert code == 2 and "expected a directory for the sample store" in err
    assert server.requests == []


def test_config_errors_name_the_key_and_write_nothing(server: Scripted, tmp_path: Path) -> None:
    config = tmp_path / "regbot.yml"
    config.write_text(
        f"sources:\n  scrape:\n    targets: ['{server.url}/good']\n    interva: 10s\n",
        encoding="utf-8",
    )
    code, _, err = run_cli("scrape", "-c", str(config), "--once")
    assert code == 2
    assert err.strip() == (
        f"regbot: {config}:4: sources.scrape.interva: unknown key: expected one of targets, "
        "seconds, interval, timeout, retries, store"
    )
    assert server.requests == [] and not (tmp_path / ".regbot").exists()


def test_the_config_store_and_targets_and_the_flags_over_them(
    server: Scripted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "regbot.yml").write_text(
        f"sources:\n  scrape:\n    targets: ['{server.url}/good']\n    seconds: 3\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)  # ./regbot.yml is read without -c
    code, out, err = run_cli("scrape", "--once")
    assert (code, err) == (0, "")
    assert server.requests[-1][1] == {"seconds": "3"}
    assert (tmp_path / ".regbot" / "scraped" / "manifest.json").is_file()  # the default store
    assert f"127.0.0.1:{server.url.rsplit(':', 1)[1]}/good" in out  # host:port and path
    code, _, err = run_cli(
        "scrape",
        "--once",
        "--seconds",
        "1",
        "--target",
        f"other={server.url}/flaky",
        "--store",
        str(tmp_path / "other"),
    )
    assert (code, err) == (0, "")
    assert server.count("/flaky") == 3 and server.requests[-1][1] == {"seconds": "1"}
    assert (tmp_path / "other" / "manifest.json").is_file()


def test_run_reads_the_scrape_store_as_its_profiles(server: Scripted, tmp_path: Path) -> None:
    config_path = tmp_path / "regbot.yml"
    config_path.write_text(
        f"sources:\n  scrape:\n    targets: ['{server.url}/good']\n    store: scraped\n",
        encoding="utf-8",
    )
    config = load_config(config_path)
    assert configured_sources(config) == []  # nothing scraped yet: no profiles
    assert configured_source_names(config.sources) == ["profiles"]  # so a missing baseline
    assert run_cli("scrape", "-c", str(config_path), "--once")[0] == 0
    (source,) = configured_sources(config)
    assert isinstance(source, ProfileSource)
    assert any(s.id.startswith("gcpu:main.crunch") for s in source.fetch(FetchWindow(0, 2e9)))
