"""Reader of Chrome trace event files (JSON), as ``py-spy record -f chrometrace`` writes them.

py-spy writes a JSON array of duration events, one ``B`` (begin) when a frame appears in a
thread's sampled stack and one ``E`` (end) when it goes, with ``ts`` in microseconds since the
recording started and the frame's file and line in ``args``. The object form
``{"traceEvents": [...]}`` of the Chrome trace format is read too, as are complete events
(``X``, with ``dur``). Format: "Trace Event Format", Google, 2016 (the catapult document).
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeGuard

import numpy as np

from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples, render_frame
from regbot.profiles.stacks import StackTable

# Order of a thread's edges at one timestamp: ends of complete events, then B/E events in file
# order, then begins of complete events (see parse_chrometrace).
_X_END, _BEGIN_END, _X_BEGIN = 0, 1, 2


def parse_chrometrace(
    data: bytes, *, source: str, table: StackTable, at_s: float | None, options: ParseOptions
) -> ProfileSamples:
    """Parse one trace: each thread's time with open frames, as records on a timeline.

    ``at_s`` (``--at``) is the recording's absolute start and is required: ``ts`` are offsets
    from it in microseconds. Stacks are per thread, keyed by (``pid``, ``tid``). Each thread's
    events are replayed on a stack of open frames (``B`` pushes, ``E`` pops, ``X`` is a ``B`` at
    ``ts`` and an ``E`` at ``ts + dur``); every interval between consecutive timestamps of the
    thread during which a frame is open becomes one record at ``at_s + start / 1e6`` whose weight
    is the interval's length in microseconds (``sample_type`` ``microseconds``). Zero-length
    intervals produce no record. Frames render as ``name (args.filename:args.line)``.

    Rules:

    - Bucketing: a record is not split where it crosses a time-bucket boundary; the store puts it
      in the bucket of its start. py-spy's intervals are one sampling period (10 ms at 100 Hz)
      while the stack changes, but a stack that stays the same spans many periods, and without
      ``--idle`` py-spy leaves idle samples out, so a frame stays open across the idle time after
      it. Both make the weights wall time as py-spy saw it, not CPU time.
    - Order: a thread's edges are sorted by time. At one timestamp, ends of ``X`` events
      come first (later begin first, then later in the file first), then ``B``/``E`` events in
      file order, then begins of ``X`` events (later end first, then file order), so that
      complete events nest. ``X`` events with ``dur`` 0 are skipped (they cover no time).
    - ``E`` closes the innermost open frame of its thread; an ``E`` with a ``name`` must name
      that frame. Frames still open at the end of the trace are closed at the thread's last
      timestamp (py-spy writes the closing events itself; other writers may not), so they add
      nothing after it.
    - Other phases (``M`` metadata such as thread names, instant, counter, async, flow events)
      are ignored. The array form may lack its closing ``]``, as the format allows for traces cut
      short; a trace cut inside an event is an error.

    Errors (``InputError`` naming the source and the event's index in the array): not JSON or
    truncated (line and column), not an array of objects, a ``B``/``E``/``X`` without a finite
    ``ts``, a ``B``/``X`` without a ``name``, an ``X`` without ``dur`` >= 0, an ``E`` with no open
    frame, or naming another frame than the innermost open one. An empty trace has no records.
    O(events log events) for the sort; a stack seen before costs one dictionary lookup.
    """
    if at_s is None:
        raise InputError(
            source,
            "the recording's start time: pass --at (chrometrace timestamps are microseconds "
            "from the start of the recording)",
        )
    events = _load_events(data, source)
    threads = _edges_by_thread(events, source, table)
    starts: list[float] = []
    durations: list[float] = []
    ids: list[int] = []
    for (pid, tid), edges in threads.items():
        edges.sort()  # by (ts, order, tie-break, sequence), unique within a thread
        _replay(edges, table, (source, f"pid {pid} tid {tid}"), starts, durations, ids)
    times = float(at_s) + np.array(starts, dtype=np.float64) / 1e6
    return ProfileSamples(
        source,
        times,
        np.array(ids, dtype=np.int64),
        np.array(durations, dtype=np.float64),
        "microseconds",
    )


def _load_events(data: bytes, source: str) -> list[Any]:
    expected = 'Chrome trace JSON: an array of events, or {"traceEvents": [...]}'
    try:
        document = json.loads(data)
    except json.JSONDecodeError as error:
        document = _without_closing_bracket(data)
        if document is None:
            raise InputError(
                f"{source}:{error.lineno}:{error.colno}", expected, error.msg
            ) from None
    except UnicodeDecodeError as error:
        raise InputError(source, f"UTF-8 encoded {expected}", str(error)) from None
    if isinstance(document, dict):
        document = document.get("traceEvents")
    if not isinstance(document, list):
        raise InputError(source, expected, type(document).__name__)
    return document


def _without_closing_bracket(data: bytes) -> list[Any] | None:
    """The events of an array that lacks only its closing ``]`` (allowed by the format)."""
    text = data.decode("utf-8", errors="replace").strip()
    if text == "[":
        return []
    if not text.startswith("[") or not text.endswith(("}", "},")):
        return None
    try:
        events = json.loads(text.rstrip(",") + "]")
    except json.JSONDecodeError:
        return None
    return events if isinstance(events, list) else None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# An edge: (ts, order, tie-break, sequence, event index, is_begin, frame id, name); the first four
# are its sort key. The sequence is the event index, negated for ends of complete events so that
# of two complete events with the same span, the one opened last closes first.
Edge = tuple[float, int, float, int, int, bool, int, str | None]


def _edges_by_thread(
    events: list[Any], source: str, table: StackTable
) -> dict[tuple[Any, Any], list[Edge]]:
    """Each thread's begin and end edges, in file order, with their sort keys."""
    threads: dict[tuple[Any, Any], list[Edge]] = {}
    frame_ids: dict[tuple[Any, Any, Any], int] = {}
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise InputError(f"{source}: event {index}", "an event object", event)
        phase = event.get("ph")
        if phase not in ("B", "E", "X"):
            continue
        ts = event.get("ts")
        if type(ts) is not int and not (type(ts) is float and math.isfinite(ts)):
            raise InputError(f"{source}: event {index}", "a finite 'ts' in microseconds", ts)
        name = event.get("name")
        edges = threads.setdefault((event.get("pid"), event.get("tid")), [])
        if phase == "E":
            edges.append(
                (
                    ts,
                    _BEGIN_END,
                    0.0,
                    index,
                    index,
                    False,
                    -1,
                    name if isinstance(name, str) else None,
                )
            )
            continue
        if not isinstance(name, str):
            raise InputError(
                f"{source}: event {index}", f"a string 'name' on a {phase!r} event", name
            )
        args = event.get("args")
        file = args.get("filename") if isinstance(args, dict) else None
        line = args.get("line") if isinstance(args, dict) else None
        key = (name, file if isinstance(file, str) else None, line if type(line) is int else None)
        frame_id = frame_ids.get(key)
        if frame_id is None:
            frame_id = frame_ids[key] = table.intern_frame(render_frame(*key))
        if phase == "B":
            edges.append((ts, _BEGIN_END, 0.0, index, index, True, frame_id, name))
            continue
        duration = event.get("dur")
        if not _is_number(duration) or duration < 0:
            raise InputError(f"{source}: event {index}", "an 'X' event with 'dur' >= 0", duration)
        if duration > 0:
            end = ts + duration
            edges.append((ts, _X_BEGIN, -end, index, index, True, frame_id, name))
            edges.append((end, _X_END, -ts, -index, index, False, frame_id, name))
    return threads


def _replay(
    edges: list[Edge],
    table: StackTable,
    where: tuple[str, str],
    starts: list[float],
    durations: list[float],
    ids: list[int],
) -> None:
    """Append one record per interval of the thread with open frames (see parse_chrometrace).

    ``where`` is (source, thread) for error messages; ``edges`` are sorted.
    """
    source, thread = where
    open_ids: list[int] = []
    open_names: list[str | None] = []
    stack_id = -1
    previous_ts = edges[0][0] if edges else 0.0
    for ts, _, _, _, index, is_begin, frame_id, name in edges:
        if open_ids and ts > previous_ts:
            if stack_id < 0:
                stack_id = table.intern_stack_ids(tuple(open_ids))
            starts.append(previous_ts)
            durations.append(ts - previous_ts)
            ids.append(stack_id)
        if is_begin:
            open_ids.append(frame_id)
            open_names.append(name)
        elif not open_ids:
            raise InputError(f"{source}: event {index}", f"an open frame for 'E' in {thread}", name)
        elif name is not None and name != open_names[-1]:
            raise InputError(
                f"{source}: event {index}",
                f"an 'E' closing the innermost open frame {open_names[-1]!r} of {thread}",
                name,
            )
        else:
            open_ids.pop()
            open_names.pop()
        stack_id = -1
        previous_ts = ts
