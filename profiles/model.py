"""Data types of the profiles package: frames, samples read from one profile, and series."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

# `name (file:line)` or `name (file)`: py-spy's form, also used for frames regbot renders from
# pprof, speedscope and chrometrace records (which carry function, file and line separately).
# The file part must look like a path or a pseudo-file (`<frozen ...>`, `<string>`) so that C++
# argument lists such as `foo (int)` are not mistaken for a file.
_NAME_FILE_LINE = re.compile(r"^(?P<function>.+?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
# stackcollapse-perf's annotation suffixes: kernel, JIT, inlined, and Java's interpreted/compiled.
_ANNOTATION = re.compile(r"_\[[kjiwe]\]$")


@dataclass(frozen=True, slots=True)
class FrameInfo:
    """One stack frame: the profiler's own text, and what could be parsed out of it.

    ``subroutine`` is the text with the line number removed (SPEC §2): py-spy's
    ``handle (app/views.py:42)`` becomes ``handle (app/views.py)``; a frame without a file or
    line keeps its text, so ``inner`` stays ``inner`` and ``foo_[k]`` stays ``foo_[k]``.
    """

    text: str
    function: str
    file: str | None = None
    line: int | None = None

    @property
    def subroutine(self) -> str:
        if self.line is None:
            return self.text
        return f"{self.function} ({self.file})" if self.file else self.function


def _looks_like_file(text: str) -> bool:
    return bool(text) and ("." in text or "/" in text or "\\" in text or text.startswith("<"))


@lru_cache(maxsize=1 << 18)
def parse_frame(text: str) -> FrameInfo:
    """Split a frame's text into function, file and line where its form allows.

    Forms understood: ``name (file:line)`` / ``name (file)`` (py-spy, and regbot's rendering of
    pprof, speedscope and chrometrace frames); stackcollapse annotations ``name_[k]`` (kernel),
    ``_[j]`` (JIT), ``_[i]`` (inlined) whose function is the bare name; anything else
    (``[unknown]``, ``[libc.so.6]``, C++ signatures, Go and Java names) is a function with no file.
    """
    match = _NAME_FILE_LINE.match(text)
    if match and _looks_like_file(match.group("file")):
        line = match.group("line")
        return FrameInfo(
            text, match.group("function"), match.group("file"), int(line) if line else None
        )
    return FrameInfo(text, _ANNOTATION.sub("", text))


def render_frame(function: str, file: str | None, line: int | None) -> str:
    """The text regbot gives a frame read from a structured format: ``function (file:line)``."""
    if not file:
        return function or "[unknown]"
    if line:
        return f"{function} ({file}:{line})"
    return f"{function} ({file})"


def subroutine_of(text: str) -> str:
    """The subroutine a frame's text belongs to (its series is ``gcpu:<subroutine>``)."""
    return parse_frame(text).subroutine


@dataclass(frozen=True, slots=True)
class ParseOptions:
    """Choices a parser needs beyond the bytes: ``sample_type`` picks pprof's value (by type
    name such as ``cpu`` or ``samples``; None means the first sample type)."""

    sample_type: str | None = None


@dataclass(frozen=True, slots=True)
class ProfileSamples:
    """The samples of one profile, as parallel arrays against a shared ``StackTable``.

    ``times_s`` are epoch seconds (float64), ``stack_ids`` index the table's stacks (int64),
    ``weights`` are the sample values (float64: a count of samples, or the configured sample
    type's value such as CPU nanoseconds, or microseconds on a chrometrace timeline). Rows need
    not be unique; the store sums them per time bucket.
    """

    source: str
    times_s: np.ndarray
    stack_ids: np.ndarray
    weights: np.ndarray
    sample_type: str = "samples"


@dataclass(frozen=True, slots=True)
class Series:
    """One metric series: points at epoch seconds, in ascending time order.

    ``kind`` is ``gcpu``, ``cpu``, ``latency``, ``throughput``... (SPEC §2). For gCPU series the
    values are shares in [0, 1].
    """

    id: str
    kind: str
    timestamps_s: np.ndarray
    values: np.ndarray
    unit: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


def last_time_s(series: Iterable[Series]) -> float | None:
    """The latest timestamp of any of ``series`` (None when none has a point): where the data
    ends, the default end of `regbot detect`'s windows."""
    return max((float(s.timestamps_s[-1]) for s in series if len(s.timestamps_s)), default=None)
