"""Reading the sample store's first on-disk format, ``regbot-store/1`` (read only).

A format-1 segment is ``DIR/seg-NNNNNN.npz``, a numpy archive of six arrays:

* ``frames_json`` uint8: the frames first seen in its run, a JSON list of strings in UTF-8 (lone
  surrogates as ``surrogatepass`` writes them);
* ``stack_offsets`` int64 and ``stack_frames`` int32: the stacks first seen in its run, in CSR
  form over global frame ids (stack ``i`` is ``stack_frames[stack_offsets[i]:stack_offsets[i+1]]``,
  root first);
* ``bucket_s`` int64, ``stack`` int64, ``weight`` float64: the records (the same rules as
  format 2's, ``profiles.store_records``).

Ids compose across segments as in format 2. The first commit to a format-1 store rewrites it as
one format-2 segment (``profiles.store``); until then regbot reads it as it is.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt

from regbot.errors import InputError
from regbot.profiles.stacks import check_csr
from regbot.profiles.store_records import Records

_ERRORS = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error)


def _refuse(file: Path, error: Exception) -> InputError:
    found = " ".join(str(error).split()) or type(error).__name__
    return InputError(str(file), "a readable regbot store segment (npz)", found)


def read_npz_stacks(
    file: Path, n_frames_before: int
) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """The segment's new frames, and its new stacks in CSR form (frame ids below the frames of
    earlier segments and its own)."""
    try:
        with np.load(file, allow_pickle=False) as segment:
            frames = json.loads(segment["frames_json"].tobytes().decode("utf-8", "surrogatepass"))
            offsets = np.asarray(segment["stack_offsets"], dtype=np.int64)
            flat = np.asarray(segment["stack_frames"], dtype=np.int32)
    except _ERRORS as error:
        raise _refuse(file, error) from None
    if not isinstance(frames, list) or not all(isinstance(f, str) for f in frames):
        raise InputError(f"{file}: frames_json", "a JSON list of strings")
    check_csr(f"{file}: stack_frames", offsets, flat, n_frames_before + len(frames))
    return frames, offsets, flat


def npz_record_rows(file: Path) -> int:
    """How many records the segment holds."""
    try:
        with np.load(file, allow_pickle=False) as segment:
            return int(len(segment["bucket_s"]))
    except _ERRORS as error:
        raise _refuse(file, error) from None


def read_npz_records(file: Path) -> Records:
    """The segment's records, as one batch."""
    try:
        with np.load(file, allow_pickle=False) as segment:
            records = Records(
                np.asarray(segment["bucket_s"], dtype=np.int64),
                np.asarray(segment["stack"], dtype=np.int64),
                np.asarray(segment["weight"], dtype=np.float64),
            )
    except _ERRORS as error:
        raise _refuse(file, error) from None
    if not len(records.stack) == len(records.weight) == len(records):
        raise InputError(str(file), "bucket_s, stack and weight of one length")
    return records
