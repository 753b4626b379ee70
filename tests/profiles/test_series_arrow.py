"""Parquet and Arrow IPC series files (SPEC §2): the same series as the CSV reader gives for the
same rows, Arrow timestamps of every unit, batches, hostile files refused with InputError, and
`regbot detect` / `regbot gcpu -o` end to end."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from cli_runner import run_cli

from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_arrow import read_arrow_parts, write_series_parquet
from regbot.profiles.series_csv import write_series_csv
from regbot.profiles.series_files import read_series_file, read_series_files

T0 = 1_732_262_400  # 2024-11-22T08:00:00Z
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "profiles"


def assert_same(actual: Sequence[Series], expected: Sequence[Series]) -> None:
    """Equal series (ids in order, kinds, units, labels), arrays compared bit for bit."""
    assert [s.id for s in actual] == [s.id for s in expected]
    for got, want in zip(actual, expected):
        assert (got.kind, got.unit, dict(got.labels)) == (want.kind, want.unit, dict(want.labels))
        assert got.timestamps_s.tobytes() == np.asarray(want.timestamps_s, np.float64).tobytes()
        assert got.values.tobytes() == np.asarray(want.values, np.float64).tobytes()


def messy_rows(seed: int = 3, count: int = 400) -> dict[str, list[Any]]:
    """Unsorted rows of several series with NaN values, duplicate timestamps, kinds, units and
    a label that varies on one series."""
    rng = np.random.default_rng(seed)
    ids = ["gcpu:a (x.py)", "qps:web", "latency:p99", "gcpu:b, c"]
    pick = rng.integers(0, len(ids), count)
    times = T0 + 60 * rng.integers(0, count // 3, count)  # many duplicates, any order
    values = rng.normal(10, 1, count)
    values[rng.random(count) < 0.1] = np.nan
    kinds = {"qps:web": "throughput", "latency:p99": "latency"}
    units = {"latency:p99": "ms"}
    hosts = ["h1" if ids[p] != "qps:web" else rng.choice(["h1", "h2"]) for p in pick]
    return {
        "timestamp": times.astype(np.int64).tolist(),
        "series": [ids[p] for p in pick],
        "value": values.tolist(),
        "kind": [kinds.get(ids[p], "") for p in pick],
        "unit": [units.get(ids[p], "") for p in pick],
        "host": [str(h) for h in hosts],
    }


def write_csv(path: Path, rows: dict[str, list[Any]]) -> Path:
    with path.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(list(rows))
        for row in zip(*rows.values()):
            writer.writerow(
                [
                    ""
                    if isinstance(c, float) and np.isnan(c)
                    else repr(c)
                    if isinstance(c, float)
                    else c
                    for c in row
                ]
            )
    return path


def arrow_table(rows: dict[str, list[Any]]) -> pa.Table:
    columns: dict[str, Any] = {
        "timestamp": pa.array(rows["timestamp"], pa.int64()),
        "series": pa.array(rows["series"], pa.string()),
        "value": pa.array(rows["value"], pa.float64()),
    }
    for name in rows:
        if name not in columns:
            columns[name] = pa.array(rows[name], pa.string())
    return pa.table(columns)


def write_ipc(path: Path, table: pa.Table, stream: bool = False, batch: int | None = None) -> Path:
    opener = ipc.new_stream if stream else ipc.new_file
    with pa.OSFile(str(path), "wb") as sink, opener(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=batch)
    return path


def test_parquet_matches_the_csv_reader(tmp_path: Path) -> None:
    rows = messy_rows()
    expected = read_series_file(write_csv(tmp_path / "m.csv", rows))
    assert {s.id for s in expected} == set(rows["series"])
    pq.write_table(arrow_table(rows), tmp_path / "m.parquet")
    got = read_series_file(tmp_path / "m.parquet")
    assert_same(got, expected)
    web = next(s for s in got if s.id == "qps:web")
    assert "host" not in web.labels and bool((np.diff(web.timestamps_s) > 0).all())
    assert next(s for s in got if s.id == "latency:p99").unit == "ms"
    assert next(s for s in got if s.id == "gcpu:a (x.py)").kind == "gcpu"  # default kind


def test_write_series_parquet_round_trips(tmp_path: Path) -> None:
    expected = read_series_file(write_csv(tmp_path / "m.csv", messy_rows(seed=5)))
    write_series_parquet(expected, tmp_path / "out.parquet")
    schema = pq.read_schema(tmp_path / "out.parquet")
    assert pa.types.is_dictionary(schema.field("series").type)
    assert schema.field("value").type == pa.float64()
    assert schema.field("timestamp").type == pa.float64()
    assert_same(read_series_file(tmp_path / "out.parquet"), expected)
    write_series_csv(expected, tmp_path / "again.csv")
    assert_same(read_series_file(tmp_path / "again.csv"), expected)


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_arrow_ipc_file_and_stream(tmp_path: Path, stream: bool) -> None:
    rows = messy_rows(seed=7)
    expected = read_series_file(write_csv(tmp_path / "m.csv", rows))
    path = write_ipc(tmp_path / "m.arrow", arrow_table(rows), stream=stream)
    assert_same(read_series_file(path), expected)


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_many_batches_give_the_same_series_as_one(tmp_path: Path, suffix: str) -> None:
    rows = messy_rows(seed=11, count=1000)
    table = arrow_table(rows)
    one, many = tmp_path / f"one{suffix}", tmp_path / f"many{suffix}"
    if suffix == ".parquet":
        pq.write_table(table, one)
        pq.write_table(table, many, row_group_size=37)
        assert pq.ParquetFile(many).num_row_groups > 20
    else:
        write_ipc(one, table)
        write_ipc(many, table, batch=37)
        assert ipc.open_file(pa.memory_map(str(many))).num_record_batches > 20
    assert_same(read_series_file(many), read_series_file(one))
    assert_same(read_series_file(many), read_series_file(write_csv(tmp_path / "m.csv", rows)))


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Paris"])
def test_arrow_timestamp_columns(tmp_path: Path, unit: str, tz: str | None) -> None:
    scale = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    seconds = [T0 + 120, T0, T0 + 60]
    ticks = [s * scale for s in seconds]
    if unit != "s":
        ticks[2] += scale // 2  # half a second
    table = pa.table(
        {
            "timestamp": pa.array(ticks, pa.timestamp(unit, tz=tz)),
            "series": ["a", "a", "a"],
            "value": [3.0, 1.0, 2.0],
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    (got,) = read_series_file(tmp_path / "t.parquet")
    half = 0.5 if unit != "s" else 0.0
    assert got.timestamps_s.tolist() == [T0, T0 + 60 + half, T0 + 120]
    assert got.values.tolist() == [1.0, 2.0, 3.0]


def test_float_seconds_and_dictionary_encoded_series(tmp_path: Path) -> None:
    ids = pa.array(["b", "a", "b", "a"]).dictionary_encode()
    table = pa.table(
        {
            "series": ids,
            "value": pa.array([1, 2, 3, None], pa.float32()),
            "timestamp": pa.array([T0 + 0.25, T0, T0 + 1.5, T0 + 2], pa.float64()),
            "kind": pa.array(["latency", None, "latency", None]).dictionary_encode(),
        }
    )
    path = write_ipc(tmp_path / "d.arrow", table)
    b, a = read_series_file(path)  # in order of first appearance
    assert (b.id, b.kind, b.timestamps_s.tolist(), b.values.tolist()) == (
        "b",
        "latency",
        [T0 + 0.25, T0 + 1.5],
        [1.0, 3.0],
    )
    assert (a.id, a.kind, a.timestamps_s.tolist(), a.values.tolist()) == ("a", "metric", [T0], [2])


def test_folders_pick_up_parquet_and_arrow_and_merge_with_csv(tmp_path: Path) -> None:
    folder = tmp_path / "series"
    folder.mkdir()
    write_csv(folder / "a.csv", {"timestamp": [T0], "series": ["x"], "value": [1.0]})
    pq.write_table(
        arrow_table({"timestamp": [T0 + 60], "series": ["x"], "value": [2.0]}), folder / "b.parquet"
    )
    write_ipc(folder / "c.arrow", arrow_table({"timestamp": [T0], "series": ["x"], "value": [3.0]}))
    (x,) = read_series_files([folder])
    assert x.timestamps_s.tolist() == [T0, T0 + 60] and x.values.tolist() == [2.0, 2.0]


def hostile(tmp_path: Path, columns: dict[str, Any], name: str = "bad.parquet") -> Path:
    path = tmp_path / name
    pq.write_table(pa.table(columns), path)
    return path


GOOD = {"timestamp": [T0, T0 + 60], "series": ["a", "a"], "value": [1.0, 2.0]}


@pytest.mark.parametrize(
    ("columns", "where", "expected"),
    [
        ({"timestamp": [T0], "series": ["a"]}, "bad.parquet: value", "missing value"),
        ({**GOOD, "value": ["1", "2"]}, "bad.parquet: value", "a float column"),
        ({**GOOD, "series": [1, 2]}, "bad.parquet: series", "a string column"),
        ({**GOOD, "timestamp": ["x", "y"]}, "bad.parquet: timestamp", "epoch seconds"),
        ({**GOOD, "timestamp": [T0, None]}, "bad.parquet: row 2: timestamp", "a time"),
        ({**GOOD, "series": [None, "a"]}, "bad.parquet: row 1: series", "a series id"),
        ({**GOOD, "series": ["a", ""]}, "bad.parquet: row 2: series", "a series id"),
        ({**GOOD, "value": [1.0, float("inf")]}, "bad.parquet: row 2: value", "a finite number"),
        ({**GOOD, "timestamp": [T0, float("nan")]}, "bad.parquet: row 2: timestamp", "finite"),
        ({**GOOD, "kind": ["gcpu", "latency"]}, "bad.parquet: row 2: kind", "kind 'gcpu'"),
    ],
)
def test_hostile_columns_are_refused(
    tmp_path: Path, columns: dict[str, Any], where: str, expected: str
) -> None:
    path = hostile(tmp_path, columns)
    with pytest.raises(InputError) as caught:
        read_series_file(path)
    message = str(caught.value)
    assert where in message and expected in message and "\n" not in message


def test_null_entries_of_a_dictionary_are_nulls(tmp_path: Path) -> None:
    kinds = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0]), pa.array(["latency", None]))
    table = pa.table({**GOOD_TABLE, "series": pa.array(["a", "a", "b"]), "kind": kinds})
    a, b = read_series_file(write_ipc(tmp_path / "k.arrow", table))
    assert (a.kind, b.kind) == ("latency", "latency")
    ids = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0]), pa.array(["a", None]))
    table = pa.table({**GOOD_TABLE, "series": ids})
    with pytest.raises(InputError, match=r"k\.arrow: row 2: series: expected a series id"):
        read_series_file(write_ipc(tmp_path / "k.arrow", table))


GOOD_TABLE = {"timestamp": [T0, T0 + 60, T0 + 120], "value": [1.0, 2.0, 3.0]}


def test_the_row_counts_across_batches(tmp_path: Path) -> None:
    values = [1.0] * 100
    values[73] = float("inf")
    path = tmp_path / "b.parquet"
    table = pa.table({"timestamp": list(range(100)), "series": ["a"] * 100, "value": values})
    pq.write_table(table, path, row_group_size=10)
    with pytest.raises(InputError, match=r"b\.parquet: row 74: value"):
        read_series_file(path)


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_corrupt_files_are_one_line_input_errors(tmp_path: Path, suffix: str) -> None:
    good = tmp_path / f"good{suffix}"
    table = arrow_table(messy_rows(count=200))
    if suffix == ".parquet":
        pq.write_table(table, good)
    else:
        write_ipc(good, table)
    data = good.read_bytes()
    truncated = tmp_path / f"truncated{suffix}"
    truncated.write_bytes(data[: len(data) // 2])
    renamed = tmp_path / f"renamed{suffix}"
    renamed.write_text("timestamp,series,value\n1,a,1\n")
    empty = tmp_path / f"empty{suffix}"
    empty.write_bytes(b"")
    for path in (truncated, renamed, empty):
        with pytest.raises(InputError) as caught:
            read_arrow_parts(path)
        message = str(caught.value)
        assert message.startswith(str(path)) and "\n" not in message


def test_detect_parquet_reports_as_the_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    points = 1440 + 60
    times = 1_763_000_000 + 600 * np.arange(points)
    step = 0.010 + rng.normal(0, 0.0005, points)
    step[1445:] += 0.002
    flat = 0.020 + rng.normal(0, 0.0005, points)
    rows = {
        "timestamp": [*times.tolist(), *times.tolist()],
        "series": ["gcpu:leaf (app.py)"] * points + ["gcpu:flat (app.py)"] * points,
        "value": [*step.tolist(), *flat.tolist()],
        "kind": ["gcpu"] * (2 * points),
    }
    write_csv(tmp_path / "m.csv", rows)
    pq.write_table(arrow_table(rows), tmp_path / "m.parquet", row_group_size=500)
    reports = []
    for name in ("m.csv", "m.parquet"):
        run_in = tmp_path / name.replace(".", "-")  # each run its own config and state store
        run_in.mkdir()
        config = run_in / "regbot.yml"
        config.write_text(
            "workloads:\n  default:\n    threshold: {relative: 0.01}\n"
            "    windows: {historical: 10d, analysis: 4h, extended: 6h}\n"
        )
        monkeypatch.chdir(run_in)
        out_path = run_in / "report.json"
        code, out, err = run_cli(
            "detect", str(tmp_path / name), "-c", str(config), "-o", str(out_path)
        )
        assert code == 0, err
        reports.append(json.loads(out_path.read_text()))
    assert {r["series"] for r in reports[1]["regressions"]} == {"gcpu:leaf (app.py)"}
    assert reports[1]["regressions"] == reports[0]["regressions"]
    assert reports[1]["funnel"] == reports[0]["funnel"]


def test_detect_bad_parquet_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_text("not parquet at all")
    code, _, err = run_cli("detect", str(path))
    assert code == 2 and "bad.parquet: expected a Parquet file" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_gcpu_writes_parquet(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert run_cli("ingest", str(EXAMPLES), "--store", str(store))[0] == 0
    target = tmp_path / "series.parquet"
    code, _, err = run_cli("gcpu", "--store", str(store), "-o", str(target), "--top", "5")
    assert code == 0, err
    table = pq.read_table(target)
    assert {"timestamp", "series", "value", "kind"} <= set(table.column_names)
    ids = set(table.column("series").to_pylist())
    assert "gcpu:handle (svc.py)" in ids
    handle = next(s for s in read_series_file(target) if s.id == "gcpu:handle (svc.py)")
    assert handle.kind == "gcpu" and handle.values.size == 6
