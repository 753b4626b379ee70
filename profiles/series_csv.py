"""Long-format CSV series files (SPEC §2): ``timestamp,series,value[,kind][,unit][,label…]``.

Reading: pyarrow's multi-threaded CSV reader gives the cells as columns (``series_csv_table``);
timestamps and values it parsed as float64 are used when nothing in them needs a second look,
else their texts go through the exact rules of ``series_csv_cells``; the rows are grouped into one
part per series by ``series_rows`` (the routine the Parquet reader uses too). No Python loop per
row; line numbers for error messages are found by re-reading, on the error path only. Writing is
one pass, floats as ``repr``.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa

from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_csv_cells import CsvLines, times_from_texts, values_from_texts
from regbot.profiles.series_csv_table import CsvFile
from regbot.profiles.series_parts import (
    LONG_COLUMNS,
    SeriesPart,
    label_columns,
    write_series_text,
)
from regbot.profiles.series_rows import (
    LongBatch,
    SharedDictionaries,
    Where,
    first_missing_id,
    group_long_rows,
)

_REQUIRED = LONG_COLUMNS


def read_csv_parts(path: Path) -> list[SeriesPart]:
    """Every series part in one ``.csv`` or ``.csv.gz`` file. Checks run in this order, each
    over the whole file: header, fields per row, series ids, timestamps, values, then kind, unit
    (and labels, which never fail: a label whose rows disagree is dropped)."""
    path = Path(path)
    source = CsvFile(path)
    table = source.table()
    if not table.num_rows:
        return []
    where = CsvLines(path)
    batches = table.unify_dictionaries().to_batches()  # one dictionary per column, not per block
    series = SharedDictionaries()
    ids = [series(batch.column("series")) for batch in batches]
    offset = 0
    for entries, codes in ids:
        missing = first_missing_id(entries, codes)
        if missing is not None:
            raise InputError(where(offset + missing[0], "series"), "a series id", "")
        offset += codes.size
    times = _times(source, table.column("timestamp"), where)
    values = _values(source, table.column("value"), where)
    texts = [name for name in source.names if name not in _REQUIRED]
    return group_long_rows(_long_batches(batches, ids, times, values, texts), where)


def _long_batches(
    batches: list[Any],
    ids: list[tuple[list[str | None], np.ndarray]],
    times: np.ndarray,
    values: np.ndarray,
    texts: list[str],
) -> Iterator[LongBatch]:
    offset = 0
    for batch, (entries, codes) in zip(batches, ids):
        rows = slice(offset, offset + batch.num_rows)
        columns = {name: batch.column(name) for name in texts}
        yield LongBatch(entries, codes, times[rows], values[rows], columns)
        offset += batch.num_rows


def _times(source: CsvFile, column: Any, where: Where) -> np.ndarray:
    """Timestamps as pyarrow parsed them when all are there and finite, else by the text rules."""
    if pa.types.is_float64(column.type):
        times = np.asarray(column.to_numpy(), dtype=np.float64)
        if not column.null_count and np.isfinite(times).all():
            return times
        column = source.texts("timestamp")
    return times_from_texts(column, where)


def _values(source: CsvFile, column: Any, where: Where) -> np.ndarray:
    """Values as pyarrow parsed them (nulls: missing) unless one is NaN without being a null (a
    spelling only the text rules judge) or infinite (an error quoting its text)."""
    if pa.types.is_float64(column.type):
        values = np.asarray(column.to_numpy(), dtype=np.float64)  # nulls read as NaN
        finite = np.isfinite(values)
        if finite.all() or (
            int(finite.size - np.count_nonzero(finite)) == column.null_count
            and not np.isinf(values).any()
        ):
            return values
        column = source.texts("value")
    return values_from_texts(column, where)


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
