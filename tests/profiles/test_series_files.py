"""Tests of the series-file readers and writers (SPEC §2) and the one normalisation rule."""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_csv import write_series_csv
from regbot.profiles.series_files import (
    default_kind,
    normalise_points,
    read_series_file,
    read_series_files,
)
from regbot.profiles.series_jsonl import write_series_jsonl
from regbot.timefmt import parse_time

T0 = 1_732_262_400.0  # 2024-11-22T08:00:00Z


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def by_id(series: Sequence[Series]) -> dict[str, Series]:
    return {item.id: item for item in series}


def assert_same(actual: Sequence[Series], expected: Sequence[Series]) -> None:
    """Equal series, arrays compared bit for bit."""
    assert [s.id for s in actual] == [s.id for s in expected]
    for got, want in zip(actual, expected):
        assert (got.kind, got.unit, dict(got.labels)) == (want.kind, want.unit, dict(want.labels))
        assert got.timestamps_s.dtype == np.float64 and got.values.dtype == np.float64
        assert got.timestamps_s.tobytes() == np.asarray(want.timestamps_s, np.float64).tobytes()
        assert got.values.tobytes() == np.asarray(want.values, np.float64).tobytes()


def series(
    series_id: str,
    times: Sequence[float],
    values: Sequence[float],
    kind: str | None = None,
    unit: str | None = None,
    labels: dict[str, str] | None = None,
) -> Series:
    return Series(
        series_id,
        kind or default_kind(series_id),
        np.asarray(times, np.float64),
        np.asarray(values, np.float64),
        unit,
        labels or {},
    )


def input_error(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        read_series_file(path)
    return str(caught.value)


# --- normalise_points: the one rule ------------------------------------------------------------


def test_normalise_sorts_by_time() -> None:
    times, values = normalise_points([30.0, 10.0, 20.0], [3.0, 1.0, 2.0])
    assert times.tolist() == [10.0, 20.0, 30.0]
    assert values.tolist() == [1.0, 2.0, 3.0]


def test_normalise_drops_missing_points() -> None:
    times, values = normalise_points([1, 2, 3, 4], [1.0, math.nan, None, 4.0])
    assert times.tolist() == [1.0, 4.0]
    assert values.tolist() == [1.0, 4.0]


def test_normalise_averages_duplicate_timestamps() -> None:
    times, values = normalise_points([60, 0, 60, 60, 0], [1.0, 10.0, 2.0, 6.0, math.nan])
    assert times.tolist() == [0.0, 60.0]
    assert values.tolist() == [10.0, 3.0]  # NaN dropped before averaging


def test_normalise_keeps_irregular_spacing_and_gaps() -> None:
    times, values = normalise_points([0, 1, 100, 101.5, 10_000], [5, 4, 3, 2, 1])
    assert times.tolist() == [0.0, 1.0, 100.0, 101.5, 10_000.0]
    assert values.tolist() == [5.0, 4.0, 3.0, 2.0, 1.0]


def test_normalise_of_nothing_and_of_only_missing_points() -> None:
    for times_in, values_in in (([], []), ([1.0, 2.0], [math.nan, math.nan])):
        times, values = normalise_points(times_in, values_in)
        assert times.shape == values.shape == (0,)
        assert times.dtype == values.dtype == np.float64


def test_normalise_keeps_values_exact_when_nothing_is_merged() -> None:
    times, values = normalise_points([2.0, 1.0], [-0.0, 0.1])
    assert values.tobytes() == np.array([0.1, -0.0]).tobytes()


@pytest.mark.parametrize(
    ("times", "values"),
    [
        ([1.0, 2.0], [1.0, math.inf]),
        ([1.0, 2.0], [-math.inf, 1.0]),
        ([math.nan, 2.0], [1.0, 1.0]),
        ([1.0, math.inf], [1.0, 1.0]),
    ],
)
def test_normalise_rejects_infinity(times: list[float], values: list[float]) -> None:
    with pytest.raises(InputError, match=r"^s1: expected finite"):
        normalise_points(times, values, where="s1")


def test_normalise_rejects_mismatched_lengths() -> None:
    with pytest.raises(InputError, match="as many values as timestamps"):
        normalise_points([1.0, 2.0], [1.0])


@settings(derandomize=True, max_examples=200, database=None)
@given(
    st.lists(st.tuples(st.integers(0, 20), st.one_of(st.none(), st.floats(-1e6, 1e6))), max_size=40)
)
def test_normalise_matches_a_slow_reference(points: list[tuple[int, float | None]]) -> None:
    groups: dict[float, list[float]] = {}
    for t, v in points:
        if v is not None and not math.isnan(v):
            groups.setdefault(float(t), []).append(v)
    times, values = normalise_points([t for t, _ in points], [v for _, v in points])
    assert times.tolist() == sorted(groups)
    assert np.allclose(values, [sum(groups[t]) / len(groups[t]) for t in sorted(groups)])
    assert np.all(np.diff(times) > 0)


# --- CSV ----------------------------------------------------------------------------------------


def test_csv_columns_in_any_order_with_kind_unit_and_labels(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "m.csv",
        "value,host_group,series,unit,timestamp,kind\n"
        f"0.25,web,svc/latency,s,{T0 + 60:.0f},latency\n"
        f"0.5,web,svc/latency,s,{T0:.0f},latency\n"
        f"1000,web,svc/rps,,{T0:.0f},qps\n",
    )
    assert_same(
        read_series_file(path),
        [
            series(
                "svc/latency", [T0, T0 + 60], [0.5, 0.25], "latency", "s", {"host_group": "web"}
            ),
            series("svc/rps", [T0], [1000.0], "qps", None, {"host_group": "web"}),
        ],
    )


def test_csv_iso_and_epoch_timestamps_agree(tmp_path: Path) -> None:
    iso = write(
        tmp_path,
        "iso.csv",
        "timestamp,series,value\n2024-11-22T08:00:00Z,a,1\n2024-11-22T09:00:00+01:00,a,2\n"
        "2024-11-22 08:02:00,a,3\n",
    )
    epoch = write(tmp_path, "epoch.csv", f"timestamp,series,value\n{T0},a,1\n{T0 + 120},a,3\n")
    got = read_series_file(iso)[0]
    assert got.timestamps_s.tolist() == [T0, T0 + 120]  # 09:00+01:00 is 08:00Z: averaged
    assert got.values.tolist() == [1.5, 3.0]
    assert read_series_file(epoch)[0].timestamps_s.tolist() == [T0, T0 + 120]
    assert parse_time("2024-11-22T08:00:00Z", "t") == T0


def test_csv_rows_out_of_order_and_interleaved_series(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "m.csv",
        "timestamp,series,value\n300,b,3\n100,a,1\n200,b,2\n300,a,3\n100,b,1\n200,a,2\n",
    )
    got = read_series_file(path)
    assert [s.id for s in got] == ["b", "a"]  # order of first appearance
    for item in got:
        assert item.timestamps_s.tolist() == [100.0, 200.0, 300.0]
        assert item.values.tolist() == [1.0, 2.0, 3.0]


def test_csv_missing_values_are_dropped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "m.csv",
        "timestamp,series,value\n1,a,1\n2,a,\n3,a,nan\n4,a,NaN\n5,a,null\n6,a,NA\n7,a,7\n",
    )
    got = read_series_file(path)[0]
    assert got.timestamps_s.tolist() == [1.0, 7.0]
    assert got.values.tolist() == [1.0, 7.0]


def test_csv_duplicates_averaged_and_varying_labels_dropped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "m.csv",
        "timestamp,series,value,host,region\n"
        "60,gcpu:f (a.py),0.1,web01,eu\n60,gcpu:f (a.py),0.3,web02,eu\n120,gcpu:f (a.py),0.2,web01,\n",
    )
    got = read_series_file(path)[0]
    assert got.kind == "gcpu"
    assert got.timestamps_s.tolist() == [60.0, 120.0]
    assert got.values.tolist() == [pytest.approx(0.2), 0.2]
    assert dict(got.labels) == {"region": "eu"}  # host varies across rows: the series spans hosts


def test_csv_default_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, "m.csv", "timestamp,series,value\n1,gcpu:main,0.5\n1,svc/latency,3\n")
    assert [(s.id, s.kind) for s in read_series_file(path)] == [
        ("gcpu:main", "gcpu"),
        ("svc/latency", "metric"),
    ]


def test_csv_header_only_and_blank_lines(tmp_path: Path) -> None:
    assert read_series_file(write(tmp_path, "h.csv", "timestamp,series,value\n")) == []
    blank = write(tmp_path, "b.csv", "timestamp,series,value\r\n\r\n1,a,1\r\n\r\n2,a,2\r\n")
    assert read_series_file(blank)[0].values.tolist() == [1.0, 2.0]


def test_csv_quoted_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "q.csv",
        'timestamp,series,value\n1,"gcpu:f (a,b.py)",1\n2,"say ""hi""",2\n3,"two\nlines",3\n',
    )
    assert [s.id for s in read_series_file(path)] == ["gcpu:f (a,b.py)", 'say "hi"', "two\nlines"]


def test_csv_all_missing_series_is_kept_empty(tmp_path: Path) -> None:
    got = read_series_file(write(tmp_path, "m.csv", "timestamp,series,value\n1,a,\n"))
    assert got[0].id == "a" and got[0].values.size == 0


def test_gzipped_csv(tmp_path: Path) -> None:
    path = write(tmp_path, "m.csv.gz", "timestamp,series,value\n2,a,2\n1,a,1\n")
    assert read_series_file(path)[0].values.tolist() == [1.0, 2.0]


def slow_reference_csv(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Straightforward reader for comparison: one dict per row, no numpy."""
    groups: dict[str, dict[float, list[float]]] = {}
    with path.open(newline="") as stream:
        for row in csv.DictReader(stream):
            value = row["value"]
            if value in ("", "nan"):
                continue
            groups.setdefault(row["series"], {}).setdefault(float(row["timestamp"]), []).append(
                float(value)
            )
    return {
        name: [(t, sum(v) / len(v)) for t, v in sorted(points.items())]
        for name, points in groups.items()
    }


@pytest.mark.parametrize("quoted", [False, True])
def test_fast_csv_reader_agrees_with_a_slow_reference(tmp_path: Path, quoted: bool) -> None:
    rng = np.random.default_rng(7)
    ids = [f"gcpu:f{i} (m{i % 7}.py)" for i in range(50)]
    lines = ["timestamp,series,value,host"]
    for _ in range(20_000):
        name = ids[int(rng.integers(len(ids)))]
        if quoted:
            name = f'"{name}"'
        value = "" if rng.random() < 0.05 else repr(float(rng.random()))
        lines.append(f"{T0 + 60 * int(rng.integers(300))},{name},{value},h{rng.integers(3)}")
    path = write(tmp_path, "r.csv", "\n".join(lines) + "\n")
    reference = slow_reference_csv(path)
    got = by_id(read_series_file(path))
    assert set(got) == set(reference)
    for name, points in reference.items():
        assert got[name].timestamps_s.tolist() == [t for t, _ in points]
        np.testing.assert_allclose(got[name].values, [v for _, v in points], rtol=1e-12)


# --- JSON Lines ---------------------------------------------------------------------------------


def test_jsonl_series_with_labels_unit_and_iso_times(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "m.jsonl",
        '{"id": "svc/frame:foo", "kind": "gcpu", "timestamps": [120, 60], "values": [0.2, 0.1],'
        ' "labels": {"service": "svc"}}\n'
        "\n"
        '{"id": "svc/p99", "kind": "latency", "unit": "ms", "timestamps": '
        '["2024-11-22T08:00:00Z", 1732262460.5], "values": [10, null], "labels": {}, "extra": 1}\n',
    )
    assert_same(
        read_series_file(path),
        [
            series("svc/frame:foo", [60, 120], [0.1, 0.2], "gcpu", None, {"service": "svc"}),
            series("svc/p99", [T0], [10.0], "latency", "ms"),
        ],
    )


def test_jsonl_same_id_on_several_lines_is_merged(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "m.jsonl",
        '{"id": "a", "timestamps": [1, 2], "values": [1, 2], "labels": {"x": "1", "y": "1"}}\n'
        '{"id": "b", "timestamps": [1], "values": [5]}\n'
        '{"id": "a", "kind": "cpu", "timestamps": [2, 3], "values": [4, NaN], "labels": {"x": "2"}}\n',
    )
    got = read_series_file(path)
    assert [s.id for s in got] == ["a", "b"]
    assert got[0].kind == "cpu"
    assert got[0].timestamps_s.tolist() == [1.0, 2.0]
    assert got[0].values.tolist() == [1.0, 3.0]
    assert dict(got[0].labels) == {"y": "1"}  # x differs between lines
    assert got[1].kind == "metric"


def test_jsonl_gzipped_and_empty_series(tmp_path: Path) -> None:
    path = write(tmp_path, "m.jsonl.gz", '{"id": "gcpu:x", "timestamps": [], "values": []}\n')
    got = read_series_file(path)
    assert (got[0].id, got[0].kind, got[0].values.size) == ("gcpu:x", "gcpu", 0)


def test_jsonl_line_separator_inside_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, "m.jsonl", '{"id": "a\u2028b", "timestamps": [1], "values": [1]}\n')
    assert read_series_file(path)[0].id == "a\u2028b"


# --- several files ------------------------------------------------------------------------------


def test_series_merged_across_files_and_folders(tmp_path: Path) -> None:
    folder = tmp_path / "metrics"
    (folder / "deep").mkdir(parents=True)
    write(folder, "a.csv", "timestamp,series,value,kind\n1,svc/cpu,1,cpu\n2,svc/cpu,2,cpu\n")
    write(folder / "deep", "b.jsonl", '{"id": "svc/cpu", "timestamps": [2, 3], "values": [4, 3]}\n')
    write(folder, "notes.txt", "ignored: not a series file\n")
    extra = write(tmp_path, "c.csv", "timestamp,series,value\n9,other,1\n")
    got = read_series_files([folder, extra])
    assert_same(got, [series("svc/cpu", [1, 2, 3], [1, 3, 3], "cpu"), series("other", [9], [1])])


def test_kind_conflict_across_files_names_both(tmp_path: Path) -> None:
    a = write(tmp_path, "a.csv", "timestamp,series,value,kind\n1,s,1,cpu\n")
    b = write(
        tmp_path, "b.jsonl", '{"id": "s", "kind": "latency", "timestamps": [2], "values": [1]}\n'
    )
    with pytest.raises(InputError) as caught:
        read_series_files([a, b])
    message = str(caught.value)
    assert message.startswith(f"{b}:1: kind: expected kind 'cpu' as at {a}:2")
    assert message.endswith("found 'latency'")


# --- writing and round trips ----------------------------------------------------------------


EXAMPLE = [
    series("gcpu:handle (app/views.py)", [T0, T0 + 60.5, T0 + 3600], [0.1, 1 / 3, 1e-9]),
    series("svc/p99", [T0], [123.456], "latency", "ms", {"service": "svc", "region": "eu"}),
    series('odd, "quoted"\nid', [1.0, 2.0], [-0.0, 5e-324], "my kind", None, {"service": "x,y"}),
]


@pytest.mark.parametrize("name", ["out.csv", "out.csv.gz", "out.jsonl", "out.jsonl.gz"])
def test_round_trip_is_exact(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    writer = write_series_csv if ".csv" in name else write_series_jsonl
    writer(EXAMPLE, path)
    assert_same(read_series_file(path), EXAMPLE)
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left behind


def test_writers_are_deterministic_and_replace_the_file(tmp_path: Path) -> None:
    for name, writer in (("a.csv.gz", write_series_csv), ("a.jsonl.gz", write_series_jsonl)):
        path = tmp_path / name
        writer(EXAMPLE[:1], path)
        first = path.read_bytes()
        writer(EXAMPLE, path)
        writer(EXAMPLE[:1], path)
        assert path.read_bytes() == first


def test_csv_writer_layout(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    write_series_csv(EXAMPLE[:2], path)
    assert path.read_text().splitlines() == [
        "timestamp,series,value,kind,unit,region,service",
        f"{T0!r},gcpu:handle (app/views.py),0.1,gcpu,,,",
        f"{T0 + 60.5!r},gcpu:handle (app/views.py),{1 / 3!r},gcpu,,,",
        f"{T0 + 3600!r},gcpu:handle (app/views.py),1e-09,gcpu,,,",
        f"{T0!r},svc/p99,123.456,latency,ms,eu,svc",
    ]


def test_csv_writer_rejects_labels_named_like_columns(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="label names other than"):
        write_series_csv([series("a", [1], [1], labels={"kind": "x"})], tmp_path / "m.csv")


def test_writing_into_a_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="missing"):
        write_series_jsonl(EXAMPLE, tmp_path / "missing" / "out.jsonl")


_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), whitelist_characters=',"\n\r'), min_size=1
)
_LABEL_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: n not in ("timestamp", "series", "value", "kind", "unit")
)
_FLOAT = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def series_lists(draw: st.DrawFn, min_points: int) -> list[Series]:
    ids = draw(st.lists(_TEXT, min_size=0, max_size=4, unique=True))
    result = []
    for series_id in ids:
        times = sorted(draw(st.lists(_FLOAT, min_size=min_points, max_size=8, unique=True)))
        values = draw(st.lists(_FLOAT, min_size=len(times), max_size=len(times)))
        result.append(
            Series(
                series_id,
                draw(_TEXT),
                np.array(times, np.float64),
                np.array(values, np.float64),
                draw(st.none() | _TEXT),
                draw(st.dictionaries(_LABEL_NAME, _TEXT, max_size=3)),
            )
        )
    return result


_ROUND_TRIP = settings(
    derandomize=True,
    max_examples=120,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_ROUND_TRIP
@given(series_lists(min_points=0))
def test_jsonl_round_trip_property(tmp_path: Path, items: list[Series]) -> None:
    path = tmp_path / "p.jsonl"
    write_series_jsonl(items, path)
    assert_same(read_series_file(path), items)


@_ROUND_TRIP
@given(series_lists(min_points=1))
def test_csv_round_trip_property(tmp_path: Path, items: list[Series]) -> None:
    path = tmp_path / "p.csv"
    write_series_csv(items, path)
    assert_same(read_series_file(path), items)


# --- broken input: InputError naming file and line ---------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "where", "expected"),
    [
        ("m.csv", "", ":1", "a header row with columns timestamp, series, value"),
        ("m.csv", "time,series,value\n1,a,1\n", ":1", "missing timestamp"),
        ("m.csv", "series,value\n", ":1", "missing timestamp"),
        ("m.csv", "timestamp,series,value,value\n", ":1: value", "each column once"),
        ("m.csv", "timestamp,series,value,\n", ":1: column 4", "a column name"),
        ("m.csv", "timestamp,series,value\n1,a,1\n2,a,abc\n", ":3: value", "a number"),
        ("m.csv", "timestamp,series,value\n1,a,1\n\n2,a,inf\n", ":4: value", "a finite number"),
        ("m.csv", "timestamp,series,value\n1,a,1\nyesterday,a,1\n", ":3: timestamp", "a time"),
        (
            "m.csv",
            "timestamp,series,value\n1,a,1\n2,a,1\ninf,a,1\n",
            ":4: timestamp",
            "a finite time",
        ),
        ("m.csv", "timestamp,series,value\n1,a,1\n2,a\n", ":3", "3 fields as in the header"),
        ("m.csv", "timestamp,series,value\n1,a,1\n2,,1\n", ":3: series", "a series id"),
        (
            "m.csv",
            'timestamp,series,value\n1,"multi\nline",1\n2,b,x\n',
            ":4: value",
            "a number",
        ),
        (
            "m.csv",
            "timestamp,series,value,kind\n1,a,1,cpu\n2,b,1,cpu\n3,a,1,latency\n",
            ":4: kind",
            "kind 'cpu' as on earlier rows",
        ),
        (
            "m.jsonl",
            '{"id": "a", "timestamps": [1], "values": [1]}\n{"id": "b",\n',
            ":2:12",
            "a JSON object",
        ),
        ("m.jsonl", '{"id": "a", "timestamps": [1], "values": 1}\n', ":1: values", "a list"),
        ("m.jsonl", '{"id": "a", "values": [1]}\n', ":1: timestamps", "a list"),
        (
            "m.jsonl",
            '{"id": "a", "timestamps": [1, 2], "values": [1]}\n',
            ":1: values",
            "as many values",
        ),
        (
            "m.jsonl",
            '\n{"id": "a", "timestamps": [1, 2], "values": [1, "x"]}\n',
            ":2: values[1]",
            "a number or null",
        ),
        (
            "m.jsonl",
            '{"id": "a", "timestamps": [1, 2], "values": [1, Infinity]}\n',
            ":1: values[1]",
            "a finite",
        ),
        (
            "m.jsonl",
            '{"id": "a", "timestamps": ["noon"], "values": [1]}\n',
            ":1: timestamps[0]",
            "a time",
        ),
        (
            "m.jsonl",
            '{"id": "a", "timestamps": [true], "values": [1]}\n',
            ":1: timestamps[0]",
            "epoch seconds",
        ),
        (
            "m.jsonl",
            '{"id": "a", "timestamps": [1e999], "values": [1]}\n',
            ":1: timestamps[0]",
            "a finite time",
        ),
        ("m.jsonl", "[1, 2]\n", ":1", "a JSON object"),
        ("m.jsonl", '{"timestamps": [], "values": []}\n', ":1: id", "a non-empty string"),
        ("m.jsonl", '{"id": 3, "timestamps": [], "values": []}\n', ":1: id", "a non-empty string"),
        (
            "m.jsonl",
            '{"id": "a", "kind": 1, "timestamps": [], "values": []}\n',
            ":1: kind",
            "a non-empty",
        ),
        (
            "m.jsonl",
            '{"id": "a", "labels": {"x": 1}, "timestamps": [], "values": []}\n',
            ":1: labels",
            "strings",
        ),
        (
            "m.jsonl",
            '{"id": "a", "kind": "cpu", "timestamps": [], "values": []}\n'
            '{"id": "a", "kind": "gcpu", "timestamps": [], "values": []}\n',
            ":2: kind",
            "kind 'cpu' as at",
        ),
    ],
)
def test_broken_input_names_file_and_line(
    tmp_path: Path, name: str, text: str, where: str, expected: str
) -> None:
    message = input_error(write(tmp_path, name, text))
    assert message.startswith(f"{tmp_path / name}{where}: expected "), message
    assert expected in message


def test_unknown_extension(tmp_path: Path) -> None:
    message = input_error(write(tmp_path, "m.tsv", "timestamp\tseries\tvalue\n"))
    assert message == f"{tmp_path / 'm.tsv'}: expected a series file ending in " + (
        ".csv, .jsonl, .csv.gz, .jsonl.gz, .parquet, .arrow, found 'm.tsv'"
    )


def test_missing_file_and_folder(tmp_path: Path) -> None:
    assert (
        input_error(tmp_path / "nope.csv")
        == f"{tmp_path / 'nope.csv'}: expected an existing series file"
    )
    (tmp_path / "dir.csv").mkdir()
    assert "a file, not a folder" in input_error(tmp_path / "dir.csv")


def test_truncated_gzip_names_the_line_reached(tmp_path: Path) -> None:
    text = "timestamp,series,value\n" + "".join(f"{i},a,{i}\n" for i in range(50_000))
    data = gzip.compress(text.encode(), mtime=0)
    path = tmp_path / "m.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    message = input_error(path)
    assert message.startswith(f"{path}:")
    assert "a complete gzip file" in message


def test_not_gzip_at_all(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl.gz"
    path.write_bytes(b"plain text, not gzip\n")
    assert "a complete gzip file" in input_error(path)


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_bytes(b"timestamp,series,value\n1,a,1\n2,\xff\xfe,1\n")
    assert input_error(path).startswith(f"{path}:3: expected UTF-8 text")


def test_error_messages_are_one_line(tmp_path: Path) -> None:
    message = input_error(
        write(tmp_path, "m.jsonl", '{"id": "a", "timestamps": [1, 2], "values": [1]}\n')
    )
    assert "\n" not in message
