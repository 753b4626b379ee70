"""Parquet and Arrow IPC series files (SPEC §2): the CSV's long format as columns —
``timestamp`` (epoch seconds, integer or float, or an Arrow timestamp), ``series`` (string or
dictionary-encoded), ``value`` (float), optional ``kind``, ``unit`` and label columns.

Files are read one record batch at a time (bounded memory); each batch is converted by
pyarrow.compute and numpy, its rows grouped by series id through dictionary encoding, with no
Python loop per row. Rows in error messages are 1-based data rows: ``file: row N: field``.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from regbot.atomic import write_atomic
from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_parts import LONG_COLUMNS, OPTIONAL_COLUMNS, SeriesPart, label_columns

_REQUIRED = LONG_COLUMNS
_OPTIONAL = OPTIONAL_COLUMNS
_BATCH_ROWS = 65_536
_SECONDS_PER_UNIT = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_ARROW_ERRORS = (pa.ArrowException, OSError)


def _where(path: Path, row: int, field_name: str | None = None) -> str:
    """``file: row N[: field]`` for the 0-based data row ``row``."""
    return f"{path}: row {row + 1}" + (f": {field_name}" if field_name else "")


@dataclass(slots=True)
class _Gathered:
    """One series' points and per-series fields, as met so far in one file."""

    first_row: int
    times: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)  # kind, unit and labels given
    varied: set[str] = field(default_factory=set)  # labels whose rows disagree


def read_arrow_parts(path: Path, rows: tuple[int, int] | None = None) -> list[SeriesPart]:
    """Every series part in one ``.parquet`` or ``.arrow`` (IPC file or stream) file, or in its
    data rows ``[start, stop)`` (0-based; only the row groups or record batches holding them are
    read)."""
    path = Path(path)
    schema, batches = _open(path, rows)
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
    text_names = [n for n in names if n not in _REQUIRED]

    gathered: dict[str, _Gathered] = {}
    for offset, batch in batches:
        if rows is not None:
            low, high = max(rows[0] - offset, 0), min(rows[1] - offset, batch.num_rows)
            if high <= low:
                continue
            batch, offset = batch.slice(low, high - low), offset + low
        if batch.num_rows:
            _read_batch(path, batch, offset, text_names, gathered)

    parts = []
    for series_id, got in gathered.items():
        labels = {k: v for k, v in got.fields.items() if k not in _OPTIONAL}
        parts.append(
            SeriesPart(
                series_id,
                got.fields.get("kind"),
                got.fields.get("unit"),
                labels,
                np.concatenate(got.times),
                np.concatenate(got.values),
                functools.partial(_where, path, got.first_row),
                got.varied,
            )
        )
    return parts


def _open(path: Path, rows: tuple[int, int] | None = None) -> tuple[Any, Iterator[Any]]:
    """The file's Arrow schema and an iterator over ``(first row, record batch)``, only the
    batches that may hold ``rows`` when given; pyarrow's errors (a corrupt or truncated file, a
    file of another format) become one-line InputErrors."""
    expected = "a Parquet file" if path.name.lower().endswith(".parquet") else "an Arrow IPC file"
    if not path.is_file():
        what = "a file, not a folder" if path.is_dir() else "an existing series file"
        raise InputError(str(path), what)
    source: Iterable[tuple[int, Any]]
    try:
        if path.name.lower().endswith(".parquet"):
            schema, source = _parquet_batches(pq.ParquetFile(path), rows)
        else:
            source, schema = _open_ipc(path)
    except _ARROW_ERRORS as error:
        raise InputError(str(path), expected, _one_line(error)) from None
    return schema, _guarded(path, expected, source)


def _parquet_batches(
    parquet: Any, rows: tuple[int, int] | None
) -> tuple[Any, Iterator[tuple[int, Any]]]:
    metadata = parquet.metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    firsts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    groups = list(range(len(sizes)))
    if rows is not None:
        groups = [g for g in groups if firsts[g] < rows[1] and firsts[g + 1] > rows[0]]

    def batches() -> Iterator[tuple[int, Any]]:
        if not groups:
            return
        offset = int(firsts[groups[0]])
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, row_groups=groups):
            yield offset, batch
            offset += batch.num_rows

    return parquet.schema_arrow, batches()


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


def _read_batch(
    path: Path, batch: Any, offset: int, text_names: list[str], gathered: dict[str, _Gathered]
) -> None:
    ids, codes = _dictionary(batch.column("series"))
    if (codes < 0).any():
        row = offset + int(np.flatnonzero(codes < 0)[0])
        raise InputError(_where(path, row, "series"), "a series id", "null")
    if "" in ids:
        row = offset + int(np.flatnonzero(codes == ids.index(""))[0])
        raise InputError(_where(path, row, "series"), "a series id", "")
    times = _times(path, batch.column("timestamp"), offset)
    values = _values(path, batch.column("value"), offset)

    starts = np.full(len(ids), codes.size, dtype=np.intp)
    np.minimum.at(starts, codes, np.arange(codes.size))
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(ids)))[:-1]
    entries: list[_Gathered | None] = []
    for code, rows_of in enumerate(np.split(order, bounds)):
        if not rows_of.size:  # a dictionary entry no row uses
            entries.append(None)
            continue
        got = gathered.get(ids[code])
        if got is None:
            got = gathered[ids[code]] = _Gathered(offset + int(starts[code]))
        got.times.append(times[rows_of])
        got.values.append(values[rows_of])
        entries.append(got)

    for name in text_names:
        column = batch.column(name)
        if pa.types.is_null(column.type):
            continue
        texts, text_codes = _dictionary(column)
        present = text_codes >= 0
        if texts:  # empty text means "not given", as an empty CSV cell
            present &= np.asarray([t != "" for t in texts])[np.maximum(text_codes, 0)]
        pairs = np.unique(codes[present] * len(texts) + text_codes[present])
        for pair in pairs.tolist():
            code, text = divmod(pair, len(texts))
            _give(path, entries[code], name, texts[text], codes, text_codes, offset, code, text)


def _give(
    path: Path,
    got: _Gathered | None,
    name: str,
    text: str,
    codes: np.ndarray,
    text_codes: np.ndarray,
    offset: int,
    code: int,
    text_code: int,
) -> None:
    """Record ``text`` as the ``name`` of a series: kind and unit must agree (else InputError at
    the first disagreeing row); a label that disagrees is marked varied."""
    assert got is not None
    chosen = got.fields.setdefault(name, text)
    if chosen == text or name in got.varied:
        return
    if name not in _OPTIONAL:
        got.varied.add(name)
        return
    row = offset + int(np.flatnonzero((codes == code) & (text_codes == text_code))[0])
    raise InputError(
        _where(path, row, name), f"{name} {chosen!r} as on earlier rows of this series", text
    )


def _first_null(column: Any) -> int:
    return int(np.flatnonzero(np.asarray(column.is_null(), dtype=bool))[0])


def _dictionary(column: Any) -> tuple[list[str], np.ndarray]:
    """The distinct texts of a string column and each row's index into them (-1 for null, also
    for a null entry of a dictionary)."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    entries: list[str | None] = column.dictionary.to_pylist()
    indices = np.asarray(column.indices.fill_null(-1).to_numpy(), dtype=np.int64)
    if None in entries:
        null_entry = np.asarray([entry is None for entry in entries] + [True])
        indices = np.where(null_entry[indices], -1, indices)  # index -1 reads the last, True
    return ["" if entry is None else entry for entry in entries], indices


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
    values = np.asarray(
        column.cast(pa.float64()).fill_null(float("nan")).to_numpy(), dtype=np.float64
    )
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
