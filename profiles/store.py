"""The sample store: interned stacks and per-bucket sample weights, kept on disk in DIR.

Layout of DIR (all writes are atomic: a new file is written beside and renamed into place, the
manifest last, so a failed or interrupted run leaves the previous store intact)::

    manifest.json        format, bucket width, segment list, and the keys of ingested profiles
    seg-000001.npz       one segment per `regbot ingest` run

A segment holds the frames and stacks first seen in that run (frames as a JSON list; stacks in CSR
form over global frame ids) and the run's records aggregated per (bucket, stack): ``bucket_s``
int64 epoch seconds at the start of the bucket, ``stack`` int64, ``weight`` float64. Ids are global
and dense, so loading is concatenation. More than ``COMPACT_AFTER`` segments are merged into one.

Why numpy segments rather than an embedded database: every query regbot asks (gCPU of every
subroutine in every bucket, samples of A and any of S over a window) is a sparse matrix product
over all records, which numpy/scipy answer in one vectorised pass; a row store would have to
materialise the same arrays first. Appends stay cheap because a run writes only its own segment.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from regbot.atomic import write_atomic
from regbot.errors import InputError
from regbot.profiles.model import ProfileSamples
from regbot.profiles.stacks import StackTable

FORMAT = "regbot-store/1"
COMPACT_AFTER = 16


@dataclass(frozen=True, slots=True)
class Records:
    """Aggregated sample weights: one row per (bucket, stack), sorted by bucket then stack."""

    bucket_s: np.ndarray
    stack: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return len(self.bucket_s)

    @staticmethod
    def empty() -> Records:
        return Records(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))


def aggregate_records(bucket_s: np.ndarray, stack: np.ndarray, weight: np.ndarray) -> Records:
    """Sum weights of equal (bucket, stack) pairs; O(n log n) in the number of rows."""
    if len(bucket_s) == 0:
        return Records.empty()
    buckets, bucket_rows = np.unique(bucket_s, return_inverse=True)
    width = int(stack.max()) + 1
    combined = bucket_rows.ravel().astype(np.int64) * width + stack
    order = np.argsort(combined, kind="stable")
    combined = combined[order]
    starts = np.flatnonzero(np.concatenate(([True], combined[1:] != combined[:-1])))
    keys = combined[starts]
    return Records(buckets[keys // width], keys % width, np.add.reduceat(weight[order], starts))


def bucket_start(times_s: np.ndarray, bucket_width_s: int) -> np.ndarray:
    """Start of the bucket each time falls in: floor(t / width) * width, as int64 epoch seconds."""
    return (
        np.floor(np.asarray(times_s, dtype=np.float64) / bucket_width_s) * bucket_width_s
    ).astype(np.int64)


class SampleStore:
    """A store opened for reading and appending. Use ``open_store`` and ``commit``.

    ``add`` buffers a profile's samples in memory; ``commit`` writes them as one segment.
    A profile is known by a key (the ingest command uses a hash of its bytes and of the time it
    was given); adding a key already in the store does nothing and returns False, so re-ingesting
    the same file does not double-count.
    """

    def __init__(self, path: Path, bucket_width_s: int) -> None:
        self.path = path
        self.bucket_width_s = bucket_width_s
        self.table = StackTable()
        self.segments: list[str] = []
        self.ingested: dict[str, dict[str, object]] = {}
        self._parts: list[Records] = []
        self._committed_frames = 0
        self._committed_stacks = 0
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_keys: dict[str, dict[str, object]] = {}

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
        """Write what was added since opening as one segment, then the manifest (atomically)."""
        if not self._pending_keys and len(self.table.stacks) == self._committed_stacks:
            return
        records = self.pending_records()
        self.path.mkdir(parents=True, exist_ok=True)
        name = self._write_segment(self._committed_frames, self._committed_stacks, records)
        self.segments.append(name)
        self.ingested.update(self._pending_keys)
        self._parts.append(records)
        self._pending.clear()
        self._pending_keys.clear()
        self._committed_frames = len(self.table.frames)
        self._committed_stacks = len(self.table.stacks)
        self._write_manifest()
        if len(self.segments) > COMPACT_AFTER:
            self.compact()

    def compact(self) -> None:
        """Merge every segment into one (same content, fewer files)."""
        records = self.records()
        old = list(self.segments)
        self.segments = [self._write_segment(0, 0, records)]
        self._parts = [records]
        self._write_manifest()
        for stale in old:
            (self.path / stale).unlink(missing_ok=True)

    def _write_segment(self, first_frame: int, first_stack: int, records: Records) -> str:
        """Write frames and stacks from the given ids on, and ``records``, as the next segment."""
        number = 1 + max((int(name[4:10]) for name in self.segments), default=0)
        name = f"seg-{number:06d}.npz"
        offsets, flat = self.table.stacks_csr(first_stack)
        frames = json.dumps(self.table.frames[first_frame:], ensure_ascii=False)
        _write_npz(
            self.path / name,
            frames_json=np.frombuffer(frames.encode("utf-8", "surrogatepass"), dtype=np.uint8),
            stack_offsets=offsets,
            stack_frames=flat,
            bucket_s=records.bucket_s,
            stack=records.stack,
            weight=records.weight,
        )
        return name

    # -- reading -----------------------------------------------------------------------------
    def records(self) -> Records:
        """Every committed and pending record, aggregated per (bucket, stack)."""
        parts = [*self._parts]
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

    def _write_manifest(self) -> None:
        manifest = {
            "format": FORMAT,
            "bucket_width_s": self.bucket_width_s,
            "segments": self.segments,
            "frames": len(self.table.frames),
            "stacks": len(self.table.stacks),
            "ingested": self.ingested,
        }
        _write_atomic(self.path / "manifest.json", json.dumps(manifest, indent=1).encode())


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
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(str(manifest_path), "a regbot store manifest (JSON)", str(error)) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputError(
            str(manifest_path),
            f"format {FORMAT!r}",
            manifest.get("format") if isinstance(manifest, dict) else manifest,
        )
    width = int(manifest["bucket_width_s"])
    if bucket_width_s is not None and bucket_width_s != width:
        raise InputError(
            str(path),
            f"bucket width {width}s (the store's own); it cannot change",
            f"{bucket_width_s}s",
        )
    store = SampleStore(path, width)
    for name in manifest["segments"]:
        _load_segment(store, path / name)
    store.segments = list(manifest["segments"])
    store.ingested = dict(manifest["ingested"])
    store._committed_frames = len(store.table.frames)
    store._committed_stacks = len(store.table.stacks)
    return store


def _load_segment(store: SampleStore, file: Path) -> None:
    try:
        with np.load(file) as segment:
            frames = json.loads(segment["frames_json"].tobytes().decode("utf-8", "surrogatepass"))
            store.table.extend(frames, segment["stack_offsets"], segment["stack_frames"])
            store._parts.append(Records(segment["bucket_s"], segment["stack"], segment["weight"]))
    except (OSError, ValueError, KeyError) as error:
        raise InputError(str(file), "a readable regbot store segment", str(error)) from None


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


def _write_atomic(target: Path, payload: bytes) -> None:
    write_atomic(target, lambda handle: handle.write(payload))


def _write_npz(target: Path, **arrays: np.ndarray) -> None:
    # As dict[str, Any]: numpy's stub for savez has a keyword parameter (allow_pickle, a bool)
    # that a dict of arrays could name, so mypy refuses an unpacked dict[str, ndarray].
    named: dict[str, Any] = arrays
    write_atomic(target, lambda handle: np.savez(handle, **named))
