"""Tests of the `perf script` reader on real recordings (tests/fixtures/perf) and exact small cases."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, ProfileSamples, parse_frame
from regbot.profiles.perf_script import frame_texts, parse_perf_script
from regbot.profiles.stacks import StackTable

PERF = Path(__file__).parent.parent / "fixtures" / "perf"
AT = 1_750_000_000.0


def parse(
    data: bytes,
    table: StackTable,
    at_s: float | None = None,
    sample_type: str | None = None,
    source: str = "t.perf.txt",
) -> ProfileSamples:
    return parse_perf_script(
        data, source=source, table=table, at_s=at_s, options=ParseOptions(sample_type)
    )


def stacks(samples: ProfileSamples, table: StackTable) -> list[list[str]]:
    return [[table.frames[f] for f in table.stacks[s]] for s in samples.stack_ids.tolist()]


def header_lines(path: Path) -> list[str]:
    """Sample headers of a perf script file: lines that are not blank, comments or indented."""
    lines = path.read_text().splitlines()
    return [line for line in lines if line and not line[0].isspace() and line[0] != "#"]


def folded(samples: ProfileSamples, table: StackTable) -> Counter[str]:
    counts: Counter[str] = Counter()
    for stack, weight in zip(stacks(samples, table), samples.weights.tolist(), strict=True):
        counts[";".join(stack)] += int(weight)
    return counts


def read_folded(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        counts[stack] += int(count)
    return counts


# -- the real frame-pointer recording ----------------------------------------------------------


def test_one_record_per_sample_header(table: StackTable) -> None:
    path = PERF / "spin.perf.txt"
    samples = parse(path.read_bytes(), table, at_s=AT)
    headers = header_lines(path)
    assert len(headers) == 136
    assert len(samples.stack_ids) == len(samples.times_s) == len(samples.weights) == len(headers)
    assert samples.weights.tolist() == [1.0] * len(headers)
    assert samples.sample_type == "samples"
    assert samples.source == "t.perf.txt"


def test_stacks_are_root_first_under_comm(table: StackTable) -> None:
    samples = parse((PERF / "spin.perf.txt").read_bytes(), table, at_s=AT)
    for stack in stacks(samples, table):
        assert stack[:4] == ["spin", "__libc_start_call_main", "main", "middle"]
        assert stack[4:] in (["inner"], ["step"])
    leaves = Counter(stack[-1] for stack in stacks(samples, table))
    assert leaves == {"inner": 133, "step": 3}


def test_frames_parse_as_plain_functions(table: StackTable) -> None:
    parse((PERF / "spin.perf.txt").read_bytes(), table, at_s=AT)
    functions = {parse_frame(text).function for text in table.frames}
    assert functions == {"spin", "__libc_start_call_main", "main", "middle", "inner", "step"}
    assert all(parse_frame(text).file is None for text in table.frames)


@pytest.mark.parametrize("name", ["spin", "spin_dwarf", "dd_kernel", "edge_cases"])
def test_matches_stackcollapse_perf(name: str, table: StackTable) -> None:
    """`<name>.folded` is stackcollapse-perf.pl's output (default options) for the same file."""
    samples = parse((PERF / f"{name}.perf.txt").read_bytes(), table, at_s=AT)
    ours = folded(samples, table)
    if name == "edge_cases":  # the right-aligned one-line samples (no -g) upstream cannot read
        assert ours.pop("bash;main") == 1 and ours.pop("bash;[libc.so.6]") == 1
    assert ours == read_folded(PERF / f"{name}.folded")


def test_boot_clock_needs_at(table: StackTable) -> None:
    data = (PERF / "spin.perf.txt").read_bytes()
    with pytest.raises(InputError) as caught:
        parse(data, table, source="spin.perf.txt")
    message = str(caught.value)
    assert message.startswith("spin.perf.txt: expected epoch timestamps")
    assert "--at" in message and "perf record -k CLOCK_REALTIME" in message
    first = header_lines(PERF / "spin.perf.txt")[0].split(":")[0].split()[-1]
    assert message.endswith(f"found {first!r}")


def test_boot_clock_with_at_starts_at_at(table: StackTable) -> None:
    path = PERF / "spin.perf.txt"
    samples = parse(path.read_bytes(), table, at_s=AT)
    raw = np.array([float(line.split(":")[0].split()[-1]) for line in header_lines(path)])
    assert samples.times_s[0] == AT
    np.testing.assert_allclose(samples.times_s - AT, raw - raw[0], atol=1e-6)
    assert 0.4 < samples.times_s[-1] - samples.times_s[0] < 0.6


def test_realtime_timestamps_are_used_as_they_are(table: StackTable) -> None:
    path = PERF / "spin_realtime.perf.txt"
    samples = parse(path.read_bytes(), table)
    raw = [float(line.split(":")[0].split()[-1]) for line in header_lines(path)]
    assert len(raw) == 111 and raw[0] >= 1e9
    assert samples.times_s.tolist() == raw
    shifted = parse(path.read_bytes(), table, at_s=AT)
    assert shifted.times_s[0] == AT
    np.testing.assert_allclose(shifted.times_s - AT, np.array(raw) - raw[0], atol=1e-6)
    assert set(map(tuple, stacks(samples, table))) == {
        ("spin", "__libc_start_call_main", "main", "middle", "inner"),
        ("spin", "__libc_start_call_main", "main", "middle", "step"),
    }


def test_dwarf_unwinding_keeps_perf_inlined_frames(table: StackTable) -> None:
    samples = parse((PERF / "spin_dwarf.perf.txt").read_bytes(), table, at_s=AT)
    assert len(samples.stack_ids) == len(header_lines(PERF / "spin_dwarf.perf.txt")) == 49
    counts = Counter(map(tuple, stacks(samples, table)))
    root = ("spin", "_start", "__libc_start_main_impl", "__libc_start_call_main", "main", "middle")
    assert counts == {root + ("inner", "mix"): 47, root + ("inner", "step"): 2}


def test_srcline_lines_are_skipped(table: StackTable) -> None:
    plain = parse((PERF / "spin.perf.txt").read_bytes(), table, at_s=AT)
    with_srcline = parse((PERF / "spin_srcline.perf.txt").read_bytes(), table, at_s=AT)
    assert with_srcline.stack_ids.tolist() == plain.stack_ids.tolist()
    assert with_srcline.times_s.tolist() == plain.times_s.tolist()


def test_recording_without_call_graph_gives_comm_and_sampled_symbol(table: StackTable) -> None:
    path = PERF / "spin_nog.perf.txt"
    samples = parse(path.read_bytes(), table, at_s=AT)
    lines = path.read_text().splitlines()
    assert len(samples.stack_ids) == len(lines) == 124
    got = stacks(samples, table)
    assert all(len(stack) == 2 and stack[0] == "spin" for stack in got)
    assert Counter(stack[1] for stack in got)["inner"] == 116
    expected = [line.split(" (")[-2].rsplit(" ", 1)[-1].split("+0x")[0] for line in lines]
    assert [stack[1] for stack in got] == expected


def test_kernel_frames_are_not_annotated_by_default(table: StackTable) -> None:
    samples = parse((PERF / "dd_kernel.perf.txt").read_bytes(), table, at_s=AT)
    frames = {frame for stack in stacks(samples, table) for frame in stack}
    assert {"vfs_read", "ksys_read", "do_syscall_64", "read_zero"} <= frames
    assert not any(frame.endswith("_[k]") for frame in frames)


# -- hand-made edge cases ---------------------------------------------------------------------

EDGE_EXPECTED = [
    (
        1700000000.25,
        250000.0,
        [
            "Web_Content",
            "[unknown]",
            "mozilla::detail::RunnableFunction<void ",
            "[libc.so.6]",
            "std::vector<int, std::allocator<int> >::push_back",
        ],
    ),
    (
        1700000000.5,
        250000.0,
        [
            "swapper",
            "start_kernel",
            "rest_init",
            "[[kernel.kallsyms]]",
            "default_idle",
            "native_safe_halt",
        ],
    ),
    (
        1700000000.75,
        500000.0,
        [
            "server",
            "main",
            "Parser::parse",
            "ns::(anonymous namespace)::route",
            "std::unique_ptr<Foo, std::default_delete<Foo> >::operator",
            "_[i]",
        ],
    ),
    (
        1700000001.0,
        250000.0,
        [
            "gosrv",
            "runtime.goexit.abi0",
            "runtime.main",
            "main.main",
            "net/http.(*Client).Do",
            "runtime.mallocgc",
        ],
    ),
    (
        1700000001.125,
        250000.0,
        ["java", "JavaMain", "Interpreter", "org/mozilla/javascript/ContextFactory:.call"],
    ),
    (1700000001.25, 250000.0, ["sleep"]),
    (1700000001.5, 250000.0, ["bash", "main"]),
    (1700000001.75, 250000.0, ["bash", "[libc.so.6]"]),
]


def test_edge_cases_exact(table: StackTable) -> None:
    samples = parse((PERF / "edge_cases.perf.txt").read_bytes(), table, sample_type="period")
    got = list(
        zip(samples.times_s.tolist(), samples.weights.tolist(), stacks(samples, table), strict=True)
    )
    assert got == EDGE_EXPECTED
    assert samples.sample_type == "period"


def test_edge_cases_count_samples_and_drop_other_events(table: StackTable) -> None:
    path = PERF / "edge_cases.perf.txt"
    samples = parse(path.read_bytes(), table)
    assert len(header_lines(path)) == 7  # + 2 right-aligned one-line samples, - 1 page-fault
    assert samples.weights.tolist() == [1.0] * 8
    assert samples.times_s.tolist() == [t for t, _, _ in EDGE_EXPECTED]


def test_edge_case_frames_parse(table: StackTable) -> None:
    parse((PERF / "edge_cases.perf.txt").read_bytes(), table)
    functions = {text: parse_frame(text).function for text in table.frames}
    assert functions["[libc.so.6]"] == "[libc.so.6]"
    assert functions["net/http.(*Client).Do"] == "net/http.(*Client).Do"
    assert functions["_[i]"] == ""
    assert all(parse_frame(text).file is None for text in table.frames)


@pytest.mark.parametrize(
    ("text", "java", "expected"),
    [
        ("inner+0x40 (/tmp/spin)", False, ["inner"]),
        ("inner (/tmp/spin)", False, ["inner"]),
        ("inner+0x40", False, ["inner"]),  # -F ip,sym: no dso
        ("[unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)", False, ["[libc.so.6]"]),
        ("[unknown] ([unknown])", False, ["[unknown]"]),
        ("[unknown] ([kernel.kallsyms])", False, ["[[kernel.kallsyms]]"]),
        ("mix+0x40 (inlined)", False, ["mix"]),
        (
            "outer->inlined_a->inlined_b+0x8 (/bin/x)",
            False,
            ["outer", "inlined_a_[i]", "inlined_b_[i]"],
        ),
        ("(anonymous namespace)::f()+0x8 (/bin/x)", False, []),
        ("a;b(int) (/bin/x)", False, ["a:b"]),
        ("RegExp:[&<>\"'] (/tmp/perf-7539.map)", False, ["RegExp:[&<>]"]),
        ("Ljava/lang/Thread;.run()V+0x1 (/tmp/perf-1.map)", True, ["java/lang/Thread:.run"]),
        ("Ljava/lang/Thread;.run()V+0x1 (/tmp/perf-1.map)", False, ["Ljava/lang/Thread:.run"]),
        ("Lock::take() (/bin/x)", True, ["Lock::take"]),
    ],
)
def test_frame_texts(text: str, java: bool, expected: list[str]) -> None:
    assert frame_texts(text, java) == expected


def test_header_forms(table: StackTable) -> None:
    data = (
        b"Thread 2  1234 [000] 1700000000.000001: cycles: \n\tabc f (/x)\n\n"
        b"Thread 2  1234 1700000000.5: cycles:\n\tabc g+0x1 (/x)\n\n"
        b"a b 5/6 1700000001.250000000: 7 cycles:\n\tabc h (/x)\n"
    )
    samples = parse(data, table)
    assert stacks(samples, table) == [["Thread_2", "f"], ["Thread_2", "g"], ["a_b", "h"]]
    assert samples.times_s.tolist() == [1700000000.000001, 1700000000.5, 1700000001.25]


def test_headers_without_time_need_at(table: StackTable) -> None:
    data = b"spin  5326 cpu-clock: \n\t11dc inner (/x)\n\nspin  5326 2004008 cpu-clock: \n\n"
    with pytest.raises(InputError, match=r"^t\.perf\.txt: expected a time .* pass --at"):
        parse(data, table)
    samples = parse(data, table, at_s=AT)
    assert samples.times_s.tolist() == [AT, AT]
    assert stacks(samples, table) == [["spin", "inner"], ["spin"]]


def test_crlf_and_missing_final_blank_line(table: StackTable) -> None:
    data = b"spin 1 1700000000.5: cpu-clock:\r\n\t11dc inner+0x4 (/x)\r\n\r\nspin 1 1700000001.5: c:\r\n"
    samples = parse(data, table)
    assert stacks(samples, table) == [["spin", "inner"]]  # the second is another event


def test_non_utf8_symbols_keep_their_bytes(table: StackTable) -> None:
    data = b"tool 9 1700000000.5: cpu-clock:\n\t400 caf\xe9_latin1+0x4 (/opt/tool)\n\n"
    samples = parse(data, table)
    assert stacks(samples, table) == [["tool", "caf\udce9_latin1"]]
    leaf = stacks(samples, table)[0][-1]
    assert leaf.encode("utf-8", "surrogateescape") == b"caf\xe9_latin1"


def test_reparsing_into_the_same_table_adds_nothing(table: StackTable) -> None:
    data = (PERF / "edge_cases.perf.txt").read_bytes()
    first = parse(data, table)
    frames, stack_count = len(table.frames), len(table.stacks)
    second = parse(data, table)
    assert second.stack_ids.tolist() == first.stack_ids.tolist()
    assert (len(table.frames), len(table.stacks)) == (frames, stack_count)


def test_empty_input_gives_no_samples(table: StackTable) -> None:
    samples = parse(b"# only a comment\n\n", table)
    assert len(samples.stack_ids) == len(samples.times_s) == len(samples.weights) == 0


# -- broken input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"\t11dc inner (/x)\n", "t.perf.txt:1"),  # stack line before any header
        (b"spin 1 1.5: c:\n\t1 f (/x)\n\n\t2 g (/x)\n", "t.perf.txt:4"),  # ... after a blank line
        (b"# c\nthis is not perf output\n", "t.perf.txt:2"),
        (b"spin 1 abc: cpu-clock:\n\t1 f (/x)\n", "t.perf.txt:1"),  # non-numeric time
        (b"spin 1 1.5: c:\n\t1 f (/x)\n\nspin 1 1e9: 7 c:\n", "t.perf.txt:4"),  # non-numeric
        (b"spin 1 1.5: c:\n\tzz f (/x)\n", "t.perf.txt:2"),  # stack line without an address
        (b"spin 1 1700000000.5: c:\n\nspin 1 c:\n", "t.perf.txt:3"),  # time on some headers only
    ],
)
def test_broken_input_names_the_line(data: bytes, where: str, table: StackTable) -> None:
    with pytest.raises(InputError) as caught:
        parse(data, table, at_s=AT)
    assert caught.value.where == where
    assert str(caught.value).startswith(f"{where}: expected ")


def test_period_weights_need_a_period(table: StackTable) -> None:
    data = b"spin 1 1700000000.5: 10 c:\n\nspin 1 1700000000.6: c:\n\n"
    with pytest.raises(InputError) as caught:
        parse(data, table, sample_type="period")
    assert caught.value.where == "t.perf.txt:3"


def test_unknown_sample_type_is_refused(table: StackTable) -> None:
    with pytest.raises(InputError, match=r"^sample_type: expected .*found 'cpu'"):
        parse(b"", table, sample_type="cpu")


# -- live recording (optional) ----------------------------------------------------------------


def test_live_perf_recording(tmp_path: Path, table: StackTable) -> None:
    """Records spin.c with the real perf, as the fixtures were made; skips if perf cannot."""
    perf, gcc = shutil.which("perf"), shutil.which("gcc")
    if perf is None or gcc is None:
        pytest.skip(f"{'perf' if perf is None else 'gcc'} is not installed")
    binary = tmp_path / "spin"
    subprocess.run(
        [gcc, "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(binary), str(PERF / "spin.c")],
        check=True,
    )
    data_file = tmp_path / "perf.data"
    record = subprocess.run(
        [perf, "record", "-k", "CLOCK_REALTIME", "-g", "-e", "cpu-clock", "-F", "499",
         "-o", str(data_file), str(binary), "0.3"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    if record.returncode != 0:
        reason = (record.stderr.strip().splitlines() or ["no message"])[-1]
        pytest.skip(f"perf record refused (exit {record.returncode}): {reason}")
    script = subprocess.run([perf, "script", "-i", str(data_file)], capture_output=True, check=True)
    samples = parse(script.stdout, table)
    assert len(samples.stack_ids) > 0
    assert samples.times_s.min() >= 1e9
    got = stacks(samples, table)
    assert all(stack[0] == "spin" for stack in got)
    assert any(stack[-3:] == ["main", "middle", "inner"] for stack in got)
