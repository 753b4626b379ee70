"""CSV and JSON Lines series files read through pyarrow's multi-threaded readers: several blocks,
errors on late lines (line numbers, not row numbers), Python's number rules kept exactly, and the
JSON files pyarrow's reading is not trusted with going line by line."""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regbot.errors import InputError
from regbot.profiles import series_csv_table, series_jsonl
from regbot.profiles.model import Series
from regbot.profiles.series_csv_cells import cell_value
from regbot.profiles.series_csv_table import CsvFile
from regbot.profiles.series_files import read_series_file
from regbot.profiles.series_jsonl_arrow import read_jsonl_arrow

T0 = 1_732_262_400


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> int:
    """pyarrow blocks of 16 KB, so a file of a few hundred KB spans many."""
    monkeypatch.setattr(series_csv_table, "BLOCK_BYTES", 1 << 14)
    return 1 << 14


def assert_same(actual: Sequence[Series], expected: Sequence[Series]) -> None:
    assert [s.id for s in actual] == [s.id for s in expected]
    for got, want in zip(actual, expected):
        assert (got.kind, got.unit, dict(got.labels)) == (want.kind, want.unit, dict(want.labels))
        assert got.timestamps_s.tobytes() == want.timestamps_s.tobytes()
        assert got.values.tobytes() == want.values.tobytes()


def message(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        read_series_file(path)
    return str(caught.value)


# --- CSV: blocks and late errors -------------------------------------------------------------


def long_csv(rows: int, bad: str | None = None, header: str = "timestamp,series,value,kind") -> str:
    """A header, a quoted id holding two newlines, a blank line, then ``rows`` rows of three
    interleaved series, then ``bad`` (a whole line): lines and rows differ by three."""
    lines = [header, f'{T0},"gcpu:f (a.py)\nsecond\nthird",0.5,gcpu', ""]
    ids = ["gcpu:handle_0001 (app/views_3.py)", "svc/p99", "gcpu:f (a.py)"]
    kinds = ["gcpu", "latency", "gcpu"]
    for i in range(rows):
        lines.append(f"{T0 + 60 * (i // 3)},{ids[i % 3]},{0.25 + i / 1000!r},{kinds[i % 3]}")
    if bad is not None:
        lines.append(bad)
    return "\n".join(lines) + "\n"


def test_a_file_of_many_blocks_reads_as_its_rows(tmp_path: Path, small_blocks: int) -> None:
    path = tmp_path / "m.csv"
    path.write_text(long_csv(9_000), encoding="utf-8")
    assert path.stat().st_size > 20 * small_blocks
    assert CsvFile(path).table().column("series").num_chunks > 20
    got = {s.id: s for s in read_series_file(path)}
    assert set(got) == {"gcpu:f (a.py)\nsecond\nthird", "gcpu:handle_0001 (app/views_3.py)",
                        "svc/p99", "gcpu:f (a.py)"}  # fmt: skip
    p99 = got["svc/p99"]
    assert p99.kind == "latency" and p99.timestamps_s.size == 3_000
    assert p99.timestamps_s[:2].tolist() == [T0, T0 + 60]
    assert p99.values[:2].tolist() == [0.25 + 1 / 1000, 0.25 + 4 / 1000]
    gzipped = tmp_path / "m.csv.gz"
    gzipped.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    assert_same(read_series_file(gzipped), read_series_file(path))


@pytest.mark.parametrize(
    ("bad", "where", "expected"),
    [
        (f"{T0},svc/p99,oops,latency", "value", "a number (or an empty cell), found 'oops'"),
        (f"{T0},svc/p99, Infinity,latency", "value", "a finite number, found ' Infinity'"),
        (f"{T0},svc/p99,1e400,latency", "value", "a finite number, found '1e400'"),
        (
            "yesterday,svc/p99,1,latency",
            "timestamp",
            "a time (epoch seconds or ISO 8601), found 'yesterday'",
        ),
        ("inf,svc/p99,1,latency", "timestamp", "a finite time, found 'inf'"),
        (f"{T0},,1,latency", "series", "a series id, found ''"),
        (
            f"{T0},svc/p99,1,gcpu",
            "kind",
            "kind 'latency' as on earlier rows of this series, found 'gcpu'",
        ),
        (f"{T0},svc/p99,1", None, "4 fields as in the header, found 3"),
        (f'{T0},"svc/p99",1,latency,"x\ny"', None, "4 fields as in the header, found 5"),
    ],
)
def test_an_error_on_a_late_line_names_that_line(
    tmp_path: Path, small_blocks: int, bad: str, where: str | None, expected: str
) -> None:
    path = tmp_path / "m.csv"
    text = long_csv(6_000, bad)
    path.write_text(text, encoding="utf-8")
    line = text[: text.rindex(bad)].count("\n") + 1 + bad.count("\n")  # where the row ends
    assert line == 6_000 + 6 + bad.count("\n")  # header, a row of three lines, a blank line
    field = f": {where}" if where else ""
    assert message(path) == f"{path}:{line}{field}: expected {expected}"


def test_a_late_error_in_a_file_of_several_default_blocks(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    text = long_csv(60_000, f"{T0},svc/p99,n/a?,latency")
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size > 2 * series_csv_table.BLOCK_BYTES
    line = text.count("\n")
    assert (
        message(path) == f"{path}:{line}: value: expected a number (or an empty cell), found 'n/a?'"
    )


def test_iso_times_and_quoted_crlf_rows_across_blocks(tmp_path: Path, small_blocks: int) -> None:
    rows = ["timestamp,series,value,host"]
    for i in range(4_000):
        stamp = f"2024-11-22T{8 + i % 10:02d}:{i % 60:02d}:00Z" if i % 2 else str(T0 + i)
        rows.append(f'{stamp},"s{i % 7}, with comma",{i},"h\r\n{i % 2}"')
    path = tmp_path / "m.csv"
    path.write_bytes(("\r\n".join(rows) + "\r\n").encode())
    got = read_series_file(path)
    assert len(got) == 7 and all(s.labels == {} for s in got)  # host varies within each
    with path.open(newline="") as stream:
        reference: dict[str, dict[float, list[float]]] = {}
        for row in csv.DictReader(stream):
            stamp = float(row["timestamp"]) if "T" not in row["timestamp"] else (
                np.datetime64(row["timestamp"].rstrip("Z")).astype("datetime64[s]").astype(int)
            )  # fmt: skip
            reference.setdefault(row["series"], {}).setdefault(float(stamp), []).append(
                float(row["value"])
            )
    for item in got:
        points = sorted(reference[item.id].items())
        assert item.timestamps_s.tolist() == [t for t, _ in points]
        assert item.values.tolist() == [sum(v) / len(v) for _, v in points]


# --- CSV: Python's rules for texts, exactly ------------------------------------------------------


def one_series_csv(folder: Path, cells: Sequence[str], column: str = "value") -> Path:
    """One series, row i at time i (or with the i-th cell as its time)."""
    lines = ["timestamp,series,value"]
    for i, cell in enumerate(cells):
        lines.append(f"{i},a,{cell}" if column == "value" else f"{cell},a,{i}")
    path = folder / "v.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_value_spellings_follow_python(tmp_path: Path) -> None:
    cells = [" NaN ", "None", "N/A", "nUlL", "nA", "1_5", "-nan", "+nan", "\u0663", " 2 ", "+.5",
             "5.", "1e-400", "5e-324", "-0.0", "0.1", '""', '"7"']  # fmt: skip
    (got,) = read_series_file(one_series_csv(tmp_path, cells))
    expected = [(i, cell_value(c.strip('"'))) for i, c in enumerate(cells)]
    kept = [(float(i), v) for i, v in expected if not math.isnan(v)]
    assert got.timestamps_s.tolist() == [t for t, _ in kept]
    assert got.values.tobytes() == np.array([v for _, v in kept]).tobytes()


@pytest.mark.parametrize(
    ("cells", "column", "line", "expected"),
    [
        (["1", "nan(2)"], "value", 3, "a number (or an empty cell), found 'nan(2)'"),
        (["1", "-Infinity", "x"], "value", 4, "a number (or an empty cell), found 'x'"),
        (["1", " -Infinity"], "value", 3, "a finite number, found ' -Infinity'"),
        ([" 1 ", "1_000", "nan"], "timestamp", 4, "a finite time, found 'nan'"),
        (["1", "nan(1)"], "timestamp", 3, "a time (epoch seconds or ISO 8601), found 'nan(1)'"),
        (
            ["2024-11-22T08:00:00Z", "nan"],
            "timestamp",
            3,
            "a time (epoch seconds or ISO 8601), found 'nan'",
        ),
        (["1", ""], "timestamp", 3, "a time (epoch seconds or ISO 8601), found ''"),
    ],
)
def test_text_errors_follow_python(
    tmp_path: Path, cells: list[str], column: str, line: int, expected: str
) -> None:
    path = one_series_csv(tmp_path, cells, column)
    assert message(path) == f"{path}:{line}: {column}: expected {expected}"


def test_timestamp_texts_python_reads_as_numbers(tmp_path: Path) -> None:
    (got,) = read_series_file(one_series_csv(tmp_path, [" 3 ", "1_000", "\u0662"], "timestamp"))
    assert got.timestamps_s.tolist() == [2.0, 3.0, 1000.0]


_NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.{len(repr(x))}e}"),
    st.from_regex(r"[ +\-]?[0-9]{0,4}\.?[0-9]{0,4}([eE][+\-]?[0-9]{1,3})? ?", fullmatch=True),
    st.sampled_from(
        [
            "",
            "nan",
            "NaN",
            " null",
            "None",
            "n/a",
            "NA",
            "inf",
            "-Infinity",
            "1_0",
            "nan(1)",
            "-nan",
            "0x1p3",
            "\u0663",
            "e5",
            ".",
            "-",
        ]
    ),  # fmt: skip
)


@settings(
    derandomize=True,
    max_examples=100,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(_NUMBER_TEXT, min_size=1, max_size=12))
def test_values_read_as_python_reads_them(tmp_path: Path, cells: list[str]) -> None:
    path = one_series_csv(tmp_path, cells)
    expected: list[float] = []
    for line, cell in enumerate(cells, 2):
        try:
            expected.append(cell_value(cell))
        except ValueError:
            assert message(path).startswith(f"{path}:{line}: value: expected a number")
            return
    if any(math.isinf(v) for v in expected):
        line = 2 + next(i for i, v in enumerate(expected) if math.isinf(v))
        assert message(path).startswith(f"{path}:{line}: value: expected a finite number")
        return
    (got,) = read_series_file(path)
    kept = [v for v in expected if not math.isnan(v)]
    assert got.values.tobytes() == np.array(kept, dtype=np.float64).tobytes()


# --- JSON Lines: pyarrow's reading, or line by line -----------------------------------------------


def line_by_line(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Series] | str:
    """What the line-by-line reader gives (series, or the error message)."""
    with monkeypatch.context() as patch:
        patch.setattr(series_jsonl, "read_jsonl_arrow", lambda path, data: None)
        try:
            return read_series_file(path)
        except InputError as error:
            return str(error)


def jsonl_records(count: int, points: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(4)
    records: list[dict[str, object]] = []
    for i in range(count):
        series = i % (count - 3)  # the last three ids repeat the first three
        values: list[float | None] = rng.normal(1, 0.5, points).tolist()
        values[i % points] = None
        if i % 3 == 0:
            values[-1] = math.nan
        record: dict[str, object] = {
            "id": f"gcpu:f{series} (m.py)",
            "timestamps": (T0 + 60 * rng.permutation(points)).tolist(),
            "values": values,
            "labels": {"service": "web", **({"host": f"h{i % 2}"} if i % 4 else {})},
            "extra": {"anything": ["x", "y"], "n": i},
        }
        if i % 5:
            record["kind"] = "latency" if series % 2 else "gcpu"
        if i % 7 == 0:
            record["unit"] = "ms"
        records.append(record)
    return records


def test_jsonl_through_pyarrow_is_as_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.jsonl"
    text = "\n".join(json.dumps(r) for r in jsonl_records(60, 50))
    path.write_text(text.replace("}}\n", "}}\n\n  \r\n", 3), encoding="utf-8")
    assert read_jsonl_arrow(path, path.read_bytes()) is not None
    expected = line_by_line(path, monkeypatch)
    assert isinstance(expected, list)
    assert_same(read_series_file(path), expected)


def test_a_line_longer_than_a_block_still_goes_through_pyarrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    points = 100_000  # a line of about 1.5 MB, more than a block
    record = {"id": "a", "timestamps": list(range(points)), "values": [0.5] * points}
    path = tmp_path / "m.jsonl.gz"
    path.write_bytes(gzip.compress((json.dumps(record) + "\n").encode(), mtime=0))
    parts = read_jsonl_arrow(path, gzip.decompress(path.read_bytes()))
    assert parts is not None and parts[0].times.size == points
    expected = line_by_line(path, monkeypatch)
    assert isinstance(expected, list)
    assert_same(read_series_file(path), expected)


GOOD = '{"id": "a", "timestamps": [1, 2], "values": [1.5, 2.5]}'


@pytest.mark.parametrize(
    "text",
    [
        GOOD + " " + GOOD.replace('"a"', '"b"'),  # two objects on one line
        '{"id": "a",\n "timestamps": [1], "values": [1]}',  # one object over two lines
        GOOD.replace("[1, 2]", "[1, -0]"),  # Python reads -0 as 0.0, pyarrow as -0.0
        GOOD.replace("[1.5, 2.5]", "[-0, 2.5]"),
        GOOD.replace("[1.5, 2.5]", "[-NaN, 1]"),  # not JSON to Python
        GOOD.replace("[1.5, 2.5]", "[Inf, 1]"),
        GOOD.replace("[1.5, 2.5]", "[Infinity, 1]"),
        GOOD.replace("[1, 2]", "[1, NaN]"),
        GOOD[:-1] + ', "labels": {"host": null}}',
        GOOD[:-1] + ', "labels": {"host": "h1"}}\n' + GOOD[:-1] + ', "labels": {"host": 1}}',
        GOOD[:-1] + ', "labels": []}',  # falsy: no labels
        GOOD[:-1] + ', "labels": ""}',
        GOOD[:-1] + ', "unit": null, "kind": null}',
        GOOD[:-1] + ', "kind": ""}',
        GOOD.replace('"a"', '""'),
        GOOD.replace('"id": "a"', '"id": "a", "id": "b"'),
        GOOD.replace("[1, 2]", '["2024-11-22T08:00:00Z", 2]'),
        GOOD.replace("[1, 2]", "[1, true]"),
        GOOD.replace("[1.5, 2.5]", "[1.5]"),
        GOOD.replace("[1.5, 2.5]", "[1.5, 1e400]"),
        GOOD.replace('"a"', '"a\\ud800"'),
        GOOD + "\n\u00a0",
        GOOD + "\n[1, 2]",
        GOOD.replace('"values"', '"extra": 1, "values"') + "\n" + GOOD.replace("1.5", "1.5, 7"),
        GOOD.replace('"values"', '"x": 1, "values"') + "\n" + GOOD.replace('"id"', '"x": "1", "id"'),
    ],
)  # fmt: skip
def test_jsonl_pyarrow_cannot_vouch_for_goes_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(text + "\n", encoding="utf-8", errors="surrogatepass")
    assert read_jsonl_arrow(path, path.read_bytes()) is None
    expected = line_by_line(path, monkeypatch)
    if isinstance(expected, str):
        assert message(path) == expected
    else:
        assert_same(read_series_file(path), expected)


def test_jsonl_byte_order_mark_and_bytes_that_are_not_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode() + b"\n")
    assert read_jsonl_arrow(path, path.read_bytes()) is not None
    assert read_series_file(path)[0].values.tolist() == [1.5, 2.5]
    path.write_bytes(GOOD.encode() + b"\n" + GOOD.replace('"a"', '"\xff"').encode("latin-1"))
    assert read_jsonl_arrow(path, path.read_bytes()) is None
    assert message(path).startswith(f"{path}:2: expected UTF-8 text")


# --- Parquet: a large dictionary, few ids per batch ----------------------------------------------


def test_parquet_dictionary_of_many_ids_used_a_few_at_a_time(tmp_path: Path) -> None:
    ids = [f"gcpu:f{i} (m.py)" for i in range(10_000)]
    codes = np.repeat(np.arange(0, 10_000, 100)[::-1], 20).astype(np.int32)  # 100 ids used
    table = pa.table(
        {
            "timestamp": pa.array(T0 + 60.0 * np.tile(np.arange(20), 100)),
            "series": pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(ids)),
            "value": pa.array(np.arange(codes.size, dtype=np.float64)),
        }
    )
    path = tmp_path / "m.parquet"
    pq.write_table(table, path, row_group_size=300)
    got = read_series_file(path)
    assert [s.id for s in got] == [ids[c] for c in range(9_900, -1, -100)]
    assert all(s.timestamps_s.size == 20 for s in got)
    assert got[1].values.tolist() == [float(v) for v in range(20, 40)]


def test_an_empty_dictionary_entry_no_row_uses_is_no_error(tmp_path: Path) -> None:
    ids = pa.DictionaryArray.from_arrays(pa.array([1, 1], pa.int32()), pa.array(["", "a"]))
    table = pa.table({"timestamp": [T0, T0 + 60.0], "series": ids, "value": [1.0, 2.0]})
    pq.write_table(table, tmp_path / "m.parquet")
    (got,) = read_series_file(tmp_path / "m.parquet")
    assert got.id == "a" and got.values.tolist() == [1.0, 2.0]


def test_gzipped_csv_as_pythons_gzip_reads_it(tmp_path: Path) -> None:
    text = 'timestamp,series,value\n1,"a\nb",1\n2,"a\nb",2\n'
    members = gzip.compress(text[:30].encode(), mtime=0) + gzip.compress(text[30:].encode())
    path = tmp_path / "m.csv.gz"
    for data in (members, members + b"\0" * 8):  # pyarrow refuses trailing zeros, Python not
        path.write_bytes(data)
        (got,) = read_series_file(path)
        assert got.id == "a\nb" and got.values.tolist() == [1.0, 2.0]
    path.write_bytes(members[:-12])
    assert "a complete gzip file" in message(path)
    path.write_bytes(b"")
    assert message(path).startswith(f"{path}:1: expected a header row")
