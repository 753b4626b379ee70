"""Readers and writers of series files (SPEC §2): long-format CSV and JSON Lines, optionally gzipped.

Rules, fixed here once:

* **Format** is chosen by extension: ``.csv``, ``.jsonl``, ``.csv.gz``, ``.jsonl.gz``.
* **Points** of every series go through :func:`normalise_points` (sorted by time, missing points
  dropped, duplicate timestamps averaged, irregular spacing kept).
* **Kind** defaults to ``gcpu`` for an id starting with ``gcpu:`` and to ``metric`` otherwise
  (``metric`` is not higher-is-better, so higher values count as worse, as SPEC §2 says for every
  kind not configured otherwise). See :func:`default_kind`.
* **Merging**: one series id met on several CSV rows, JSONL lines or files is one series; its
  points are pooled and normalised together. A kind or unit given twice must agree (else
  ``InputError``); a label is kept when every place that gives it gives the same value and is
  dropped when the values differ (a ``host`` column in a file with one row per host: the series
  aggregates over hosts). In CSV an empty cell means "not given".
* **Order** of the returned series is the order in which ids first appear.
* **JSONL** keys other than ``id, kind, timestamps, values, labels, unit`` are ignored, so sources
  may add their own.
* **Writers** are atomic (a temporary file in the same folder, then a rename) and write floats with
  ``repr``, so ``read(write(x))`` gives ``x`` back exactly for series as the readers return them
  (CSV cannot hold a series without points nor a label whose value is the empty string).

Reading is vectorised: a 1,000,000-row CSV is split into columns, converted by numpy and grouped
with one ``np.unique``; line numbers for error messages are found by re-reading, on the error path
only.
"""

from __future__ import annotations

import csv
import gc
import gzip
import io
import itertools
import json
import operator
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from regbot.atomic import write_atomic
from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.timefmt import parse_time

SUFFIXES = (".csv", ".jsonl", ".csv.gz", ".jsonl.gz")
_REQUIRED = ("timestamp", "series", "value")
_OPTIONAL = ("kind", "unit")
_MISSING_TEXT = frozenset({"", "nan", "null", "none", "na", "n/a"})
_JSONL_NUMBER = frozenset({int, float})
Columns = Sequence[str]


def default_kind(series_id: str) -> str:
    """The kind of a series whose file does not say: ``gcpu`` for ``gcpu:…`` ids, else ``metric``."""
    return "gcpu" if series_id.startswith("gcpu:") else "metric"


def normalise_points(
    timestamps: Sequence[float] | np.ndarray,
    values: Sequence[float | None] | np.ndarray,
    where: str = "series",
) -> tuple[np.ndarray, np.ndarray]:
    """The one rule for the points of every series; returns float64 ``(timestamps_s, values)``.

    * Points are sorted by time (a stable sort, so the result does not depend on input order
      except through the averaging below).
    * Missing points are dropped: a value that is NaN or None (an empty CSV cell, ``null`` in
      JSON) says "no measurement", not zero.
    * Duplicate timestamps are averaged into one point: several hosts or scrapers report the same
      time bucket, and their mean is the bucket's level. (Summing would make the level depend on
      how many reporters there were.)
    * Irregular spacing and gaps are kept as they are: detection works on the points in order,
      and windows are defined in seconds, not in point counts.

    Values must be finite after NaN is dropped, and timestamps finite: ``inf`` raises
    ``InputError`` at ``where``. O(n log n) for the sort; no Python loop per point.
    """
    times = np.asarray(timestamps, dtype=np.float64).reshape(-1)
    vals = np.asarray(values, dtype=np.float64).reshape(-1)
    if times.shape != vals.shape:
        raise InputError(where, f"as many values as timestamps ({times.size})", vals.size)
    if not np.isfinite(times).all():
        raise InputError(where, "finite timestamps", float(times[~np.isfinite(times)][0]))
    present = ~np.isnan(vals)
    times, vals = times[present], vals[present]
    if np.isinf(vals).any():
        raise InputError(where, "finite values", float(vals[np.isinf(vals)][0]))
    order = np.argsort(times, kind="stable")
    times, vals = times[order], vals[order]
    if times.size < 2 or bool((np.diff(times) > 0).all()):
        return times, vals
    unique, inverse = np.unique(times, return_inverse=True)
    sums = np.bincount(inverse, weights=vals, minlength=unique.size)
    counts = np.bincount(inverse, minlength=unique.size)
    return unique, sums / counts


# --- reading ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Part:
    """Points of one series as found in one place, before merging and normalisation."""

    id: str
    kind: str | None
    unit: str | None
    labels: dict[str, str]
    times: np.ndarray
    values: np.ndarray
    locate: Callable[[], str]  # "file:line" of this part, computed only for an error message
    varied: set[str] = field(default_factory=set)  # labels already found to differ


def read_series_file(path: Path) -> list[Series]:
    """Every series in one series file (see the module docstring for the rules)."""
    return _merge(_read_parts(Path(path)))


def read_series_files(paths: Iterable[Path]) -> list[Series]:
    """Every series in the given files and folders (folders: their series files, recursively,
    in name order), one series per id across all of them."""
    parts: list[_Part] = []
    for path in find_series_files(paths):
        parts.extend(_read_parts(path))
    return _merge(parts)


def find_series_files(paths: Iterable[Path]) -> list[Path]:
    """The series files named, with folders replaced by the series files under them (sorted)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.is_file() and _suffix(p)))
        else:
            found.append(path)
    return found


def _suffix(path: Path) -> str | None:
    name = path.name.lower()
    return next((s for s in sorted(SUFFIXES, key=len, reverse=True) if name.endswith(s)), None)


def _read_parts(path: Path) -> list[_Part]:
    suffix = _suffix(path)
    if suffix is None:
        raise InputError(str(path), "a series file ending in " + ", ".join(SUFFIXES), path.name)
    if not path.is_file():
        what = "a file, not a folder" if path.is_dir() else "an existing series file"
        raise InputError(str(path), what)
    return _read_csv(path) if suffix.startswith(".csv") else _read_jsonl(path)


def _read_text(path: Path) -> str:
    """The whole file as text (gunzipped when it ends in ``.gz``). A truncated gzip or a byte
    that is not UTF-8 becomes an InputError at the line where it happens."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    chunks: list[bytes] = []
    lines = 0
    try:
        with opener(path, "rb") as stream:
            while chunk := stream.read(1 << 20):
                chunks.append(chunk)
                lines += chunk.count(b"\n")
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise InputError(f"{path}:{lines + 1}", "a complete gzip file", str(error)) from None
    except OSError as error:
        raise InputError(str(path), "a readable series file", str(error)) from None
    data = b"".join(chunks)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(f"{path}:{line}", "UTF-8 text", str(error)) from None


# CSV


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


def _read_csv(path: Path) -> list[_Part]:
    with _gc_paused():
        return _read_csv_text(path, _read_text(path))


def _read_csv_text(path: Path, text: str) -> list[_Part]:
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
            _Part(
                ids[code],
                kinds[code],
                units[code],
                labels[code],
                times[rows_of],
                values[rows_of],
                lambda row=row: where(row),
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


# JSON Lines


def _read_jsonl(path: Path) -> list[_Part]:
    # Split on "\n" only: JSON text may hold U+2028 and other characters splitlines() breaks on.
    lines = _read_text(path).split("\n")
    return [_jsonl_part(f"{path}:{n}", line) for n, line in enumerate(lines, 1) if line.strip()]


def _jsonl_part(where: str, line: str) -> _Part:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(f"{where}:{error.colno}", f"a JSON object ({error.msg})") from None
    if not isinstance(record, dict):
        raise InputError(
            where, 'a JSON object {"id": …, "timestamps": […], "values": […]}', line.strip()
        )
    series_id = record.get("id")
    if not isinstance(series_id, str) or not series_id:
        raise InputError(f"{where}: id", "a non-empty string", series_id)
    kind, unit = record.get("kind"), record.get("unit")
    for name, text in (("kind", kind), ("unit", unit)):
        if text is not None and (not isinstance(text, str) or not text):
            raise InputError(f"{where}: {name}", "a non-empty string", text)
    labels = record.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise InputError(f"{where}: labels", "an object of strings", labels)
    for name in ("timestamps", "values"):
        if not isinstance(record.get(name), list):
            raise InputError(f"{where}: {name}", "a list", record.get(name, "nothing"))
    stamps, values = record["timestamps"], record["values"]
    if len(stamps) != len(values):
        raise InputError(
            f"{where}: values", f"as many values as timestamps ({len(stamps)})", len(values)
        )
    return _Part(
        series_id,
        kind,
        unit,
        dict(labels),
        _jsonl_times(where, stamps),
        _jsonl_values(where, values),
        lambda: where,
    )


def _jsonl_times(where: str, stamps: list[object]) -> np.ndarray:
    try:
        times = _jsonl_times_unchecked(where, stamps)
    except OverflowError:
        raise InputError(f"{where}: timestamps", "times within the range of a float") from None
    if not np.isfinite(times).all():
        i = int(np.flatnonzero(~np.isfinite(times))[0])
        raise InputError(f"{where}: timestamps[{i}]", "a finite time", stamps[i])
    return times


def _jsonl_times_unchecked(where: str, stamps: list[object]) -> np.ndarray:
    if set(map(type, stamps)) <= _JSONL_NUMBER:
        return np.array(stamps, dtype=np.float64)
    times = np.empty(len(stamps))
    for i, stamp in enumerate(stamps):
        if not isinstance(stamp, (int, float, str)) or isinstance(stamp, bool):
            raise InputError(f"{where}: timestamps[{i}]", "epoch seconds or ISO 8601 text", stamp)
        times[i] = parse_time(stamp, f"{where}: timestamps[{i}]")
    return times


def _jsonl_values(where: str, values: list[object]) -> np.ndarray:
    if not set(map(type, values)) <= _JSONL_NUMBER | {type(None)}:
        i, bad = next(
            (i, v) for i, v in enumerate(values) if type(v) not in _JSONL_NUMBER and v is not None
        )
        raise InputError(f"{where}: values[{i}]", "a number or null", bad)
    try:
        array = np.array(values, dtype=np.float64)
    except OverflowError:
        raise InputError(f"{where}: values", "numbers within the range of a float") from None
    if np.isinf(array).any():
        i = int(np.flatnonzero(np.isinf(array))[0])
        raise InputError(f"{where}: values[{i}]", "a finite number", values[i])
    return array


# Merging


def _merge(parts: list[_Part]) -> list[Series]:
    by_id: dict[str, list[_Part]] = {}
    for part in parts:
        by_id.setdefault(part.id, []).append(part)
    series = []
    for series_id, group in by_id.items():
        kind = _agreed(group, "kind")
        unit = _agreed(group, "unit")
        labels: dict[str, str] = {}
        varied: set[str] = set().union(*(p.varied for p in group))
        for part in group:
            for name, text in part.labels.items():
                if labels.setdefault(name, text) != text:
                    varied.add(name)
        for name in varied:
            labels.pop(name, None)
        times, values = normalise_points(
            np.concatenate([p.times for p in group]),
            np.concatenate([p.values for p in group]),
            where=f"series {series_id!r}",
        )
        series.append(
            Series(series_id, kind or default_kind(series_id), times, values, unit, labels)
        )
    return series


def _agreed(group: list[_Part], name: str) -> str | None:
    given = [part for part in group if getattr(part, name) is not None]
    if not given:
        return None
    first = given[0]
    chosen: str = getattr(first, name)
    for part in given[1:]:
        text = getattr(part, name)
        if text != chosen:
            raise InputError(
                f"{part.locate()}: {name}",
                f"{name} {chosen!r} as at {first.locate()} (same series id {part.id!r})",
                text,
            )
    return chosen


# --- writing ----------------------------------------------------------------------------------


def write_series_jsonl(series: Iterable[Series], path: Path) -> None:
    """Write SPEC §2 JSON Lines, one series per line (gzipped when the name ends in ``.gz``)."""

    def write(stream: IO[str]) -> None:
        for item in series:
            record: dict[str, object] = {
                "id": item.id,
                "kind": item.kind,
                "timestamps": np.asarray(item.timestamps_s, dtype=np.float64).tolist(),
                "values": np.asarray(item.values, dtype=np.float64).tolist(),
                "labels": dict(item.labels),
            }
            if item.unit is not None:
                record["unit"] = item.unit
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")

    _write_atomic(Path(path), write)


def write_series_csv(series: Iterable[Series], path: Path) -> None:
    """Write SPEC §2 long-format CSV: ``timestamp,series,value,kind[,unit][,label…]``, floats as
    ``repr``; label columns are the union of the series' label names, in name order."""
    items = list(series)
    label_names = sorted({name for item in items for name in item.labels})
    clash = [name for name in label_names if name in _REQUIRED + _OPTIONAL]
    if clash:
        raise InputError(
            f"{path}: labels", "label names other than the CSV's own columns", clash[0]
        )
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

    _write_atomic(Path(path), write)


def _csv_field(text: str) -> str:
    """A CSV cell as the csv module's minimal quoting writes it."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _write_atomic(path: Path, write: Callable[[IO[str]], None]) -> None:
    """Write text through ``write`` atomically (``regbot.atomic``). Gzip output has no name and
    mtime 0, so the same series give the same bytes."""

    def write_binary(raw: IO[bytes]) -> None:
        binary: IO[bytes] = raw
        if path.name.lower().endswith(".gz"):
            binary = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0)
        text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
        write(text)
        text.flush()
        text.detach()
        if binary is not raw:
            binary.close()

    write_atomic(path, write_binary)
