"""Tests of the Prometheus source against a real Prometheus server (and a scripted HTTP server
for the failure answers a healthy Prometheus does not give on demand).

The module fixture writes two days of history as OpenMetrics text, turns it into TSDB blocks
with ``promtool tsdb create-blocks-from openmetrics`` and serves them with ``prometheus``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from regbot.bot.config import PrometheusQuery, PrometheusSource
from regbot.bot.sources.prometheus import (
    MAX_POINTS_PER_REQUEST,
    MAX_POINTS_PER_SERIES,
    fetch_prometheus_series,
    plan_requests,
    query_step_s,
    series_id_for,
)
from regbot.bot.sources.prometheus_http import RETRY_SCALE_ENV, prometheus_retry, retry_scale
from regbot.errors import InputError

SPACING_S = 60
DAY_S = 86400
LOOKBACK_S = 300  # Prometheus' default lookback delta


@pytest.fixture(autouse=True)
def no_retry_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without sleeping, through the environment as a test run sets it."""
    monkeypatch.setenv(RETRY_SCALE_ENV, "0")


# --- the generated history -----------------------------------------------------------------


@dataclass
class History:
    """What was written to Prometheus: per (metric name, sorted labels), times and values."""

    start_s: int
    end_s: int
    step_at_s: int
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict
    )

    def add(self, name: str, labels: dict[str, str], times: np.ndarray, values: np.ndarray):
        self.samples[(name, tuple(sorted(labels.items())))] = (times, values)

    def at(self, name: str, labels: dict[str, str], when: np.ndarray) -> np.ndarray:
        """The value Prometheus evaluates at each time: the latest sample at or before it, if
        no older than the lookback delta (else NaN)."""
        times, values = self.samples[(name, tuple(sorted(labels.items())))]
        index = np.searchsorted(times, when, side="right") - 1
        found = values[np.clip(index, 0, None)].astype(np.float64)
        stale = (index < 0) | (when - times[np.clip(index, 0, None)] > LOOKBACK_S)
        found[stale] = np.nan
        return found


def make_history() -> History:
    """Two days at 60 s ending an hour ago (Prometheus drops blocks older than its retention,
    so the times follow the clock): two gauges (one with a planted step), a gauge with NaN and
    +Inf points, and two counters (one whose rate doubles at the step time)."""
    rng = np.random.default_rng(20240601)
    end = int(time.time()) // SPACING_S * SPACING_S - 3600
    start = end - 2 * DAY_S
    times = np.arange(start, end + 1, SPACING_S, dtype=np.int64)
    step_at = start + DAY_S
    history = History(start, end, step_at)
    after = times >= step_at
    history.add("cpu_usage", {"host": "a"}, times, rng.normal(0.40, 0.01, times.size))
    history.add(
        "cpu_usage", {"host": "b"}, times, rng.normal(0.30, 0.01, times.size) + 0.05 * after
    )
    ratio = rng.uniform(0, 1, times.size)
    ratio[::97] = np.nan
    ratio[5::131] = np.inf
    history.add("queue_ratio", {"shard": "0"}, times, ratio)
    history.add(
        "http_requests_total",
        {"code": "200", "service": "api"},
        times,
        3.0 * np.arange(times.size),
    )
    history.add(
        "http_requests_total",
        {"code": "500", "service": "api"},
        times,
        np.cumsum(np.where(after, 2.0, 1.0)) - 1.0,
    )
    return history


def openmetrics_text(history: History) -> str:
    """The history as OpenMetrics text: families grouped, series in time order, ``# EOF``."""
    kinds = {"cpu_usage": "gauge", "queue_ratio": "gauge", "http_requests_total": "counter"}
    lines = []
    for family, kind in kinds.items():
        lines.append(f"# TYPE {family.removesuffix('_total')} {kind}")
        for (name, labels), (times, values) in history.samples.items():
            if name != family:
                continue
            label_text = ",".join(f'{k}="{v}"' for k, v in labels)
            lines.extend(
                f"{name}{{{label_text}}} {_om_value(v)} {t}"
                for t, v in zip(times.tolist(), values.tolist())
            )
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _om_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


# --- the real server -----------------------------------------------------------------------


@dataclass
class Server:
    url: str
    history: History


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _require_prometheus() -> None:
    missing = [name for name in ("prometheus", "promtool") if shutil.which(name) is None]
    if not missing:
        return
    reason = f"{' and '.join(missing)} not installed (Debian package `prometheus`)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI is set, so the Prometheus tests must run")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    _require_prometheus()
    folder = tmp_path_factory.mktemp("prometheus")
    history = make_history()
    (folder / "history.om").write_text(openmetrics_text(history), encoding="utf-8")
    data = folder / "data"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "history.om", str(data)],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=60,
    )
    (folder / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n", encoding="utf-8")
    port = _free_port()
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=100y",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_ready(f"http://127.0.0.1:{port}", process, folder / "prometheus.log")
        yield Server(f"http://127.0.0.1:{port}", history)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"prometheus exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    pytest.fail(f"prometheus not ready after 30 s:\n{log.read_text()}")


def source(url: str, *queries: PrometheusQuery, step_s: float = 60.0) -> PrometheusSource:
    return PrometheusSource(url=url, queries=queries, step_s=step_s, timeout_s=10.0)


def by_id(series: list) -> dict:
    return {item.id: item for item in series}


# --- against the real server ---------------------------------------------------------------


def test_values_round_trip_exactly_on_the_sample_grid(server: Server) -> None:
    history = server.history
    query = PrometheusQuery(name="cpu", query="cpu_usage", kind="cpu", unit="share")
    got = by_id(fetch_prometheus_series(source(server.url, query), history.start_s, history.end_s))
    assert sorted(got) == ["cpu{host=a}", "cpu{host=b}"]
    grid = np.arange(history.start_s, history.end_s + 1, SPACING_S, dtype=np.float64)
    for host in ("a", "b"):
        series = got[f"cpu{{host={host}}}"]
        np.testing.assert_array_equal(series.timestamps_s, grid)
        np.testing.assert_array_equal(
            series.values, history.at("cpu_usage", {"host": host}, series.timestamps_s)
        )
        assert (series.kind, series.unit, dict(series.labels)) == ("cpu", "share", {"host": host})
    b = got["cpu{host=b}"]
    before = b.values[b.timestamps_s < history.step_at_s].mean()
    after = b.values[b.timestamps_s >= history.step_at_s].mean()
    assert after - before == pytest.approx(0.05, abs=0.005)


def test_values_between_samples_are_the_latest_sample(server: Server) -> None:
    """A step that does not divide the spacing: each value is the latest sample at or before its
    time, exactly."""
    history = server.history
    query = PrometheusQuery(name="cpu", query='cpu_usage{host="a"}')
    start = history.start_s + 17.5
    (series,) = fetch_prometheus_series(
        source(server.url, query, step_s=90.25), start, history.start_s + 6 * 3600
    )
    np.testing.assert_array_equal(
        series.timestamps_s, start + 90.25 * np.arange(series.timestamps_s.size)
    )
    np.testing.assert_array_equal(
        series.values, history.at("cpu_usage", {"host": "a"}, series.timestamps_s)
    )


def test_ids_come_from_sorted_labels_without_the_metric_name(server: Server) -> None:
    history = server.history
    queries = (
        PrometheusQuery(name="requests", query="http_requests_total", kind="throughput"),
        PrometheusQuery(name="cpu_total", query="sum(cpu_usage)"),
        PrometheusQuery(name="both", query='{__name__=~"cpu_usage|queue_ratio"}'),
    )
    got = fetch_prometheus_series(source(server.url, *queries), history.end_s - 3600, history.end_s)
    assert [item.id for item in got] == [
        "requests{code=200,service=api}",
        "requests{code=500,service=api}",
        "cpu_total",
        "both{__name__=cpu_usage,host=a}",
        "both{__name__=cpu_usage,host=b}",
        "both{__name__=queue_ratio,shard=0}",
    ]
    assert dict(got[0].labels) == {"code": "200", "service": "api"}
    assert dict(got[2].labels) == {}
    assert [item.kind for item in got] == ["throughput"] * 2 + ["metric"] * 4


def test_a_range_needing_several_requests_gives_every_point_once(server: Server) -> None:
    history = server.history
    step = 10.0
    plan = plan_requests(history.start_s, history.end_s, step)
    assert len(plan) == 2  # 17,281 points; Prometheus refuses more than 11,000 in one request
    query = PrometheusQuery(name="cpu", query='cpu_usage{host="b"}')
    (series,) = fetch_prometheus_series(
        source(server.url, query, step_s=step), history.start_s, history.end_s
    )
    expected = np.arange(history.start_s, history.end_s + 1, step, dtype=np.float64)
    np.testing.assert_array_equal(series.timestamps_s, expected)
    np.testing.assert_array_equal(
        series.values, history.at("cpu_usage", {"host": "b"}, series.timestamps_s)
    )


def test_rate_shows_the_planted_change(server: Server) -> None:
    history = server.history
    query = PrometheusQuery(
        name="rps", query="rate(http_requests_total[5m])", kind="throughput", unit="1/s"
    )
    got = by_id(fetch_prometheus_series(source(server.url, query), history.start_s, history.end_s))
    assert sorted(got) == ["rps{code=200,service=api}", "rps{code=500,service=api}"]
    # Windows that reach before the first sample see only part of 5 minutes; skip them.
    ok = got["rps{code=200,service=api}"]
    full = ok.timestamps_s >= history.start_s + LOOKBACK_S
    assert full.sum() > 2800
    np.testing.assert_allclose(ok.values[full], 3.0 / 60, rtol=1e-9)
    errors = got["rps{code=500,service=api}"]
    full = errors.timestamps_s >= history.start_s + LOOKBACK_S
    settled_before = full & (errors.timestamps_s < history.step_at_s - SPACING_S)
    settled_after = errors.timestamps_s >= history.step_at_s + LOOKBACK_S
    np.testing.assert_allclose(errors.values[settled_before], 1.0 / 60, rtol=1e-9)
    np.testing.assert_allclose(errors.values[settled_after], 2.0 / 60, rtol=1e-9)
    assert errors.unit == "1/s"


def test_nan_and_inf_points_are_dropped(server: Server) -> None:
    history = server.history
    query = PrometheusQuery(name="ratio", query="queue_ratio")
    (series,) = fetch_prometheus_series(source(server.url, query), history.start_s, history.end_s)
    times, values = history.samples[("queue_ratio", (("shard", "0"),))]
    finite = np.isfinite(values)
    assert (~finite).sum() > 40
    np.testing.assert_array_equal(series.timestamps_s, times[finite].astype(np.float64))
    np.testing.assert_array_equal(series.values, values[finite])


def test_bad_promql_names_the_query_url_and_prometheus_error(server: Server) -> None:
    history = server.history
    query = PrometheusQuery(name="broken", query="rate(http_requests_total[5m]")
    with pytest.raises(InputError) as caught:
        fetch_prometheus_series(source(server.url, query), history.end_s - 600, history.end_s)
    message = str(caught.value)
    assert "'broken'" in message
    assert f"{server.url}/api/v1/query_range" in message
    assert "bad_data" in message and "parse error" in message and "HTTP 400" in message


def test_unreachable_url_is_an_input_error_after_retries(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    query = PrometheusQuery(name="cpu", query="up")
    with pytest.raises(InputError) as caught:
        fetch_prometheus_series(source(url, query), 0.0, 600.0)
    message = str(caught.value)
    assert "'cpu'" in message and url in message
    assert "reachable Prometheus server (3 attempts)" in message
    assert "refused" in message.lower()
    assert "\n" not in message and "HTTPConnection" not in message
    assert not [r for r in caplog.records if r.name.startswith("urllib3")]  # no retry warnings


# --- step and request planning (no server) --------------------------------------------------


def test_step_is_kept_up_to_the_series_budget_and_widened_beyond() -> None:
    assert query_step_s(60.0, 0.0, 30 * DAY_S) == 60.0
    assert query_step_s(15.0, 0.0, 15.0 * MAX_POINTS_PER_SERIES) == 15.0
    assert query_step_s(1.0, 0.0, 2 * DAY_S) == 2.0  # 172,800 s / 100,000 -> 2 s
    assert query_step_s(60.0, 0.0, 100 * DAY_S) == 87.0  # ceil(8,640,000 / 100,000)
    assert query_step_s(0.5, 0.0, 10.0) == 0.5  # a sub-second step stays when it fits
    assert query_step_s(0.25, 0.0, 0.25 * MAX_POINTS_PER_SERIES - 0.25) == 0.25
    assert query_step_s(0.25, 0.0, 0.25 * MAX_POINTS_PER_SERIES) == 1.0


@pytest.mark.parametrize(
    ("start", "end", "step"),
    [
        (0.0, 0.0, 60.0),
        (0.0, 59.0, 60.0),
        (1000.0, 1000.0 + 9_999 * 60, 60.0),
        (1000.0, 1000.0 + 10_000 * 60, 60.0),
        (1000.0, 1000.0 + 10_000 * 60 + 59.9, 60.0),
        (1.0005, 86_400.7, 0.25),
        (1_700_000_000.123, 1_700_000_000.123 + 25_001 * 15, 15.0),
    ],
)
def test_requests_cover_the_grid_once_with_at_most_10000_points(
    start: float, end: float, step: float
) -> None:
    plan = plan_requests(start, end, step)
    step_ms = round(step * 1000)
    first_ms = math.ceil(round(start * 1000, 6))
    count = (math.floor(round(end * 1000, 6)) - first_ms) // step_ms + 1
    evaluated = [t for r in plan for t in range(r.start_ms, r.end_ms + 1, r.step_ms)]
    assert evaluated == [first_ms + i * step_ms for i in range(count)]
    assert all(1 <= r.points <= MAX_POINTS_PER_REQUEST for r in plan)
    assert len(plan) == math.ceil(count / MAX_POINTS_PER_REQUEST)
    assert start * 1000 <= evaluated[0] and evaluated[-1] <= end * 1000


def test_window_ending_before_it_starts_is_an_input_error() -> None:
    query = PrometheusQuery(name="cpu", query="up")
    with pytest.raises(InputError, match="end not before start"):
        fetch_prometheus_series(source("http://127.0.0.1:1", query), 100.0, 50.0)


def test_series_ids() -> None:
    assert series_id_for("cpu", {}) == "cpu"
    assert series_id_for("cpu", {"z": "1", "a": "x y"}) == "cpu{a=x y,z=1}"


# --- failure answers, from a scripted HTTP server -----------------------------------------------


DROP = 0  # a scripted "status" that closes the connection without an answer


@dataclass
class Scripted:
    """A real HTTP server on 127.0.0.1 that gives the scripted answers in turn (the last one
    again when they run out) and records each request's method, path, form and arrival time.
    An answer is ``(status, body)`` or ``(status, body, headers)``; status ``DROP`` closes the
    connection without answering."""

    url: str
    answers: list[tuple]
    delay_s: float = 0.0
    requests: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    state = Scripted("", [])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length", 0))
            form = urllib.parse.parse_qs(self.rfile.read(length).decode("utf-8"))
            state.requests.append((self.command, self.path, form))
            state.arrivals.append(time.monotonic())
            time.sleep(state.delay_s)
            status, body, *headers = state.answers[min(len(state.requests), len(state.answers)) - 1]
            if status == DROP:
                return  # HTTP/1.0: the server closes the connection
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers[0] if headers else {}).items():
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(body)
            except BrokenPipeError:  # the client gave up (the timeout test)
                pass

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/prefix/"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _error(error_type: str, error: str) -> bytes:
    return json.dumps({"status": "error", "errorType": error_type, "error": error}).encode()


def _matrix(*results: dict) -> bytes:
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": list(results)}}
    ).encode()


SUCCESS = _matrix({"metric": {"__name__": "up", "job": "x"}, "values": [[60, "1"], [120, "-Inf"]]})


def fetch(url: str, query: str = "up") -> list:
    return fetch_prometheus_series(source(url, PrometheusQuery(name="q", query=query)), 60.0, 120.0)


def test_requests_are_form_encoded_posts(scripted: Scripted) -> None:
    scripted.answers = [(200, SUCCESS)]
    long_query = "sum by (job) (" + " + ".join(["up"] * 2000) + ")"
    (series,) = fetch(scripted.url, long_query)
    assert (series.id, series.timestamps_s.tolist(), series.values.tolist()) == (
        "q{job=x}",
        [60.0],
        [1.0],
    )
    ((method, path, form),) = scripted.requests
    assert (method, path) == ("POST", "/prefix/api/v1/query_range")
    assert form["query"] == [long_query]
    assert (form["start"], form["end"], form["step"]) == (["60.000"], ["120.000"], ["60000ms"])


UNAVAILABLE = _error("unavailable", "too many queries")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ((503, UNAVAILABLE), (503, UNAVAILABLE)),
        ((429, b"slow down"), (502, b"<html>bad gateway</html>")),
        ((504, b"<html>gateway timeout</html>"), (DROP, b"")),
    ],
)
def test_unavailable_answers_and_broken_connections_are_retried_twice(
    scripted: Scripted, first: tuple, second: tuple
) -> None:
    scripted.answers = [first, second, (200, SUCCESS)]
    assert [item.id for item in fetch(scripted.url)] == ["q{job=x}"]
    assert len(scripted.requests) == 3
    assert all(form == scripted.requests[0][2] for _, _, form in scripted.requests)


def test_unavailable_answers_fail_after_three_attempts(scripted: Scripted) -> None:
    scripted.answers = [(503, UNAVAILABLE)]
    with pytest.raises(InputError) as caught:
        fetch(scripted.url)
    assert len(scripted.requests) == 3
    message = str(caught.value)
    assert message == (
        f"prometheus query 'q' ({scripted.url.rstrip('/')}/api/v1/query_range): expected a "
        "successful answer, Prometheus said (HTTP 503) unavailable: too many queries (3 attempts)"
    )


def test_an_answer_that_is_not_json_fails_after_three_attempts(scripted: Scripted) -> None:
    scripted.answers = [(502, b"<html>bad gateway</html>")]
    with pytest.raises(InputError) as caught:
        fetch(scripted.url)
    assert len(scripted.requests) == 3
    message = str(caught.value)
    assert "a JSON answer from the Prometheus HTTP API (HTTP 502) (3 attempts)" in message
    assert "bad gateway" in message and "'q'" in message


def test_a_connection_closed_every_time_fails_after_three_attempts(scripted: Scripted) -> None:
    scripted.answers = [(DROP, b"")]
    with pytest.raises(InputError) as caught:
        fetch(scripted.url)
    assert len(scripted.requests) == 3
    message = str(caught.value)
    assert "a complete answer from Prometheus (3 attempts)" in message
    assert "'q'" in message and "\n" not in message


def test_retry_after_is_waited_for_and_the_waits_scale(scripted: Scripted) -> None:
    """At scale 0.01: the Retry-After of 20 s becomes 0.2 s, urllib3's backoff before the second
    retry (1 s · 2) 0.02 s; an absurd Retry-After is capped (60 s · 0.01) instead of hanging."""
    scripted.answers = [
        (503, UNAVAILABLE, {"Retry-After": "20"}),
        (429, b"", {"Retry-After": "100000"}),
        (200, SUCCESS),
    ]
    retry = prometheus_retry({RETRY_SCALE_ENV: "0.01"})
    query = PrometheusQuery(name="q", query="up")
    (series,) = fetch_prometheus_series(source(scripted.url, query), 60.0, 120.0, retry=retry)
    assert series.id == "q{job=x}"
    first, second, third = scripted.arrivals
    assert 0.2 <= second - first < 5.0
    assert 0.6 <= third - second < 5.0  # the capped Retry-After, not the backoff


def test_retry_scale_comes_from_the_environment() -> None:
    assert retry_scale({}) == 1.0
    assert retry_scale({RETRY_SCALE_ENV: " 0.5 "}) == 0.5
    assert prometheus_retry({RETRY_SCALE_ENV: "0"}).backoff_factor == 0.0
    for bad in ("-1", "nan", "inf", "soon"):
        with pytest.raises(InputError, match=RETRY_SCALE_ENV):
            retry_scale({RETRY_SCALE_ENV: bad})


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(400, "bad_data"), (422, "execution"), (500, "internal"), (503, "timeout")],
)
def test_client_errors_internal_errors_and_timeouts_are_not_retried(
    scripted: Scripted, status: int, error_type: str
) -> None:
    scripted.answers = [(status, _error(error_type, "the reason")), (200, SUCCESS)]
    with pytest.raises(InputError, match=f"HTTP {status}.*{error_type}: the reason") as caught:
        fetch(scripted.url)
    assert "attempts" not in str(caught.value)
    assert len(scripted.requests) == 1


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (_error("bad_data", "nope"), "HTTP 200.*bad_data: nope"),
        (b"not json", "a JSON answer"),
        (json.dumps({"status": "success", "data": {"resultType": "vector"}}).encode(), "matrix"),
        (_matrix({"metric": {}, "values": [[60, "x"]]}), "matrix"),
        (_matrix({"metric": {}, "histograms": [[60, {"count": "1"}]]}), "native histograms"),
    ],
)
def test_malformed_or_failed_answers_with_200(
    scripted: Scripted, body: bytes, expected: str
) -> None:
    scripted.answers = [(200, body)]
    with pytest.raises(InputError, match=expected):
        fetch(scripted.url)
    assert len(scripted.requests) == 1


def test_a_client_timeout_is_not_retried(scripted: Scripted) -> None:
    scripted.answers = [(200, SUCCESS)]
    scripted.delay_s = 1.0
    slow = PrometheusSource(
        url=scripted.url, queries=(PrometheusQuery(name="q", query="up"),), timeout_s=0.1
    )
    with pytest.raises(InputError, match=r"an answer within 0\.1 s"):
        fetch_prometheus_series(slow, 60.0, 120.0)
    assert len(scripted.requests) == 1
