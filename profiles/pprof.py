"""Reader of Google's pprof profile protobuf (``profile.proto``), gzip-compressed or not.

The message types come from ``profile_pb2``, generated from the vendored ``profile.proto``
(google/pprof, Apache-2.0); see the header of ``profile_pb2.py`` for how and for the protobuf
runtime it needs. Reference semantics: the comments of ``profile.proto`` and pprof's own Go
decoder (``github.com/google/pprof/profile``), whose checks this reader follows where it checks.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain

import numpy as np
from google.protobuf.message import DecodeError

from regbot.errors import InputError
from regbot.profiles import profile_pb2
from regbot.profiles.model import ParseOptions, ProfileSamples, render_frame
from regbot.profiles.stacks import StackTable

_GZIP_MAGIC = b"\x1f\x8b"
UNKNOWN_FRAME = "[unknown]"


def parse_pprof(
    data: bytes, *, source: str, table: StackTable, at_s: float | None, options: ParseOptions
) -> ProfileSamples:
    """Parse one pprof profile into one row per distinct stack with a nonzero value.

    Input: the serialized ``Profile`` message, gzip-compressed (``.pb.gz``, what Go's
    runtime/pprof and ``pprof -proto`` write) or not (``.pb``). Compression is told from the gzip
    magic bytes, never from the file name.

    Value. ``options.sample_type`` picks one of ``Profile.sample_type`` by its type (``cpu``,
    ``samples``, ``inuse_space``) or ``type/unit`` (``cpu/nanoseconds``); the first match wins.
    None picks the FIRST sample type (SPEC: "sample value = first sample type unless
    configured"); the profile's ``default_sample_type`` hint, which pprof uses for display, is
    ignored so that the default does not depend on the writer. ``sample_type`` of the result is
    ``type/unit`` (``samples/count``). Samples whose chosen value is 0 are dropped: they weigh
    nothing (a heap profile's ``inuse_space`` is 0 for memory already freed). Negative values
    (pprof's ``-diff_base`` output) are an error. Rows with the same stack are summed, so
    ``stack_ids`` are distinct, in ascending order.

    Stacks. ``Sample.location_id`` lists the leaf first; the stack is reversed to root first.
    A Location with several Lines is inlined code: ``line[0]`` is the innermost callee and the
    last line the function it was inlined into, so the Location expands, root first, to
    ``line[-1] ... line[0]``; a Location without Lines (unsymbolized) is one frame,
    ``[<mapping file's basename>]`` or ``[unknown]`` (see ``_StackBuilder._frames_of_location``).
    Frames render as ``render_frame``'s ``name (file:line)``.

    Time. Every sample is at the profile's ``time_nanos`` (when collection started), in epoch
    seconds; ``duration_nanos`` is not used to spread samples. ``time_nanos`` wins over ``at_s``
    when both are given (the profiler's own clock is the better record); ``at_s`` (``--at`` or the
    file name) is used only when ``time_nanos`` is 0 or absent, and with neither the profile is
    refused.

    Errors: truncated or corrupt gzip, a message protobuf cannot decode (including strings that
    are not UTF-8), ``string_table[0]`` not empty, string/location/function/mapping ids that
    name nothing, a sample whose value count differs from ``sample_type``, an unknown sample
    type (the message lists the available ones) and negative values raise ``InputError`` naming
    ``source``. Ids are checked lazily: a location or function no kept sample reaches is not.

    Cost: one pass over the samples doing a dictionary lookup each; frames are rendered once per
    (function, line) and frame-id tuples cached once per location and per distinct location
    list. The table only gains frames and stacks that a kept sample uses.
    """
    profile = _decode(data, source)
    strings = list(profile.string_table)
    if not strings or strings[0] != "":
        found = repr(strings[0]) if strings else "an empty string table"
        raise InputError(source, "a pprof profile whose string_table[0] is ''", found)
    value_index, sample_type = _choose_sample_type(profile, strings, source, options.sample_type)
    time_s = _profile_time_s(profile, at_s, source)
    stacks = _StackBuilder(profile, strings, table, source)

    value_count = len(profile.sample_type)
    stack_ids: list[int] = []
    weights: list[int] = []
    stack_of = stacks.stack_id
    for number, sample in enumerate(profile.sample):
        values = sample.value
        if len(values) != value_count:
            raise InputError(
                f"{source}: sample {number}",
                f"{value_count} values, one per sample type",
                f"{len(values)} values",
            )
        value = values[value_index]
        if value <= 0:
            if value < 0:
                raise InputError(f"{source}: sample {number}", f"a {sample_type} value >= 0", value)
            continue
        stack_ids.append(stack_of(tuple(sample.location_id)))
        weights.append(value)

    unique_ids, inverse = np.unique(np.array(stack_ids, dtype=np.int64), return_inverse=True)
    summed = np.bincount(
        inverse, weights=np.array(weights, dtype=np.float64), minlength=len(unique_ids)
    )
    times = np.full(len(unique_ids), time_s, dtype=np.float64)
    return ProfileSamples(source, times, unique_ids.astype(np.int64), summed, sample_type)


def _decode(data: bytes, source: str) -> profile_pb2.Profile:
    raw = data
    if data[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise InputError(
                source, "a complete gzip-compressed pprof profile", str(error)
            ) from None
    try:
        return profile_pb2.Profile.FromString(raw)
    except (DecodeError, ValueError) as error:  # pure-Python protobuf: UnicodeDecodeError
        raise InputError(
            source, "a pprof profile (perftools.profiles.Profile)", str(error)
        ) from None


def _string(strings: list[str], index: int, source: str, field: str) -> str:
    if 0 <= index < len(strings):
        return strings[index]
    raise InputError(
        f"{source}: {field}", f"an index into the string table (0..{len(strings) - 1})", index
    )


def _choose_sample_type(
    profile: profile_pb2.Profile, strings: list[str], source: str, wanted: str | None
) -> tuple[int, str]:
    """Index of the chosen sample type and its ``type/unit`` name."""
    names = [
        (
            _string(strings, value_type.type, source, f"sample_type[{i}].type"),
            _string(strings, value_type.unit, source, f"sample_type[{i}].unit"),
        )
        for i, value_type in enumerate(profile.sample_type)
    ]
    if not names:
        raise InputError(source, "a pprof profile with at least one sample_type", "none")
    if wanted is None:
        return 0, "/".join(names[0])
    for index, (type_name, unit) in enumerate(names):
        if wanted in (type_name, f"{type_name}/{unit}"):
            return index, f"{type_name}/{unit}"
    available = ", ".join(f"{type_name}/{unit}" for type_name, unit in names)
    raise InputError(f"{source}: sample type", f"one of {available}", wanted)


def _profile_time_s(profile: profile_pb2.Profile, at_s: float | None, source: str) -> float:
    if profile.time_nanos < 0:
        raise InputError(f"{source}: time_nanos", "epoch nanoseconds >= 0", profile.time_nanos)
    if profile.time_nanos:
        return profile.time_nanos / 1e9
    if at_s is None:
        raise InputError(
            source,
            "a time for this profile: it has no time_nanos, so pass --at (epoch seconds or an "
            "ISO 8601 time) or start the file name with one",
        )
    return float(at_s)


class _FramesByLocation(dict[int, tuple[int, ...]]):
    """Location id -> its frame ids, computed on the first lookup of an id and kept, so that
    ``map(frames.__getitem__, ids)`` stays in C for every location seen before."""

    __slots__ = ("_compute",)

    def __init__(self, compute: Callable[[int], tuple[int, ...]]) -> None:
        super().__init__()
        self._compute = compute

    def __missing__(self, location_id: int) -> tuple[int, ...]:
        frames = self[location_id] = self._compute(location_id)
        return frames


@dataclass(frozen=True, slots=True)
class _FunctionInfo:
    name: str
    file: str | None


class _StackBuilder:
    """Turns leaf-first location id lists into stack ids, caching at every level."""

    __slots__ = (
        "_frame_ids",
        "_function_info",
        "_functions",
        "_location_frames",
        "_locations",
        "_mappings",
        "_source",
        "_stack_ids",
        "_strings",
        "_table",
    )

    def __init__(
        self, profile: profile_pb2.Profile, strings: list[str], table: StackTable, source: str
    ) -> None:
        self._strings = strings
        self._table = table
        self._source = source
        self._locations = {location.id: location for location in profile.location}
        self._functions = {function.id: function for function in profile.function}
        self._mappings = {mapping.id: mapping for mapping in profile.mapping}
        self._function_info: dict[int, _FunctionInfo] = {}
        self._frame_ids: dict[tuple[int, int], int] = {}
        self._location_frames = _FramesByLocation(self._frames_of_location)
        self._stack_ids: dict[tuple[int, ...], int] = {}

    def stack_id(self, location_ids: tuple[int, ...]) -> int:
        """Stack id of a sample's ``location_id`` list (leaf first, as pprof stores it)."""
        stack_id = self._stack_ids.get(location_ids)
        if stack_id is None:
            frames = chain.from_iterable(
                map(self._location_frames.__getitem__, reversed(location_ids))
            )
            stack_id = self._stack_ids[location_ids] = self._table.intern_stack_ids(tuple(frames))
        return stack_id

    def _frames_of_location(self, location_id: int) -> tuple[int, ...]:
        """Frame ids of one Location, root first (caller before the code inlined into it).

        A Location with Lines gives one frame per Line, from the last (the real, outer
        function) to ``line[0]`` (the innermost inlined callee). A Location without Lines is
        unsymbolized: like stackcollapse-perf it becomes ``[<basename of the mapping's file>]``
        (``[libc.so.6]``; a pseudo-file already in brackets such as ``[vdso]`` is kept as is),
        or ``[unknown]`` when it has no mapping or the mapping has no file name. The address is
        not shown, so all unsymbolized code of one binary is one frame.
        """
        location = self._locations.get(location_id)
        if location is None:
            raise InputError(
                f"{self._source}: sample location_id", "the id of a Location", location_id
            )
        if not location.line:
            return (self._table.intern_frame(self._unsymbolized(location)),)
        return tuple(
            self._line_frame(line.function_id, line.line, location_id)
            for line in reversed(location.line)
        )

    def _line_frame(self, function_id: int, line: int, location_id: int) -> int:
        key = (function_id, line)
        frame_id = self._frame_ids.get(key)
        if frame_id is None:
            info = self._function(function_id, location_id)
            text = render_frame(info.name, info.file, line if line > 0 else None)
            frame_id = self._frame_ids[key] = self._table.intern_frame(text)
        return frame_id

    def _function(self, function_id: int, location_id: int) -> _FunctionInfo:
        """Name (``name``, else ``system_name``, else ``[unknown]``) and file of a function.

        ``function_id`` 0 means the Line names no function (pprof's decoder allows it): the
        frame is ``[unknown]``.
        """
        info = self._function_info.get(function_id)
        if info is None:
            if function_id == 0:
                info = _FunctionInfo(UNKNOWN_FRAME, None)
            else:
                function = self._functions.get(function_id)
                if function is None:
                    raise InputError(
                        f"{self._source}: location {location_id} line function_id",
                        "the id of a Function",
                        function_id,
                    )
                where = f"{self._source}: function {function_id}"
                name = _string(self._strings, function.name, where, "name")
                if not name:
                    name = _string(self._strings, function.system_name, where, "system_name")
                file = _string(self._strings, function.filename, where, "filename")
                info = _FunctionInfo(name or UNKNOWN_FRAME, file or None)
            self._function_info[function_id] = info
        return info

    def _unsymbolized(self, location: profile_pb2.Location) -> str:
        if not location.mapping_id:
            return UNKNOWN_FRAME
        mapping = self._mappings.get(location.mapping_id)
        if mapping is None:
            raise InputError(
                f"{self._source}: location {location.id} mapping_id",
                "the id of a Mapping",
                location.mapping_id,
            )
        where = f"{self._source}: mapping {mapping.id}"
        path = _string(self._strings, mapping.filename, where, "filename")
        base = path.replace("\\", "/").rsplit("/", 1)[-1]
        if not base:
            return UNKNOWN_FRAME
        return base if base.startswith("[") and base.endswith("]") else f"[{base}]"
