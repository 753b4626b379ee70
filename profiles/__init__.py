"""regbot.profiles: reading profilers' output into the sample store and gCPU series.

The entry points other packages use are re-exported here; importing them from their defining
modules works as well. The format readers (``parse_folded``, ``parse_pprof``...) stay imported
on first use, as ``formats.READERS`` does: they resolve through ``__getattr__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from regbot.profiles.formats import (
    NEEDS_OUTSIDE_TIME,
    PROFILE_SUFFIXES,
    detect_format,
    parse_profile,
    read_profile_bytes,
)
from regbot.profiles.gcpu import TRIVIALITY_FLOOR, GcpuMatrix, build_gcpu
from regbot.profiles.model import (
    FrameInfo,
    ParseOptions,
    ProfileSamples,
    Series,
    parse_frame,
    subroutine_of,
)
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.series_csv import write_series_csv
from regbot.profiles.series_files import (
    find_series_files,
    normalise_points,
    read_series_files,
)
from regbot.profiles.series_jsonl import write_series_jsonl
from regbot.profiles.stacks import StackTable
from regbot.profiles.store import SampleStore, aggregate_records, bucket_start, locked, open_store

if TYPE_CHECKING:
    from regbot.profiles.chrometrace import parse_chrometrace
    from regbot.profiles.folded import parse_folded
    from regbot.profiles.perf_script import parse_perf_script
    from regbot.profiles.pprof import parse_pprof
    from regbot.profiles.speedscope import parse_speedscope

_FORMAT_READERS = {
    "parse_folded": "folded",
    "parse_pprof": "pprof",
    "parse_speedscope": "speedscope",
    "parse_chrometrace": "chrometrace",
    "parse_perf_script": "perf-script",
}


def __getattr__(name: str) -> Any:
    if name in _FORMAT_READERS:
        from regbot.profiles.formats import reader

        return reader(_FORMAT_READERS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "NEEDS_OUTSIDE_TIME",
    "PROFILE_SUFFIXES",
    "TRIVIALITY_FLOOR",
    "FrameInfo",
    "GcpuMatrix",
    "ParseOptions",
    "ProfileSamples",
    "SampleIndex",
    "SampleStore",
    "Series",
    "StackTable",
    "aggregate_records",
    "bucket_start",
    "build_gcpu",
    "detect_format",
    "find_series_files",
    "locked",
    "normalise_points",
    "open_store",
    "parse_chrometrace",
    "parse_folded",
    "parse_frame",
    "parse_perf_script",
    "parse_pprof",
    "parse_profile",
    "parse_speedscope",
    "read_profile_bytes",
    "read_series_files",
    "subroutine_of",
    "write_series_csv",
    "write_series_jsonl",
]
