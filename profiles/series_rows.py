"""Long-format rows (SPEC §2: one point a row, ``series`` naming its series) grouped into one
``SeriesPart`` per series id: the one grouping routine of the CSV, Parquet and Arrow readers.

Rules, the same for every format:

* Series come out in the order their ids first appear; each keeps its rows' points in file order.
* ``kind`` and ``unit`` (strict): a null or empty cell is "not given"; a series' value is that of
  its first row giving one; a later row giving another is an InputError at the first such row in
  file order (kind is checked over all rows before unit).
* Label columns (every other text column): the same, except that rows that disagree drop the
  label from the series (``SeriesPart.varied``): the series spans hosts, regions...

Cost: per batch, one dictionary look-up per distinct id of the batch (never one per row, nor one
per entry of a dictionary that no row of the batch uses); at the end one stable sort of all rows by
series (a radix sort while there are at most 65,536 series, none when the rows already come
grouped) and a few O(rows) numpy passes per text column.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regbot.errors import InputError
from regbot.profiles.series_parts import OPTIONAL_COLUMNS, SeriesPart

Where = Callable[[int, str | None], str]  # where a 0-based data row is, e.g. "file:7: kind"


@dataclass(frozen=True, slots=True)
class LongBatch:
    """Consecutive rows: each row's series as an index into ``ids`` (no null or empty id; ``ids``
    may hold entries no row uses), its point as float64, and the text columns (kind, unit,
    labels) as Arrow arrays (string or dictionary; null or empty means "not given")."""

    ids: Sequence[str | None]
    codes: np.ndarray
    times: np.ndarray
    values: np.ndarray
    texts: Mapping[str, Any]


def dictionary_codes(column: Any) -> tuple[list[str | None], np.ndarray]:
    """The distinct texts of an Arrow string or dictionary array and each row's index into them
    (-1 for a null, also for a dictionary entry that is null)."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    entries: list[str | None] = column.dictionary.to_pylist()
    return entries, _indices(column, entries)


def _indices(column: Any, entries: list[str | None]) -> np.ndarray:
    indices = column.indices
    if indices.null_count:
        indices = indices.fill_null(-1)
    codes = np.asarray(indices.to_numpy(), dtype=np.int64)
    if None in entries:
        null_entry = np.asarray([entry is None for entry in entries] + [True])
        codes = np.where(null_entry[codes], -1, codes)  # index -1 reads the last, True
    return codes


class SharedDictionaries:
    """``dictionary_codes`` of consecutive arrays of one column: while they share a dictionary
    (Parquet batches of one row group; CSV blocks after ``unify_dictionaries``), its entries
    are read once and the same list is returned, which lets ``group_long_rows`` map them once."""

    def __init__(self) -> None:
        self.dictionary: Any = None
        self.entries: list[str | None] = []

    def __call__(self, column: Any) -> tuple[list[str | None], np.ndarray]:
        if not pa.types.is_dictionary(column.type):
            return dictionary_codes(column)
        if self.dictionary is None or not column.dictionary.equals(self.dictionary):
            self.dictionary, self.entries = column.dictionary, column.dictionary.to_pylist()
        return self.entries, _indices(column, self.entries)


def first_missing_id(entries: list[str | None], codes: np.ndarray) -> tuple[int, str] | None:
    """The first row whose series id is null, else the first whose id is empty, with ``"null"``
    or ``""``; None when every row has an id."""
    if (codes < 0).any():
        return int(np.flatnonzero(codes < 0)[0]), "null"
    empty = np.flatnonzero(codes == entries.index("")) if "" in entries else codes[:0]
    return (int(empty[0]), "") if empty.size else None  # an entry no row uses is no id


def group_long_rows(batches: Iterable[LongBatch], where: Where) -> list[SeriesPart]:
    """One SeriesPart per series id met in ``batches`` (rules: the module docstring); ``where``
    names a row for error messages and ``SeriesPart.locate``."""
    ids: list[str] = []
    known: dict[str, int] = {}
    first_rows: list[int] = []
    codes: list[np.ndarray] = []
    times: list[np.ndarray] = []
    values: list[np.ndarray] = []
    texts: dict[str, _TextCodes] = {}
    mapped: Sequence[str | None] | None = None  # the ids list ``mapping`` is for
    mapping = np.empty(0, dtype=np.int32)  # its entries' series codes, -1: not met yet
    offset = 0
    for batch in batches:
        rows = batch.codes.size
        if not rows:
            continue
        if batch.ids is not mapped:
            mapped, mapping = batch.ids, np.full(len(batch.ids), -1, dtype=np.int32)
        series = mapping[batch.codes]
        if (series < 0).any():  # entries met for the first time, in order of their first row
            unmapped = np.flatnonzero(series < 0)
            entries, first = np.unique(batch.codes[unmapped], return_index=True)
            for at in np.argsort(first, kind="stable").tolist():
                entry, row = int(entries[at]), int(unmapped[first[at]])
                series_id = batch.ids[entry]
                if not series_id:
                    raise ValueError("group_long_rows: a null or empty id")  # readers refuse them
                if series_id not in known:
                    known[series_id] = len(ids)
                    ids.append(series_id)
                    first_rows.append(offset + row)
                mapping[entry] = known[series_id]
            series = mapping[batch.codes]
        codes.append(series)
        times.append(batch.times)
        values.append(batch.values)
        for name, column in batch.texts.items():
            if name not in texts:
                texts[name] = _TextCodes(offset)
            texts[name].add(column, rows)
        for text in texts.values():
            text.pad_to(offset + rows)
        offset += rows
    if not ids:
        return []
    return _parts(ids, first_rows, codes, times, values, texts, where)


class _TextCodes:
    """One text column's cells as codes into its distinct non-empty texts (-1: not given)."""

    def __init__(self, rows_before: int) -> None:
        self.texts: list[str] = []
        self.index: dict[str, int] = {}
        self.chunks: list[np.ndarray] = [np.full(rows_before, -1, dtype=np.int32)]
        self.rows = rows_before
        self.dictionaries = SharedDictionaries()
        self.mapped: list[str | None] | None = None  # the entries ``mapping`` is for
        self.mapping = np.empty(0, dtype=np.int32)  # their codes, then -1 for null cells

    def add(self, column: Any, rows: int) -> None:
        if pa.types.is_null(column.type):
            return
        entries, cells = self.dictionaries(column)
        if entries is not self.mapped:
            self.mapped = entries
            self.mapping = np.asarray([self._code(e) for e in entries] + [-1], dtype=np.int32)
        self.chunks.append(self.mapping[cells])
        self.rows += rows

    def _code(self, text: str | None) -> int:
        if not text:
            return -1
        code = self.index.setdefault(text, len(self.texts))
        if code == len(self.texts):
            self.texts.append(text)
        return code

    def pad_to(self, rows: int) -> None:
        """Mark rows of batches without this column as "not given"."""
        if rows > self.rows:
            self.chunks.append(np.full(rows - self.rows, -1, dtype=np.int32))
            self.rows = rows


def _parts(
    ids: list[str],
    first_rows: list[int],
    codes: list[np.ndarray],
    times: list[np.ndarray],
    values: list[np.ndarray],
    texts: dict[str, _TextCodes],
    where: Where,
) -> list[SeriesPart]:
    every = np.concatenate(codes)
    order = _stable_order(every, len(ids))
    counts = np.bincount(every, minlength=len(ids))
    all_times = np.concatenate(times)
    all_values = np.concatenate(values)
    if order is not None:
        all_times, all_values = all_times[order], all_values[order]
    strict = {
        name: _per_series(name, texts[name], counts, order, where)[0]
        for name in OPTIONAL_COLUMNS
        if name in texts
    }
    none: list[str | None] = [None] * len(ids)
    kinds, units = strict.get("kind", none), strict.get("unit", none)
    labels = [
        (name, *_per_series(name, texts[name], counts, order, where))
        for name in texts
        if name not in OPTIONAL_COLUMNS
    ]
    bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
    parts = []
    for code, series_id in enumerate(ids):
        given: dict[str, str] = {}
        varied: set[str] = set()
        for name, chosen, differ in labels:
            if differ[code]:
                varied.add(name)
            elif (text := chosen[code]) is not None:
                given[name] = text
        start, stop = bounds[code], bounds[code + 1]
        parts.append(
            SeriesPart(
                series_id,
                kinds[code],
                units[code],
                given,
                all_times[start:stop],
                all_values[start:stop],
                functools.partial(where, first_rows[code], None),
                varied,
            )
        )
    return parts


def _stable_order(codes: np.ndarray, count: int) -> np.ndarray | None:
    """The permutation that groups rows by series, keeping file order within a series; None
    when the rows already come grouped (as regbot's writers write them)."""
    if codes.size < 2 or bool((codes[1:] >= codes[:-1]).all()):
        return None
    if count <= 1 << 16:
        return np.argsort(codes.astype(np.uint16), kind="stable")  # radix sort
    return np.argsort(codes, kind="stable")


def _per_series(
    name: str,
    column: _TextCodes,
    counts: np.ndarray,
    order: np.ndarray | None,
    where: Where,
) -> tuple[list[str | None], list[bool]]:
    """Each series' text in the column (None: not given) and whether its rows disagree; for kind
    and unit a disagreement is an InputError at the first disagreeing row in file order."""
    cells = np.concatenate(column.chunks)
    if order is not None:
        cells = cells[order]
    count = counts.size
    if not column.texts or not bool((cells >= 0).any()):  # no row gives one
        return [None] * count, [False] * count
    if bool((cells >= 0).all()):  # every row gives a text: compare with the series' first
        chosen = cells[np.cumsum(counts) - counts].astype(np.int64)
        if len(column.texts) == 1:
            return [column.texts[0]] * count, [False] * count
        clash = np.flatnonzero(cells != np.repeat(chosen, counts))
        series = np.repeat(np.arange(count), counts)[clash] if clash.size else clash
    else:
        grouped = np.repeat(np.arange(count), counts)
        given = np.flatnonzero(cells >= 0)
        chosen = np.full(count, -1, dtype=np.int64)
        given_series = grouped[given]
        firsts = given[np.concatenate([[True], given_series[1:] != given_series[:-1]])]
        chosen[grouped[firsts]] = cells[firsts]
        clash = given[cells[given] != chosen[given_series]]
        series = grouped[clash]
    if clash.size and name in OPTIONAL_COLUMNS:
        rows = clash if order is None else order[clash]
        at = int(np.argmin(rows))
        raise InputError(
            where(int(rows[at]), name),
            f"{name} {column.texts[chosen[series[at]]]!r} as on earlier rows of this series",
            column.texts[cells[clash[at]]],
        )
    differ = np.zeros(count, dtype=bool)
    differ[series] = True
    return [column.texts[c] if c >= 0 else None for c in chosen.tolist()], differ.tolist()
