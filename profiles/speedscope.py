"""Reader of speedscope's JSON file format (sampled and evented profiles), as py-spy writes it.

Format: https://www.speedscope.app/file-format-schema.json. ``shared.frames`` holds the frames
(``name``, optional ``file``, ``line``, ``col``); ``profiles`` holds one profile per thread (py-spy)
or per recording, each ``sampled`` (``samples`` of frame indices root first, ``weights``) or
``evented`` (``O``/``C`` events with ``frame`` and ``at``). ``col`` is ignored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, NamedTuple, TypeGuard

import numpy as np

from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples, render_frame
from regbot.profiles.stacks import StackTable

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"

# Seconds per unit; None for units that are not time (every sample then sits at the start).
_SECONDS_PER_UNIT: dict[str, float | None] = {
    "seconds": 1.0,
    "milliseconds": 1e-3,
    "microseconds": 1e-6,
    "nanoseconds": 1e-9,
    "none": None,
    "bytes": None,
}


class _Records(NamedTuple):
    """One profile's records, in the file's unit: ``offsets`` are from ``begin``, its start."""

    begin: float
    offsets: np.ndarray
    stack_ids: np.ndarray
    weights: np.ndarray


def parse_speedscope(
    data: bytes, *, source: str, table: StackTable, at_s: float | None, options: ParseOptions
) -> ProfileSamples:
    """Parse one speedscope file: every profile in it (py-spy writes one per thread).

    Frames render as ``name (file:line)`` (``render_frame``), the file kept as written (py-spy
    writes absolute paths there).

    Time. Speedscope has no absolute time, so ``at_s`` (``--at``) is the recording's start and is
    required. It stands for the earliest start among the file's profiles (``startValue``, or an
    evented profile's first ``at`` if that is earlier); each profile keeps its offset from it, so
    threads stay aligned. With a time unit (seconds ... nanoseconds):

    - sampled: sample *i* is at the profile's start + the sum of weights ``0..i-1``, converted to
      seconds. The axis is the profile's own: py-spy leaves idle samples out unless ``--idle``,
      so its axis is active time, shorter than wall time.
    - evented: events are replayed on a stack of open frames; each interval between consecutive
      events with at least one open frame becomes one record at the interval's start, weight = its
      duration. Zero-length intervals produce no record. An interval is not split at bucket
      boundaries: the store buckets a record by its start.

    With unit ``none`` or ``bytes`` every record is at ``at_s``; a profile without ``unit`` is
    ``none``.

    Weights are in the file's unit, which every profile of the file must share: a sampled weight
    as given (py-spy writes the sampling interval in seconds, e.g. 0.01, so shares come out the
    same as with counts), an evented interval's duration. ``sample_type`` is the unit's name
    (``samples`` for ``none``). An empty sample (no frames) is the empty stack: it counts toward
    the total but has no frame, as in folded files.

    Errors (``InputError`` naming the source and the JSON path): not JSON or truncated (line and
    column), no ``shared.frames`` or ``profiles``, unknown profile type or unit, mixed units,
    samples and weights of different lengths, negative or non-finite weights, a frame index that
    is not an integer in range, events out of time order, and unbalanced events (a close with
    nothing open, a close of another frame than the innermost open one, frames left open).
    O(samples + events); a stack seen before costs one dictionary lookup.
    """
    if at_s is None:
        raise InputError(
            source,
            "the recording's start time: pass --at (speedscope files carry no absolute time)",
        )
    document = _load_json(data, source)
    frame_ids = _intern_frames(document, source, table)
    profiles = document.get("profiles")
    if not isinstance(profiles, list):
        raise InputError(f"{source}: profiles", f"a list of profiles ({SCHEMA_URL})", profiles)

    unit = _common_unit(profiles, source)
    parts: list[_Records] = []
    for index, profile in enumerate(profiles):
        where = f"{source}: profiles[{index}]"
        if profile.get("type") == "sampled":
            parts.append(_read_sampled(profile, where, frame_ids, table))
        elif profile.get("type") == "evented":
            parts.append(_read_evented(profile, where, frame_ids, table))
        else:
            raise InputError(f"{where}.type", "'sampled' or 'evented'", profile.get("type"))

    seconds_per_unit = _SECONDS_PER_UNIT[unit] if unit else None
    origin = min((part.begin for part in parts), default=0.0)
    times: list[np.ndarray] = []
    for part in parts:
        if seconds_per_unit is None:
            times.append(np.full(len(part.offsets), float(at_s)))
        else:
            times.append(float(at_s) + (part.begin - origin + part.offsets) * seconds_per_unit)
    return ProfileSamples(
        source,
        _concat(times, np.float64),
        _concat([part.stack_ids for part in parts], np.int64),
        _concat([part.weights for part in parts], np.float64),
        "samples" if unit is None or unit == "none" else unit,
    )


def _load_json(data: bytes, source: str) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{source}:{error.lineno}:{error.colno}", f"speedscope JSON ({SCHEMA_URL})", error.msg
        ) from None
    except UnicodeDecodeError as error:
        raise InputError(source, "UTF-8 encoded speedscope JSON", str(error)) from None
    if not isinstance(document, dict):
        raise InputError(
            source, f"a speedscope JSON object ({SCHEMA_URL})", type(document).__name__
        )
    return document


def _intern_frames(document: dict[str, Any], source: str, table: StackTable) -> list[int]:
    """Table frame id of each entry of ``shared.frames``, by its index in the file."""
    shared = document.get("shared")
    frames = shared.get("frames") if isinstance(shared, dict) else None
    if not isinstance(frames, list):
        found = frames if isinstance(shared, dict) else "no 'shared' object"
        raise InputError(f"{source}: shared.frames", f"a list of frames ({SCHEMA_URL})", found)
    frame_ids: list[int] = []
    for index, frame in enumerate(frames):
        name = frame.get("name") if isinstance(frame, dict) else None
        if not isinstance(name, str):
            raise InputError(
                f"{source}: shared.frames[{index}]", "an object with a string 'name'", frame
            )
        file = frame.get("file")
        line = frame.get("line")
        text = render_frame(
            name,
            file if isinstance(file, str) else None,
            line if isinstance(line, int) and not isinstance(line, bool) else None,
        )
        frame_ids.append(table.intern_frame(text))
    return frame_ids


def _common_unit(profiles: list[Any], source: str) -> str | None:
    """The unit every profile shares (None when there is no profile)."""
    unit: str | None = None
    for index, profile in enumerate(profiles):
        if not isinstance(profile, dict):
            raise InputError(f"{source}: profiles[{index}]", "a profile object", profile)
        this = profile.get("unit", "none")
        if not isinstance(this, str) or this not in _SECONDS_PER_UNIT:
            raise InputError(
                f"{source}: profiles[{index}].unit", " or ".join(map(repr, _SECONDS_PER_UNIT)), this
            )
        if unit is not None and this != unit:
            raise InputError(
                f"{source}: profiles[{index}].unit", f"the unit of profiles[0], {unit!r}", this
            )
        unit = this
    return unit


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _start_value(profile: dict[str, Any], where: str, default: float) -> float:
    value = profile.get("startValue", default)
    if not _is_number(value):
        raise InputError(f"{where}.startValue", "a finite number", value)
    return float(value)


def _check_frame_index(index: object, count: int, position: str) -> None:
    if type(index) is not int or not 0 <= index < count:
        raise InputError(position, f"frame indices into shared.frames (0..{count - 1})", index)


def _stack_interner(
    frame_ids: list[int], table: StackTable, where: str
) -> Callable[[tuple[Any, ...], str], int]:
    """A function from a tuple of file frame indices (root first) to a table stack id, cached.

    Indices are checked the first time a stack is seen; a bad one raises ``InputError`` at
    ``{where}.{position}``.
    """
    cache: dict[tuple[Any, ...], int] = {}
    count = len(frame_ids)

    def intern(key: tuple[Any, ...], position: str) -> int:
        try:
            stack_id = cache.get(key)
        except TypeError:  # an unhashable entry (a list, an object) is not a frame index
            stack_id = None
        if stack_id is None:
            for index in key:
                _check_frame_index(index, count, f"{where}.{position}")
            stack_id = cache[key] = table.intern_stack_ids(tuple(frame_ids[i] for i in key))
        return stack_id

    return intern


def _read_sampled(
    profile: dict[str, Any], where: str, frame_ids: list[int], table: StackTable
) -> _Records:
    """A sampled profile's records: offsets are the sums of the weights before each sample."""
    samples = profile.get("samples")
    weights_list = profile.get("weights")
    if not isinstance(samples, list) or not isinstance(weights_list, list):
        raise InputError(where, "a sampled profile with lists 'samples' and 'weights'")
    if len(samples) != len(weights_list):
        raise InputError(
            f"{where}.weights", f"{len(samples)} weights, one per sample", len(weights_list)
        )
    try:
        weights = np.array(weights_list)
    except ValueError:  # ragged: some weight is a list
        weights = np.array(weights_list, dtype=object)
    if (
        weights.ndim != 1
        or weights.dtype.kind not in "iuf"
        or not (np.isfinite(weights).all() and (weights >= 0).all())
    ):
        # Slow path, to name the first bad weight (or convert huge integers, which are fine).
        for index, weight in enumerate(weights_list):
            if not (_is_number(weight) and weight >= 0):
                raise InputError(f"{where}.weights[{index}]", "a finite weight >= 0", weight)
    weights = weights.astype(np.float64)

    intern = _stack_interner(frame_ids, table, where)
    ids: list[int] = []
    for index, sample in enumerate(samples):
        if not isinstance(sample, list):
            raise InputError(f"{where}.samples[{index}]", "a list of frame indices", sample)
        ids.append(intern(tuple(sample), f"samples[{index}]"))

    offsets = np.zeros(len(weights), dtype=np.float64)
    np.cumsum(weights[:-1], out=offsets[1:])
    return _Records(_start_value(profile, where, 0.0), offsets, np.array(ids, np.int64), weights)


def _read_evented(
    profile: dict[str, Any], where: str, frame_ids: list[int], table: StackTable
) -> _Records:
    """An evented profile's records: one per interval with open frames, weight its duration."""
    events = profile.get("events")
    if not isinstance(events, list):
        raise InputError(where, "an evented profile with a list 'events'")
    intern = _stack_interner(frame_ids, table, where)
    open_frames: list[Any] = []
    opened_by: list[int] = []
    starts: list[float] = []
    durations: list[float] = []
    ids: list[int] = []
    stack_id: int | None = None
    previous_at: float | None = None
    for index, event in enumerate(events):
        position = f"{where}.events[{index}]"
        if not isinstance(event, dict):
            raise InputError(position, "an event object {type, frame, at}", event)
        kind, frame, at = event.get("type"), event.get("frame"), event.get("at")
        if not _is_number(at):
            raise InputError(f"{position}.at", "a finite number", at)
        if previous_at is not None:
            if at < previous_at:
                raise InputError(f"{position}.at", f"events in time order, at >= {previous_at}", at)
            if at > previous_at and open_frames:
                if stack_id is None:
                    stack_id = intern(tuple(open_frames), f"events[{index}]")
                starts.append(previous_at)
                durations.append(at - previous_at)
                ids.append(stack_id)
        if kind == "O":
            _check_frame_index(frame, len(frame_ids), f"{position}.frame")
            open_frames.append(frame)
            opened_by.append(index)
        elif kind == "C":
            if not open_frames:
                raise InputError(position, "a close ('C') of an open frame; none is open", frame)
            if frame != open_frames[-1]:
                raise InputError(
                    position,
                    f"a close of the innermost open frame {open_frames[-1]!r} "
                    f"(opened at events[{opened_by[-1]}])",
                    frame,
                )
            open_frames.pop()
            opened_by.pop()
        else:
            raise InputError(f"{position}.type", "'O' or 'C'", kind)
        stack_id = None
        previous_at = float(at)
    if open_frames:
        raise InputError(
            f"{where}.events[{opened_by[-1]}]",
            "every opened frame closed by the end of the profile",
            f"frame {open_frames[-1]} still open",
        )
    start_value = _start_value(profile, where, float(events[0]["at"]) if events else 0.0)
    begin = min(start_value, float(events[0]["at"])) if events else start_value
    return _Records(
        begin,
        np.array(starts, dtype=np.float64) - begin,
        np.array(ids, dtype=np.int64),
        np.array(durations, dtype=np.float64),
    )


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype)
