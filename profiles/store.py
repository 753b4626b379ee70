"""The sample store: interned stacks and per-bucket sample weights, kept on disk in DIR.

Layout of DIR (format ``regbot-store/2``; schema of each table in ``profiles.store_parquet`` and
docs/design/sample_store.md)::

    manifest.json                 format, bucket width, segment list, keys of ingested profiles
    frames/seg-000001.parquet     frames first seen in the segment's run
    stacks/seg-000001.parquet     stacks first seen in the segment's run (lists of frame ids)
    records/seg-000001.parquet    the run's sample weights per (bucket_s, stack)

One segment per `regbot ingest` run, the same name in each table folder; a folder is a Parquet
dataset (``pandas.read_parquet("DIR/records")``). Ids are global and dense: the segments, in the
manifest's order, hold consecutive ranges of frame and stack ids, so loading is concatenation.

Rules:

* The manifest is the authority. Segment files are written first (each to a hidden temporary
  name, fsynced and renamed), the manifest last, so a failed or interrupted run leaves the
  previous store as it was; files of a segment the manifest does not name are left over from such
  a run (or an interrupted compaction) and the next commit removes them.
* A commit that would make more than ``COMPACT_AFTER`` segments writes the whole store as one
  segment instead (records summed per (bucket, stack)), then removes the old files.
* A store in format ``regbot-store/1`` (numpy ``seg-NNNNNN.npz`` segments, ``store_npz``) opens
  and reads as before; its first commit rewrites it as one format-2 segment in the same way, so a
  store holds segments of one format only.
* Opening reads the manifest, frames and stacks (as arrays; the ``StackTable`` of Python tuples
  that interning needs is built only when a run appends). Records are read when asked for, one
  batch at a time: ``bucket_counts`` builds the buckets × stacks matrix queries use without
  holding the records' columns, ``bucket_times`` reads the bucket column alone.

Why Parquet segments rather than an embedded database: every query regbot asks (gCPU of every
subroutine in every bucket, samples of A and any of S over a window) is a sparse matrix product
over all records, which numpy/scipy answer in one vectorised pass from columns read straight into
arrays; and columnar files are what other tools open without regbot. Appends stay cheap because a
run writes only its own segment.
"""

from __future__ import annotations

import fcntl
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from regbot.atomic import write_atomic
from regbot.errors import InputError
from regbot.profiles.model import ProfileSamples
from regbot.profiles.stacks import StackArrays, StackTable
from regbot.profiles.store_records import (
    BucketCounts,
    Records,
    aggregate_records,
    bucket_start,
    check_batch,
    merge_counts,
    segment_counts,
)

FORMAT = "regbot-store/2"
FORMAT_NPZ = "regbot-store/1"
COMPACT_AFTER = 16
TABLES = ("frames", "stacks", "records")
_SEGMENT_NAME = {FORMAT: re.compile(r"seg-\d{6}"), FORMAT_NPZ: re.compile(r"seg-\d{6}\.npz")}

__all__ = [
    "COMPACT_AFTER",
    "FORMAT",
    "FORMAT_NPZ",
    "BucketCounts",
    "Records",
    "SampleStore",
    "aggregate_records",
    "bucket_start",
    "locked",
    "open_store",
]


class SampleStore:
    """A store opened for reading and appending. Use ``open_store`` and ``commit``.

    ``add`` buffers a profile's samples in memory; ``commit`` writes them as one segment.
    A profile is known by a key (the ingest command uses a hash of its bytes and of the time it
    was given); adding a key already in the store does nothing and returns False, so re-ingesting
    the same file does not double-count.
    """

    def __init__(self, path: Path, bucket_width_s: int, format: str = FORMAT) -> None:
        self.path = path
        self.bucket_width_s = bucket_width_s
        self.format = format
        self.segments: list[str] = []
        self.ingested: dict[str, dict[str, object]] = {}
        self._frames: list[str] = []
        self._offsets: npt.NDArray[np.int64] = np.zeros(1, np.int64)
        self._flat: npt.NDArray[np.int32] = np.zeros(0, np.int32)
        self._table: StackTable | None = None
        self._committed_frames = 0
        self._committed_stacks = 0
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_keys: dict[str, dict[str, object]] = {}

    # -- frames and stacks -------------------------------------------------------------------
    @property
    def table(self) -> StackTable:
        """The interning table, for parsers adding to the store (built on first use)."""
        if self._table is None:
            table = StackTable()
            table.extend(self._frames, self._offsets, self._flat)
            if len(table.frames) != len(self._frames):
                raise InputError(str(self.path), "each frame once in the store's frames tables")
            self._table = table
        return self._table

    @property
    def n_frames(self) -> int:
        return len(self._table.frames) if self._table is not None else len(self._frames)

    @property
    def n_stacks(self) -> int:
        return len(self._table.stacks) if self._table is not None else len(self._offsets) - 1

    def stack_arrays(self) -> StackArrays:
        """Every frame and stack, committed or added since, as arrays."""
        if self._table is not None:
            return self._table.arrays()
        return StackArrays(list(self._frames), self._offsets, self._flat)

    # -- appending ---------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        return key in self.ingested or key in self._pending_keys

    def add(self, samples: ProfileSamples, key: str) -> bool:
        if self.has(key):
            return False
        self._pending.append(
            (bucket_start(samples.times_s, self.bucket_width_s), samples.stack_ids, samples.weights)
        )
        self._pending_keys[key] = {
            "source": samples.source,
            "samples": float(samples.weights.sum()),
            "sample_type": samples.sample_type,
        }
        return True

    def pending_records(self) -> Records:
        if not self._pending:
            return Records.empty()
        return aggregate_records(
            np.concatenate([p[0] for p in self._pending]),
            np.concatenate([p[1] for p in self._pending]).astype(np.int64, copy=False),
            np.concatenate([p[2] for p in self._pending]).astype(np.float64, copy=False),
        )

    def commit(self) -> None:
        """Write what was added since opening as one segment, then the manifest (atomically);
        the whole store as one segment instead when it is in format 1 or would have more than
        ``COMPACT_AFTER`` segments."""
        if not self._pending_keys and self.n_stacks == self._committed_stacks:
            return
        if self.format != FORMAT or len(self.segments) + 1 > COMPACT_AFTER:
            self.compact()
        else:
            self._write(self.segments, self.pending_records())

    def compact(self) -> None:
        """Merge every segment (and what was added) into one: same content, fewer files."""
        self._write([], self.records())

    def _write(self, kept: list[str], records: Records) -> None:
        """Write ``records``, and the frames and stacks the ``kept`` segments do not hold, as the
        next segment; then the manifest naming ``kept`` and it; then remove every other file."""
        from regbot.profiles.store_parquet import write_segment

        first_frame = self._committed_frames if kept else 0
        first_stack = self._committed_stacks if kept else 0
        frames, offsets, flat = self._stacks_from(first_frame, first_stack)
        name = self._next_name()
        write_segment(self.path, name, frames, first_frame, (offsets, flat), first_stack, records)
        self.segments = [*kept, name]
        self.format = FORMAT
        self.ingested.update(self._pending_keys)
        self._pending.clear()
        self._pending_keys.clear()
        self._frames = self._frames[:first_frame] + frames
        if first_stack:
            offsets = np.concatenate([self._offsets, offsets[1:] + self._offsets[-1]])
            flat = np.concatenate([self._flat, flat])
        self._offsets, self._flat = offsets, flat
        self._committed_frames = len(self._frames)
        self._committed_stacks = len(self._offsets) - 1
        self._write_manifest()
        self._remove_unlisted()

    def _stacks_from(
        self, first_frame: int, first_stack: int
    ) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """Frames from id ``first_frame`` on, and stacks from ``first_stack`` on in CSR form."""
        if self._table is not None:
            return self._table.frames[first_frame:], *self._table.stacks_csr(first_stack)
        start = self._offsets[first_stack]
        return self._frames[first_frame:], self._offsets[first_stack:] - start, self._flat[start:]

    def _next_name(self) -> str:
        return f"seg-{1 + max((int(name[4:10]) for name in self.segments), default=0):06d}"

    def _remove_unlisted(self) -> None:
        """Remove segment files the manifest does not name (replaced ones, left-over ones) and
        temporary files an interrupted write left behind."""
        listed = set(self.segments)
        stale = [p for p in self.path.glob("seg-*.npz") if p.name not in listed]
        stale += [p for p in self.path.glob(".seg-*.tmp")]
        for table in TABLES:
            folder = self.path / table
            stale += [p for p in folder.glob("seg-*.parquet") if p.stem not in listed]
            stale += [p for p in folder.glob(".seg-*.tmp")]
        for path in stale:
            path.unlink(missing_ok=True)

    def _write_manifest(self) -> None:
        manifest = {
            "format": self.format,
            "bucket_width_s": self.bucket_width_s,
            "segments": self.segments,
            "frames": self._committed_frames,
            "stacks": self._committed_stacks,
            "ingested": self.ingested,
        }
        payload = json.dumps(manifest, indent=1).encode()
        write_atomic(self.path / "manifest.json", lambda handle: handle.write(payload))

    # -- reading records ---------------------------------------------------------------------
    def records(self) -> Records:
        """Every committed and pending record, aggregated per (bucket, stack)."""
        parts = [self._segment_records(name) for name in self.segments]
        if self._pending:
            parts.append(self.pending_records())
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return Records.empty()
        return aggregate_records(
            np.concatenate([p.bucket_s for p in parts]),
            np.concatenate([p.stack for p in parts]),
            np.concatenate([p.weight for p in parts]),
        )

    def bucket_counts(self) -> BucketCounts:
        """Committed and pending records as a buckets × stacks matrix, read a batch at a time."""
        n_stacks = self.n_stacks
        parts = []
        for name in self.segments:
            where, rows, batches = self._segment_batches(name)
            parts.append(segment_counts(where, rows, batches, n_stacks))
        if self._pending:
            pending = self.pending_records()
            parts.append(segment_counts("pending", len(pending), [pending], n_stacks))
        return merge_counts(parts, n_stacks)

    def bucket_times(self) -> npt.NDArray[np.int64]:
        """The start of every bucket that holds records, sorted (reads the bucket column only)."""
        found: list[np.ndarray] = []
        for name in self.segments:
            if self.format == FORMAT:
                from regbot.profiles.store_parquet import record_batches, table_file

                file = table_file(self.path, "records", name)
                found += [np.unique(b.bucket_s) for b in record_batches(file, ("bucket_s",))]
            else:
                found.append(np.unique(self._segment_records(name).bucket_s))
        found += [np.unique(p[0]) for p in self._pending]
        return np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)

    def _segment_batches(self, name: str) -> tuple[str, int, Iterator[Records]]:
        """Where segment ``name``'s records are, how many rows it holds, and its batches."""
        if self.format == FORMAT:
            from regbot.profiles.store_parquet import record_batches, record_rows, table_file

            file = table_file(self.path, "records", name)
            return str(file), record_rows(file), record_batches(file)
        from regbot.profiles.store_npz import npz_record_rows, read_npz_records

        file = self.path / name
        return str(file), npz_record_rows(file), iter([read_npz_records(file)])

    def _segment_records(self, name: str) -> Records:
        """Every record of segment ``name`` (checked as ``bucket_counts`` checks them)."""
        where, rows, batches = self._segment_batches(name)
        parts: list[Records] = []
        last: int | None = None
        for batch in batches:
            check_batch(where, batch, self.n_stacks, last)
            if len(batch):
                parts.append(batch)
                last = int(batch.bucket_s[-1])
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return Records.empty()
        return Records(
            np.concatenate([p.bucket_s for p in parts]),
            np.concatenate([p.stack for p in parts]),
            np.concatenate([p.weight for p in parts]),
        )


def open_store(path: Path, bucket_width_s: int | None = None) -> SampleStore:
    """Open the store in ``path`` (created on first commit when absent).

    ``bucket_width_s`` is fixed when a store is made (default 60 s); opening an existing store
    with a different width is an error rather than a silent re-bucketing.
    """
    manifest_path = path / "manifest.json"
    if path.exists() and not path.is_dir():
        raise InputError(str(path), "a directory for the sample store", "a file")
    if not manifest_path.exists():
        if path.is_dir() and any(not p.name.startswith(".") for p in path.iterdir()):
            raise InputError(
                str(path), "an empty directory or a regbot sample store (manifest.json)"
            )
        return SampleStore(path, bucket_width_s or 60)
    manifest = _read_manifest(manifest_path)
    width = manifest.bucket_width_s
    if bucket_width_s is not None and bucket_width_s != width:
        raise InputError(
            str(path),
            f"bucket width {width}s (the store's own); it cannot change",
            f"{bucket_width_s}s",
        )
    store = SampleStore(path, width, manifest.format)
    frames: list[str] = []
    lengths: list[np.ndarray] = []
    flats: list[np.ndarray] = []
    for name in manifest.segments:
        if store.format == FORMAT:
            from regbot.profiles.store_parquet import read_frames, read_stacks, table_file

            frames += read_frames(table_file(path, "frames", name), len(frames))
            offsets, flat = read_stacks(
                table_file(path, "stacks", name), sum(map(len, lengths)), len(frames)
            )
        else:
            from regbot.profiles.store_npz import read_npz_stacks

            new_frames, offsets, flat = read_npz_stacks(path / name, len(frames))
            frames += new_frames
        lengths.append(np.diff(offsets))
        flats.append(flat)
    store._frames = frames
    store._offsets = np.zeros(1 + sum(map(len, lengths)), dtype=np.int64)
    if lengths:
        np.cumsum(np.concatenate(lengths), out=store._offsets[1:])
    store._flat = np.concatenate(flats).astype(np.int32, copy=False) if flats else store._flat
    for key, said, held in (
        ("frames", manifest.frames, len(frames)),
        ("stacks", manifest.stacks, len(store._offsets) - 1),
    ):
        if said != held:
            raise InputError(f"{manifest_path}: {key}", f"{held} (what the segments hold)", said)
    store.segments = manifest.segments
    store.ingested = manifest.ingested
    store._committed_frames = len(frames)
    store._committed_stacks = len(store._offsets) - 1
    return store


@dataclass(frozen=True, slots=True)
class Manifest:
    """What manifest.json says: the format, the bucket width, the segments in id order, how many
    frames and stacks they hold, and the ingested profiles by key."""

    format: str
    bucket_width_s: int
    segments: list[str]
    frames: int
    stacks: int
    ingested: dict[str, dict[str, object]]


def _read_manifest(manifest_path: Path) -> Manifest:
    """The manifest, its fields checked (types, a known format, segment names of that format:
    a manifest cannot point outside the store)."""
    try:
        document = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(str(manifest_path), "a regbot store manifest (JSON)", str(error)) from None
    if not isinstance(document, dict) or document.get("format") not in _SEGMENT_NAME:
        raise InputError(
            str(manifest_path),
            f"format {FORMAT!r} (or {FORMAT_NPZ!r})",
            document.get("format") if isinstance(document, dict) else document,
        )
    name = _SEGMENT_NAME[document["format"]]
    checks: dict[str, Callable[[Any], bool]] = {
        "bucket_width_s": lambda v: type(v) is int and v >= 1,
        "segments": lambda v: (
            isinstance(v, list)
            and all(isinstance(n, str) and name.fullmatch(n) for n in v)
            and len(set(v)) == len(v)
        ),
        "frames": lambda v: type(v) is int,
        "stacks": lambda v: type(v) is int,
        "ingested": lambda v: isinstance(v, dict),
    }
    for key, good in checks.items():
        if not good(document.get(key)):
            raise InputError(f"{manifest_path}: {key}", "a valid value", document.get(key))
    return Manifest(
        document["format"],
        document["bucket_width_s"],
        list(document["segments"]),
        document["frames"],
        document["stacks"],
        dict(document["ingested"]),
    )


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the store while a run appends, so two runs cannot interleave."""
    path.mkdir(parents=True, exist_ok=True)
    with open(path / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
