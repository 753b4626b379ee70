"""Atomic file writes: a new file is written beside its target and renamed over it."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from regbot.errors import InputError


def write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write through ``write`` into a temporary file next to ``path``, fsync it, then rename it over
    ``path``: readers see the old file or the new one, never half of one, and a failure (an
    exception in ``write``, a full disk) leaves the old file as it was. The new file gets the old
    file's mode, or for a new file what a plain ``open`` would give (0666 less the umask). What
    ``write`` returns is ignored. A target that exists and is no regular file (``/dev/null``,
    ``/dev/stdout``, a FIFO) is written in place: renaming over it would replace the device."""
    if _special(path):
        try:
            with open(path, "wb") as raw:
                write(raw)
        except OSError as error:
            raise InputError(str(path), "a writable file", error.strerror or str(error)) from None
        return
    try:
        handle, temp_name = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
        )
    except OSError as error:
        raise InputError(str(path), "a writable location", error.strerror or str(error)) from None
    try:
        with open(handle, "wb") as raw:
            write(raw)
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(temp_name, _file_mode(path))
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def _special(path: Path) -> bool:
    """``path`` exists (after symlinks) and is not a regular file (a device, a FIFO...)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _file_mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


INDENT_UP_TO = 1 << 20  # bytes: larger documents are written compact


def write_json_atomic(path: Path, document: object) -> None:
    """``document`` as JSON (no NaN or infinity, which JSON does not have), atomically: indented
    for reading when it is at most ``INDENT_UP_TO`` bytes compact, else compact (a fleet's
    report of 50 MB: json's indenting encoder is pure Python and takes seconds there, its
    compact one is C)."""
    text = json.dumps(document, allow_nan=False)
    if len(text) <= INDENT_UP_TO:
        text = json.dumps(document, indent=2, allow_nan=False)
    payload = text.encode()
    write_atomic(path, lambda handle: handle.write(payload))
