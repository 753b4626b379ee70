"""Tests of the pprof reader: real Go profiles (tests/fixtures/pprof) and hand-built ones."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from regbot.errors import InputError
from regbot.profiles import profile_pb2
from regbot.profiles.model import ParseOptions, ProfileSamples, parse_frame
from regbot.profiles.pprof import parse_pprof
from regbot.profiles.stacks import StackTable

PPROF = Path(__file__).parent.parent / "fixtures" / "pprof"
GO_SOURCE = (PPROF / "cpuwork.go").read_text().splitlines()


def _go_line(pattern: str) -> int:
    """1-based line of cpuwork.go matching ``pattern`` (exactly one)."""
    found = [n for n, text in enumerate(GO_SOURCE, start=1) if re.search(pattern, text)]
    assert len(found) == 1, (pattern, found)
    return found[0]


def _go_function_lines(name: str) -> range:
    """Lines of a top-level Go function's body, from its ``func`` line to its closing brace."""
    start = _go_line(rf"^func {name}\(")
    end = next(n for n in range(start, len(GO_SOURCE) + 1) if GO_SOURCE[n - 1] == "}")
    return range(start, end + 1)


def _raw(name: str) -> profile_pb2.Profile:
    return profile_pb2.Profile.FromString(gzip.decompress((PPROF / name).read_bytes()))


def _parse(
    data: bytes,
    table: StackTable,
    sample_type: str | None = None,
    at_s: float | None = None,
    source: str = "test.pb.gz",
) -> ProfileSamples:
    return parse_pprof(
        data, source=source, table=table, at_s=at_s, options=ParseOptions(sample_type)
    )


def _stacks(result: ProfileSamples, table: StackTable) -> list[list[str]]:
    return [[table.frames[f] for f in table.stacks[s]] for s in result.stack_ids.tolist()]


def _functions(stack: list[str]) -> list[str]:
    return [parse_frame(text).function for text in stack]


# --- the real Go CPU profile -------------------------------------------------------------------


@pytest.fixture
def go_cpu() -> bytes:
    return (PPROF / "go_cpu.pb.gz").read_bytes()


def test_go_cpu_default_is_first_sample_type_counting_samples(go_cpu: bytes, table: StackTable):
    raw = _raw("go_cpu.pb.gz")
    result = _parse(go_cpu, table)

    assert result.sample_type == "samples/count"
    assert result.weights.sum() == sum(sample.value[0] for sample in raw.sample)
    assert result.weights.sum() > 0
    assert raw.time_nanos > 0
    assert np.all(result.times_s == raw.time_nanos / 1e9)
    assert result.source == "test.pb.gz"
    assert result.stack_ids.dtype == np.int64 and result.weights.dtype == np.float64
    assert len(np.unique(result.stack_ids)) == len(result.stack_ids)  # aggregated per stack


def test_go_cpu_selecting_cpu_gives_nanoseconds(go_cpu: bytes, table: StackTable):
    raw = _raw("go_cpu.pb.gz")
    counts = _parse(go_cpu, table)
    cpu = _parse(go_cpu, table, "cpu")
    cpu_by_unit = _parse(go_cpu, table, "cpu/nanoseconds")

    assert cpu.sample_type == cpu_by_unit.sample_type == "cpu/nanoseconds"
    assert raw.period == 10_000_000  # 100 Hz
    # Same stacks (shared table), and Go's cpu value is the sample count times the period.
    np.testing.assert_array_equal(cpu.stack_ids, counts.stack_ids)
    np.testing.assert_array_equal(cpu.weights, counts.weights * raw.period)
    np.testing.assert_array_equal(cpu_by_unit.weights, cpu.weights)
    assert cpu.weights.sum() == sum(sample.value[1] for sample in raw.sample)


def test_go_cpu_frames_name_cpuwork_functions_with_file_and_line(go_cpu: bytes, table: StackTable):
    result = _parse(go_cpu, table)
    frames = [parse_frame(text) for stack in _stacks(result, table) for text in stack]
    crunch = [f for f in frames if f.function == "main.crunch"]
    mix = [f for f in frames if f.function == "main.mix"]

    assert crunch and mix
    assert all(f.file is not None and f.file.endswith("cpuwork.go") for f in crunch + mix)
    assert all(f.line in _go_function_lines("crunch") for f in crunch)
    assert all(f.line in _go_function_lines("mix") for f in mix)
    # Frame text is render_frame's `name (file:line)`.
    assert all(f.text == f"{f.function} ({f.file}:{f.line})" for f in crunch)


def test_go_cpu_stacks_are_root_first(go_cpu: bytes, table: StackTable):
    result = _parse(go_cpu, table)
    work_call = _go_line(r"a, b := work\(\*duration\)")
    ours = [s for s in _stacks(result, table) if "main.work" in _functions(s)]

    assert ours
    for stack in ours:
        assert _functions(stack)[:3] == ["runtime.main", "main.main", "main.work"]
        assert parse_frame(stack[1]).line == work_call


def test_go_cpu_inlined_mix_expands_under_crunch(go_cpu: bytes, table: StackTable):
    """cpuwork.go inlines mix into crunch: pprof writes Lines [mix, crunch]; root first, crunch
    (at its call of mix) comes right before mix, and only the preemption stub may follow mix."""
    raw = _raw("go_cpu.pb.gz")
    strings = raw.string_table
    names = {f.id: strings[f.name] for f in raw.function}
    inlined = [loc for loc in raw.location if len(loc.line) > 1]
    assert inlined, "the fixture should record mix inlined into crunch"
    assert all(
        [names[line.function_id] for line in loc.line] == ["main.mix", "main.crunch"]
        for loc in inlined
    )

    result = _parse(go_cpu, table)
    call_line = _go_line(r"acc \+= mix\(")
    with_mix = [s for s in _stacks(result, table) if "main.mix" in _functions(s)]
    assert with_mix
    for stack in with_mix:
        functions = _functions(stack)
        at = functions.index("main.mix")
        assert functions[at - 2 : at] == ["main.work", "main.crunch"]
        assert parse_frame(stack[at - 1]).line == call_line
        assert functions[at + 1 :] in ([], ["runtime.asyncPreempt"])


def test_go_cpu_uncompressed_bytes_parse_the_same(go_cpu: bytes, table: StackTable):
    compressed = _parse(go_cpu, table)
    plain = _parse(gzip.decompress(go_cpu), table, source="test.pb")

    np.testing.assert_array_equal(plain.stack_ids, compressed.stack_ids)
    np.testing.assert_array_equal(plain.weights, compressed.weights)
    np.testing.assert_array_equal(plain.times_s, compressed.times_s)


def test_go_cpu_time_nanos_wins_over_at(go_cpu: bytes, table: StackTable):
    raw = _raw("go_cpu.pb.gz")
    result = _parse(go_cpu, table, at_s=1.0)

    assert np.all(result.times_s == raw.time_nanos / 1e9)


# --- the real Go heap profile ------------------------------------------------------------------


@pytest.mark.parametrize(
    "wanted, expected",
    [
        (None, "alloc_objects/count"),
        ("alloc_space", "alloc_space/bytes"),
        ("inuse_objects/count", "inuse_objects/count"),
        ("inuse_space", "inuse_space/bytes"),
    ],
)
def test_go_heap_selects_each_of_four_sample_types(
    wanted: str | None, expected: str, table: StackTable
):
    raw = _raw("go_heap.pb.gz")
    index = [
        f"{raw.string_table[t.type]}/{raw.string_table[t.unit]}" for t in raw.sample_type
    ].index(expected)
    result = _parse((PPROF / "go_heap.pb.gz").read_bytes(), table, wanted)

    assert result.sample_type == expected
    assert result.weights.sum() == sum(sample.value[index] for sample in raw.sample)
    assert np.all(result.weights > 0)  # zero-valued samples are dropped


def test_go_heap_inuse_space_is_the_kept_buffers(table: StackTable):
    """cpuwork.go keeps 256 buffers of 32 KiB allocated by main.grow: 8 MiB in use. Go's heap
    profile is a sampled estimate (MemProfileRate 64 KiB), so allow 25%."""
    result = _parse((PPROF / "go_heap.pb.gz").read_bytes(), table, "inuse_space")
    stacks = _stacks(result, table)
    grow = [w for s, w in zip(stacks, result.weights.tolist()) if "main.grow" in _functions(s)]

    assert len(grow) == 1
    assert grow[0] == pytest.approx(256 * 32 * 1024, rel=0.25)


# --- hand-built profiles -----------------------------------------------------------------------


class _ProfileBuilder:
    """Builds small Profile messages with interned strings (string_table[0] == '')."""

    def __init__(self, *sample_types: tuple[str, str], time_nanos: int = 0) -> None:
        self.profile = profile_pb2.Profile(string_table=[""], time_nanos=time_nanos)
        self._strings = {"": 0}
        for type_name, unit in sample_types:
            self.profile.sample_type.add(type=self.s(type_name), unit=self.s(unit))

    def s(self, text: str) -> int:
        if text not in self._strings:
            self._strings[text] = len(self.profile.string_table)
            self.profile.string_table.append(text)
        return self._strings[text]

    def function(self, id_: int, name: str, file: str = "", system_name: str = "") -> None:
        self.profile.function.add(
            id=id_, name=self.s(name), filename=self.s(file), system_name=self.s(system_name)
        )

    def location(self, id_: int, *lines: tuple[int, int], mapping_id: int = 0) -> None:
        location = self.profile.location.add(id=id_, mapping_id=mapping_id, address=0x1000 + id_)
        for function_id, line in lines:
            location.line.add(function_id=function_id, line=line)

    def mapping(self, id_: int, filename: str) -> None:
        self.profile.mapping.add(id=id_, filename=self.s(filename))

    def sample(self, location_ids: list[int], *values: int) -> None:
        self.profile.sample.add(location_id=location_ids, value=list(values))

    def bytes(self, compress: bool = True) -> bytes:
        raw = self.profile.SerializeToString()
        return gzip.compress(raw, mtime=0) if compress else raw


def _two_type_profile() -> _ProfileBuilder:
    """main (app.go:5) -> handle (app.go:12), as samples/count and cpu/nanoseconds."""
    b = _ProfileBuilder(
        ("samples", "count"), ("cpu", "nanoseconds"), time_nanos=1_700_000_000 * 10**9
    )
    b.function(1, "main", "app.go")
    b.function(2, "handle", "app.go")
    b.location(1, (2, 12))
    b.location(2, (1, 5))
    b.sample([1, 2], 3, 30_000_000)
    b.sample([2], 1, 10_000_000)
    return b


def _by_stack(result: ProfileSamples, table: StackTable) -> dict[tuple[str, ...], float]:
    return {
        tuple(stack): weight
        for stack, weight in zip(_stacks(result, table), result.weights.tolist())
    }


@pytest.mark.parametrize(
    "wanted, sample_type, handle_weight, main_weight",
    [
        (None, "samples/count", 3.0, 1.0),
        ("samples", "samples/count", 3.0, 1.0),
        ("cpu", "cpu/nanoseconds", 30e6, 10e6),
        ("cpu/nanoseconds", "cpu/nanoseconds", 30e6, 10e6),
    ],
)
def test_sample_type_selected_by_type_or_type_unit(
    wanted: str | None,
    sample_type: str,
    handle_weight: float,
    main_weight: float,
    table: StackTable,
):
    result = _parse(_two_type_profile().bytes(), table, wanted)

    assert result.sample_type == sample_type
    assert _by_stack(result, table) == {
        ("main (app.go:5)", "handle (app.go:12)"): handle_weight,
        ("main (app.go:5)",): main_weight,
    }
    assert np.all(result.times_s == 1_700_000_000.0)


def test_unknown_sample_type_lists_the_available_ones(table: StackTable):
    with pytest.raises(InputError) as error:
        _parse(_two_type_profile().bytes(), table, "wall", source="web01.pb.gz")

    message = str(error.value)
    assert message.startswith("web01.pb.gz")
    assert "samples/count, cpu/nanoseconds" in message and "'wall'" in message


def test_location_with_two_inlined_lines_expands_caller_first(table: StackTable):
    """Location 1 is memcpy inlined into printf (profile.proto's own example): Lines
    [memcpy, printf]. Root first the stack reads main, printf, memcpy."""
    b = _ProfileBuilder(("samples", "count"), time_nanos=10**9)
    b.function(1, "memcpy", "string.h")
    b.function(2, "printf", "stdio.c")
    b.function(3, "main", "main.c")
    b.location(1, (1, 40), (2, 77))
    b.location(2, (3, 9))
    b.sample([1, 2], 5)

    result = _parse(b.bytes(), table)

    assert _stacks(result, table) == [
        ["main (main.c:9)", "printf (stdio.c:77)", "memcpy (string.h:40)"]
    ]
    assert result.weights.tolist() == [5.0]


def test_unsymbolized_locations_use_the_mapping_basename(table: StackTable):
    b = _ProfileBuilder(("samples", "count"), time_nanos=10**9)
    b.mapping(1, "/usr/lib/x86_64-linux-gnu/libc.so.6")
    b.mapping(2, "[vdso]")
    b.mapping(3, "")
    b.function(1, "main", "main.c")
    b.location(1, mapping_id=1)
    b.location(2, mapping_id=2)
    b.location(3, mapping_id=3)
    b.location(4)
    b.location(9, (1, 3))
    for leaf in (1, 2, 3, 4):
        b.sample([leaf, 9], leaf)

    result = _parse(b.bytes(), table)

    assert _by_stack(result, table) == {
        ("main (main.c:3)", "[libc.so.6]"): 1.0,
        ("main (main.c:3)", "[vdso]"): 2.0,
        ("main (main.c:3)", "[unknown]"): 3.0 + 4.0,  # mapping without a file, and no mapping
    }
    assert parse_frame("[libc.so.6]").file is None


def test_function_names_fall_back_to_system_name_and_files_are_optional(table: StackTable):
    b = _ProfileBuilder(("samples", "count"), time_nanos=10**9)
    b.function(1, "", "lib.cc", system_name="_ZN3foo3barEv")
    b.function(2, "start", "")
    b.function(3, "", "")
    b.location(1, (1, 0))  # line 0: unknown line
    b.location(2, (2, 7))
    b.location(3, (3, 0))
    b.location(4, (0, 0))  # a Line naming no function
    b.sample([1, 2], 1)
    b.sample([3, 4, 2], 1)

    result = _parse(b.bytes(), table)

    assert sorted(_stacks(result, table)) == [
        ["start", "[unknown]", "[unknown]"],
        ["start", "_ZN3foo3barEv (lib.cc)"],
    ]


def test_equal_stacks_are_summed_and_zero_values_dropped(table: StackTable):
    b = _two_type_profile()
    b.sample([1, 2], 2, 0)  # same stack as the first sample; no cpu time
    b.sample([2], 0, 0)

    counts = _parse(b.bytes(), table)
    cpu = _parse(b.bytes(), table, "cpu")

    assert _by_stack(counts, table) == {
        ("main (app.go:5)", "handle (app.go:12)"): 5.0,
        ("main (app.go:5)",): 1.0,
    }
    assert len(cpu.stack_ids) == 2 and cpu.weights.sum() == 40e6


def test_missing_time_nanos_uses_at(table: StackTable):
    b = _two_type_profile()
    b.profile.time_nanos = 0

    result = _parse(b.bytes(), table, at_s=1_732_262_400.5)

    assert np.all(result.times_s == 1_732_262_400.5)


def test_missing_time_nanos_without_at_is_an_input_error(table: StackTable):
    b = _two_type_profile()
    b.profile.time_nanos = 0

    with pytest.raises(InputError, match=r"^nightly\.pb: .*time_nanos.*--at"):
        _parse(b.bytes(), table, source="nightly.pb")


def test_empty_profile_gives_no_rows_but_keeps_its_type(table: StackTable):
    b = _ProfileBuilder(("samples", "count"), time_nanos=10**9)

    result = _parse(b.bytes(), table)

    assert len(result.stack_ids) == len(result.weights) == len(result.times_s) == 0
    assert result.sample_type == "samples/count"


def test_stack_ids_are_shared_across_profiles(table: StackTable):
    first = _parse(_two_type_profile().bytes(), table)
    frames_before = len(table.frames)
    second = _parse(_two_type_profile().bytes(compress=False), table)

    np.testing.assert_array_equal(first.stack_ids, second.stack_ids)
    assert len(table.frames) == frames_before == 2


# --- broken input ------------------------------------------------------------------------------


def _corrupt(change: str) -> bytes:
    b = _two_type_profile()
    if change == "string index":
        b.profile.function[0].name = 99
    elif change == "sample type string index":
        b.profile.sample_type[1].unit = -1
    elif change == "location id":
        b.sample([1, 7], 1, 1)
    elif change == "function id":
        b.profile.location[0].line[0].function_id = 42
    elif change == "mapping id":
        b.location(5, mapping_id=3)
        b.sample([5], 1, 1)
    elif change == "negative value":
        b.sample([1, 2], -2, 5)
    elif change == "value count":
        b.sample([1, 2], 1)
    elif change == "string_table[0]":
        b.profile.string_table[0] = "x"
    elif change == "negative time_nanos":
        b.profile.time_nanos = -5
    elif change == "no sample types":
        del b.profile.sample_type[:]
    return b.bytes()


@pytest.mark.parametrize(
    "change, expected",
    [
        ("string index", "index into the string table"),
        ("sample type string index", "index into the string table"),
        ("location id", "id of a Location"),
        ("function id", "id of a Function"),
        ("mapping id", "id of a Mapping"),
        ("negative value", "value >= 0"),
        ("value count", "2 values, one per sample type"),
        ("string_table[0]", "string_table[0]"),
        ("negative time_nanos", "epoch nanoseconds"),
        ("no sample types", "at least one sample_type"),
    ],
)
def test_inconsistent_profiles_are_input_errors(change: str, expected: str, table: StackTable):
    with pytest.raises(InputError) as error:
        _parse(_corrupt(change), table, source="bad.pb.gz")

    assert str(error.value).startswith("bad.pb.gz")
    assert expected in str(error.value)


def test_truncated_gzip_is_an_input_error(go_cpu: bytes, table: StackTable):
    with pytest.raises(InputError, match=r"^cut\.pb\.gz: expected a complete gzip"):
        _parse(go_cpu[: len(go_cpu) // 2], table, source="cut.pb.gz")


def test_corrupt_gzip_is_an_input_error(go_cpu: bytes, table: StackTable):
    broken = bytearray(go_cpu)
    broken[20:40] = bytes(20)
    with pytest.raises(InputError, match=r"^flip\.pb\.gz: expected a complete gzip"):
        _parse(bytes(broken), table, source="flip.pb.gz")


@pytest.mark.parametrize("seed", range(20))
def test_random_bytes_are_input_errors(seed: int, table: StackTable):
    data = np.random.default_rng(seed).integers(0, 256, size=200, dtype=np.uint8).tobytes()

    with pytest.raises(InputError, match=r"^noise\.pb: expected"):
        _parse(data, table, source="noise.pb")


@pytest.mark.parametrize(
    "data",
    [b"\xff\xff\xff\xff", b"\x0a\x05\x08", b"", b"\x1f\x8b", b"\x32\x00\x32\x02\xff\xfe"],
    ids=["bad tag", "truncated message", "empty", "gzip magic only", "string not UTF-8"],
)
def test_undecodable_bytes_are_input_errors(data: bytes, table: StackTable):
    with pytest.raises(InputError, match=r"^x\.pb: expected"):
        _parse(data, table, source="x.pb")


def test_gzip_of_non_profile_is_an_input_error(table: StackTable):
    data = gzip.compress(b"main;handle 3\n", mtime=0)

    with pytest.raises(InputError, match=r"^folded\.gz: expected a pprof profile"):
        _parse(data, table, source="folded.gz")
