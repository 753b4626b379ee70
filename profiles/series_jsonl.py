"""JSON Lines series files (SPEC §2): one series per line, ``{"id", "kind", "timestamps",
"values", "labels", "unit"}``; other keys are ignored.

A file is read by pyarrow's multi-threaded JSON reader when ``series_jsonl_arrow`` can vouch for
the result; otherwise (and for every file with an error) line by line, one ``json.loads`` per line,
which is the rule and names the line of an error.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO

import numpy as np

from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_jsonl_arrow import read_jsonl_arrow
from regbot.profiles.series_parts import (
    SeriesPart,
    decode_series_bytes,
    read_series_bytes,
    write_series_text,
)
from regbot.timefmt import parse_time

_JSONL_NUMBER = frozenset({int, float})


def read_jsonl_parts(path: Path) -> list[SeriesPart]:
    """Every series part in one ``.jsonl`` or ``.jsonl.gz`` file, one per non-blank line."""
    data = read_series_bytes(path)
    parts = read_jsonl_arrow(path, data)
    if parts is not None:
        return parts
    # Split on "\n" only: JSON text may hold U+2028 and other characters splitlines() breaks on.
    lines = decode_series_bytes(path, data).split("\n")
    return [_jsonl_part(f"{path}:{n}", line) for n, line in enumerate(lines, 1) if line.strip()]


def _jsonl_part(where: str, line: str) -> SeriesPart:
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
    return SeriesPart(
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

    write_series_text(Path(path), write)
