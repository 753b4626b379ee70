"""Partitions of clustered Parquet and Arrow files (``series_partitions``) loaded by the fast
path (``series_clustered.read_clustered``): the same series, bit for bit, as the general
reading (``read_series_files``) on every input the fast path takes, which includes NaN values,
unsorted and repeated times, series cut by row groups, several files, Arrow timestamps, text
columns known constant from statistics; and every input it must not take (a kind or label that
varies within a series, an error to report, a file changed since the survey) going through the
general path with its result or its error."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from regbot.errors import InputError
from regbot.profiles import series_partitions
from regbot.profiles.model import Series
from regbot.profiles.series_arrow import ConstantText, read_arrow_columns, read_arrow_parts
from regbot.profiles.series_clustered import read_clustered
from regbot.profiles.series_files import read_series_files
from regbot.profiles.series_partitions import SeriesPartition, plan_series_partitions

T0 = 1_732_262_400.0


def assert_same(actual: list[Series], expected: list[Series]) -> None:
    """Equal series (ids in order, kinds, units, labels and their order), arrays bit for bit."""
    assert [s.id for s in actual] == [s.id for s in expected]
    for got, want in zip(actual, expected):
        assert (got.kind, got.unit) == (want.kind, want.unit), got.id
        assert list(got.labels.items()) == list(want.labels.items()), got.id
        assert got.timestamps_s.dtype == want.timestamps_s.dtype == np.float64
        assert got.timestamps_s.tobytes() == want.timestamps_s.tobytes(), got.id
        assert got.values.tobytes() == want.values.tobytes(), got.id


def clustered_rows(seed: int, count: int = 40, points: int = 30) -> dict[str, list[Any]]:
    """Rows grouped by series (as regbot's writers write them) with what real fleets have: NaN
    values, a series with unsorted times, one with repeated times, unequal lengths, irregular
    spacing, a series with no value at all, kinds, units and labels per series, empty texts."""
    rng = np.random.default_rng(seed)
    axis = T0 + 60.0 * np.arange(points)
    rows: dict[str, list[Any]] = {k: [] for k in ("timestamp", "series", "value", "kind")}
    rows.update(unit=[], host=[], region=[])
    for i in range(count):
        times = axis.copy()
        if i % 7 == 3:
            times = times[: rng.integers(1, points)]  # shorter
        if i % 11 == 5:
            times = np.sort(T0 + rng.uniform(0, 60 * points, times.size))  # irregular
        if i == 4:
            times = rng.permutation(times)  # unsorted
        if i == 6:
            times[3:6] = times[2]  # repeated times
        values = rng.normal(5, 1, times.size)
        values[rng.random(times.size) < 0.05] = np.nan
        if i == 9:
            values[:] = np.nan
        rows["timestamp"].extend(times.tolist())
        rows["series"].extend([f"gcpu:f{i:03d} (a.py)" if i % 2 else f"qps:{i}"] * times.size)
        rows["value"].extend(values.tolist())
        kind = ["", "latency", "gcpu", None][i % 4]
        rows["kind"].extend([kind] * times.size)
        rows["unit"].extend(["ms" if i % 5 == 0 else None] * times.size)
        rows["host"].extend([f"h{i % 3}" if i % 6 else ""] * times.size)
        rows["region"].extend([None if i % 4 == 1 else "eu"] * times.size)
    return rows


def table_of(rows: dict[str, list[Any]], dictionary: bool = True) -> pa.Table:
    columns: dict[str, Any] = {
        "timestamp": pa.array(rows["timestamp"], pa.float64()),
        "value": pa.array(rows["value"], pa.float64()),
    }
    for name in rows:
        if name not in columns:
            text = pa.array(rows[name], pa.string())
            columns[name] = text.dictionary_encode() if dictionary else text
    return pa.table(columns)


def write_parquet(path: Path, table: pa.Table, group: int = 97, **options: Any) -> Path:
    pq.write_table(table, path, row_group_size=group, **options)
    return path


def write_ipc(path: Path, table: pa.Table, stream: bool = False, batch: int = 89) -> Path:
    opener = ipc.new_stream if stream else ipc.new_file
    with pa.OSFile(str(path), "wb") as sink, opener(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=batch)
    return path


def fast_loads(
    paths: list[Path], size: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[SeriesPartition], list[Series]]:
    """The partitions and their series, every partition loaded by the fast path (the general
    reader refuses to run)."""
    partitions, survey = plan_series_partitions(paths, size)
    assert survey.streamed and all(p.ids for p in partitions)

    def general(*args: Any) -> Any:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(series_partitions, "read_arrow_parts", general)
    loaded = [s for p in partitions for s in p.load()]
    monkeypatch.undo()
    return partitions, loaded


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("size", [1, 7, 40])
def test_parquet_partitions_give_the_general_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, size: int
) -> None:
    path = write_parquet(tmp_path / "f.parquet", table_of(clustered_rows(seed)))
    partitions, loaded = fast_loads([path], size, monkeypatch)
    assert_same(loaded, read_series_files([path]))
    general = [s for p in partitions for s in dataclasses.replace(p, ids=(), counts=()).load()]
    assert_same(loaded, general)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("dictionary", [False, True])
def test_arrow_ipc_partitions_give_the_general_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool, dictionary: bool
) -> None:
    path = write_ipc(tmp_path / "f.arrow", table_of(clustered_rows(4), dictionary), stream)
    _, loaded = fast_loads([path], 9, monkeypatch)
    assert_same(loaded, read_series_files([path]))


def test_several_files_and_text_columns_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = clustered_rows(5)
    table = table_of(rows)
    half = rows["series"].index("gcpu:f021 (a.py)")
    first = write_parquet(tmp_path / "a.parquet", table.slice(0, half))
    second = (
        table.slice(half)
        .drop_columns(["host"])
        .append_column("zone", pa.array(["z1"] * (table.num_rows - half)))
    )
    second_path = write_ipc(tmp_path / "b.arrow", second)
    paths = [first, second_path]
    partitions, loaded = fast_loads(paths, 8, monkeypatch)
    assert any(len(p.rows) == 2 for p in partitions), "a partition spans the two files"
    assert_same(loaded, read_series_files(paths))
    assert "zone" in loaded[-1].labels and "host" not in loaded[-1].labels


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_arrow_timestamps_and_integer_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unit: str
) -> None:
    rows = clustered_rows(6, count=12)
    ticks = np.asarray(rows["timestamp"]) * {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[unit]
    table = table_of(rows).set_column(
        0, "timestamp", pa.array(ticks.astype(np.int64), pa.timestamp(unit, "UTC"))
    )
    path = write_parquet(tmp_path / "t.parquet", table)
    _, loaded = fast_loads([path], 5, monkeypatch)
    assert_same(loaded, read_series_files([path]))
    seconds = np.asarray(rows["timestamp"]).astype(np.int64)
    whole = table.set_column(0, "timestamp", pa.array(seconds))
    path = write_parquet(tmp_path / "i.parquet", whole)
    _, loaded = fast_loads([path], 5, monkeypatch)
    assert_same(loaded, read_series_files([path]))


def test_one_fleet_axis_is_one_array(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Series on one time axis share one array: those a row group cuts in two and those
    normalised to it (unsorted rows) too."""
    rows = clustered_rows(7, count=30)
    rows["value"] = [1.0 if v != v else v for v in rows["value"]]
    path = write_parquet(tmp_path / "f.parquet", table_of(rows), group=101)
    _, loaded = fast_loads([path], 30, monkeypatch)
    axis = T0 + 60.0 * np.arange(30)
    same = [s for s in loaded if np.array_equal(s.timestamps_s, axis)]
    assert len(same) > 20 and all(s.timestamps_s is same[0].timestamps_s for s in same)
    assert any(s.id == "qps:4" for s in same), "the unsorted series is on the axis"
    views = [s for s in same if not s.values.flags.owndata]
    assert len(views) > 15, "regular series in one row group are slices of its arrays"


def test_rows_whose_label_column_gives_nothing_read_generally(tmp_path: Path) -> None:
    """The general reading of a partition's rows where a label's dictionary has texts but no
    row of the range gives one: the label is not given (it used to fail)."""
    rows = clustered_rows(14, count=8)
    rows["region"] = [None] * 60 + ["eu"] * (len(rows["region"]) - 60)
    path = write_parquet(tmp_path / "d.parquet", table_of(rows), group=10_000)
    parts = read_arrow_parts(path, (0, 60))
    assert [p.labels.get("region") for p in parts] == [None, None]
    assert "host" not in parts[0].labels and parts[1].labels["host"] == "h1"


def test_statistics_skip_constant_text_columns_with_the_same_result(tmp_path: Path) -> None:
    rows = clustered_rows(8)
    rows["kind"] = ["gcpu"] * len(rows["kind"])
    rows["region"] = [None] * len(rows["region"])
    with_stats = write_parquet(tmp_path / "s.parquet", table_of(rows))
    without = write_parquet(tmp_path / "n.parquet", table_of(rows), write_statistics=False)
    _, chunks = read_arrow_columns(with_stats, (0, 500))
    texts = next(iter(chunks)).texts
    assert texts["kind"] == ConstantText("gcpu") and texts["region"] == ConstantText(None)
    assert not isinstance(texts["host"], ConstantText)
    _, chunks = read_arrow_columns(without, (0, 500))
    assert not isinstance(next(iter(chunks)).texts["kind"], ConstantText)
    a = [s for p in plan_series_partitions([with_stats], 6)[0] for s in p.load()]
    b = [s for p in plan_series_partitions([without], 6)[0] for s in p.load()]
    assert_same(a, b)
    assert_same(a, read_series_files([with_stats]))


@pytest.mark.parametrize("statistics", [True, False])
def test_survey_last_time_with_and_without_statistics(tmp_path: Path, statistics: bool) -> None:
    rows = clustered_rows(9)
    rows["timestamp"][-3] = T0 + 10**6  # the latest row is not the last
    path = write_parquet(tmp_path / "l.parquet", table_of(rows), write_statistics=statistics)
    _, survey = plan_series_partitions([path], 10)
    assert survey.last_time_s == T0 + 10**6
    assert survey.ids == [s.id for s in read_series_files([path])]


def general_only(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether the fast path declined (returned None) on each load."""
    declined: list[bool] = []

    def spy(*args: Any) -> Any:
        result = read_clustered(*args)
        declined.append(result is None)
        return result

    monkeypatch.setattr(series_partitions, "read_clustered", spy)
    return declined


def test_a_label_varying_within_a_series_goes_the_general_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = clustered_rows(10)
    rows["host"][35] = "other"  # the second series spans hosts: its host label is dropped
    path = write_parquet(tmp_path / "v.parquet", table_of(rows))
    declined = general_only(monkeypatch)
    partitions, _ = plan_series_partitions([path], 40)
    loaded = partitions[0].load()
    assert declined == [True]
    assert_same(loaded, read_series_files([path]))
    assert "host" not in loaded[1].labels and loaded[2].labels["host"] == "h2"


@pytest.mark.parametrize(
    ("column", "row", "cell", "message"),
    [
        ("kind", 7, "latency", r"row 8: kind: expected kind 'gcpu'"),
        ("value", 12, float("inf"), r"row 13: value: expected a finite number"),
        ("timestamp", 20, None, r"row 21: timestamp: expected a time"),
        ("timestamp", 21, float("nan"), r"row 22: timestamp: expected a finite time"),
    ],
)
def test_errors_are_the_general_readers(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    column: str,
    row: int,
    cell: Any,
    message: str,
) -> None:
    rows = clustered_rows(11)
    rows["kind"] = ["gcpu"] * len(rows["kind"])
    rows[column][row] = cell
    path = write_parquet(tmp_path / "e.parquet", table_of(rows))
    with pytest.raises(InputError) as whole:
        read_series_files([path])
    declined = general_only(monkeypatch)
    partitions, _ = plan_series_partitions([path], 40)
    with pytest.raises(InputError, match=message) as caught:
        partitions[0].load()
    assert declined == [True] and str(caught.value) == str(whole.value)


def test_a_file_changed_since_the_survey_is_read_from_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_parquet(tmp_path / "c.parquet", table_of(clustered_rows(12)))
    partitions, _ = plan_series_partitions([path], 40)
    stamp = os.stat(path)
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
    declined = general_only(monkeypatch)
    assert_same(partitions[0].load(), read_series_files([path]))
    assert declined == [], "the fast path was not tried"


def test_row_counts_that_do_not_add_up_are_declined(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "r.parquet", table_of(clustered_rows(13, count=3)))
    rows = pq.ParquetFile(path).metadata.num_rows
    assert read_clustered([(path, 0, rows)], ["a", "b"], [rows - 1, 2]) is None
    assert read_clustered([(path, 0, rows)], ["a", "b"], [rows, 0]) is None
    assert read_clustered([(path, 0, rows)], ["a"], [rows, 0]) is None
    assert read_clustered([(path, 0, rows)], [], []) is None
    ids = ["qps:0", "gcpu:f001 (a.py)", "qps:2"]
    assert rows == 90
    assert_same(
        read_clustered([(path, 0, rows)], ids, [30, 30, 30]) or [], read_series_files([path])
    )


@pytest.mark.parametrize("seed", range(6))
def test_random_clustered_fleets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Random row groups, batches and partition sizes over random clustered fleets."""
    rng = np.random.default_rng(100 + seed)
    rows = clustered_rows(
        seed + 20, count=int(rng.integers(1, 60)), points=int(rng.integers(1, 40))
    )
    table = table_of(rows, dictionary=bool(seed % 2))
    group = int(rng.integers(1, 200))
    path = (
        write_parquet(tmp_path / "r.parquet", table, group=group)
        if seed % 3
        else write_ipc(tmp_path / "r.arrow", table, stream=bool(seed % 2), batch=group)
    )
    _, loaded = fast_loads([path], int(rng.integers(1, 25)), monkeypatch)
    assert_same(loaded, read_series_files([path]))
