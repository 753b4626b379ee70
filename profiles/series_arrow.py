"""Parquet and Arrow IPC series files (SPEC §2): the CSV's long format as columns —
``timestamp`` (epoch seconds, integer or float, or an Arrow timestamp), ``series`` (string or
dictionary-encoded), ``value`` (float), optional ``kind``, ``unit`` and label columns.

Files are read one record batch at a time; each batch is checked and converted by
pyarrow.compute and numpy, and the rows are grouped by series id by ``series_rows`` (the routine
the CSV reader uses too), with no Python loop per row. Rows in error messages are 1-based data
rows: ``file: row N: field``.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from regbot.atomic import write_atomic
from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_parts import LONG_COLUMNS, SeriesPart, label_columns
from regbot.profiles.series_rows import (
    LongBatch,
    SharedDictionaries,
    first_missing_id,
    group_long_rows,
)

_REQUIRED = LONG_COLUMNS
_BATCH_ROWS = 65_536
_SECONDS_PER_UNIT = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_ARROW_ERRORS = (pa.ArrowException, OSError)


def _where(path: Path, row: int, field_name: str | None = None, first: int = 0) -> str:
    """``file: row N[: field]`` for the 0-based data row ``first + row``."""
    return f"{path}: row {first + row + 1}" + (f": {field_name}" if field_name else "")


def read_arrow_parts(path: Path, rows: tuple[int, int] | None = None) -> list[SeriesPart]:
    """Every series part in one ``.parquet`` or ``.arrow`` (IPC file or stream) file, or in its
    data rows ``[start, stop)`` (0-based; only the row groups or record batches holding them are
    read, and rows in messages are still the file's)."""
    path = Path(path)
    schema, batches = _open(path, rows)
    text_names = _checked_text_names(path, schema)
    first = rows[0] if rows is not None else 0
    return group_long_rows(
        _long_batches(path, _sliced(batches, rows), text_names),
        functools.partial(_where, path, first=first),
    )


def _checked_text_names(path: Path, schema: Any) -> list[str]:
    """The file's text columns (kind, unit, labels) in column order, once its columns are
    checked: timestamp, series and value present, each name once, each column of its type."""
    names: list[str] = list(schema.names)
    missing = [name for name in _REQUIRED if name not in names]
    if missing:
        raise InputError(
            f"{path}: {missing[0]}",
            "columns timestamp, series, value; missing " + ", ".join(missing),
            ", ".join(names),
        )
    for name in names:
        if names.count(name) > 1:
            raise InputError(f"{path}: {name}", "each column once", f"{names.count(name)} times")
    _check_types(path, schema)
    return [n for n in names if n not in _REQUIRED]


def _sliced(
    batches: Iterable[tuple[int, Any]], rows: tuple[int, int] | None
) -> Iterator[tuple[int, Any]]:
    """The numbered batches cut to ``rows`` (all of them without)."""
    for offset, batch in batches:
        if rows is None:
            yield offset, batch
            continue
        low, high = max(rows[0] - offset, 0), min(rows[1] - offset, batch.num_rows)
        if high > low:
            yield offset + low, batch.slice(low, high - low)


def _long_batches(
    path: Path, batches: Iterable[tuple[int, Any]], text_names: list[str]
) -> Iterator[LongBatch]:
    """Each record batch checked (series ids, then times, then values) and converted; rows in
    messages are the file's (``offset``: the batch's first row)."""
    series = SharedDictionaries()
    for offset, batch in batches:
        ids, codes = series(batch.column("series"))
        missing = first_missing_id(ids, codes)
        if missing is not None:
            row, found = missing
            raise InputError(_where(path, offset + row, "series"), "a series id", found)
        times = _times(path, batch.column("timestamp"), offset)
        values = _values(path, batch.column("value"), offset)
        texts = {name: batch.column(name) for name in text_names}
        yield LongBatch(ids, codes, times, values, texts)


@dataclass(frozen=True, slots=True)
class ConstantText:
    """A text column whose every cell in a chunk is ``text`` (None: every cell null), known from
    a Parquet row group's statistics without reading the column: its null count is 0 and its
    minimum equals its maximum (statistics are bounds, so then every cell equals them), or
    every cell is null. Null-typed columns are ``ConstantText(None)`` too."""

    text: str | None


@dataclass(frozen=True, slots=True)
class ColumnChunk:
    """Data rows ``[first, first + len(times))`` (0-based) of a file without their series ids:
    times and values converted and checked exactly as ``read_arrow_parts`` does (read-only
    views of Arrow's memory where no conversion was needed), and the text columns (kind, unit,
    labels) as Arrow string or dictionary arrays or ``ConstantText``."""

    first: int
    times: np.ndarray
    values: np.ndarray
    texts: dict[str, Any]


def read_arrow_columns(
    path: Path, rows: tuple[int, int]
) -> tuple[list[str], Iterator[ColumnChunk]]:
    """The text column names (kind, unit, labels, in column order) of a ``.parquet`` or
    ``.arrow`` file and its data rows ``[start, stop)`` as ``ColumnChunk``s, without reading the
    ``series`` column: for readers that know each row's series already (the partition survey
    of ``series_partitions``). Parquet is read a row group at a time, only the groups holding
    the rows and, of a text column, only the groups whose statistics do not show it constant.
    Raises the InputErrors ``read_arrow_parts`` raises for the file, its columns, its times and
    its values (not those about series ids, which are not read)."""
    path = Path(path)
    expected = "a Parquet file" if path.name.lower().endswith(".parquet") else "an Arrow IPC file"
    schema, batches = _open_columns(path, rows, expected)
    text_names = _checked_text_names(path, schema)
    mapped = not path.name.lower().endswith(".parquet")  # IPC batches are views of the file
    chunks = _column_chunks(path, _guarded(path, expected, batches), text_names, mapped)
    return text_names, chunks


def _open_columns(
    path: Path, rows: tuple[int, int], expected: str
) -> tuple[Any, Iterator[tuple[int, Any, dict[str, ConstantText]]]]:
    """The schema and ``(first row, batch, constant text columns)`` for ``rows``."""
    if not path.name.lower().endswith(".parquet"):
        schema, ipc_batches = _open(path, rows)
        return schema, ((at, batch, {}) for at, batch in _sliced(ipc_batches, rows))
    _check_is_file(path)
    try:
        schema = pq.ParquetFile(path).schema_arrow
        texts = [n for n in schema.names if n not in ("timestamp", "value")]
        parquet = pq.ParquetFile(path, read_dictionary=texts)
    except _ARROW_ERRORS as error:
        raise InputError(str(path), expected, _one_line(error)) from None
    return schema, _row_group_batches(parquet, rows)


def _row_group_batches(
    parquet: Any, rows: tuple[int, int]
) -> Iterator[tuple[int, Any, dict[str, ConstantText]]]:
    """The row groups holding ``rows``, each read whole but for the text columns its
    statistics show constant, cut to ``rows``."""
    metadata = parquet.metadata
    names = [n for n in parquet.schema_arrow.names if n != "series"]
    leaf = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    first = 0
    for group in range(metadata.num_row_groups):
        size = metadata.row_group(group).num_rows
        low, high = max(rows[0] - first, 0), min(rows[1] - first, size)
        if high > low:
            constant: dict[str, ConstantText] = {}
            for name in names:
                if name not in ("timestamp", "value") and name in leaf:
                    found = _constant_text(metadata.row_group(group), leaf[name])
                    if found is not None:
                        constant[name] = found
            read = [n for n in names if n not in constant]
            table = parquet.read_row_group(group, columns=read, use_threads=False)
            for batch in table.slice(low, high - low).to_batches():
                yield first + low, batch, constant
                low += batch.num_rows
        first += size
        if first >= rows[1]:
            return


def _constant_text(group: Any, column: int) -> ConstantText | None:
    """The one text of a column in a row group when its statistics show it (``ConstantText``)."""
    chunk = group.column(column)
    stats = chunk.statistics if chunk.is_stats_set else None
    if stats is None or not stats.has_null_count:
        return None
    if stats.null_count == group.num_rows:
        return ConstantText(None)
    if stats.null_count != 0 or not stats.has_min_max or stats.min_raw != stats.max_raw:
        return None
    text = stats.min
    return ConstantText(text) if isinstance(text, str) else None


def _column_chunks(
    path: Path,
    batches: Iterable[tuple[int, Any, dict[str, ConstantText]]],
    text_names: list[str],
    mapped: bool,
) -> Iterator[ColumnChunk]:
    """The chunks, their times and values converted by ``_times`` and ``_values``; copied when
    the batches are views of a memory-mapped file (the series outlive the mapping)."""
    for offset, batch, constant in batches:
        times = _times(path, batch.column("timestamp"), offset)
        values = _values(path, batch.column("value"), offset)
        if mapped:
            times, values = np.array(times), np.array(values)
        texts: dict[str, Any] = {}
        for name in text_names:
            if name in constant:
                texts[name] = constant[name]
            else:
                column = batch.column(name)
                null = pa.types.is_null(column.type)
                texts[name] = ConstantText(None) if null else column
        yield ColumnChunk(offset, times, values, texts)


def _open(path: Path, rows: tuple[int, int] | None = None) -> tuple[Any, Iterator[Any]]:
    """The file's Arrow schema and an iterator over ``(first row, record batch)``, only the
    batches that may hold ``rows`` when given; pyarrow's errors (a corrupt or truncated file, a
    file of another format) become one-line InputErrors."""
    expected = "a Parquet file" if path.name.lower().endswith(".parquet") else "an Arrow IPC file"
    _check_is_file(path)
    source: Iterable[tuple[int, Any]]
    try:
        if path.name.lower().endswith(".parquet"):
            schema = pq.ParquetFile(path).schema_arrow
            texts = [n for n in schema.names if n not in ("timestamp", "value")]
            parquet = pq.ParquetFile(path, read_dictionary=texts)  # no string per row
            source = _parquet_batches(parquet, rows)
        else:
            source, schema = _open_ipc(path)
    except _ARROW_ERRORS as error:
        raise InputError(str(path), expected, _one_line(error)) from None
    return schema, _guarded(path, expected, source)


def _check_is_file(path: Path) -> None:
    if not path.is_file():
        what = "a file, not a folder" if path.is_dir() else "an existing series file"
        raise InputError(str(path), what)


def _parquet_batches(parquet: Any, rows: tuple[int, int] | None) -> Iterator[tuple[int, Any]]:
    """``(first row, batch)`` of the row groups that may hold ``rows`` (all without)."""
    metadata = parquet.metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    firsts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    groups = list(range(len(sizes)))
    if rows is not None:
        groups = [g for g in groups if firsts[g] < rows[1] and firsts[g + 1] > rows[0]]
    if not groups:
        return
    offset = int(firsts[groups[0]])
    for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, row_groups=groups):
        yield offset, batch
        offset += batch.num_rows


def _open_ipc(path: Path) -> tuple[Iterable[tuple[int, Any]], Any]:
    try:
        reader = ipc.open_file(pa.memory_map(str(path)))
    except pa.ArrowInvalid:
        stream = ipc.open_stream(pa.memory_map(str(path)))
        return _numbered(stream), stream.schema
    count = reader.num_record_batches
    return _numbered(reader.get_batch(i) for i in range(count)), reader.schema


def _numbered(batches: Iterable[Any]) -> Iterator[tuple[int, Any]]:
    offset = 0
    for batch in batches:
        yield offset, batch
        offset += batch.num_rows


def _guarded(path: Path, expected: str, batches: Iterable[Any]) -> Iterator[Any]:
    iterator = iter(batches)
    while True:
        try:
            batch = next(iterator)
        except StopIteration:
            return
        except _ARROW_ERRORS as error:
            raise InputError(str(path), expected, _one_line(error)) from None
        yield batch


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _is_text(kind: Any) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _check_types(path: Path, schema: Any) -> None:
    for name in schema.names:
        kind = schema.field(name).type
        if name == "timestamp":
            ok = pa.types.is_integer(kind) or pa.types.is_floating(kind)
            ok = ok or pa.types.is_timestamp(kind)
            expected = "epoch seconds (integer or float) or an Arrow timestamp"
        elif name == "value":
            ok = pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_null(kind)
            expected = "a float column"
        else:
            ok = _is_text(kind) or pa.types.is_null(kind)
            expected = "a string column" + (" (or dictionary-encoded)" if name == "series" else "")
        if not ok:
            raise InputError(f"{path}: {name}", expected, str(kind))


def _first_null(column: Any) -> int:
    return int(np.flatnonzero(np.asarray(column.is_null(), dtype=bool))[0])


def _times(path: Path, column: Any, offset: int) -> np.ndarray:
    if column.null_count:
        row = offset + _first_null(column)
        raise InputError(_where(path, row, "timestamp"), "a time", "null")
    kind = column.type
    if pa.types.is_timestamp(kind):
        ticks = np.asarray(column.cast(pa.int64()).to_numpy(), dtype=np.int64)
        scale = _SECONDS_PER_UNIT[kind.unit]
        whole, rest = np.divmod(ticks, scale)
        times = whole.astype(np.float64) + rest.astype(np.float64) / scale
    else:
        times = np.asarray(column.to_numpy(), dtype=np.float64)
    if not np.isfinite(times).all():
        row = int(np.flatnonzero(~np.isfinite(times))[0])
        raise InputError(_where(path, offset + row, "timestamp"), "a finite time", times[row])
    return times


def _values(path: Path, column: Any, offset: int) -> np.ndarray:
    if pa.types.is_null(column.type):
        return np.full(len(column), np.nan)
    floats = column.cast(pa.float64())
    if floats.null_count:
        floats = floats.fill_null(float("nan"))
    values = np.asarray(floats.to_numpy(), dtype=np.float64)
    if np.isinf(values).any():
        row = int(np.flatnonzero(np.isinf(values))[0])
        raise InputError(_where(path, offset + row, "value"), "a finite number", values[row])
    return values


def write_series_parquet(series: Iterable[Series], path: Path) -> None:
    """Write SPEC §2 long format as Parquet, atomically: float64 ``timestamp`` and ``value``,
    dictionary-encoded ``series``, ``kind``, ``unit`` (null when not given) and one string column
    per label name (null where a series does not have the label), in name order."""
    items = list(series)
    path = Path(path)
    label_names = label_columns([item.labels for item in items], path, "file")
    counts = np.asarray([len(item.timestamps_s) for item in items], dtype=np.int64)
    codes = np.repeat(np.arange(len(items), dtype=np.int32), counts)

    def per_series(texts: list[str | None]) -> Any:
        return pa.array(texts, pa.string()).take(pa.array(codes))

    columns = {
        "timestamp": pa.array(_joined([item.timestamps_s for item in items]), pa.float64()),
        "series": pa.DictionaryArray.from_arrays(
            pa.array(codes, pa.int32()), pa.array([item.id for item in items], pa.string())
        ),
        "value": pa.array(_joined([item.values for item in items]), pa.float64()),
        "kind": per_series([item.kind for item in items]),
        "unit": per_series([item.unit for item in items]),
    }
    for name in label_names:
        columns[name] = per_series([item.labels.get(name) for item in items])
    table = pa.table(columns)

    def write(raw: BinaryIO) -> None:
        pq.write_table(table, raw)

    write_atomic(path, write)


def _joined(arrays: list[Any]) -> np.ndarray:
    if not arrays:
        return np.empty(0, dtype=np.float64)
    return np.concatenate([np.asarray(a, dtype=np.float64).reshape(-1) for a in arrays])
