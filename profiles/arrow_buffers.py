"""numpy arrays and Arrow arrays through their buffers, without pyarrow's pandas hooks.

``pa.array(...)`` and ``Array.to_numpy()`` import pandas when it is installed (to recognise its
types); statsmodels installs it, so a `regbot ingest` or `regbot gcpu` that only reads or writes
the sample store would pay ~0.4 s and ~40 MB for an import it never uses. These helpers build and
read arrays from their buffers instead: fixed-width values without nulls, zero-copy both ways,
and UTF-8 or binary values from bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

T = TypeVar("T", bound=np.generic)


def to_numpy(array: pa.Array, dtype: type[T]) -> npt.NDArray[T]:
    """The values of a fixed-width Arrow ``array`` with no nulls, as ``dtype`` (which must be
    its own width: cast the Arrow array first), zero-copy."""
    kind = np.dtype(dtype)
    if array.null_count:
        raise ValueError(f"{array.null_count} nulls")
    if len(array) == 0:
        return np.zeros(0, kind)
    if array.type.bit_width != 8 * kind.itemsize:
        raise ValueError(f"{array.type} is not {kind}")
    data = array.buffers()[1]
    return np.frombuffer(data, dtype=kind, count=len(array), offset=array.offset * kind.itemsize)


def from_numpy(values: npt.NDArray[np.generic], type: pa.DataType) -> pa.Array:
    """A fixed-width Arrow array of ``type`` with no nulls over ``values`` (converted to the
    type's width first when they differ)."""
    kind = _NUMPY[type]
    contiguous = np.ascontiguousarray(values, dtype=kind)
    return pa.Array.from_buffers(type, len(contiguous), [None, pa.py_buffer(contiguous)])


def from_bytes(values: Sequence[bytes | None], type: pa.DataType) -> pa.Array:
    """A string or binary Arrow array of ``type`` holding ``values`` (None for a null); for a
    string type each value must be UTF-8."""
    lengths = np.fromiter((len(v) if v is not None else 0 for v in values), np.int64, len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= np.iinfo(np.int32).max:
        raise ValueError("more than 2 GiB of text in one array")
    nulls = sum(v is None for v in values)
    validity = None
    if nulls:
        present = np.fromiter((v is not None for v in values), bool, len(values))
        validity = pa.py_buffer(np.packbits(present, bitorder="little"))
    data = pa.py_buffer(b"".join(v for v in values if v is not None))
    buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), data]
    return pa.Array.from_buffers(type, len(values), buffers, null_count=nulls)


_NUMPY: dict[pa.DataType, type[np.generic]] = {
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.float64(): np.float64,
}
