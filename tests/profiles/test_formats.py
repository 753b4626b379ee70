"""Telling formats apart from their first bytes, on every recorded fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from regbot.profiles.formats import detect_format

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

EXPECTED = {
    "pyspy/workload.folded": "folded",
    "pyspy/workload_idle.folded": "folded",
    "pyspy/workload.speedscope.json": "speedscope",
    "pyspy/workload.chrometrace.json": "chrometrace",
    "speedscope/evented.speedscope.json": "speedscope",
    "pprof/go_cpu.pb.gz": "pprof",
    "pprof/go_heap.pb.gz": "pprof",
    "perf/spin.perf.txt": "perf-script",
    "perf/spin_realtime.perf.txt": "perf-script",
    "perf/edge_cases.perf.txt": "perf-script",
    "perf/spin.folded": "folded",
}


@pytest.mark.parametrize(("name", "expected"), sorted(EXPECTED.items()))
def test_recorded_fixtures_are_recognised(name: str, expected: str) -> None:
    path = FIXTURES / name
    assert detect_format(path, path.read_bytes()[:4096]) == expected


def test_names_and_shapes() -> None:
    assert detect_format(Path("x.pb"), b"\x0a\x02") == "pprof"
    assert detect_format(Path("x.json"), b'  {"traceEvents": []}') == "chrometrace"
    assert detect_format(Path("x.txt"), b"main;a 1\n") == "folded"
    assert detect_format(Path("x.perf"), b"") == "perf-script"
