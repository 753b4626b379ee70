"""JSON Lines series files read by pyarrow's multi-threaded JSON reader, when the result is sure
to be what the line-by-line reader (``series_jsonl``) would give; None otherwise, and that reader
reads the file (and names the line of any error).

pyarrow's reader differs from Python's ``json`` at the edges: it takes two objects on one line and
an object spread over several lines, reads ``-NaN`` and ``Inf``, turns the integer ``-0`` into
-0.0 (Python: 0.0), and shows a label whose value is null as an absent label. So the result is
used only when all of these hold, each checked on the bytes or on the columns without a Python
loop per point:

* the bytes are UTF-8 and every non-blank line starts with ``{`` and ends with ``}`` (no object
  spans lines), and pyarrow finds as many objects as there are such lines (no line holds two);
* the text has no key whose value is null (``: null``);
* ``id`` is a non-empty string, ``kind`` and ``unit`` non-empty strings or absent or null,
  ``timestamps`` and ``values`` lists of numbers of equal lengths, the timestamps finite, the
  values finite, NaN or null (and ``-NaN`` nowhere in the text when a value is NaN), ``labels``
  absent, null or an object of strings;
* no number was read as -0.0.

Timestamps written as ISO 8601 text are left to the line-by-line reader.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import codecs
import functools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from regbot.profiles.series_parts import SeriesPart

_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("unit", pa.string()),
        ("timestamps", pa.list_(pa.float64())),
        ("values", pa.list_(pa.float64())),
    ]
)
_NULL_VALUE = re.compile(rb":\s*null")
_WHITESPACE = b" \t\r\x0b\x0c"
_OPEN, _CLOSE = ord("{"), ord("}")
_MIN_BLOCK_BYTES = 1 << 20
_ARROW_ERRORS = (pa.ArrowException, OSError, ValueError)


def read_jsonl_arrow(path: Path, data: bytes) -> list[SeriesPart] | None:
    """The parts of a JSON Lines file's bytes (gunzipped), or None when pyarrow's reading of
    them cannot be vouched for (rules: the module docstring)."""
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    found = _object_lines(data, skip)
    if found is None or not found[0]:
        return None
    lines, longest = found
    if b"null" in data and _NULL_VALUE.search(data):
        return None
    try:
        table = pa_json.read_json(
            pa.BufferReader(pa.py_buffer(data).slice(skip)),
            read_options=pa_json.ReadOptions(
                use_threads=True, block_size=max(_MIN_BLOCK_BYTES, longest + 2)
            ),
            parse_options=pa_json.ParseOptions(
                explicit_schema=_SCHEMA, unexpected_field_behavior="infer"
            ),
        )
    except _ARROW_ERRORS:
        return None
    if table.num_rows != len(lines):
        return None
    return _parts(path, table, lines, data)


def _object_lines(data: bytes, start: int) -> tuple[list[int], int] | None:
    """The numbers of the non-blank lines from byte ``start`` on and the longest line's length;
    None when a non-blank line does not start with ``{`` or does not end with ``}``."""
    numbers: list[int] = []
    longest = 0
    for number, line in enumerate(data.split(b"\n"), 1):
        text = (line[start:] if number == 1 else line).strip(_WHITESPACE)
        if text:
            if text[0] != _OPEN or text[-1] != _CLOSE:
                return None
            numbers.append(number)
            longest = max(longest, len(line))
    return numbers, longest


def _parts(path: Path, table: Any, lines: list[int], data: bytes) -> list[SeriesPart] | None:
    names = table.schema.names
    ids = table.column("id")
    if ids.null_count or pc.any(pc.equal(ids, "")).as_py():
        return None
    texts: dict[str, list[str | None]] = {}
    for name in ("kind", "unit"):
        column = table.column(name)
        if pc.any(pc.equal(column, "")).as_py():
            return None
        texts[name] = column.to_pylist()
    stamps, values = table.column("timestamps"), table.column("values")
    if stamps.null_count or values.null_count:
        return None
    lengths = _numpy(pc.list_value_length(stamps)).astype(np.int64)
    if not np.array_equal(lengths, _numpy(pc.list_value_length(values))):
        return None
    flat_stamps, flat_values = pc.list_flatten(stamps), pc.list_flatten(values)
    if flat_stamps.null_count:
        return None
    times, points = _numpy(flat_stamps), _numpy(flat_values.fill_null(float("nan")))
    if not np.isfinite(times).all() or np.isinf(points).any():
        return None
    if _has_negative_zero(times) or _has_negative_zero(points):
        return None
    if np.isnan(points).any() and b"-NaN" in data:
        return None
    labels = _labels(table.column("labels")) if "labels" in names else [{}] * len(lines)
    if labels is None:
        return None
    bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    parts = []
    for row, series_id in enumerate(ids.to_pylist()):
        start, stop = bounds[row], bounds[row + 1]
        parts.append(
            SeriesPart(
                series_id,
                texts["kind"][row],
                texts["unit"][row],
                labels[row],
                times[start:stop],
                points[start:stop],
                functools.partial(_line, path, lines[row]),
            )
        )
    return parts


def _line(path: Path, number: int) -> str:
    return f"{path}:{number}"


def _labels(column: Any) -> list[dict[str, str]] | None:
    """Each row's labels, or None unless every label value is a string (or absent)."""
    kind = column.type
    if pa.types.is_null(kind):
        return [{} for _ in range(len(column))]
    if not pa.types.is_struct(kind):
        return None
    names = [kind.field(i).name for i in range(kind.num_fields)]
    if not all(pa.types.is_string(kind.field(i).type) for i in range(kind.num_fields)):
        return None
    fields = [pc.struct_field(column, [i]).to_pylist() for i in range(kind.num_fields)]
    valid = column.is_valid().to_pylist()
    labels = []
    for row, present in enumerate(valid):
        cells = (field[row] for field in fields) if present else ()
        labels.append({name: text for name, text in zip(names, cells) if text is not None})
    return labels


def _numpy(column: Any) -> np.ndarray:
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if not chunks:
        return np.empty(0, dtype=np.float64)
    return np.concatenate([np.asarray(chunk.to_numpy(zero_copy_only=False)) for chunk in chunks])


def _has_negative_zero(array: np.ndarray) -> bool:
    return bool((np.signbit(array) & (array == 0)).any())
