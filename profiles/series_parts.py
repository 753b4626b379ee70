"""What the series-file readers share: one series' points as found in one place
(``SeriesPart``, merged by ``series_files``), reading a file's text (gunzipped when it ends in
``.gz``) and writing one atomically.

Design: docs/design/profiles_series_files.md
"""

from __future__ import annotations

import gc
import gzip
import io
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from regbot.atomic import write_atomic
from regbot.errors import InputError

LONG_COLUMNS = ("timestamp", "series", "value")  # SPEC §2's long format, in column order
OPTIONAL_COLUMNS = ("kind", "unit")


@dataclass(slots=True)
class SeriesPart:
    """Points of one series as found in one place, before merging and normalisation."""

    id: str
    kind: str | None
    unit: str | None
    labels: dict[str, str]
    times: np.ndarray
    values: np.ndarray
    locate: Callable[[], str]  # "file:line" of this part, computed only for an error message
    varied: set[str] = field(default_factory=set)  # labels already found to differ


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cycle collector while the parts and series of a read are made (one object or
    more per series, none in a cycle): with 200,000 series, the collections their allocations
    trigger would take longer than the reading."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_series_text(path: Path) -> str:
    """The whole file as text (gunzipped when it ends in ``.gz``). A truncated gzip or a byte
    that is not UTF-8 becomes an InputError at the line where it happens."""
    return decode_series_bytes(path, read_series_bytes(path))


def read_series_bytes(path: Path) -> bytes:
    """The whole file's bytes (gunzipped when it ends in ``.gz``). A truncated gzip becomes an
    InputError at the line reached, an unreadable file an InputError naming it."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    chunks: list[bytes] = []
    lines = 0
    try:
        with opener(path, "rb") as stream:
            while chunk := stream.read(1 << 20):
                chunks.append(chunk)
                lines += chunk.count(b"\n")
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise InputError(f"{path}:{lines + 1}", "a complete gzip file", str(error)) from None
    except OSError as error:
        raise InputError(str(path), "a readable series file", str(error)) from None
    return b"".join(chunks)


def decode_series_bytes(path: Path, data: bytes) -> str:
    """``data`` as text, a leading byte order mark dropped; a byte that is not UTF-8 is an
    InputError at its line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputError(f"{path}:{line}", "UTF-8 text", str(error)) from None


def write_series_text(path: Path, write: Callable[[IO[str]], None]) -> None:
    """Write text through ``write`` atomically (``regbot.atomic``). Gzip output has no name and
    mtime 0, so the same series give the same bytes."""

    def write_binary(raw: IO[bytes]) -> None:
        binary: IO[bytes] | gzip.GzipFile = raw
        if path.name.lower().endswith(".gz"):
            binary = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0)
        text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
        write(text)
        text.flush()
        text.detach()
        if binary is not raw:
            binary.close()

    write_atomic(path, write_binary)


def label_columns(labels: Sequence[Mapping[str, str]], path: Path, file_kind: str) -> list[str]:
    """The label columns a long-format file of series with ``labels`` gets: every label name,
    in name order. A label named like one of the file's own columns is an InputError (it could
    not be read back as a label)."""
    names = sorted({name for item in labels for name in item})
    clash = [name for name in names if name in LONG_COLUMNS + OPTIONAL_COLUMNS]
    if clash:
        raise InputError(
            f"{path}: labels", f"label names other than the {file_kind}'s own columns", clash[0]
        )
    return names
