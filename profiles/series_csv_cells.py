"""The CSV reader's rules for cell texts, exactly: timestamps (epoch seconds or ISO 8601) and
values (numbers, or a spelling of "missing"), and where a data row is (``file:line``).

``series_csv`` reads numeric columns through pyarrow's float parser, which accepts a subset of what
Python's ``float`` accepts and gives the same doubles (both round correctly); whenever that fast
reading cannot vouch for a column (a text it refused, a null, a NaN or an infinity), the column's
texts come here and these rules decide, each distinct text parsed once.

* **timestamp**: when every cell is a number to Python's ``float``, those numbers, and a cell that is
  not finite is an error ("a finite time"); otherwise every cell goes through
  ``regbot.timefmt.parse_time`` (ISO 8601 without a zone is UTC), and the first cell it refuses
  is the error ("a time (epoch seconds or ISO 8601)").
* **value**: a cell that, stripped and lower-cased, is one of ``MISSING_TEXT`` is NaN (a missing
  point); any other cell must be a number to ``float`` ("a number (or an empty cell)"); then an
  infinite value is an error ("a finite number").

Errors name the first offending row in file order, and its line (found by re-reading the file
with the csv module, on the error path only: blank lines and quoted newlines make lines and rows
differ).

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import csv
import io
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from regbot.errors import InputError
from regbot.profiles.series_parts import read_series_text
from regbot.profiles.series_rows import Where, dictionary_codes
from regbot.timefmt import parse_time

MISSING_TEXT = frozenset({"", "nan", "null", "none", "na", "n/a"})
# Texts that both Python's float and pyarrow's cast read, to the same double.
_PLAIN_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


class CsvLines:
    """``file:line`` (or ``file:line: field``) of the i-th data row, found by re-reading the file
    with the csv module (blank rows skipped, as the reader skips them)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, row: int, field_name: str | None = None) -> str:
        reader = csv.reader(io.StringIO(read_series_text(self.path), newline=""))
        next(reader, None)
        data_rows = (reader.line_num for r in reader if r)
        line = next(itertools.islice(data_rows, row, None), "?")
        suffix = f": {field_name}" if field_name else ""
        return f"{self.path}:{line}{suffix}"


def _distinct(column: Any) -> tuple[list[str], np.ndarray]:
    """The distinct texts of a string or dictionary column (an Arrow array or chunked array,
    no nulls) and each row's index into them."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    texts: list[str] = []
    index: dict[str, int] = {}
    codes = []
    for chunk in chunks:
        entries, cells = dictionary_codes(chunk)
        mapping = np.empty(len(entries), dtype=np.int64)
        for entry, text in enumerate(entries):
            code = index.setdefault(text or "", len(texts))
            if code == len(texts):
                texts.append(text or "")
            mapping[entry] = code
        codes.append(mapping[cells])
    return texts, np.concatenate(codes) if codes else np.empty(0, dtype=np.int64)


def _first_row(codes: np.ndarray, bad: list[int]) -> int:
    return int(np.flatnonzero(np.isin(codes, bad))[0])


def times_from_texts(column: Any, where: Where) -> np.ndarray:
    """float64 epoch seconds of a timestamp column's texts (rules: the module docstring)."""
    texts, codes = _distinct(column)
    numbers: list[float] = []
    for text in texts:
        try:
            numbers.append(float(text))
        except ValueError:
            break
    else:
        times: np.ndarray = np.asarray(numbers, dtype=np.float64)[codes]
        if not np.isfinite(times).all():
            row = int(np.flatnonzero(~np.isfinite(times))[0])
            raise InputError(where(row, "timestamp"), "a finite time", texts[codes[row]])
        return times
    parsed = np.empty(len(texts))
    bad = []
    for code, text in enumerate(texts):
        try:
            parsed[code] = parse_time(text, "timestamp")
        except InputError:
            bad.append(code)
    if bad:
        row = _first_row(codes, bad)
        expected = "a time (epoch seconds or ISO 8601)"
        raise InputError(where(row, "timestamp"), expected, texts[codes[row]])
    result: np.ndarray = parsed[codes]
    return result


def cell_value(text: str) -> float:
    """One value cell: NaN for a spelling of "missing", else Python's ``float`` (ValueError)."""
    if text.strip().lower() in MISSING_TEXT:
        return float("nan")
    return float(text)


def values_from_texts(column: Any, where: Where) -> np.ndarray:
    """float64 values of a value column's texts (rules: the module docstring). Plain decimal
    numbers are cast by pyarrow; every other distinct text goes through ``cell_value``."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    values = np.empty(sum(len(chunk) for chunk in chunks))
    offset = 0
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            chunk = chunk.cast(pa.string())
        plain = pc.match_substring_regex(chunk, _PLAIN_NUMBER)
        out = values[offset : offset + len(chunk)]
        plain_rows = np.asarray(plain.to_numpy(zero_copy_only=False), dtype=bool)
        out[plain_rows] = pc.cast(chunk.filter(plain), pa.float64()).to_numpy()
        others = np.flatnonzero(~plain_rows)
        if others.size:
            texts, codes = _distinct(chunk.take(pa.array(others)))
            converted, bad = _cell_values(texts)
            if bad:
                row = int(others[_first_row(codes, bad)])
                raise InputError(
                    where(offset + row, "value"), "a number (or an empty cell)", chunk[row].as_py()
                )
            out[others] = converted[codes]
        offset += len(chunk)
    if np.isinf(values).any():
        row = int(np.flatnonzero(np.isinf(values))[0])
        raise InputError(where(row, "value"), "a finite number", _text_at(chunks, row))
    return values


def _cell_values(texts: list[str]) -> tuple[np.ndarray, list[int]]:
    converted = np.empty(len(texts))
    bad = []
    for code, text in enumerate(texts):
        try:
            converted[code] = cell_value(text)
        except ValueError:
            bad.append(code)
    return converted, bad


def _text_at(chunks: list[Any], row: int) -> str:
    for chunk in chunks:
        if row < len(chunk):
            text: str = chunk[row].as_py()
            return text
        row -= len(chunk)
    raise IndexError(row)
