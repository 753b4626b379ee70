"""Parsing of times (epoch seconds or ISO 8601) and durations (`90s`, `30m`, `4h`, `10d`)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from regbot.errors import InputError

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}

# An ISO 8601 time at the start of a file name, e.g. `2026-11-22T10:00:00Z-web01.folded`.
ISO_PREFIX = re.compile(
    r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)"
)
EPOCH_PREFIX = re.compile(r"^(\d{9,11}(?:\.\d+)?)(?!\d)")


def parse_time(value: object, where: str) -> float:
    """Return epoch seconds for epoch seconds (number or numeric text) or ISO 8601 text.

    ISO times without a zone are taken as UTC, so a run gives the same answer on every machine.
    """
    if isinstance(value, bool):
        raise InputError(where, "a time (epoch seconds or ISO 8601)", value)
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.timestamp()
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                moment = datetime.fromisoformat(text.replace("z", "Z"))
            except ValueError:
                raise InputError(where, "a time (epoch seconds or ISO 8601)", value) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
            return moment.timestamp()
    else:
        raise InputError(where, "a time (epoch seconds or ISO 8601)", value)
    if not math.isfinite(seconds):
        raise InputError(where, "a finite time", value)
    return seconds


def parse_duration(value: object, where: str) -> float:
    """Return seconds for `90s`, `30m`, `4h`, `10d`, `2w`, `500ms`, or a plain number of seconds."""
    if isinstance(value, bool):
        raise InputError(where, "a duration such as 90s, 30m, 4h or 10d", value)
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match.group(1)) * _UNIT_S[match.group(2) or "s"]
    else:
        raise InputError(where, "a duration such as 90s, 30m, 4h or 10d", value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(where, "a positive duration", value)
    return seconds


def time_from_file_name(name: str) -> float | None:
    """The time a file name starts with (epoch seconds or ISO 8601), or None when it has none."""
    if match := ISO_PREFIX.match(name):
        return parse_time(match.group(1), name)
    if match := EPOCH_PREFIX.match(name):
        return float(match.group(1))
    return None


def format_time(seconds: float) -> str:
    """ISO 8601 in UTC, to the second, for tables and messages."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
