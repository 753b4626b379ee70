"""The values ``regbot.yml`` holds, one converter each: ``(value, where) -> value``, raising an
``InputError`` that names ``where`` (``regbot.yml:12: gate.min_delta``), what was expected and
what was found. The walker (``regbot.bot.config_reader``) picks one per field by its type."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TypeVar

from regbot.errors import InputError
from regbot.settings_fields import Bound
from regbot.timefmt import parse_duration

N = TypeVar("N", int, float)


def number(value: object, where: str) -> float:
    """A finite number from a YAML number or any text ``float()`` accepts (``2e-05``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(where, "a number", value)
    try:
        found = float(value.strip() if isinstance(value, str) else value)
    except (ValueError, OverflowError):
        raise InputError(where, "a number", value) from None
    if not math.isfinite(found):
        raise InputError(where, "a finite number", value)
    return found


def count(value: object, where: str) -> int:
    """A whole number >= 0 (``5``, ``5.0`` and ``"5"`` alike)."""
    found = number(value, where)
    if found < 0 or found != int(found):
        raise InputError(where, "a whole number >= 0", value)
    return int(found)


def boolean(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(where, "true or false", value)
    return value


def text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(where, "a non-empty string", value)
    return value


def words(value: object, where: str) -> frozenset[str]:
    """One word or a list of them."""
    if not isinstance(value, list):
        return frozenset({text(value, where)})
    return frozenset(text(item, f"{where}[{i}]") for i, item in enumerate(value))


def one_of(value: object, where: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InputError(where, "one of " + ", ".join(choices), value)
    return value


def duration(value: object, where: str) -> float:
    """A positive duration: ``90s``, ``30m``, ``4h``, ``10d`` or seconds."""
    return parse_duration(value, where)


def durations(value: object, where: str) -> tuple[float, ...]:
    """One duration or a non-empty list of them (``[1d, 7d]``)."""
    if not isinstance(value, list):
        return (duration(value, where),)
    if not value:
        raise InputError(where, "a list of durations (at least one)", value)
    return tuple(duration(item, f"{where}[{i}]") for i, item in enumerate(value))


_ZERO = re.compile(r"^\s*0+(?:\.0*)?\s*(?:ms|s|m|h|d|w)?\s*$")


def duration_or_zero(value: object, where: str) -> float:
    """A duration that may be 0 (``0``, ``0s``, ``0h``...), for the optional extended window."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    if isinstance(value, str) and _ZERO.match(value):
        return 0.0
    return parse_duration(value, where)


def band(value: object, where: str) -> tuple[float, float]:
    """Two numbers ``[low, high]``, 0 <= low <= high."""
    if not isinstance(value, list) or len(value) != 2:
        raise InputError(where, "a list of two numbers [low, high]", value)
    low, high = (non_negative(item, f"{where}[{i}]") for i, item in enumerate(value))
    if low > high:
        raise InputError(where, "[low, high] with low <= high", value)
    return low, high


def non_negative(value: object, where: str) -> float:
    found = number(value, where)
    if found < 0:
        raise InputError(where, "a number >= 0", value)
    return found


def regex(value: object, where: str) -> str:
    written = text(value, where)
    try:
        re.compile(written)
    except re.error as error:
        raise InputError(where, f"a regular expression ({error.msg})", written) from None
    return written


def url(value: object, where: str) -> str:
    written = text(value, where)
    if not written.startswith(("http://", "https://")):
        raise InputError(where, "an http:// or https:// URL", written)
    return written


def github_repository(value: object, where: str) -> str:
    written = text(value, where)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", written):
        raise InputError(where, "owner/name", written)
    return written


DASK_SCHEMES = ("tcp://", "tls://", "ucx://", "ws://", "wss://", "inproc://")


def dask_address(value: object, where: str) -> str:
    """A Dask scheduler's address, as ``distributed.Client`` takes it (``tcp://host:8786``)."""
    written = text(value, where)
    if not written.startswith(DASK_SCHEMES) or written.endswith("//"):
        raise InputError(where, "a Dask scheduler address such as tcp://host:8786", written)
    return written


TEXT_FORMS: dict[str, Callable[[object, str], str]] = {
    "regex": regex,
    "dask-address": dask_address,
    "url": url,
    "owner/name": github_repository,
}


def bounded(
    convert: Callable[[object, str], N], bounds: tuple[Bound, ...]
) -> Callable[[object, str], N]:
    """``convert``, then every bound in order (the first one broken names what was expected)."""

    def read(value: object, where: str) -> N:
        found = convert(value, where)
        for bound in bounds:
            if not bound.allows(found):
                raise InputError(where, bound.expected, value)
        return found

    return read
