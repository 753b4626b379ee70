"""``regbot scrape`` against a real Go service (net/http/pprof), built and started by the tests
(``tests/support/go_service.py``): its CPU profiles land in the sample store with the Go
functions as frames, ``regbot gcpu`` shows them, and a failing target next to it is reported on
one line while the Go service's profile is kept."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import run_cli
from go_service import BURNERS, build_go_service, running

from regbot.bot.sources.pprof_scrape import RETRY_SCALE_ENV
from regbot.profiles.model import parse_frame
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RETRY_SCALE_ENV, "0")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = build_go_service(tmp_path_factory.mktemp("go-service"))
    with running(binary) as url:
        yield url


def functions_in(store_dir: Path) -> dict[str, float]:
    """Sample weight per function (a frame's function) over the whole store."""
    store = open_store(store_dir)
    index = SampleIndex(store.table, store.records())
    weight_of_stack = index.counts.sum(axis=0).A1
    found: dict[str, float] = {}
    for stack, frames in enumerate(store.table.stacks):
        for function in {parse_frame(store.table.frames[f]).function for f in frames}:
            found[function] = found.get(function, 0.0) + float(weight_of_stack[stack])
    return found


def test_rounds_of_the_go_service_land_in_the_store_with_its_functions(
    service: str, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    before = time.time()
    code, out, err = run_cli(
        "scrape",
        "--target",
        f"checkout={service}",
        "--store",
        str(store),
        "--seconds",
        "1",
        "--count",
        "2",
        "--interval",
        "1s",
    )
    after = time.time()
    assert (code, err) == (0, "")
    assert "round 1 of 2" in out and "round 2 of 2" in out and "stored" in out

    manifest = json.loads((store / "manifest.json").read_text())
    entries = list(manifest["ingested"].values())
    assert len(entries) == 2  # one profile per round, each its own key
    assert {e["source"] for e in entries} == {f"checkout ({service}/debug/pprof/profile?seconds=1)"}
    assert {e["sample_type"] for e in entries} == {"samples/count"}

    functions = functions_in(store)
    for burner in BURNERS:
        assert functions.get(burner, 0) > 0, sorted(functions)
    # the profile's own time (time_nanos, when collection began) dates the samples
    buckets = open_store(store).records().bucket_s
    assert (buckets >= int(before) // 60 * 60).all() and (buckets <= after).all()

    code, out, err = run_cli("gcpu", "--store", str(store))
    assert code == 0, err
    for burner in BURNERS:
        assert f"gcpu:{burner} (" in out


def test_a_failing_target_beside_the_service_is_one_line_and_the_service_is_kept(
    service: str, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    code, out, err = run_cli(
        "scrape",
        "--target",
        service,
        "--target",
        "down=http://127.0.0.1:1",
        "--store",
        str(store),
        "--seconds",
        "1",
        "--once",
    )
    assert code == 0  # one target answered
    lines = err.splitlines()
    assert lines == [
        "regbot: scrape down (http://127.0.0.1:1/debug/pprof/profile?seconds=1): expected a "
        "reachable pprof endpoint (3 attempts), found 'Failed to establish a new connection: "
        "[Errno 111] Connection refused'"
    ]
    assert "failed" in out and "stored" in out
    assert all(functions_in(store).get(b, 0) > 0 for b in BURNERS)


def test_a_config_file_names_the_targets_and_the_store(service: str, tmp_path: Path) -> None:
    (tmp_path / "regbot.yml").write_text(
        "sources:\n"
        "  scrape:\n"
        f"    targets: [{{name: checkout-1, url: '{service}'}}]\n"
        "    seconds: 1\n"
        "    store: scraped/\n"
        "profiles:\n"
        "  bucket: 30s\n",
        encoding="utf-8",
    )
    code, out, err = run_cli("scrape", "-c", str(tmp_path / "regbot.yml"), "--once")
    assert (code, err) == (0, ""), err
    store = open_store(tmp_path / "scraped")
    assert store.bucket_width_s == 30
    assert all(functions_in(tmp_path / "scraped").get(b, 0) > 0 for b in BURNERS)
    assert "checkout-1" in out
