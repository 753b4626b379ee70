"""The series of a partition whose rows the survey found clustered (``series_partitions``),
read as columns: the fast path of ``SeriesPartition.load``.

The survey already read every row's series id, so a partition knows its series and how many
consecutive rows each has (``ids``, ``counts``). ``read_clustered`` reads only the times,
values and text columns of its row ranges, a chunk (a Parquet row group, an IPC batch) at a
time (``series_arrow.read_arrow_columns``). The rules are those of ``read_series_files``
(``series_rows.group_long_rows`` then ``series_files.merge_parts``) and the result is the same
series, bit for bit:

* **Points.** A series that lies in one chunk, whose times strictly increase and whose values
  have no NaN is what ``normalise_points`` would return unchanged: its times and values are
  slices of the chunk's arrays, no copy (read-only views of Arrow's memory, which the series
  keep alive). Every other series (rows unsorted or at a repeated time, a NaN value, rows in
  two chunks) goes through ``normalise_points`` itself, on its rows in file order: the one
  rule, on the same input as the general path's.
* **Kind, unit and labels.** When each text column is constant over each series' rows (its
  codes change only where a series starts; a Parquet row group whose statistics show one
  text is not read at all), a series' text is that of its rows, as the general path decides.
* Series on the time axis of the first such series share one array (``SeriesBatch``
  then sees one axis), as ``merge_parts`` shares it.

``read_clustered`` returns None, and the caller takes the general path, whenever its answer
could differ from the general path's: a text that varies within a series (a kind clash is the
general path's error to report, a varying label its rule to apply), any InputError the column
reader raises (the general path reads the file again and reports it as it always did), row
counts that do not add up to the files' rows.

Complexity: O(rows) numpy passes over each chunk, O(series) Python work (a ``Series`` each);
the series column is not read and no array of the partition's size is allocated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_arrow import ColumnChunk, ConstantText, read_arrow_columns
from regbot.profiles.series_files import default_kind, normalise_points
from regbot.profiles.series_parts import OPTIONAL_COLUMNS

__all__ = ["read_clustered"]

FileRange = tuple[Path, int, int]  # a file and its data rows [start, stop), 0-based


class _Varies(Exception):
    """A text column varies within a series: the general path decides."""


def read_clustered(
    files: Sequence[FileRange], ids: Sequence[str], counts: Sequence[int]
) -> list[Series] | None:
    """The series ``ids`` (in order, ``counts[i]`` consecutive rows each) held by the row
    ranges ``files`` end to end, as ``merge_parts`` of the general reading gives them; None when
    the general path must decide (module docstring)."""
    rows = np.asarray(counts, dtype=np.int64)
    total = sum(stop - start for _, start, stop in files)
    if len(ids) != rows.size or not rows.size or (rows <= 0).any() or int(rows.sum()) != total:
        return None
    points = _Points(rows)
    texts = _Texts(points.starts)
    at = 0
    try:
        for path, start, stop in files:
            if at not in texts.starts_set:
                return None  # a series would span two ranges
            names, chunks = read_arrow_columns(path, (start, stop))
            texts.begin_file(names, at)
            for chunk in chunks:
                row = at + chunk.first - start
                points.add(chunk, row)
                texts.add(chunk, row)
            at += stop - start
    except (InputError, _Varies):
        return None
    return _series(list(ids), points, texts)


class _Points:
    """Each series' points: final (``times``, ``values``) for those ``normalise_points`` leaves
    unchanged, else the pieces of its rows (``pieces``) to normalise at the end."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows
        self.starts = np.cumsum(rows) - rows
        self.stops = self.starts + rows
        count = rows.size
        self.times: list[np.ndarray | None] = [None] * count
        self.values: list[np.ndarray | None] = [None] * count
        self.pieces: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.axis: np.ndarray | None = None

    def add(self, chunk: ColumnChunk, row: int) -> None:
        """The series the chunk (rows ``row`` on) holds whole, or its pieces of the others."""
        times, values = chunk.times, chunk.values
        size = times.size
        if not size:
            return
        first = int(np.searchsorted(self.starts, row, "right")) - 1
        stop = int(np.searchsorted(self.starts, row + size, "left"))
        starts = np.maximum(self.starts[first:stop] - row, 0)
        stops = np.minimum(self.stops[first:stop] - row, size)
        whole = (self.starts[first:stop] >= row) & (self.stops[first:stop] <= row + size)
        normal = whole & ~_series_with(np.flatnonzero(np.isnan(values)), starts)
        later = np.flatnonzero(times[1:] <= times[:-1]) + 1  # rows not after the one before
        later = later[~np.isin(later, starts)]  # ... where a series starts is no fault
        normal &= ~_series_with(later, starts)
        for i in np.flatnonzero(~normal).tolist():
            a, b = int(starts[i]), int(stops[i])
            self.pieces.setdefault(first + i, []).append((times[a:b], values[a:b]))
        fast = np.flatnonzero(normal)
        if not fast.size:
            return
        if self.axis is None:
            a, b = int(starts[fast[0]]), int(stops[fast[0]])
            self.axis = np.array(times[a:b])
        on_axis = self._on_axis(times, starts[fast], stops[fast])
        for i, a, b, common in zip(
            (fast + first).tolist(), starts[fast].tolist(), stops[fast].tolist(), on_axis.tolist()
        ):
            self.times[i] = self.axis if common else times[a:b]
            self.values[i] = values[a:b]

    def _on_axis(self, times: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """Whether each series (rows ``[starts, stops)`` of ``times``, consecutive) has the axis'
        times: one 2-D comparison when all have its length, else one series at a time."""
        assert self.axis is not None
        length = self.axis.size
        lengths = stops - starts
        contiguous = bool((starts[1:] == stops[:-1]).all())
        if contiguous and bool((lengths == length).all()):
            block = times[starts[0] : stops[-1]].reshape(starts.size, length)
            return np.asarray((block == self.axis).all(axis=1), dtype=bool)
        return np.asarray(
            [
                n == length and np.array_equal(times[a : a + n], self.axis)
                for a, n in zip(starts.tolist(), lengths.tolist())
            ],
            dtype=bool,
        )

    def normalised(self, i: int, series_id: str) -> tuple[np.ndarray, np.ndarray]:
        """Series ``i``'s points: as found, or its pieces through ``normalise_points``."""
        times, values = self.times[i], self.values[i]
        if times is not None and values is not None:
            return times, values
        pieces = self.pieces[i]
        joined = [np.concatenate([p[k] for p in pieces]) for k in (0, 1)]
        times, values = normalise_points(joined[0], joined[1], where=f"series {series_id!r}")
        if self.axis is not None and np.array_equal(times, self.axis):
            times = self.axis
        return times, values


def _series_with(rows: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per series (rows from ``starts`` on, consecutive), whether it holds any of ``rows``."""
    found = np.zeros(starts.size, dtype=bool)
    found[np.searchsorted(starts, rows, "right") - 1] = True
    return found


class _Texts:
    """Each series' text per column (None: not given) and the label names of its file."""

    def __init__(self, starts: np.ndarray) -> None:
        self.starts = starts
        self.count = starts.size
        self.starts_set = set(starts.tolist())
        self.chosen: dict[str, list[str | None]] = {}
        self.names_of: list[tuple[int, list[str]]] = []  # (first series of a file, its names)
        self.last: dict[str, str | None] = {}  # each column's text on the last row read

    def begin_file(self, names: list[str], row: int) -> None:
        self.names_of.append((int(np.searchsorted(self.starts, row)), names))
        self.last = {}

    def add(self, chunk: ColumnChunk, row: int) -> None:
        """The texts of the series starting in the chunk (rows ``row`` on); _Varies when a
        column's text changes inside a series, here or from the previous chunk."""
        size = chunk.times.size
        if not size:
            return
        first = int(np.searchsorted(self.starts, row))
        stop = int(np.searchsorted(self.starts, row + size))
        local = self.starts[first:stop] - row
        inside = row not in self.starts_set  # the chunk begins inside a series
        for name, column in chunk.texts.items():
            if isinstance(column, ConstantText):
                head = tail = _given(column.text)
                found = [head] * (stop - first)
            else:
                head, tail, found = _run_texts(column, local)
            if inside and self.last.get(name, head) != head:
                raise _Varies
            self.last[name] = tail
            self.chosen.setdefault(name, [None] * self.count)[first:stop] = found

    def of(self, name: str) -> list[str | None]:
        return self.chosen.get(name) or [None] * self.count

    def labels(self) -> list[list[tuple[str, list[str | None]]]]:
        """For each series, its file's label columns (in column order) with their texts."""
        result: list[list[tuple[str, list[str | None]]]] = []
        bounds = [first for first, _ in self.names_of[1:]] + [self.count]
        for (first, names), stop in zip(self.names_of, bounds):
            labels = [(n, self.of(n)) for n in names if n not in OPTIONAL_COLUMNS]
            result.extend([labels] * (stop - first))
        return result


def _given(text: str | None) -> str | None:
    """A text cell as the readers take it: null and empty both mean "not given"."""
    return text or None


def _run_texts(column: Any, local: np.ndarray) -> tuple[str | None, str | None, list[str | None]]:
    """The first and last rows' texts of a chunk's text column and the text at each series
    start ``local``; _Varies unless the column's codes change only at those starts."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    indices = column.indices
    codes = (indices.fill_null(-1) if indices.null_count else indices).to_numpy()
    changes = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    if changes.size:
        at = np.minimum(np.searchsorted(local, changes), max(local.size - 1, 0))
        if not local.size or (local[at] != changes).any():
            raise _Varies
    if not len(column.dictionary):  # every cell null
        return None, None, [None] * local.size
    picked = np.concatenate([codes[[0, -1]], codes[local]])
    taken = column.dictionary.take(pa.array(np.maximum(picked, 0))).to_pylist()
    texts = [_given(t) if c >= 0 else None for c, t in zip(picked.tolist(), taken)]
    return texts[0], texts[1], texts[2:]


def _series(ids: list[str], points: _Points, texts: _Texts) -> list[Series]:
    kinds, units = texts.of("kind"), texts.of("unit")
    labels = texts.labels()
    result = []
    for i, (series_id, kind, unit, named) in enumerate(zip(ids, kinds, units, labels)):
        times, values = points.normalised(i, series_id)
        given = {n: text for n, column in named if (text := column[i]) is not None}
        kind = kind or default_kind(series_id)
        result.append(Series(series_id, kind, times, values, unit, given))
    return result
