"""regbot.profiles: reading profilers' output into the sample store and gCPU series.

The entry points other packages use are re-exported here, resolved on first use (PEP 562) so
that importing one module (the series model) does not import the sample store's scipy;
importing them from their defining modules works as well. The format readers
(``parse_folded``, ``parse_pprof``...) resolve as ``formats.READERS`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from regbot.lazy_exports import resolver

if TYPE_CHECKING:
    from regbot.profiles.chrometrace import parse_chrometrace
    from regbot.profiles.folded import parse_folded
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
    from regbot.profiles.perf_script import parse_perf_script
    from regbot.profiles.pprof import parse_pprof
    from regbot.profiles.sample_index import SampleIndex
    from regbot.profiles.series_csv import write_series_csv
    from regbot.profiles.series_files import (
        find_series_files,
        normalise_points,
        read_series_files,
    )
    from regbot.profiles.series_jsonl import write_series_jsonl
    from regbot.profiles.speedscope import parse_speedscope
    from regbot.profiles.stacks import StackTable
    from regbot.profiles.store import (
        SampleStore,
        aggregate_records,
        bucket_start,
        locked,
        open_store,
    )

_FORMAT_READERS = {
    "parse_folded": "folded",
    "parse_pprof": "pprof",
    "parse_speedscope": "speedscope",
    "parse_chrometrace": "chrometrace",
    "parse_perf_script": "perf-script",
}


_HOME = {
    "FrameInfo": "model",
    "GcpuMatrix": "gcpu",
    "NEEDS_OUTSIDE_TIME": "formats",
    "PROFILE_SUFFIXES": "formats",
    "ParseOptions": "model",
    "ProfileSamples": "model",
    "SampleIndex": "sample_index",
    "SampleStore": "store",
    "Series": "model",
    "StackTable": "stacks",
    "TRIVIALITY_FLOOR": "gcpu",
    "aggregate_records": "store",
    "bucket_start": "store",
    "build_gcpu": "gcpu",
    "detect_format": "formats",
    "find_series_files": "series_files",
    "locked": "store",
    "normalise_points": "series_files",
    "open_store": "store",
    "parse_frame": "model",
    "parse_profile": "formats",
    "read_profile_bytes": "formats",
    "read_series_files": "series_files",
    "subroutine_of": "model",
    "write_series_csv": "series_csv",
    "write_series_jsonl": "series_jsonl",
}
_resolve = resolver(__name__, _HOME)


def __getattr__(name: str) -> Any:
    if name in _FORMAT_READERS:
        from regbot.profiles.formats import reader

        return reader(_FORMAT_READERS[name])
    return _resolve(name)


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
