"""Long-format CSV series files (SPEC §2): ``timestamp,series,value[,kind][,unit][,label…]``.

Reading is vectorised: a 1,000,000-row CSV is split into columns, converted by numpy and grouped
with one ``np.unique``; line numbers for error messages are found by re-reading, on the error
path only. Writing is one pass, floats as ``repr``.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import csv
import functools
import gc
import io
import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np

from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_parts import (
    LONG_COLUMNS,
    OPTIONAL_COLUMNS,
    SeriesPart,
    label_columns,
    read_series_text,
    write_series_text,
)
from regbot.timefmt import parse_time

_REQUIRED = LONG_COLUMNS
_OPTIONAL = OPTIONAL_COLUMNS
_MISSING_TEXT = frozenset({"", "nan", "null", "none", "na", "n/a"})
Columns = Sequence[str]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cycle collector while millions of cell strings are made: they form no cycles,
    and collections triggered by the allocations would double the reading time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_csv_parts(path: Path) -> list[SeriesPart]:
    with _gc_paused():
        return _read_csv_text(path, read_series_text(path))


def _read_csv_text(path: Path, text: str) -> list[SeriesPart]:
    where = _CsvWhere(path, text)
    names, columns_list, count = _csv_table(path, text, where)
    if not count:
        return []
    columns = dict(zip(names, columns_list))
    ids_col = columns["series"]

    # Group rows by id: `first[i]` is the row where row i's id first appears.
    first_row: dict[str, int] = {}
    first = np.fromiter(map(first_row.setdefault, ids_col, itertools.count()), np.intp, count)
    starts, codes = np.unique(first, return_inverse=True)
    ids = [ids_col[i] for i in starts.tolist()]
    if "" in first_row:
        raise InputError(where(first_row[""], "series"), "a series id", "")

    times = _csv_times(columns["timestamp"], where)
    values = _csv_values(columns["value"], where)
    kinds = _csv_per_series(columns.get("kind"), codes, len(ids), where, "kind")
    units = _csv_per_series(columns.get("unit"), codes, len(ids), where, "unit")
    label_names = [n for n in names if n not in _REQUIRED and n not in _OPTIONAL]
    labels: list[dict[str, str]] = [{} for _ in ids]
    varied: list[set[str]] = [set() for _ in ids]
    for name in label_names:
        for code, cell in enumerate(_csv_per_series(columns[name], codes, len(ids), where, None)):
            if cell is _VARIED:
                varied[code].add(name)
            elif cell is not None:
                labels[code][name] = cell

    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(ids)))[:-1]
    parts = []
    for code, rows_of in enumerate(np.split(order, bounds)):
        row = int(starts[code])
        parts.append(
            SeriesPart(
                ids[code],
                kinds[code],
                units[code],
                labels[code],
                times[rows_of],
                values[rows_of],
                functools.partial(where, row),
                varied[code],
            )
        )
    return parts


def _csv_table(path: Path, text: str, where: _CsvWhere) -> tuple[list[str], list[Columns], int]:
    """Header names, one sequence of cell texts per column, and the number of data rows.

    Blank lines are skipped. A file without quotes or lone carriage returns whose lines all have
    the header's number of fields is split with ``str.split`` (the same result as the csv
    module, several times faster); any other file goes through the csv module.
    """
    plain = text.replace("\r\n", "\n") if "\r" in text else text
    if '"' not in plain and "\r" not in plain:
        lines = plain.split("\n")
        names = _csv_header(path, lines[0].split(",") if lines else None)
        body = list(filter(None, lines[1:]))
        if set(map(operator.methodcaller("count", ","), body)) <= {len(names) - 1}:
            cells = ",".join(body).split(",") if body else []
            return names, [cells[i :: len(names)] for i in range(len(names))], len(body)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        names = _csv_header(path, header)
        rows = list(filter(None, reader))
    except csv.Error as error:
        raise InputError(f"{path}:{reader.line_num}", "well-formed CSV", str(error)) from None
    if set(map(len, rows)) - {len(names)}:
        bad = next(i for i, row in enumerate(rows) if len(row) != len(names))
        raise InputError(where(bad), f"{len(names)} fields as in the header", len(rows[bad]))
    return names, list(zip(*rows)) if rows else [() for _ in names], len(rows)


def _csv_header(path: Path, header: list[str] | None) -> list[str]:
    expected = "a header row with columns timestamp, series, value (any order)"
    if header is None:
        raise InputError(f"{path}:1", expected, "an empty file")
    names = [name.strip() for name in header]
    missing = [name for name in _REQUIRED if name not in names]
    if missing:
        raise InputError(f"{path}:1", f"{expected}; missing {', '.join(missing)}", ",".join(header))
    for position, name in enumerate(names, 1):
        if not name:
            raise InputError(f"{path}:1: column {position}", "a column name", "")
        if names.count(name) > 1:
            raise InputError(f"{path}:1: {name}", "each column once", f"{names.count(name)} times")
    return names


class _CsvWhere:
    """``file:line`` (or ``file:line: field``) of the i-th data row; lines are found by re-reading
    the text, which only an error needs (blank lines and quoted newlines make them uneven)."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def __call__(self, row: int, field_name: str | None = None) -> str:
        reader = csv.reader(io.StringIO(self.text, newline=""))
        next(reader, None)
        data_rows = (reader.line_num for r in reader if r)
        line = next(itertools.islice(data_rows, row, None), "?")
        suffix = f": {field_name}" if field_name else ""
        return f"{self.path}:{line}{suffix}"


def _csv_times(column: Columns, where: _CsvWhere) -> np.ndarray:
    try:
        times = np.array(column, dtype=np.float64)
    except ValueError:  # ISO 8601 text; parse each distinct text once
        parsed: dict[str, float] = {}
        for text in dict.fromkeys(column):
            try:
                parsed[text] = parse_time(text, "timestamp")
            except InputError:
                row = column.index(text)
                raise InputError(
                    where(row, "timestamp"), "a time (epoch seconds or ISO 8601)", text
                ) from None
        times = np.fromiter(map(parsed.__getitem__, column), np.float64, len(column))
    if not np.isfinite(times).all():
        row = int(np.flatnonzero(~np.isfinite(times))[0])
        raise InputError(where(row, "timestamp"), "a finite time", column[row])
    return times


def _cell_value(text: str) -> float:
    if text.strip().lower() in _MISSING_TEXT:
        return float("nan")
    return float(text)


def _csv_values(column: Columns, where: _CsvWhere) -> np.ndarray:
    try:
        values = np.array(column, dtype=np.float64)
    except ValueError:
        values = _csv_values_slowly(column, where)
    if np.isinf(values).any():
        row = int(np.flatnonzero(np.isinf(values))[0])
        raise InputError(where(row, "value"), "a finite number", column[row])
    return values


def _csv_values_slowly(column: Columns, where: _CsvWhere) -> np.ndarray:
    """Values of a column with missing cells: empty cells (the usual case) become NaN in one
    pass; other spellings of "missing" (``null``, ``NA``...) and errors are handled cell by cell."""
    try:
        return np.array([text or "nan" for text in column], dtype=np.float64)
    except ValueError:
        values = np.empty(len(column))
        for row, text in enumerate(column):
            try:
                values[row] = _cell_value(text)
            except ValueError:
                raise InputError(where(row, "value"), "a number (or an empty cell)", text) from None
        return values


_VARIED = "\0varied"  # sentinel: the rows of one series give different values


def _csv_per_series(
    column: Columns | None,
    codes: np.ndarray,
    count: int,
    where: _CsvWhere,
    strict: str | None,
) -> list[str | None]:
    """One value per series from a per-row column; empty cells are "not given". When the rows of
    a series disagree: InputError at the row if ``strict`` (the field name), else ``_VARIED``."""
    chosen: list[str | None] = [None] * count
    if column is None:
        return chosen
    for code, text in dict.fromkeys(zip(codes.tolist(), column)):
        if not text or chosen[code] == text or chosen[code] is _VARIED:
            continue
        if chosen[code] is None:
            chosen[code] = text
        elif strict is None:
            chosen[code] = _VARIED
        else:
            row = next(
                i for i, (c, t) in enumerate(zip(codes.tolist(), column)) if c == code and t == text
            )
            raise InputError(
                where(row, strict),
                f"{strict} {chosen[code]!r} as on earlier rows of this series",
                text,
            )
    return chosen


def write_series_csv(series: Iterable[Series], path: Path) -> None:
    """Write SPEC §2 long-format CSV: ``timestamp,series,value,kind[,unit][,label…]``, floats as
    ``repr``; label columns are the union of the series' label names, in name order."""
    items = list(series)
    label_names = label_columns([item.labels for item in items], path, "CSV")
    with_unit = any(item.unit is not None for item in items)
    header = [*_REQUIRED, "kind", *(["unit"] if with_unit else []), *label_names]

    def write(stream: IO[str]) -> None:
        stream.write(",".join(map(_csv_field, header)) + "\n")
        for item in items:
            tail = [item.kind, *([item.unit or ""] if with_unit else [])]
            tail += [item.labels.get(name, "") for name in label_names]
            middle = f",{_csv_field(item.id)},"
            end = "," + ",".join(map(_csv_field, tail)) + "\n"
            times = np.asarray(item.timestamps_s, dtype=np.float64).tolist()
            values = np.asarray(item.values, dtype=np.float64).tolist()
            stream.write("".join([f"{t!r}{middle}{v!r}{end}" for t, v in zip(times, values)]))

    write_series_text(Path(path), write)


def _csv_field(text: str) -> str:
    """A CSV cell as the csv module's minimal quoting writes it."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text
