"""The ``Source`` protocol: where a run's series come from. Each configured source (profiles,
series files, Prometheus, and Pyroscope in ``bot/sources/pyroscope.py``) is one object whose
``fetch(window)`` returns its series for the release window; ``gather_series`` asks each in turn
and counts what it gave (for the missing-baseline check). Sources only read; none writes to the
state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from regbot.bot.config import PrometheusSource
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.model import Series
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.series_files import find_series_files, read_series_files


@dataclass(frozen=True, slots=True)
class FetchWindow:
    """The span a run asks its sources for, [start_s, end_s] in epoch seconds."""

    start_s: float
    end_s: float


@runtime_checkable
class Source(Protocol):
    """A source of series: ``name`` is its key under ``sources:`` in ``regbot.yml``."""

    @property
    def name(self) -> str: ...

    def fetch(self, window: FetchWindow) -> list[Series]: ...


@dataclass(frozen=True, slots=True)
class ProfileSource:
    """gCPU series (SPEC §3) of every non-trivial frame in a sample store's index. The store
    holds what was ingested; its buckets outside the window are left to detection's windows."""

    index: SampleIndex
    gcpu_floor: float
    name: str = "profiles"

    def fetch(self, window: FetchWindow) -> list[Series]:
        return build_gcpu(self.index, floor=self.gcpu_floor).series()


@dataclass(frozen=True, slots=True)
class SeriesFileSource:
    """Series files (SPEC §2): the files named, and those in the folders named."""

    paths: Sequence[Path]
    name: str = "series"

    def fetch(self, window: FetchWindow) -> list[Series]:
        files = find_series_files(self.paths)
        return read_series_files(files) if files else []


@dataclass(frozen=True, slots=True)
class PrometheusQueries:
    """The configured PromQL range queries over the window (``bot/sources/prometheus.py``)."""

    settings: PrometheusSource
    name: str = "prometheus"

    def fetch(self, window: FetchWindow) -> list[Series]:
        from regbot.bot.sources.prometheus import fetch_prometheus_series

        return fetch_prometheus_series(self.settings, window.start_s, window.end_s)
