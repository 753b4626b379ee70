"""JSON-plain values: the one place numbers become what the SPEC §4 report can hold.

A stage's verdict numbers may be numpy scalars or arrays, tuples, or non-finite floats; the
report holds only JSON's own values, and a non-finite number becomes ``null`` (JSON has no NaN).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TypeAlias, cast

import numpy as np

__all__ = ["JSONValue", "finite_number", "finite_or_none", "json_plain"]

JSONValue: TypeAlias = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]


def finite_or_none(value: float | np.floating) -> float | None:
    """``value`` as a float, or None when it is NaN or infinite."""
    value = float(value)
    return value if math.isfinite(value) else None


def finite_number(value: object) -> float | None:
    """A JSON value (a verdict's number) as a float when it is a finite number, else None
    (text, a list, true/false and null are no number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def json_plain(value: object) -> JSONValue:
    """``value`` as JSON's own values: numpy scalars as bool/int/float, arrays and tuples as
    lists, mappings with text keys, non-finite floats as None. Text and None pass through; any
    other object is an error (a verdict number must be data)."""
    kind = type(value)
    if kind is float:  # the common cases first, by exact type (bool is not int here)
        number = cast(float, value)
        return number if math.isfinite(number) else None
    if kind is int or kind is str:
        return cast(int | str, value)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return finite_or_none(value)
    if isinstance(value, np.ndarray):
        return [json_plain(v) for v in value.tolist()]
    if isinstance(value, list | tuple):
        return [json_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): json_plain(v) for k, v in value.items()}
    raise TypeError(f"not a JSON value: {type(value).__name__}")
