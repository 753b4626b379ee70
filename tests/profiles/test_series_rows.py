"""The one grouping routine of the long-format readers (``series_rows.group_long_rows``): plain
batches in, one SeriesPart per series id out."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from regbot.errors import InputError
from regbot.profiles.series_rows import (
    LongBatch,
    _stable_order,
    dictionary_codes,
    first_missing_id,
    group_long_rows,
)


def where(row: int, field: str | None = None) -> str:
    return f"f: row {row + 1}" + (f": {field}" if field else "")


def batch(
    ids: list[str], rows: list[int], texts: dict[str, list[str | None]] | None = None
) -> LongBatch:
    """Rows naming ``ids[rows[i]]``; point i is (t=i, v=10*i) within the batch."""
    n = len(rows)
    columns = {name: pa.array(cells, pa.string()) for name, cells in (texts or {}).items()}
    return LongBatch(
        list(ids),
        np.asarray(rows, dtype=np.int64),
        np.arange(n, dtype=np.float64),
        10.0 * np.arange(n),
        columns,
    )


def test_series_in_order_of_first_appearance_across_batches() -> None:
    parts = group_long_rows(
        [batch(["b", "a"], [0, 1, 0]), batch(["c", "a", "b"], [1, 0, 2, 0])], where
    )
    assert [p.id for p in parts] == ["b", "a", "c"]
    b = parts[0]
    assert b.times.tolist() == [0.0, 2.0, 2.0]  # file order kept within a series
    assert b.values.tolist() == [0.0, 20.0, 20.0]
    assert [p.locate() for p in parts] == ["f: row 1", "f: row 2", "f: row 5"]


def test_dictionary_entries_no_row_uses_make_no_series() -> None:
    ids = [f"unused{i}" for i in range(10_000)] + ["x"]
    parts = group_long_rows([batch(ids, [10_000, 10_000]), batch(ids, [10_000])], where)
    assert [(p.id, p.times.size) for p in parts] == [("x", 3)]


def test_kind_unit_and_labels() -> None:
    texts: dict[str, list[str | None]] = {
        "kind": ["cpu", None, "", "latency"],
        "unit": [None, "s", "s", None],
        "host": ["h1", "h2", "h1", None],
        "region": ["eu", "", None, "us"],
    }
    a, b = group_long_rows([batch(["a", "b"], [0, 0, 0, 1], texts)], where)
    assert (a.kind, a.unit, a.labels, a.varied) == ("cpu", "s", {"region": "eu"}, {"host"})
    assert (b.kind, b.unit, b.labels, b.varied) == ("latency", None, {"region": "us"}, set())


def test_a_second_kind_is_an_error_at_its_first_row_in_file_order() -> None:
    first = batch(["a", "b"], [0, 1, 0], {"kind": ["cpu", "qps", None]})
    second = batch(["b", "a"], [1, 0, 1, 0], {"kind": ["cpu", "qps", "gpu", "ram"]})
    with pytest.raises(InputError) as caught:
        group_long_rows([first, second], where)
    assert (
        str(caught.value)
        == "f: row 6: kind: expected kind 'cpu' as on earlier rows of this series, found 'gpu'"
    )


def test_kind_is_checked_before_unit() -> None:
    rows = batch(["a"], [0, 0], {"unit": ["s", "ms"], "kind": ["cpu", "gpu"]})
    with pytest.raises(InputError, match=r"row 2: kind"):
        group_long_rows([rows], where)


def test_a_column_missing_from_some_batches_is_not_given_there() -> None:
    parts = group_long_rows(
        [batch(["a"], [0]), batch(["a"], [0], {"kind": ["cpu"]}), batch(["a"], [0])], where
    )
    assert parts[0].kind == "cpu" and parts[0].times.size == 3


@pytest.mark.parametrize("count", [3, 70_000])  # a radix sort up to 65,536 series
def test_rows_are_grouped_stably(count: int) -> None:
    codes = np.tile(np.arange(count)[::-1], 2)
    order = _stable_order(codes, count)
    assert order is not None
    assert (np.diff(codes[order]) >= 0).all()
    assert order[:2].tolist() == [count - 1, 2 * count - 1]  # file order within a series
    assert _stable_order(np.sort(codes), count) is None  # already grouped: no sort at all


def test_dictionary_codes_of_null_entries_and_null_cells() -> None:
    column = pa.DictionaryArray.from_arrays(pa.array([0, None, 1, 2]), pa.array(["a", None, "b"]))
    entries, codes = dictionary_codes(column)
    assert entries == ["a", None, "b"] and codes.tolist() == [0, -1, -1, 2]
    entries, codes = dictionary_codes(pa.array(["x", None, "x"]))
    assert entries == ["x"] and codes.tolist() == [0, -1, 0]


def test_missing_ids_are_rows_not_dictionary_entries() -> None:
    assert first_missing_id(["a", ""], np.array([0, 0])) is None  # "" is in no row
    assert first_missing_id(["a", ""], np.array([0, 1, 1])) == (1, "")
    assert first_missing_id(["a", ""], np.array([0, 1, -1])) == (2, "null")  # nulls first
