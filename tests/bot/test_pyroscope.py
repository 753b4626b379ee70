"""The Pyroscope source (``bot/sources/pyroscope.py``) over HTTP, against a stand-in server that
answers the render API with the Pyroscope project's own render fixtures
(``tests/fixtures/pyroscope/README.md``), one per bucket: the requests it makes, the gCPU series
and sample index it gives, its place among the configured sources, and its one-line errors.
Pyroscope itself cannot be installed here, so this is the one stand-in server of the sources."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scripted_http import Answer, Scripted, always, scripted_server

from regbot.bot.config import PyroscopeSource, load_config
from regbot.bot.sources.baseline import configured_source_names
from regbot.bot.sources.gather import configured_sources, gather_series
from regbot.bot.sources.pyroscope import (
    AHEAD,
    MAX_BUCKETS,
    RETRY_SCALE_ENV,
    PyroscopeStacks,
    bucket_starts,
)
from regbot.bot.sources.source import FetchWindow, Source
from regbot.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pyroscope"
SIMPLE = (FIXTURES / "simple-golang-app-cpu.json").read_bytes()
SERVER = (FIXTURES / "pyroscope.server.cpu.json").read_bytes()
EMPTY = json.dumps({"flamebearer": {"names": ["total"], "levels": [[0, 0, 0, 0]], "numTicks": 0}})
STEP = 600
T0 = 1_800_000_000 // STEP * STEP
QUERY = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="simple.golang.app"}'


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RETRY_SCALE_ENV, "0")


def by_bucket(_n: int, query: dict[str, str]) -> Answer:
    """The simple Go app in the first bucket, the Pyroscope server in the second, then nothing."""
    body = {T0: SIMPLE, T0 + STEP: SERVER}.get(int(query["from"]), EMPTY.encode())
    return 200, body, {"Content-Type": "application/json"}


@pytest.fixture
def pyroscope() -> Iterator[Scripted]:
    with scripted_server({"/pyroscope/render": by_bucket}) as server:
        yield server


def settings(url: str, **changes: object) -> PyroscopeSource:
    fields: dict[str, object] = {"url": url, "query": QUERY, "step_s": float(STEP)}
    fields.update(changes)
    return PyroscopeSource(**fields)  # type: ignore[arg-type]


def test_one_render_request_per_bucket_and_gcpu_series_from_the_stacks(pyroscope: Scripted) -> None:
    source = PyroscopeStacks(settings(pyroscope.url, max_nodes=500), gcpu_floor=0.00001)
    assert isinstance(source, Source) and source.index is None
    series = {s.id: s for s in source.fetch(FetchWindow(T0 + 10, T0 + 3 * STEP))}

    assert sorted(pyroscope.requests, key=lambda r: r[1]["from"]) == [
        (
            "/pyroscope/render",
            {
                "query": QUERY,
                "from": str(T0 + k * STEP),
                "until": str(T0 + (k + 1) * STEP),
                "format": "json",
                "max-nodes": "500",
            },
        )
        for k in range(3)
    ]
    work = series["gcpu:main.work"]
    assert work.kind == "gcpu" and work.unit == "share"
    # the third bucket held no samples, so it is no point (as an empty store bucket)
    np.testing.assert_array_equal(work.timestamps_s, [T0, T0 + STEP])
    np.testing.assert_allclose(work.values, [(214 + 771) / 988, 0.0])
    np.testing.assert_allclose(series["gcpu:runtime.mcall"].values, [0.0, 16 / 26])
    np.testing.assert_allclose(series["gcpu:main.fastFunction"].values, [215 / 988, 0.0])
    assert source.index is not None  # the stacks, for attribution
    np.testing.assert_array_equal(source.index.totals, [988, 26])


def test_the_render_path_and_a_base_url_with_a_slash(pyroscope: Scripted) -> None:
    pyroscope.scripts["/render"] = always(200, SIMPLE, "application/json")
    source = PyroscopeStacks(settings(pyroscope.url + "/", path="/render"), gcpu_floor=0.0)
    assert source.fetch(FetchWindow(T0, T0 + STEP))
    assert [path for path, _ in pyroscope.requests] == ["/render"]


def test_pyroscope_s_refusal_is_one_line_naming_the_request(pyroscope: Scripted) -> None:
    pyroscope.scripts["/pyroscope/render"] = always(400, b"failed to parse 'query'\n")
    source = PyroscopeStacks(settings(pyroscope.url, query="nonsense"), gcpu_floor=0.0)
    with pytest.raises(InputError) as error:
        source.fetch(FetchWindow(T0, T0 + STEP))
    message = str(error.value)
    assert message.startswith(f"sources.pyroscope ({pyroscope.url}/pyroscope/render?query=")
    assert message.endswith(
        "expected HTTP 200 from the Pyroscope server, found \"HTTP 400: failed to parse 'query'\""
    )
    assert len(pyroscope.requests) == 1  # a 400 is not retried


def test_a_failure_stops_the_asking(pyroscope: Scripted) -> None:
    pyroscope.scripts["/pyroscope/render"] = always(400, b"bad query\n")
    source = PyroscopeStacks(settings(pyroscope.url), gcpu_floor=0.0)
    with pytest.raises(InputError, match="HTTP 400: bad query"):
        source.fetch(FetchWindow(T0, T0 + 40 * STEP))
    assert len(pyroscope.requests) <= AHEAD + 1  # of 40 buckets


def test_a_5xx_is_retried_and_an_answer_that_is_no_flamebearer_is_named(
    pyroscope: Scripted,
) -> None:
    pyroscope.scripts["/pyroscope/render"] = lambda n, q: (
        (503, b"", {}) if n == 0 else (200, b"<html>login</html>", {})
    )
    with pytest.raises(InputError, match=r"bucket 2027-01-15T08:00:00Z\): expected a JSON"):
        PyroscopeStacks(settings(pyroscope.url), gcpu_floor=0.0).fetch(FetchWindow(T0, T0 + 1))
    assert len(pyroscope.requests) == 2


def test_an_unreachable_server_is_one_line() -> None:
    source = PyroscopeStacks(settings("http://127.0.0.1:1"), gcpu_floor=0.0)
    with pytest.raises(InputError) as error:
        source.fetch(FetchWindow(T0, T0 + STEP))
    assert str(error.value).endswith(
        "expected a reachable Pyroscope server (3 attempts), found 'Failed to establish a new "
        "connection: [Errno 111] Connection refused'"
    )


def test_buckets_are_aligned_whole_steps_and_limited_in_number() -> None:
    s = settings("http://p")
    assert bucket_starts(s, FetchWindow(T0 + 1, T0 + STEP + 1)) == [T0, T0 + STEP]
    assert bucket_starts(s, FetchWindow(T0, T0)) == []
    with pytest.raises(InputError, match=r"^sources\.pyroscope\.step: expected a step giving"):
        bucket_starts(s, FetchWindow(T0, T0 + (MAX_BUCKETS + 1) * STEP))
    with pytest.raises(InputError, match="a whole number of seconds"):
        bucket_starts(settings("http://p", step_s=90.5), FetchWindow(T0, T0 + 1000))


def test_a_config_with_pyroscope_gathers_its_series_and_stacks(
    pyroscope: Scripted, tmp_path: Path
) -> None:
    config_path = tmp_path / "regbot.yml"
    config_path.write_text(
        f"sources:\n  pyroscope:\n    url: {pyroscope.url}\n    query: '{QUERY}'\n"
        f"    step: {STEP}s\n",
        encoding="utf-8",
    )
    config = load_config(config_path)
    assert [type(s) for s in configured_sources(config)] == [PyroscopeStacks]
    assert configured_source_names(config.sources) == ["pyroscope"]
    run = gather_series(config, T0, T0 + 2 * STEP)
    assert run.counts == {"pyroscope": len(run.series)} and run.series
    assert run.index is not None and len(run.index.bucket_times_s) == 2

    config_path.write_text(config_path.read_text() + "  profiles: [p/]\n", encoding="utf-8")
    with pytest.raises(InputError, match="either sources.profiles or sources.pyroscope"):
        configured_sources(load_config(config_path))
