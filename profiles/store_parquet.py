"""The sample store's segments as Parquet (format ``regbot-store/2``): three tables, one folder
each, one file per segment, so that pandas, DuckDB, Dask or Spark open a table as a dataset::

    DIR/frames/seg-NNNNNN.parquet    DIR/stacks/seg-NNNNNN.parquet    DIR/records/seg-NNNNNN.parquet

``frames`` — the frames first seen in the segment's run, one row each, in id order:

* ``frame`` int32, not null: the global frame id;
* ``name`` string, not null: the frame as written (``handle (app/views.py:42)``); a character
  Parquet cannot hold (a byte of the profile that was not UTF-8, kept by regbot as a lone
  surrogate) is written ``?``;
* ``subroutine`` string, not null: the frame with its line number removed (SPEC §2), the name of
  its gCPU series (``handle (app/views.py)``), with the same ``?`` rule; derived from the text,
  which regbot re-derives when it reads;
* ``raw`` binary, null unless ``name`` had to replace a character: the exact text, UTF-8 with
  lone surrogates as Python's ``surrogatepass`` writes them. regbot reads the text from ``raw``
  when it is set, so a frame keeps its id across runs.

``stacks`` — the stacks first seen in the segment's run, in id order, in row groups of
``STACK_ROW_GROUP`` stacks (read one at a time):

* ``stack`` int64, not null: the global stack id;
* ``frames`` list<int32>, not null, elements not null: the stack's frame ids, root first (the
  leaf last); an empty list is an empty stack (a sample with no frames, py-spy's idle line).

``records`` — the run's sample weights, summed per (bucket, stack), sorted by ``bucket_s`` then
``stack``, each pair at most once per segment, in row groups of ``ROW_GROUP_ROWS``:

* ``bucket_s`` int64: the bucket's start, epoch seconds (a multiple of the store's width);
* ``stack`` int64: a global stack id (of this segment or an earlier one);
* ``weight`` float64, finite: the summed sample weight (samples, or the profile's sample type).

Ids compose by concatenation: the segments in the manifest's order hold frames ``0..F1-1``,
``F1..F2-1``... and stacks likewise, so the union of a table's files is the whole table and ids
join across files. Two segments may hold the same (bucket, stack): readers sum them.

Files are zstd-compressed, written to a hidden temporary name (``.seg-…tmp``, which dataset
readers skip) and renamed into place. Reading projects columns and takes records one batch of
``BATCH_ROWS`` at a time. A file that is not Parquet, lacks a column, holds a null, a type that
does not cast, or breaks a rule above is an ``InputError`` naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from regbot.atomic import write_atomic
from regbot.errors import InputError
from regbot.profiles.arrow_buffers import from_bytes, from_numpy, to_numpy
from regbot.profiles.model import subroutine_of
from regbot.profiles.stacks import check_csr
from regbot.profiles.store_records import Records

TABLES = ("frames", "stacks", "records")
ROW_GROUP_ROWS = 1 << 18
BATCH_ROWS = 1 << 18
STACK_ROW_GROUP = 1 << 14  # stacks per row group: reading holds one group's lists decoded
STACK_CHUNK = 1 << 20  # stacks per list array written, so list offsets stay int32
COMPRESSION = "zstd"

FRAMES = pa.schema(
    [
        pa.field("frame", pa.int32(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("subroutine", pa.string(), nullable=False),
        pa.field("raw", pa.binary()),
    ]
)
STACKS = pa.schema(
    [
        pa.field("stack", pa.int64(), nullable=False),
        pa.field("frames", pa.list_(pa.field("element", pa.int32(), nullable=False)), False),
    ]
)
RECORDS = pa.schema(
    [
        pa.field("bucket_s", pa.int64(), nullable=False),
        pa.field("stack", pa.int64(), nullable=False),
        pa.field("weight", pa.float64(), nullable=False),
    ]
)
NUMPY_TYPES: dict[str, type[np.generic]] = {
    "bucket_s": np.int64,
    "stack": np.int64,
    "weight": np.float64,
}
_ERRORS = (OSError, ValueError, KeyError, IndexError, pa.ArrowException)


def table_file(store: Path, table: str, segment: str) -> Path:
    """Where segment ``segment``'s ``table`` lives in the store ``store``."""
    return store / table / f"{segment}.parquet"


# -- writing ---------------------------------------------------------------------------------
def write_segment(
    store: Path,
    segment: str,
    frames: list[str],
    first_frame: int,
    stacks: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]],
    first_stack: int,
    records: Records,
) -> None:
    """Write the three files of ``segment``: ``frames`` (ids from ``first_frame``), ``stacks`` in
    CSR form (offsets, frame ids; ids from ``first_stack``) and ``records``."""
    for table in TABLES:
        (store / table).mkdir(parents=True, exist_ok=True)
    _write(table_file(store, "frames", segment), _frames_table(frames, first_frame))
    stacks_table = _stacks_table(*stacks, first_stack)
    _write(table_file(store, "stacks", segment), stacks_table, STACK_ROW_GROUP)
    columns = [records.bucket_s, records.stack, records.weight]
    arrays = [from_numpy(column, field.type) for column, field in zip(columns, RECORDS)]
    _write(table_file(store, "records", segment), pa.Table.from_arrays(arrays, schema=RECORDS))


def _write(target: Path, table: pa.Table, row_group: int = ROW_GROUP_ROWS) -> None:
    write_atomic(
        target,
        lambda handle: pq.write_table(
            table, handle, compression=COMPRESSION, row_group_size=row_group
        ),
    )


def _storable(text: str) -> tuple[str, bytes | None]:
    """``text`` as a Parquet string, and its exact bytes when the string had to differ."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8"), text.encode(
            "utf-8", "surrogatepass"
        )
    return text, None


def _frames_table(frames: list[str], first: int) -> pa.Table:
    stored = [_storable(text) for text in frames]
    subroutines = [_storable(subroutine_of(text))[0] for text in frames]
    return pa.Table.from_arrays(
        [
            from_numpy(np.arange(first, first + len(frames)), pa.int32()),
            from_bytes([name.encode() for name, _ in stored], pa.string()),
            from_bytes([name.encode() for name in subroutines], pa.string()),
            from_bytes([raw for _, raw in stored], pa.binary()),
        ],
        schema=FRAMES,
    )


def _stacks_table(
    offsets: npt.NDArray[np.int64], flat: npt.NDArray[np.int32], first: int
) -> pa.Table:
    n = len(offsets) - 1
    chunks = []
    for start in range(0, n, STACK_CHUNK) if n else [0]:
        end = min(n, start + STACK_CHUNK)
        lo, hi = int(offsets[start]), int(offsets[end])
        local = (offsets[start : end + 1] - lo).astype(np.int32)
        values = from_numpy(flat[lo:hi], pa.int32())
        list_type = STACKS.field(1).type
        chunks.append(pa.ListArray.from_arrays(from_numpy(local, pa.int32()), values, list_type))
    ids = from_numpy(np.arange(first, first + n), pa.int64())
    return pa.Table.from_arrays(
        [ids, pa.chunked_array(chunks, STACKS.field(1).type)], schema=STACKS
    )


# -- reading ---------------------------------------------------------------------------------
@contextmanager
def reading(file: Path) -> Iterator[None]:
    """Turn what pyarrow or the file system raise while reading ``file`` into one InputError."""
    try:
        yield
    except _ERRORS as error:
        found = " ".join(str(error).split()) or type(error).__name__
        raise InputError(str(file), "a readable regbot store segment (Parquet)", found) from None


def _columns(file: Path, schema: pa.Schema) -> pa.Table:
    """The schema's columns of ``file``, cast to its types; a missing column or a null refused."""
    # ParquetFile rather than pq.read_table: the latter loads pyarrow.dataset, ~50 MB more.
    table = pq.ParquetFile(file).read(columns=[f.name for f in schema], use_threads=False)
    for field in schema:
        column = table.column(field.name)
        if not field.nullable and column.null_count:
            raise InputError(f"{file}: {field.name}", "no nulls", f"{column.null_count} nulls")
    return table.cast(schema)


def read_frames(file: Path, first: int) -> list[str]:
    """The frames of one segment, whose ids must run from ``first``."""
    with reading(file):
        table = _columns(file, FRAMES)
        _check_ids(file, "frame", table.column("frame"), first)
        names: list[str] = table.column("name").to_pylist()
        raw = table.column("raw")
        if raw.null_count < len(raw):
            for i, exact in enumerate(raw.to_pylist()):
                if exact is not None:
                    names[i] = exact.decode("utf-8", "surrogatepass")
        return names


def read_stacks(
    file: Path, first: int, n_frames: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """The stacks of one segment in CSR form (offsets from 0, frame ids), read a row group at a
    time; their ids must run from ``first`` and their frame ids stay below ``n_frames``."""
    with reading(file):
        parquet = pq.ParquetFile(file)
        lengths: list[npt.NDArray[np.int64]] = []
        values: list[npt.NDArray[np.int32]] = []
        expected = first
        batches = parquet.iter_batches(
            batch_size=STACK_ROW_GROUP, columns=STACKS.names, use_threads=False
        )
        for batch in batches:
            ids, lists = (_column(file, batch, field) for field in STACKS)
            _check_ids(file, "stack", ids, expected)
            expected += len(ids)
            if lists.flatten().null_count:
                raise InputError(f"{file}: frames", "no null frame ids", "a null")
            lengths.append(np.diff(to_numpy(lists.offsets, np.int32)).astype(np.int64))
            values.append(to_numpy(lists.flatten(), np.int32).copy())
        offsets = np.zeros(1 + sum(len(x) for x in lengths), dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=offsets[1:])
        flat = np.concatenate(values) if values else np.zeros(0, np.int32)
        check_csr(f"{file}: frames", offsets, flat, n_frames)
        return offsets, flat


def _column(file: Path, batch: pa.RecordBatch, field: pa.Field) -> pa.Array:
    """``field``'s column of ``batch``, cast to its type; a null refused where it is required."""
    column = batch.column(field.name)
    if not field.nullable and column.null_count:
        raise InputError(f"{file}: {field.name}", "no nulls", f"{column.null_count} nulls")
    return column.cast(field.type)


def record_rows(file: Path) -> int:
    """How many records the segment's file says it holds (its footer; nothing else is read)."""
    with reading(file):
        return int(pq.ParquetFile(file).metadata.num_rows)


def record_batches(file: Path, columns: tuple[str, ...] = RECORDS.names) -> Iterator[Records]:
    """The segment's records, ``BATCH_ROWS`` at a time, only ``columns`` read (the others come
    back empty)."""
    with reading(file):
        parquet = pq.ParquetFile(file)
        missing = [name for name in columns if name not in parquet.schema_arrow.names]
        if missing:
            raise InputError(f"{file}: {missing[0]}", "columns bucket_s, stack, weight")
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=list(columns)):
            arrays: dict[str, np.ndarray] = {}
            for field in RECORDS:
                if field.name not in columns:
                    arrays[field.name] = np.zeros(0, NUMPY_TYPES[field.name])
                    continue
                column = batch.column(field.name)
                if column.null_count:
                    raise InputError(
                        f"{file}: {field.name}", "no nulls", f"{column.null_count} nulls"
                    )
                arrays[field.name] = to_numpy(column.cast(field.type), NUMPY_TYPES[field.name])
            yield Records(arrays["bucket_s"], arrays["stack"], arrays["weight"])


def _check_ids(file: Path, name: str, column: pa.Array | pa.ChunkedArray, first: int) -> None:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    ids = to_numpy(column, np.int64 if column.type == pa.int64() else np.int32)
    if len(ids) and not np.array_equal(ids, np.arange(first, first + len(ids))):
        raise InputError(f"{file}: {name}", f"ids {first}..{first + len(ids) - 1} in order")
