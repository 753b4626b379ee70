"""Series files in partitions a worker can load on its own (fleet scale).

``plan_series_partitions(paths, size)`` surveys the files and splits the run's series, in
order of first appearance, into balanced partitions of at most ``size`` series
(``partition_ranges``, the rule in-memory detection uses too, so a partition holds the same
series however the series arrived):

* **Clustered Parquet and Arrow files** (every series' rows consecutive, as ``regbot gcpu -o``,
  ``write_series_parquet`` and any writer going series by series produce; several files are
  fine as long as no series spans two of them): the survey reads only the ``series`` and
  ``timestamp`` columns, and a partition is a list of row ranges
  (``FileRows``) that its worker reads itself, only the row groups or record batches holding
  them. Memory is bounded by one partition, wherever it runs.
* **Anything else** (CSV, JSON Lines, a Parquet file whose series are interleaved, a series
  spread over several files): the files are read whole (``read_series_files``: the one merge
  and normalisation rule) and each partition carries its series. Memory grows with the input;
  the README says to sort a large file by series.

``SeriesSurvey`` holds every series id in order (dedup looks domains up by id) and the last
timestamp of any row: the default end of `regbot detect`'s windows. A row with a missing value
still counts here; ``last_valid_s`` of the loaded partitions tells the caller when the data
with values ends earlier (rare: trailing empty rows), and it re-plans with that time.

Complexity: the survey is one pass over two columns, O(rows); memory O(series).
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
from regbot.profiles.series_files import find_series_files, merge_parts, read_series_files

__all__ = ["FileRows", "SeriesPartition", "SeriesSurvey", "plan_series_partitions"]

_COLUMNAR = (".parquet", ".arrow")
_SURVEY_ROWS = 1 << 20


@dataclass(frozen=True, slots=True)
class FileRows:
    """Data rows ``[start, stop)`` (0-based) of one columnar series file."""

    path: Path
    start: int
    stop: int


@dataclass(frozen=True, slots=True)
class SeriesPartition:
    """Series a worker loads on its own: row ranges of clustered columnar files, or the series
    themselves (inputs read whole)."""

    rows: tuple[FileRows, ...] = ()
    series: tuple[Series, ...] = ()

    def load(self) -> list[Series]:
        """The partition's series, merged and normalised as ``read_series_files`` does."""
        if not self.rows:
            return list(self.series)
        parts = [part for r in self.rows for part in read_arrow_parts(r.path, (r.start, r.stop))]
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
    ids, spans, last = runs
    ranges = partition_ranges(len(ids), size)
    partitions = [SeriesPartition(rows=_joined_rows(spans[a:b])) for a, b in ranges]
    return partitions, SeriesSurvey(ids, last, streamed=True)


def _columnar(path: Path) -> bool:
    return path.name.lower().endswith(_COLUMNAR)


def _joined_rows(spans: Sequence[FileRows]) -> tuple[FileRows, ...]:
    """Consecutive spans of one file as one range."""
    joined: list[FileRows] = []
    for span in spans:
        last = joined[-1] if joined else None
        if last is not None and last.path == span.path and last.stop == span.start:
            joined[-1] = FileRows(span.path, last.start, span.stop)
        else:
            joined.append(span)
    return tuple(joined)


def _clustered_runs(
    files: Sequence[Path],
) -> tuple[list[str], list[FileRows], float | None] | None:
    """Every series id in order with its rows, and the last timestamp, when each series' rows
    are consecutive in one file; None as soon as a series comes back (not clustered) or an id
    is missing (the full read reports it)."""
    ids: list[str] = []
    spans: list[FileRows] = []
    seen: set[str] = set()
    last: float | None = None
    for path in files:
        current: str | None = None
        start = end = 0
        for offset, series_column, times in _survey_batches(path):
            starts, texts = _runs(series_column)
            for at, text in zip(starts.tolist(), texts):
                if at == 0 and text == current:
                    continue  # the run goes on from the previous batch
                if current is not None:
                    spans.append(FileRows(path, start, offset + at))
                if not text or text in seen:
                    return None
                seen.add(text)
                ids.append(text)
                current, start = text, offset + at
            top = pc.max(times).as_py() if len(times) else None
            if top is not None:
                last = float(top) if last is None else max(last, float(top))
            end = offset + len(series_column)
        if current is not None:
            spans.append(FileRows(path, start, end))
    return ids, spans, last


def _runs(column: Any) -> tuple[np.ndarray, list[str | None]]:
    """Where each run of equal ids starts in a batch's series column, and its id (None for a
    null); only the ids that start a run are turned into Python text."""
    if pa.types.is_dictionary(column.type):
        encoded = column
    elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        encoded = pc.dictionary_encode(column)
    else:
        raise _Fallback
    codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(), dtype=np.int64)
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64), []
    starts = np.concatenate([[0], np.flatnonzero(codes[1:] != codes[:-1]) + 1])
    at = codes[starts]
    texts = encoded.dictionary.take(pa.array(np.maximum(at, 0))).to_pylist()
    return starts, [None if c < 0 else t for c, t in zip(at.tolist(), texts)]


def _survey_batches(path: Path) -> Iterable[tuple[int, Any, Any]]:
    """``(first row, series column, timestamp column as float seconds or None)`` per batch;
    None batches when the file cannot be surveyed (the full read reports why)."""
    try:
        if path.name.lower().endswith(".parquet"):
            parquet = pq.ParquetFile(path)
            names = parquet.schema_arrow.names
            if "series" not in names or "timestamp" not in names:
                raise _Fallback
            batches: Iterable[Any] = parquet.iter_batches(
                batch_size=_SURVEY_ROWS, columns=["series", "timestamp"]
            )
        else:
            batches = _ipc_batches(path)
        offset = 0
        for batch in batches:
            if "series" not in batch.schema.names or "timestamp" not in batch.schema.names:
                raise _Fallback
            yield offset, batch.column("series"), _seconds(batch.column("timestamp"))
            offset += batch.num_rows
    except (pa.ArrowException, OSError):
        raise _Fallback from None


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


def _seconds(column: Any) -> Any:
    kind = column.type
    if pa.types.is_timestamp(kind):
        scale = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[kind.unit]
        return pc.divide(column.cast(pa.int64()).cast(pa.float64()), scale)
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return column
    raise _Fallback
