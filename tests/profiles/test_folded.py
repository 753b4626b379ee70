"""Folded stacks: py-spy's and stackcollapse's own output, and broken files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from regbot.errors import InputError
from regbot.profiles.folded import parse_folded, split_folded
from regbot.profiles.model import ParseOptions, parse_frame
from regbot.profiles.stacks import StackTable

OPTIONS = ParseOptions()


def parse(data: bytes, table: StackTable | None = None, at_s: float | None = 100.0):
    table = table if table is not None else StackTable()
    samples = parse_folded(data, source="t.folded", table=table, at_s=at_s, options=OPTIONS)
    stacks = [[table.frames[f] for f in table.stacks[s]] for s in samples.stack_ids]
    return samples, stacks, table


def test_pyspy_lines_keep_frame_text_and_parse_file_and_line() -> None:
    data = (
        b"<module> (w.py:15);Svc.serve (w.py:13);handle (w.py:8);leaf (w.py:5) 8\n"
        b" 1\n"
        b"<module> (w.py:15);Svc.serve (w.py:14) 98\n"
    )
    samples, stacks, _ = parse(data)
    assert stacks[0] == [
        "<module> (w.py:15)",
        "Svc.serve (w.py:13)",
        "handle (w.py:8)",
        "leaf (w.py:5)",
    ]
    assert stacks[1] == []  # py-spy's empty stack line: a sample with no frame
    assert samples.weights.tolist() == [8.0, 1.0, 98.0]
    assert samples.times_s.tolist() == [100.0, 100.0, 100.0]
    frame = parse_frame(stacks[0][1])
    assert (frame.function, frame.file, frame.line) == ("Svc.serve", "w.py", 13)
    assert frame.subroutine == "Svc.serve (w.py)"


def test_spaces_and_semicolons_inside_frames() -> None:
    data = (
        b"java;Lcom/Foo;.bar (x.java:3) 2\n"  # py-spy-style file name with no parentheses issue
        b"main;std::vector<int, std::allocator<int> >::push_back(int const&) 3\n"
        b"<module> (odd;name.py:1);f (odd;name.py:2) 4\n"
    )
    _, stacks, _ = parse(data)
    assert stacks[1] == ["main", "std::vector<int, std::allocator<int> >::push_back(int const&)"]
    assert stacks[2] == ["<module> (odd;name.py:1)", "f (odd;name.py:2)"]
    assert split_folded("a;b;c") == ["a", "b", "c"]
    assert split_folded("") == []


def test_stackcollapse_perf_annotations_and_unknown() -> None:
    data = b"spin;[unknown];main;middle;inner_[i];do_syscall_64_[k] 5\nspin;[libc.so.6] 1\n"
    _, stacks, _ = parse(data)
    assert stacks[0][1] == "[unknown]"
    assert parse_frame("inner_[i]").function == "inner"
    assert parse_frame("inner_[i]").subroutine == "inner_[i]"
    assert parse_frame("[libc.so.6]").file is None


def test_real_pyspy_raw_recording(fixtures_dir) -> None:
    path = fixtures_dir / "pyspy" / "workload.folded"
    if not path.exists():
        pytest.skip("py-spy fixture not recorded yet")
    data = path.read_bytes()
    samples, stacks, _ = parse(data)
    expected = sum(int(line.rpartition(b" ")[2]) for line in data.splitlines() if line.strip())
    assert samples.weights.sum() == expected
    functions = {parse_frame(f).function for stack in stacks for f in stack}
    assert "handle" in functions


def test_same_stack_text_interns_once_across_files() -> None:
    table = StackTable()
    first, _, _ = parse(b"a;b 1\na;c 2\n", table)
    second, _, _ = parse(b"a;c 5\na;b 7\n", table)
    assert sorted(first.stack_ids.tolist()) == sorted(second.stack_ids.tolist())
    assert table.frames == ["a", "b", "c"]


def test_crlf_blank_lines_and_decimal_counts() -> None:
    samples, stacks, _ = parse(b"a;b 1\r\n\r\na;c 2.5\r\n")
    assert stacks == [["a", "b"], ["a", "c"]]
    assert samples.weights.tolist() == [1.0, 2.5]


def test_non_utf8_symbols_are_kept() -> None:
    _, stacks, _ = parse(b"main;caf\xe9 3\n")
    assert stacks[0][1].encode("utf-8", "surrogateescape") == b"caf\xe9"


@pytest.mark.parametrize(
    ("data", "line"),
    [(b"a;b 1\na;b\n", 2), (b"a;b x\n", 1), (b"a;b -3\n", 1), (b"ok 1\n\nbad inf\n", 3)],
)
def test_malformed_lines_name_the_line(data: bytes, line: int) -> None:
    with pytest.raises(
        InputError, match=rf"t\.folded:{line}: expected 'frame;frame;\.\.\.;frame COUNT'"
    ):
        parse(data)


def test_missing_time_is_explained() -> None:
    with pytest.raises(InputError, match="pass --at"):
        parse(b"a 1\n", at_s=None)


def test_fast_and_checked_paths_agree() -> None:
    rng = np.random.default_rng(3)
    lines = [f"r;f{rng.integers(20)};g{rng.integers(20)} {rng.integers(1, 9)}" for _ in range(300)]
    fast, fast_stacks, _ = parse("\n".join(lines).encode())
    slow, slow_stacks, _ = parse(
        ("\n\n".join(lines)).encode()
    )  # blank lines force the checked path
    assert fast_stacks == slow_stacks
    assert fast.weights.tolist() == slow.weights.tolist()


def test_idle_recording_has_the_empty_stack_line(fixtures_dir) -> None:
    data = (fixtures_dir / "pyspy" / "workload_idle.folded").read_bytes()
    samples, stacks, _ = parse(data)
    assert samples.weights.sum() == sum(int(line.rpartition(b" ")[2]) for line in data.splitlines())
    assert any(stack and parse_frame(stack[-1]).function == "Svc.serve" for stack in stacks)


def test_perf_recording_folded_by_stackcollapse_matches_reading_perf_script(fixtures_dir) -> None:
    from regbot.profiles.perf_script import parse_perf_script

    table = StackTable()
    folded = parse_folded(
        (fixtures_dir / "perf" / "spin.folded").read_bytes(),
        source="spin.folded",
        table=table,
        at_s=0.0,
        options=OPTIONS,
    )
    direct = parse_perf_script(
        (fixtures_dir / "perf" / "spin.perf.txt").read_bytes(),
        source="spin.perf.txt",
        table=table,
        at_s=0.0,
        options=OPTIONS,
    )

    def totals(samples) -> dict[int, float]:
        out: dict[int, float] = {}
        for stack_id, weight in zip(samples.stack_ids.tolist(), samples.weights.tolist()):
            out[stack_id] = out.get(stack_id, 0.0) + weight
        return out

    assert totals(folded) == totals(direct)  # same interned stacks, same sample counts


def test_live_pyspy_raw_recording(tmp_path) -> None:
    import shutil
    import subprocess
    import sys

    pyspy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(pyspy).exists():
        pytest.skip("py-spy is not installed (it is in the test extras)")
    script = tmp_path / "busy.py"
    script.write_text(
        "import time\n"
        "def spin_leaf():\n    return sum(i * i for i in range(20000))\n"
        "def handler():\n    return spin_leaf()\n"
        "end = time.time() + 1.0\nwhile time.time() < end:\n    handler()\n"
    )
    out = tmp_path / "1763805600.folded"
    done = subprocess.run(
        [
            pyspy,
            "record",
            "-r",
            "200",
            "-d",
            "1",
            "-f",
            "raw",
            "-o",
            str(out),
            "--",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0 or not out.exists():
        pytest.skip(f"py-spy could not record here: {done.stderr.strip()[:200]}")
    samples, stacks, _ = parse(out.read_bytes())
    assert samples.weights.sum() > 50
    functions = [[parse_frame(f).function for f in stack] for stack in stacks]
    assert any(
        path[-2:] == ["handler", "spin_leaf"] or path[-3:-1] == ["handler", "spin_leaf"]
        for path in functions
    )
