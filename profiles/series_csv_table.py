"""A long-format CSV file's cells as an Arrow table, read by pyarrow's multi-threaded CSV reader,
with the csv module's reading of the same file as the rule.

1. The header is the file's first row as the csv module reads it (so a blank first line is an
   empty header); its names, stripped, are checked: timestamp, series and value present, each
   name once, none empty.
2. pyarrow reads the whole file on every core (``use_threads``): ``value`` as float64, in which
   every letter case of ``MISSING_TEXT`` is a null; ``timestamp`` as float64 too when the first
   data row's is a number, else as text; every other column as dictionary-encoded text (a
   series id, kind or label is stored once per block, not once per row). Quoted newlines are
   looked for only when the file has a quote at all (a gzipped file is assumed to have one, and is
   gunzipped by pyarrow as it parses; any gzip error goes to step 4, where Python's gzip decides).
3. When pyarrow refuses that (a text in a float column: ISO times further down, ``1_000``...), it
   reads the file again with timestamp and value as text, left to ``series_csv_cells``.
4. When pyarrow refuses that too, the csv module reads the text, and a byte that is not UTF-8, a
   csv error, or a row whose number of fields differs from the header's is an InputError naming
   its line; were the csv module to read the file without complaint, its rows are used.

pyarrow and the csv module split rows alike (quotes, doubled quotes, CRLF and lone CR, blank
lines skipped, a byte order mark dropped); step 4 makes them agree on every file either refuses.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import itertools
import mmap
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.csv as pa_csv

from regbot.errors import InputError
from regbot.profiles.series_csv_cells import MISSING_TEXT
from regbot.profiles.series_parts import LONG_COLUMNS, read_series_bytes, read_series_text

BLOCK_BYTES = 1 << 20  # pyarrow's unit of work: one block per thread at a time
TEXT = pa.dictionary(pa.int32(), pa.string())
# Every letter case of every spelling of "missing": nulls (NaN) when pyarrow reads the values.
NULL_SPELLINGS = sorted(
    {
        "".join(letters)
        for word in MISSING_TEXT
        for letters in itertools.product(*({c.lower(), c.upper()} for c in word))
    }
)
_ARROW_ERRORS = (pa.ArrowException, OSError)


class CsvFile:
    """One CSV series file, its header checked (step 1), ready to be read as a table."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.gzipped = path.name.lower().endswith(".gz")
        self._quoted: bool | None = None
        header, first_row = self._first_rows()
        self.names = _checked_header(path, header)
        self.raw_names = list(header or [])
        position = self.names.index("timestamp")
        self.numeric_times = first_row is not None and _is_number(first_row, position)

    def table(self) -> Any:
        """Every data row as an Arrow table whose columns have the header's stripped names."""
        types = {raw: TEXT for raw in self.raw_names}
        types[self._raw("value")] = pa.float64()
        if self.numeric_times:
            types[self._raw("timestamp")] = pa.float64()
        table = self._arrow(types)
        if table is None:
            types[self._raw("value")] = pa.string()
            types[self._raw("timestamp")] = TEXT
            table = self._arrow(types)
        return self._csv_module_table() if table is None else table

    def texts(self, name: str) -> Any:
        """One column as text (for ``series_csv_cells`` when its numbers cannot be vouched for)."""
        kind = pa.string() if name == "value" else TEXT
        table = self._arrow({self._raw(name): kind}, include=[self._raw(name)])
        return (self._csv_module_table() if table is None else table).column(name)

    def _raw(self, name: str) -> str:
        return self.raw_names[self.names.index(name)]

    def _source(self) -> Any:
        """The file's bytes for pyarrow: memory-mapped, or gunzipped as pyarrow parses them."""
        if self.gzipped:
            return pa.CompressedInputStream(pa.OSFile(str(self.path)), "gzip")
        return pa.memory_map(str(self.path))

    def _has_quote(self) -> bool:
        """Whether the file may have a quote (only then can a value hold a newline); a gzipped
        file is not read twice to know."""
        if self._quoted is None:
            if self.gzipped:
                self._quoted = True
            else:
                with self.path.open("rb") as stream:
                    with mmap.mmap(stream.fileno(), 0, prot=mmap.PROT_READ) as mapped:
                        self._quoted = mapped.find(b'"') >= 0
        return self._quoted

    def _arrow(self, types: dict[str, Any], include: list[str] | None = None) -> Any:
        """The table as pyarrow reads it with these column types, or None if pyarrow refuses
        the file or splits its header otherwise than the csv module."""
        convert = pa_csv.ConvertOptions(
            column_types=types,
            null_values=NULL_SPELLINGS,
            strings_can_be_null=False,
            check_utf8=True,
            include_columns=include or [],
        )
        try:
            table = pa_csv.read_csv(
                self._source(),
                read_options=pa_csv.ReadOptions(use_threads=True, block_size=BLOCK_BYTES),
                parse_options=pa_csv.ParseOptions(newlines_in_values=self._has_quote()),
                convert_options=convert,
            )
        except _ARROW_ERRORS:
            return None
        if table.column_names != (include or self.raw_names):
            return None
        return table.rename_columns([name.strip() for name in table.column_names])

    def _csv_module_table(self) -> Any:
        """Step 4: the csv module's rows (or the InputError naming the line it stops at)."""
        reader = csv.reader(io.StringIO(read_series_text(self.path), newline=""))
        rows: list[list[str]] = []
        bad: tuple[int, int] | None = None  # line and field count of the first uneven row
        try:
            next(reader, None)
            for row in reader:
                if row and len(row) != len(self.names) and bad is None:
                    bad = (reader.line_num, len(row))
                if row:
                    rows.append(row)
        except csv.Error as error:
            raise InputError(
                f"{self.path}:{reader.line_num}", "well-formed CSV", str(error)
            ) from None
        if bad is not None:
            line, count = bad
            raise InputError(
                f"{self.path}:{line}", f"{len(self.names)} fields as in the header", count
            )
        columns = list(zip(*rows)) if rows else [() for _ in self.names]
        return pa.table(
            {name: pa.array(cells, pa.string()) for name, cells in zip(self.names, columns)}
        )

    def _first_rows(self) -> tuple[list[str] | None, list[str] | None]:
        """The header row and the first data row as the csv module reads them, decoding only
        the lines it needs; an undecodable byte is the InputError naming its line."""
        with self._open() as stream:
            reader = csv.reader(_text_lines(stream))
            try:
                header = next(reader, None)
            except csv.Error as error:
                read_series_text(self.path)  # a byte that is not UTF-8 comes first
                where = f"{self.path}:{reader.line_num}"
                raise InputError(where, "well-formed CSV", str(error)) from None
            except (UnicodeDecodeError, OSError, EOFError, zlib.error):
                read_series_text(self.path)  # raises the InputError at the line
                raise
            try:
                first = next(filter(None, reader), None)
            except (csv.Error, UnicodeDecodeError, OSError, EOFError, zlib.error):
                first = None  # step 4 says where, after the header's checks
        return header, first

    def _open(self) -> IO[bytes] | gzip.GzipFile:
        try:
            return gzip.open(self.path, "rb") if self.gzipped else self.path.open("rb")
        except OSError:
            read_series_bytes(self.path)  # raises the InputError naming the file
            raise


def _text_lines(stream: IO[bytes] | gzip.GzipFile) -> Iterator[str]:
    """Decoded lines as the csv module would get them from the file opened with newline=""."""
    for number, raw in enumerate(stream):
        if number == 0 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        yield from io.StringIO(raw.decode("utf-8"), newline="")


def _is_number(row: list[str], position: int) -> bool:
    try:
        float(row[position])
    except (ValueError, IndexError):
        return False
    return True


def _checked_header(path: Path, header: list[str] | None) -> list[str]:
    """The stripped column names; a header without timestamp, series or value, with a name twice
    or an empty name is an InputError (after any error the whole file's text has: a byte that is
    not UTF-8 comes first, as when the file is read whole)."""
    expected = "a header row with columns timestamp, series, value (any order)"
    try:
        names = [name.strip() for name in header or []]  # an empty file: no column at all
        missing = [name for name in LONG_COLUMNS if name not in names]
        if missing:
            found = ",".join(header or [])
            raise InputError(f"{path}:1", f"{expected}; missing {', '.join(missing)}", found)
        for position, name in enumerate(names, 1):
            if not name:
                raise InputError(f"{path}:1: column {position}", "a column name", "")
            if names.count(name) > 1:
                count = names.count(name)
                raise InputError(f"{path}:1: {name}", "each column once", f"{count} times")
    except InputError:
        read_series_text(path)
        raise
    return names
