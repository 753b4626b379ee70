"""Tests of the speedscope reader: real py-spy recordings, hand-computed profiles, broken files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples, parse_frame
from regbot.profiles.speedscope import parse_speedscope
from regbot.profiles.stacks import StackTable

AT_S = 1_732_262_400.0
FIXTURES = Path(__file__).parent.parent / "fixtures"
PYSPY_RECORDING = FIXTURES / "pyspy" / "workload.speedscope.json"
WORKLOAD_SOURCE = FIXTURES / "pyspy" / "workload.py"


def parse(data: bytes, table: StackTable, at_s: float | None = AT_S) -> ProfileSamples:
    return parse_speedscope(
        data, source="in.speedscope.json", table=table, at_s=at_s, options=ParseOptions()
    )


def stack_texts(samples: ProfileSamples, table: StackTable) -> list[list[str]]:
    return [[table.frames[f] for f in table.stacks[s]] for s in samples.stack_ids.tolist()]


def document(profiles: list[dict], frames: list[dict] | None = None) -> bytes:
    frames = frames if frames is not None else [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    return json.dumps({"shared": {"frames": frames}, "profiles": profiles}).encode()


# --- py-spy's own output -----------------------------------------------------------------------


def test_pyspy_recording_frames_carry_function_file_and_line(table: StackTable) -> None:
    samples = parse(PYSPY_RECORDING.read_bytes(), table)
    source_lines = WORKLOAD_SOURCE.read_text().splitlines()
    workload = {}
    for text in {frame for stack in stack_texts(samples, table) for frame in stack}:
        info = parse_frame(text)
        assert info.file is not None and info.line is not None, text
        if info.file.endswith("/workload.py"):
            assert info.file.startswith("/"), "py-spy writes absolute paths; they are kept"
            workload.setdefault(info.function, set()).add(source_lines[info.line - 1].strip())
    assert set(workload) >= {"<module>", "main", "Svc.serve", "handle", "leaf"}
    # Each frame's line is the line of the workload that was running in that function.
    assert workload["handle"] == {"return leaf(n)"}
    assert "result = handle(n)" in workload["Svc.serve"]
    assert workload["main"] == {"svc.serve(300_000)"}
    assert workload["<module>"] == {"main()"}


def test_pyspy_recording_stacks_are_root_first(table: StackTable) -> None:
    samples = parse(PYSPY_RECORDING.read_bytes(), table)
    functions = [[parse_frame(f).function for f in stack] for stack in stack_texts(samples, table)]
    with_leaf = [stack for stack in functions if "leaf" in stack]
    assert with_leaf, "the CPU-bound leaf is in the recording"
    for stack in with_leaf:
        assert stack == ["<module>", "main", "Svc.serve", "handle", "leaf"]
    assert all(stack[0] == "<module>" for stack in functions)


def test_pyspy_recording_weights_and_times(table: StackTable) -> None:
    raw = json.loads(PYSPY_RECORDING.read_bytes())
    samples = parse(PYSPY_RECORDING.read_bytes(), table)
    (profile,) = raw["profiles"]
    assert samples.sample_type == "seconds"
    assert len(samples.weights) == len(profile["samples"])
    assert samples.weights.sum() == pytest.approx(sum(profile["weights"]))
    duration_s = profile["endValue"] - profile["startValue"]
    assert np.all(np.diff(samples.times_s) > 0)
    assert samples.times_s[0] == AT_S
    assert samples.times_s[-1] < AT_S + duration_s
    # Sample i sits at the sum of the weights before it (py-spy: 0.01 s each at 100 Hz).
    expected = AT_S + np.concatenate([[0.0], np.cumsum(profile["weights"])[:-1]])
    np.testing.assert_allclose(samples.times_s, expected, rtol=0, atol=1e-6)


def test_pyspy_live_recording_of_two_threads(tmp_path: Path, table: StackTable) -> None:
    pyspy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if pyspy is None:
        pytest.skip("py-spy is not installed")
    script = tmp_path / "spin.py"
    script.write_text(
        "import threading, time\n"
        "def spin_worker():\n"
        "    end = time.monotonic() + 1.5\n"
        "    while time.monotonic() < end:\n"
        "        sum(i * i for i in range(1000))\n"
        "def spin_main():\n"
        "    end = time.monotonic() + 1.5\n"
        "    while time.monotonic() < end:\n"
        "        sum(i * i for i in range(1000))\n"
        "t = threading.Thread(target=spin_worker)\n"
        "t.start()\n"
        "spin_main()\n"
        "t.join()\n"
    )
    out = tmp_path / "spin.speedscope.json"
    command = [pyspy, "record", "-r", "100", "-d", "1", "-f", "speedscope", "-o", str(out)]
    result = subprocess.run(
        [*command, "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0 or not out.exists():
        pytest.skip(f"py-spy could not record here (exit {result.returncode}): {result.stderr}")

    data = out.read_bytes()
    samples = parse(data, table)
    raw = json.loads(data)
    assert len(raw["profiles"]) >= 2, "py-spy writes one profile per thread"
    assert len(samples.weights) == sum(len(p["samples"]) for p in raw["profiles"])
    assert samples.weights.sum() == pytest.approx(sum(sum(p["weights"]) for p in raw["profiles"]))
    leaves = {parse_frame(stack[-1]).function for stack in stack_texts(samples, table) if stack}
    assert {"spin_main", "spin_worker"} <= {
        parse_frame(frame).function for stack in stack_texts(samples, table) for frame in stack
    }
    assert any(leaf.endswith("<genexpr>") for leaf in leaves)
    assert np.all((samples.times_s >= AT_S) & (samples.times_s <= AT_S + 2.0))


# --- hand-computed profiles --------------------------------------------------------------------


def test_evented_profile_with_nested_frames(table: StackTable) -> None:
    data = (FIXTURES / "speedscope" / "evented.speedscope.json").read_bytes()
    samples = parse(data, table)
    main = "main (/srv/app/main.py:1)"
    serve = "Svc.serve (/srv/app/svc.py:10)"
    handle = "handle (/srv/app/views.py:42)"
    leaf = "leaf (/srv/app/views.py:50)"
    assert stack_texts(samples, table) == [
        [main, serve],
        [main, serve, handle],
        [main, serve, handle, leaf],
        [main, serve, handle],
        [main, serve],
        [main],
        [main, serve],
        [main],
    ]
    assert samples.weights.tolist() == [2, 1, 4, 1, 2, 2, 3, 1]
    starts_ms = np.array([0, 2, 3, 7, 8, 10, 12, 15])
    np.testing.assert_allclose(samples.times_s, AT_S + starts_ms / 1e3, rtol=0, atol=1e-6)
    assert samples.sample_type == "milliseconds"
    # The same stack opened twice is one stack id.
    assert samples.stack_ids[0] == samples.stack_ids[6]


def test_sampled_profiles_of_two_threads_in_milliseconds(table: StackTable) -> None:
    data = (FIXTURES / "speedscope" / "multi_sampled.speedscope.json").read_bytes()
    samples = parse(data, table)
    module, serve, handle = (
        "<module> (/srv/app/main.py:3)",
        "Svc.serve (/srv/app/svc.py:12)",
        "handle (/srv/app/views.py:42)",
    )
    worker, compute = "worker (/srv/app/main.py:20)", "compute (/srv/app/calc.py:7)"
    assert stack_texts(samples, table) == [
        [module, serve, handle],
        [module, serve],
        [module, serve, handle],
        [worker, compute],
        [worker, compute, "[native]"],
        [worker],
    ]
    assert samples.weights.tolist() == [10, 5, 5, 2, 3, 2]
    # Thread 2 starts 5 ms after thread 1 (its startValue) and keeps that offset.
    starts_ms = np.array([0, 10, 15, 5, 7, 10])
    np.testing.assert_allclose(samples.times_s, AT_S + starts_ms / 1e3, rtol=0, atol=1e-6)


def test_unit_none_puts_every_sample_at_the_start(table: StackTable) -> None:
    data = document(
        [
            {"type": "sampled", "unit": "none", "samples": [[0], [0, 1], []], "weights": [1, 2, 3]},
            {
                "type": "evented",
                "unit": "none",
                "startValue": 0,
                "events": [
                    {"type": "O", "frame": 2, "at": 0},
                    {"type": "C", "frame": 2, "at": 4},
                ],
            },
        ]
    )
    samples = parse(data, table)
    assert samples.times_s.tolist() == [AT_S] * 4
    assert samples.weights.tolist() == [1, 2, 3, 4]
    assert stack_texts(samples, table) == [["a"], ["a", "b"], [], ["c"]]
    assert samples.sample_type == "samples"


def test_evented_seconds_zero_length_intervals_and_startvalue(table: StackTable) -> None:
    data = document(
        [
            {
                "type": "evented",
                "unit": "microseconds",
                "startValue": 100,
                "events": [
                    {"type": "O", "frame": 0, "at": 100},
                    {"type": "O", "frame": 1, "at": 100},
                    {"type": "C", "frame": 1, "at": 100},
                    {"type": "C", "frame": 0, "at": 250},
                    {"type": "O", "frame": 2, "at": 300},
                    {"type": "C", "frame": 2, "at": 301},
                ],
            }
        ]
    )
    samples = parse(data, table)
    assert stack_texts(samples, table) == [["a"], ["c"]]
    assert samples.weights.tolist() == [150, 1]
    np.testing.assert_allclose(samples.times_s, [AT_S, AT_S + 200e-6], rtol=0, atol=1e-6)


def test_empty_profiles_give_no_records(table: StackTable) -> None:
    samples = parse(document([]), table)
    assert len(samples.times_s) == len(samples.stack_ids) == len(samples.weights) == 0
    assert samples.stack_ids.dtype == np.int64 and samples.times_s.dtype == np.float64


# --- broken input ------------------------------------------------------------------------------


def _error(data: bytes, table: StackTable, at_s: float | None = AT_S) -> str:
    with pytest.raises(InputError) as caught:
        parse(data, table, at_s)
    message = str(caught.value)
    assert message.startswith("in.speedscope.json"), message
    return message


def test_missing_at_s_asks_for_at(table: StackTable) -> None:
    assert "--at" in _error(PYSPY_RECORDING.read_bytes(), table, at_s=None)


def test_not_json(table: StackTable) -> None:
    assert _error(b"<module> (a.py:1);f (a.py:2) 3\n", table).startswith("in.speedscope.json:1:1:")


def test_truncated_json_names_line_and_column(table: StackTable) -> None:
    data = PYSPY_RECORDING.read_bytes()[:200]
    assert _error(data, table).startswith("in.speedscope.json:1:201:")


def test_not_utf8(table: StackTable) -> None:
    assert "UTF-8" in _error(b'{"shared": "\xff\xfe"}', table)


def test_missing_shared(table: StackTable) -> None:
    message = _error(json.dumps({"profiles": []}).encode(), table)
    assert "shared.frames" in message and "no 'shared'" in message


def test_missing_profiles(table: StackTable) -> None:
    assert "profiles" in _error(json.dumps({"shared": {"frames": []}}).encode(), table)


def test_frame_without_name(table: StackTable) -> None:
    assert "shared.frames[1]" in _error(document([], [{"name": "a"}, {"file": "x.py"}]), table)


@pytest.mark.parametrize("index", [3, -1, 1.5, "0", None, [0], True])
def test_bad_frame_index_in_sample(table: StackTable, index: object) -> None:
    data = document(
        [{"type": "sampled", "unit": "none", "samples": [[0], [0, index]], "weights": [1, 1]}]
    )
    message = _error(data, table)
    assert "profiles[0].samples[1]" in message and "0..2" in message


def test_bad_frame_index_in_event(table: StackTable) -> None:
    data = document(
        [{"type": "evented", "unit": "none", "events": [{"type": "O", "frame": 7, "at": 0}]}]
    )
    assert "profiles[0].events[0].frame" in _error(data, table)


def test_only_stacks_of_records_are_interned(table: StackTable) -> None:
    data = _evented(("O", 0, 0), ("O", 1, 0), ("C", 1, 1), ("C", 0, 1))
    samples = parse(data, table)
    assert stack_texts(samples, table) == [["a", "b"]]
    assert table.stacks == [tuple(table.stacks[samples.stack_ids[0]])]


def _evented(*events: tuple[str, int, float]) -> bytes:
    return document(
        [
            {"type": "sampled", "unit": "milliseconds", "samples": [], "weights": []},
            {
                "type": "evented",
                "name": "worker",
                "unit": "milliseconds",
                "startValue": 0,
                "events": [{"type": k, "frame": f, "at": at} for k, f, at in events],
            },
        ]
    )


def test_close_without_open(table: StackTable) -> None:
    message = _error(_evented(("O", 0, 0), ("C", 0, 1), ("C", 0, 2)), table)
    assert "profiles[1].events[2]" in message and "none is open" in message


def test_close_of_another_frame(table: StackTable) -> None:
    message = _error(_evented(("O", 0, 0), ("O", 1, 1), ("C", 0, 2)), table)
    assert "profiles[1].events[2]" in message and "innermost open frame 1" in message


def test_frame_left_open(table: StackTable) -> None:
    message = _error(_evented(("O", 0, 0), ("O", 1, 1), ("C", 1, 2)), table)
    assert "profiles[1].events[0]" in message and "still open" in message


def test_events_out_of_order(table: StackTable) -> None:
    assert "profiles[1].events[1].at" in _error(_evented(("O", 0, 5), ("C", 0, 2)), table)


def test_unknown_event_type(table: StackTable) -> None:
    assert "profiles[1].events[1].type" in _error(_evented(("O", 0, 0), ("X", 0, 2)), table)


def test_unknown_profile_type_and_unit(table: StackTable) -> None:
    assert "profiles[0].type" in _error(document([{"type": "flat", "unit": "none"}]), table)
    assert "profiles[0].unit" in _error(document([{"type": "sampled", "unit": "ticks"}]), table)


def test_mixed_units(table: StackTable) -> None:
    data = document(
        [
            {"type": "sampled", "unit": "seconds", "samples": [], "weights": []},
            {"type": "sampled", "unit": "milliseconds", "samples": [], "weights": []},
        ]
    )
    assert "profiles[1].unit" in _error(data, table)


def test_weights_do_not_match_samples(table: StackTable) -> None:
    data = document([{"type": "sampled", "unit": "none", "samples": [[0], [1]], "weights": [1]}])
    assert "profiles[0].weights" in _error(data, table)


@pytest.mark.parametrize("weight", [-1, None, "x", "2", [1], float("nan")])
def test_bad_weight(table: StackTable, weight: object) -> None:
    data = document(
        [{"type": "sampled", "unit": "none", "samples": [[0], [1]], "weights": [1, weight]}]
    )
    assert "profiles[0].weights[1]" in _error(data, table)
