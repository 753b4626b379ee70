"""Series files in partitions a worker can load on its own (fleet scale).

``plan_series_partitions(paths, size)`` surveys the files and splits the run's series, in
order of first appearance, into balanced partitions of at most ``size`` series
(``partition_ranges``, the rule in-memory detection uses too, so a partition holds the same
series however the series arrived):

* **Clustered Parquet and Arrow files** (every series' rows consecutive, as ``regbot gcpu -o``,
  ``write_series_parquet`` and any writer going series by series produce; several files are
  fine as long as no series spans two of them): the survey reads only the ``series`` and
  ``timestamp`` columns (of Parquet, only ``series`` when the row groups' statistics give the
  last timestamp), and a partition is a list of row ranges (``FileRows``) that its worker
  reads itself, only the row groups or record batches holding them, with the ids and row
  counts of its series: its worker does not read the series column again
  (``series_clustered.read_clustered``, which falls back to the general reading whenever the
  result could differ, and when a file changed since the survey). Memory is bounded by one
  partition, wherever it runs.
* **Anything else** (CSV, JSON Lines, a Parquet file whose series are interleaved, a series
  spread over several files): the files are read whole (``read_series_files``: the one merge
  and normalisation rule) and each partition carries its series. Memory grows with the input;
  the README says to sort a large file by series.

``SeriesSurvey`` holds every series id in order (dedup looks domains up by id) and the last
timestamp of any row: the default end of `regbot detect`'s windows. A row with a missing value
still counts here; ``last_valid_s`` of the loaded partitions tells the caller when the data
with values ends earlier (rare: trailing empty rows), and it re-plans with that time.

Complexity: the survey is one pass over one or two columns, O(rows) numpy work and O(series)
Python work; memory O(series).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from regbot.partition_ranges import partition_ranges
from regbot.profiles.model import Series, last_time_s
from regbot.profiles.series_arrow import read_arrow_parts
from regbot.profiles.series_clustered import read_clustered
from regbot.profiles.series_files import find_series_files, merge_parts, read_series_files
from regbot.profiles.series_parts import gc_paused

__all__ = ["FileRows", "SeriesPartition", "SeriesSurvey", "plan_series_partitions"]

_COLUMNAR = (".parquet", ".arrow")
_SURVEY_ROWS = 1 << 20


@dataclass(frozen=True, slots=True)
class FileRows:
    """Data rows ``[start, stop)`` (0-based) of one columnar series file; ``stamp``: the file's
    size and modification time (ns) when the survey read it."""

    path: Path
    start: int
    stop: int
    stamp: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class SeriesPartition:
    """Series a worker loads on its own: row ranges of clustered columnar files, or the series
    themselves (inputs read whole). With row ranges, the survey's findings: the ids of the
    series they hold, in order, and each one's number of rows (``counts``)."""

    rows: tuple[FileRows, ...] = ()
    series: tuple[Series, ...] = ()
    ids: tuple[str, ...] = ()
    counts: tuple[int, ...] = ()

    def load(self) -> list[Series]:
        """The partition's series, merged and normalised as ``read_series_files`` does: by
        ``read_clustered`` (the series column is not read again) while the files are as the
        survey found them and it can vouch for the result, else by the general path."""
        if not self.rows:
            return list(self.series)
        with gc_paused():
            if self.ids and all(_stamp(r.path) == r.stamp for r in self.rows):
                files = [(r.path, r.start, r.stop) for r in self.rows]
                loaded = read_clustered(files, self.ids, self.counts)
                if loaded is not None:
                    return loaded
            parts = [p for r in self.rows for p in read_arrow_parts(r.path, (r.start, r.stop))]
            return merge_parts(parts)


@dataclass(frozen=True, slots=True)
class SeriesSurvey:
    """What the survey learnt: every series id in order and the last timestamp of any row
    (None without rows); ``streamed`` when partitions read their own rows."""

    ids: list[str] = field(default_factory=list)
    last_time_s: float | None = None
    streamed: bool = False


def plan_series_partitions(
    paths: Iterable[Path], size: int
) -> tuple[list[SeriesPartition], SeriesSurvey]:
    """The partitions of the series in ``paths`` (files and folders) and the survey (module
    docstring). Bad input raises the full read's InputError."""
    files = find_series_files(paths)
    runs = None
    if files and all(_columnar(p) for p in files):
        try:
            runs = _clustered_runs(files)
        except _Fallback:
            runs = None
    if runs is None:
        series = read_series_files(files)
        last = last_time_s(series)
        ranges = partition_ranges(len(series), size)
        partitions = [SeriesPartition(series=tuple(series[a:b])) for a, b in ranges]
        return partitions, SeriesSurvey([s.id for s in series], last, streamed=False)
    ranges = partition_ranges(len(runs.ids), size)
    partitions = [runs.partition(a, b) for a, b in ranges]
    return partitions, SeriesSurvey(runs.ids, runs.last_time_s, streamed=True)


def _columnar(path: Path) -> bool:
    return path.name.lower().endswith(_COLUMNAR)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns


@dataclass(frozen=True, slots=True)
class _Runs:
    """Every series of clustered files in order: its id, its file (index into ``files``) and
    its rows ``[start, stop)`` there; and the last timestamp of any row."""

    files: list[Path]
    stamps: list[tuple[int, int] | None]
    ids: list[str]
    file: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    last_time_s: float | None

    def partition(self, first: int, stop: int) -> SeriesPartition:
        """Series ``[first, stop)``: one row range per file (a file's series are consecutive)."""
        which = self.file[first:stop]
        cuts = [0, *(np.flatnonzero(which[1:] != which[:-1]) + 1).tolist(), len(which)]
        rows = tuple(
            FileRows(
                self.files[int(which[a])],
                int(self.start[first + a]),
                int(self.stop[first + b - 1]),
                self.stamps[int(which[a])],
            )
            for a, b in zip(cuts, cuts[1:])
            if b > a
        )
        counts = (self.stop[first:stop] - self.start[first:stop]).tolist()
        return SeriesPartition(rows=rows, ids=tuple(self.ids[first:stop]), counts=tuple(counts))


def _clustered_runs(files: Sequence[Path]) -> _Runs | None:
    """Every series id in order with its rows, and the last timestamp, when each series' rows
    are consecutive in one file; None when a series comes back (not clustered) or an id is
    missing (the full read reports it). One pass over the series column (only the ids that
    start a run become Python text) and over the timestamp column, or, in Parquet, its
    statistics when every row group has them."""
    ids: list[str] = []
    owner: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    stops: list[np.ndarray] = []
    last: float | None = None
    for index, path in enumerate(files):
        current: str | None = None
        found: list[np.ndarray] = []
        end = 0
        for offset, series_column, top in _survey_batches(path):
            at, texts = _runs(series_column)
            if texts and texts[0] == current:
                at, texts = at[1:], texts[1:]  # the run goes on from the previous batch
            named = [text for text in texts if text]
            if len(named) < len(texts):
                return None
            if named:
                ids.extend(named)
                found.append(at + offset)
                current = named[-1]
            if top is not None:
                last = top if last is None else max(last, top)
            end = offset + len(series_column)
        if found:
            first = np.concatenate(found)
            starts.append(first)
            stops.append(np.append(first[1:], end))
            owner.append(np.full(first.size, index, dtype=np.int64))
    if len(set(ids)) < len(ids):
        return None
    empty = np.zeros(0, dtype=np.int64)
    return _Runs(
        list(files),
        [_stamp(path) for path in files],
        ids,
        np.concatenate(owner) if owner else empty,
        np.concatenate(starts) if starts else empty,
        np.concatenate(stops) if stops else empty,
        last,
    )


def _runs(column: Any) -> tuple[np.ndarray, list[str | None]]:
    """Where each run of equal ids starts in a batch's series column, and its id (None for a
    null); only the ids that start a run are turned into Python text."""
    if pa.types.is_dictionary(column.type):
        encoded = column
    elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        encoded = pc.dictionary_encode(column)
    else:
        raise _Fallback
    indices = encoded.indices
    codes = (indices.fill_null(-1) if indices.null_count else indices).to_numpy()
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64), []
    starts = np.concatenate([[0], np.flatnonzero(codes[1:] != codes[:-1]) + 1])
    at = codes[starts]
    texts = encoded.dictionary.take(pa.array(np.maximum(at, 0))).to_pylist()
    return starts, [None if c < 0 else t for c, t in zip(at.tolist(), texts)]


def _survey_batches(path: Path) -> Iterable[tuple[int, Any, float | None]]:
    """``(first row, series column, last timestamp in float seconds or None)`` per batch;
    _Fallback when the file cannot be surveyed (the full read reports why). A Parquet file
    whose row groups all have statistics of a numeric timestamp column is read for its series
    column only, and the last timestamp comes from the statistics (the first batch carries it)."""
    try:
        if path.name.lower().endswith(".parquet"):
            yield from _parquet_survey(path)
            return
        offset = 0
        for batch in _ipc_batches(path):
            if "series" not in batch.schema.names or "timestamp" not in batch.schema.names:
                raise _Fallback
            yield offset, batch.column("series"), _last_seconds(batch.column("timestamp"))
            offset += batch.num_rows
    except (pa.ArrowException, OSError):
        raise _Fallback from None


def _parquet_survey(path: Path) -> Iterable[tuple[int, Any, float | None]]:
    schema = pq.ParquetFile(path).schema_arrow
    if "series" not in schema.names or "timestamp" not in schema.names:
        raise _Fallback
    parquet = pq.ParquetFile(path, read_dictionary=["series"])
    top = _statistics_last_time(parquet)
    columns = ["series"] if top is not None else ["series", "timestamp"]
    offset = 0
    for group in range(parquet.metadata.num_row_groups):  # a batch never spans two groups,
        batches = parquet.iter_batches(  # which would unify their dictionaries
            batch_size=_SURVEY_ROWS, row_groups=[group], columns=columns, use_threads=False
        )
        for batch in batches:
            found = _last_seconds(batch.column("timestamp")) if top is None else top
            yield offset, batch.column("series"), found
            offset += batch.num_rows


def _statistics_last_time(parquet: Any) -> float | None:
    """The largest timestamp by the row groups' statistics, when the column is integer or float
    seconds and every row group has them (None otherwise: the column is read)."""
    kind = parquet.schema_arrow.field("timestamp").type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return None
    metadata = parquet.metadata
    leaf = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
    if "timestamp" not in leaf or not metadata.num_row_groups:
        return None
    column = leaf.index("timestamp")
    tops = []
    for group in range(metadata.num_row_groups):
        chunk = metadata.row_group(group).column(column)
        stats = chunk.statistics if chunk.is_stats_set else None
        if stats is None or not stats.has_min_max or stats.max is None:
            return None
        tops.append(float(stats.max))
    return max(tops)


class _Fallback(Exception):
    """The survey gave up: the files are read whole (which reports any bad input)."""


def _ipc_batches(path: Path) -> Iterable[Any]:
    try:
        reader = ipc.open_file(pa.memory_map(str(path)))
    except pa.ArrowInvalid:
        yield from ipc.open_stream(pa.memory_map(str(path)))
        return
    for i in range(reader.num_record_batches):
        yield reader.get_batch(i)


def _last_seconds(column: Any) -> float | None:
    """The column's largest time in float seconds (None without a value); Arrow timestamps
    converted as ``series_arrow`` converts each time (so nanoseconds beyond 2**53 are fine)."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        top = pc.max(column.cast(pa.int64())).as_py() if len(column) else None
        if top is None:
            return None
        scale = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[kind.unit]
        whole, rest = divmod(top, scale)  # as series_arrow converts every time: exactly
        return float(whole) + float(rest) / scale
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        raise _Fallback
    top = pc.max(column).as_py() if len(column) else None
    return None if top is None else float(top)
