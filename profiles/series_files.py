"""Reading series files (SPEC §2): long-format CSV and JSON Lines, optionally gzipped, and
Parquet and Arrow IPC, chosen by extension (``series_csv``, ``series_jsonl``, ``series_arrow``);
one series per id across all files, its points pooled and normalised by ``normalise_points``
(O(n log n)).

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_csv import read_csv_parts
from regbot.profiles.series_jsonl import read_jsonl_parts
from regbot.profiles.series_parts import SeriesPart, gc_paused

SUFFIXES = (".csv", ".jsonl", ".csv.gz", ".jsonl.gz", ".parquet", ".arrow")


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


def read_series_file(path: Path) -> list[Series]:
    """Every series in one series file (rules: docs/design/profiles_series_files.md)."""
    with gc_paused():
        return merge_parts(_read_parts(Path(path)))


def read_series_files(paths: Iterable[Path]) -> list[Series]:
    """Every series in the given files and folders (folders: their series files, recursively,
    in name order), one series per id across all of them."""
    parts: list[SeriesPart] = []
    with gc_paused():
        for path in find_series_files(paths):
            parts.extend(_read_parts(path))
        return merge_parts(parts)


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


def _read_parts(path: Path) -> list[SeriesPart]:
    suffix = _suffix(path)
    if suffix is None:
        raise InputError(str(path), "a series file ending in " + ", ".join(SUFFIXES), path.name)
    if not path.is_file():
        what = "a file, not a folder" if path.is_dir() else "an existing series file"
        raise InputError(str(path), what)
    if suffix in (".parquet", ".arrow"):
        from regbot.profiles.series_arrow import read_arrow_parts

        return read_arrow_parts(path)
    return read_csv_parts(path) if suffix.startswith(".csv") else read_jsonl_parts(path)


def merge_parts(parts: list[SeriesPart]) -> list[Series]:
    """One series per id from parts found anywhere, in order of first appearance: kind and unit
    must agree, labels that differ are dropped, points pooled and normalised. Series with the
    same timestamps share one array (a fleet's buckets cost one time axis, and batches see
    it as shared at once)."""
    by_id: dict[str, list[SeriesPart]] = {}
    for part in parts:
        by_id.setdefault(part.id, []).append(part)
    axes: dict[int, np.ndarray] = {}  # one array per distinct time axis, shared by its series
    ready = _already_normal(by_id)
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
        if series_id in ready:
            times, values = ready[series_id]
        else:
            times, values = normalise_points(
                _joined([p.times for p in group]),
                _joined([p.values for p in group]),
                where=f"series {series_id!r}",
            )
            known = axes.setdefault(hash(times.tobytes()), times)
            if known is not times and np.array_equal(known, times):
                times = known
        series.append(
            Series(series_id, kind or default_kind(series_id), times, values, unit, labels)
        )
    return series


_BULK_ROWS = 2048  # series checked together by ``_already_normal``


def _already_normal(
    by_id: dict[str, list[SeriesPart]],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The series that ``normalise_points`` would return unchanged (one part, finite times
    strictly increasing, finite values: no point to drop, sort or average), found by checking
    series of one length together (``_BULK_ROWS`` at a time), with copies of their points: the
    same result as ``normalise_points`` without its per-series cost. Series on the first
    time axis met share one array."""
    by_length: dict[int, list[tuple[str, SeriesPart]]] = {}
    for series_id, group in by_id.items():
        if len(group) == 1 and len(group[0].times) > 1:
            by_length.setdefault(len(group[0].times), []).append((series_id, group[0]))
    ready: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for items in by_length.values():
        axis: np.ndarray | None = None
        for first in range(0, len(items), _BULK_ROWS):
            chunk = items[first : first + _BULK_ROWS]
            times = np.array([part.times for _, part in chunk], dtype=np.float64)
            values = np.array([part.values for _, part in chunk], dtype=np.float64)
            normal = np.isfinite(values).all(axis=1) & np.isfinite(times).all(axis=1)
            normal &= (np.diff(times, axis=1) > 0).all(axis=1)
            rows = np.flatnonzero(normal)
            if axis is None and rows.size:
                axis = times[rows[0]].copy()
            if axis is None:
                continue
            shared = np.asarray((times == axis).all(axis=1), dtype=bool)
            for row in rows.tolist():
                row_times: np.ndarray = axis if shared[row] else times[row]
                ready[chunk[row][0]] = (row_times, values[row])
    return ready


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays end to end (one alone as it is: ``normalise_points`` copies what it returns)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _agreed(group: list[SeriesPart], name: str) -> str | None:
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
