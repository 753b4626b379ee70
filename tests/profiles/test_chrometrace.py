"""Tests of the chrometrace reader: a real py-spy recording, hand-computed traces, broken files."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from regbot.errors import InputError
from regbot.profiles.chrometrace import parse_chrometrace
from regbot.profiles.model import ParseOptions, ProfileSamples, parse_frame
from regbot.profiles.speedscope import parse_speedscope
from regbot.profiles.stacks import StackTable

AT_S = 1_732_262_400.0
PYSPY = Path(__file__).parent.parent / "fixtures" / "pyspy"
RECORDING = PYSPY / "workload.chrometrace.json"


def parse(
    data: bytes | list | dict, table: StackTable, at_s: float | None = AT_S
) -> ProfileSamples:
    if not isinstance(data, bytes):
        data = json.dumps(data).encode()
    return parse_chrometrace(data, source="in.json", table=table, at_s=at_s, options=ParseOptions())


def stack_texts(samples: ProfileSamples, table: StackTable) -> list[list[str]]:
    return [[table.frames[f] for f in table.stacks[s]] for s in samples.stack_ids.tolist()]


def event(ph: str, name: str | None, ts: float, tid: int = 1, **extra: object) -> dict:
    fields: dict = {"ph": ph, "ts": ts, "pid": 7, "tid": tid, "cat": "py-spy", **extra}
    if name is not None:
        fields["name"] = name
        fields.setdefault("args", {"filename": f"/srv/{name}.py", "line": 1})
    return fields


def frame(name: str) -> str:
    return f"{name} (/srv/{name}.py:1)"


def assert_times(samples: ProfileSamples, offsets_us: list[float]) -> None:
    np.testing.assert_allclose(
        samples.times_s, AT_S + np.array(offsets_us) / 1e6, rtol=0, atol=1e-6
    )


# --- py-spy's own output -----------------------------------------------------------------------


def traced_time_us(events: list[dict]) -> float:
    """Slow reference: per thread, the time during which at least one frame is open."""
    by_thread: dict[tuple, list[dict]] = defaultdict(list)
    for e in events:
        if e["ph"] in "BE":
            by_thread[e["pid"], e["tid"]].append(e)
    total = 0.0
    for thread_events in by_thread.values():
        depth = 0
        for current, following in zip(thread_events, thread_events[1:] + [None]):
            depth += 1 if current["ph"] == "B" else -1
            if depth > 0 and following is not None:
                total += following["ts"] - current["ts"]
    return total


def test_pyspy_recording_frames_are_parsed_root_first(table: StackTable) -> None:
    samples = parse(RECORDING.read_bytes(), table)
    stacks = [[parse_frame(f) for f in stack] for stack in stack_texts(samples, table)]
    functions = {info.function for stack in stacks for info in stack}
    assert functions >= {"<module>", "main", "Svc.serve", "handle", "leaf"}
    for stack in stacks:
        assert stack[0].function == "<module>" and stack[0].file.endswith("/workload.py")
        assert all(info.line is not None for info in stack)
        if stack[-1].function == "leaf":
            assert [info.function for info in stack] == [
                "<module>",
                "main",
                "Svc.serve",
                "handle",
                "leaf",
            ]
    assert samples.sample_type == "microseconds"


def test_pyspy_recording_weights_are_the_traced_time(table: StackTable) -> None:
    events = json.loads(RECORDING.read_bytes())
    samples = parse(RECORDING.read_bytes(), table)
    assert samples.weights.sum() == traced_time_us(events)
    # py-spy always has a frame open between a thread's first and last event.
    first, last = events[0]["ts"], events[-1]["ts"]
    assert samples.weights.sum() == last - first
    assert np.all(np.diff(samples.times_s) > 0)
    assert samples.times_s[0] == pytest.approx(AT_S + first / 1e6, abs=1e-6)
    assert AT_S <= samples.times_s.min() and samples.times_s.max() < AT_S + last / 1e6
    # Each record runs until the next one starts (to float64's resolution at epoch seconds).
    np.testing.assert_allclose(np.diff(samples.times_s) * 1e6, samples.weights[:-1], atol=1.0)


def call_tree(texts: list[list[str]]) -> set[tuple[str, ...]]:
    """Subroutine paths of the workload's stacks and all their prefixes (the call tree's nodes)."""
    nodes = set()
    for stack in texts:
        path = tuple(parse_frame(f).subroutine for f in stack)
        if path and path[0].startswith("<module> (") and path[0].endswith("workload.py)"):
            nodes.update(path[:depth] for depth in range(1, len(path) + 1))
    return nodes


def test_pyspy_chrometrace_and_speedscope_show_the_same_call_tree() -> None:
    chrome_table, speedscope_table = StackTable(), StackTable()
    chrome = parse(RECORDING.read_bytes(), chrome_table)
    speedscope = parse_speedscope(
        (PYSPY / "workload.speedscope.json").read_bytes(),
        source="workload.speedscope.json",
        table=speedscope_table,
        at_s=AT_S,
        options=ParseOptions(),
    )
    chrome_tree = call_tree(stack_texts(chrome, chrome_table))
    assert chrome_tree == call_tree(stack_texts(speedscope, speedscope_table))
    deepest = max(chrome_tree, key=len)
    assert [parse_frame(sub).function for sub in deepest] == [
        "<module>",
        "main",
        "Svc.serve",
        "handle",
        "leaf",
    ]


def test_trace_without_closing_bracket_is_read(table: StackTable) -> None:
    data = RECORDING.read_bytes().rstrip()
    assert data.endswith(b"]")
    whole = parse(data, StackTable())
    cut = parse(data[:-1], table)
    assert cut.weights.tolist() == whole.weights.tolist()
    assert cut.times_s.tolist() == whole.times_s.tolist()


# --- hand-computed traces ----------------------------------------------------------------------


def test_nested_begin_end_on_two_threads(table: StackTable) -> None:
    events = [
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 1, "args": {"name": "MainThread"}},
        event("B", "main", 0),
        event("B", "serve", 100),
        event("B", "main", 50, tid=2),
        event("E", "serve", 300),
        event("E", "main", 350, tid=2),
        event("E", "main", 400),
    ]
    samples = parse(events, table)
    main, serve = frame("main"), frame("serve")
    assert stack_texts(samples, table) == [[main], [main, serve], [main], [main]]
    assert samples.weights.tolist() == [100, 200, 100, 300]
    assert_times(samples, [0, 100, 300, 50])
    assert len(set(samples.stack_ids.tolist())) == 2, "threads share frames and stacks"


def test_complete_events_nest_whatever_their_order_in_the_file(table: StackTable) -> None:
    trace = {
        "displayTimeUnit": "ms",
        "traceEvents": [
            event("X", "inner", 0, dur=4),
            event("X", "sibling", 4, dur=6),
            event("X", "outer", 0, dur=10),
            event("X", "empty", 5, dur=0),
            {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "app"}},
        ],
    }
    samples = parse(trace, table)
    assert stack_texts(samples, table) == [
        [frame("outer"), frame("inner")],
        [frame("outer"), frame("sibling")],
    ]
    assert samples.weights.tolist() == [4, 6]
    assert_times(samples, [0, 4])


def test_complete_events_with_the_same_span_nest_in_file_order(table: StackTable) -> None:
    samples = parse([event("X", "a", 0, dur=10), event("X", "b", 0, dur=10)], table)
    assert stack_texts(samples, table) == [[frame("a"), frame("b")]]
    assert samples.weights.tolist() == [10]


def test_complete_events_inside_begin_end(table: StackTable) -> None:
    events = [event("B", "main", 0), event("X", "child", 10, dur=5), event("E", "main", 20)]
    samples = parse(events, table)
    main = frame("main")
    assert stack_texts(samples, table) == [[main], [main, frame("child")], [main]]
    assert samples.weights.tolist() == [10, 5, 5]
    assert_times(samples, [0, 10, 15])


def test_trailing_open_frames_close_at_the_threads_last_timestamp(table: StackTable) -> None:
    events = [
        event("B", "a", 0),
        event("B", "b", 5),
        event("B", "c", 0, tid=2),
        event("E", None, 8, tid=2),  # an E without a name closes the innermost frame
        event("B", "c", 9, tid=2),
    ]
    samples = parse(events, table)
    assert stack_texts(samples, table) == [[frame("a")], [frame("c")]]
    assert samples.weights.tolist() == [5, 8]


def test_frame_text_without_line_or_file(table: StackTable) -> None:
    events = [
        event("B", "f", 0, args={"filename": "/srv/m.py", "line": None}),
        event("B", "g", 1, args={}),
        event("E", "g", 2),
        event("E", "f", 3),
    ]
    samples = parse(events, table)
    assert stack_texts(samples, table) == [
        ["f (/srv/m.py)"],
        ["f (/srv/m.py)", "g"],
        ["f (/srv/m.py)"],
    ]


@pytest.mark.parametrize("data", [b"[]", b'{"traceEvents": []}', b"[\n", b'[{"ph": "M"}]'])
def test_empty_traces_have_no_records(table: StackTable, data: bytes) -> None:
    samples = parse(data, table)
    assert len(samples.times_s) == len(samples.weights) == len(samples.stack_ids) == 0
    assert samples.stack_ids.dtype == np.int64


# --- broken input ------------------------------------------------------------------------------


def _error(data: bytes | list | dict, table: StackTable, at_s: float | None = AT_S) -> str:
    with pytest.raises(InputError) as caught:
        parse(data, table, at_s)
    message = str(caught.value)
    assert message.startswith("in.json"), message
    return message


def test_missing_at_s_asks_for_at(table: StackTable) -> None:
    assert "--at" in _error(RECORDING.read_bytes(), table, at_s=None)


def test_not_json(table: StackTable) -> None:
    assert _error(b"main;serve 3\n", table).startswith("in.json:1:1:")


def test_truncated_inside_an_event_names_line_and_column(table: StackTable) -> None:
    assert _error(RECORDING.read_bytes()[:300], table).startswith("in.json:1:301:")
    assert _error(b'[\n{"ph": "B",\n "ts"', table).startswith("in.json:3:")


@pytest.mark.parametrize("data", [b'{"events": []}', b"3", b'"x"'])
def test_not_a_trace(table: StackTable, data: bytes) -> None:
    assert "traceEvents" in _error(data, table)


def test_event_not_an_object(table: StackTable) -> None:
    assert "in.json: event 1:" in _error([event("B", "a", 0), 5], table)


def test_end_without_open_frame(table: StackTable) -> None:
    message = _error([event("B", "a", 0), event("E", "a", 1), event("E", "a", 2)], table)
    assert "in.json: event 2:" in message and "pid 7 tid 1" in message


def test_end_of_another_frame(table: StackTable) -> None:
    message = _error([event("B", "a", 0), event("B", "b", 1), event("E", "a", 2)], table)
    assert "in.json: event 2:" in message and "'b'" in message


def test_overlapping_complete_events(table: StackTable) -> None:
    message = _error([event("X", "a", 0, dur=10), event("X", "b", 5, dur=10)], table)
    assert "in.json: event 0:" in message


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"ph": "B", "name": "a", "pid": 1, "tid": 1}, "'ts'"),
        ({"ph": "B", "name": "a", "ts": "5"}, "'ts'"),
        ({"ph": "B", "ts": 5}, "'name'"),
        ({"ph": "X", "name": "a", "ts": 5}, "'dur'"),
        ({"ph": "X", "name": "a", "ts": 5, "dur": -1}, "'dur'"),
    ],
)
def test_malformed_events(table: StackTable, bad: dict, words: str) -> None:
    message = _error([event("B", "a", 0), bad], table)
    assert "in.json: event 1:" in message and words in message
