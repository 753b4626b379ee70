"""The series of one run, from every configured source (SPEC §5 ``sources``): gCPU series from
profiles, §2 series files, and Prometheus queries, each behind the ``Source`` protocol
(``bot/sources/source.py``).

Profiles may be a store made by ``regbot ingest`` (a folder holding ``manifest.json``) or profile
files and folders. Files are ingested into a store kept beside the state database
(``<state>.profiles/``), so a re-run reads each file once (the store's re-ingest rule), and the
store is what attribution queries. Without ``sources.profiles``, the store ``regbot scrape``
fills (``sources.scrape.store``) is the profiles, once it exists.

``sources.pyroscope`` is the other way to get stacks (``bot/sources/pyroscope.py``): its gCPU
series have the same ids as a store's, so a config names either ``sources.profiles`` or it
(with ``sources.pyroscope``, a scrape store is not read), and its stacks are what attribution
queries.

Series whose kind is one of ``attribution.signal_kinds`` (feature flags, config rollouts) are set
aside as signals for the correlation part; they describe a set-up, not performance, and are never
run through detection.

``--now`` (SPEC §5: data after it is ignored) cuts the run's series at that time
(:func:`series_at`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from regbot.attribution.signal_correlation import Signal, signal_names
from regbot.bot.config import Config
from regbot.bot.sources.profiles import collect_profile_paths, ingest_profiles
from regbot.bot.sources.source import (
    FetchWindow,
    ProfileSource,
    PrometheusQueries,
    SeriesFileSource,
    Source,
)
from regbot.errors import InputError
from regbot.profiles.model import ParseOptions, Series
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store


@dataclass(frozen=True, slots=True)
class RunSeries:
    """What the sources gave for one run: performance series, signals, the profile index (None
    without profiles) and, per source, how many series it gave (for missing-baseline checks)."""

    series: list[Series]
    signals: list[Signal]
    index: SampleIndex | None
    counts: dict[str, int] = field(default_factory=dict)


def profile_store_dir(config: Config) -> Path:
    """Where profile files named in the config are ingested."""
    return config.state.with_name(config.state.name + ".profiles")


def open_profiles(config: Config) -> SampleIndex | None:
    """The sample index over the configured profiles: an existing store, or the files ingested
    into the run's own store."""
    profiles = config.sources.profiles
    scrape = config.sources.scrape
    if not profiles and scrape is not None and (scrape.store / "manifest.json").is_file():
        profiles = (scrape.store,)
    stores = [p for p in profiles if (p / "manifest.json").is_file()]
    files = [p for p in profiles if p not in stores]
    if stores and files:
        raise InputError(
            "sources.profiles", "either one store made by `regbot ingest` or profile files"
        )
    if len(stores) > 1:
        raise InputError("sources.profiles", "one sample store", ", ".join(map(str, stores)))
    if stores:
        store = open_store(stores[0])
        return SampleIndex.of_store(store)
    if not files:
        return None
    paths = collect_profile_paths(files)
    if not paths:
        return None
    store_dir = profile_store_dir(config)
    ingest_profiles(
        paths,
        store_dir,
        bucket_width_s=int(config.profiles.bucket_s),
        options=ParseOptions(sample_type=config.profiles.sample_type),
    )
    store = open_store(store_dir)
    return SampleIndex.of_store(store)


def _as_signal(series: Series) -> Signal:
    return Signal(
        series.id,
        signal_names(series.id, series.labels),
        np.asarray(series.timestamps_s, np.float64),
        np.asarray(series.values, np.float64),
    )


def split_signals(
    series: Sequence[Series], signal_kinds: frozenset[str]
) -> tuple[list[Series], list[Signal]]:
    """Performance series, and the signal series (by kind) for the correlation part."""
    performance = [s for s in series if s.kind not in signal_kinds]
    signals = [_as_signal(s) for s in series if s.kind in signal_kinds]
    return performance, signals


def configured_sources(config: Config) -> list[Source]:
    """The sources ``regbot.yml`` configures, in the order their series are listed: profiles
    (opened, or ingested into the run's store, here), series files, Prometheus, Pyroscope."""
    sources: list[Source] = []
    pyroscope = config.sources.pyroscope
    if pyroscope is not None and config.sources.profiles:
        raise InputError(
            "sources.pyroscope", "either sources.profiles or sources.pyroscope (both give gcpu:)"
        )
    index = open_profiles(config) if pyroscope is None else None
    if index is not None:
        sources.append(ProfileSource(index, config.profiles.gcpu_floor))
    if config.sources.series:
        sources.append(SeriesFileSource(config.sources.series))
    if config.sources.prometheus is not None:
        sources.append(PrometheusQueries(config.sources.prometheus))
    if pyroscope is not None:
        from regbot.bot.sources.pyroscope import PyroscopeStacks

        sources.append(PyroscopeStacks(pyroscope, config.profiles.gcpu_floor))
    return sources


def gather_series(config: Config, start_s: float, end_s: float) -> RunSeries:
    """Every configured source's series for ``[start_s, end_s]``, and how many each gave."""
    counts: dict[str, int] = {}
    collected: list[Series] = []
    index = None
    window = FetchWindow(start_s, end_s)
    for source in configured_sources(config):
        fetched = source.fetch(window)
        collected += fetched
        counts[source.name] = len(fetched)
        carried = getattr(source, "index", None)  # a profile source's stacks, for attribution
        if isinstance(carried, SampleIndex):
            index = carried
    performance, signals = split_signals(collected, config.attribution.signal_kinds)
    return RunSeries(performance, signals, index, counts)


def cut_at(series: Sequence[Series], now_s: float) -> list[Series]:
    """The series as they were at ``now_s`` (SPEC §5: data after ``--now`` is ignored)."""
    cut = []
    for s in series:
        keep = np.asarray(s.timestamps_s) <= now_s
        cut.append(
            Series(s.id, s.kind, s.timestamps_s[keep], s.values[keep], s.unit, s.labels)
            if not keep.all()
            else s
        )
    return cut


def series_at(run_series: RunSeries, now_s: float) -> RunSeries:
    """The run's performance series as they were at ``now_s``; the signals, the profile index
    and the per-source counts as gathered."""
    return replace(run_series, series=cut_at(run_series.series, now_s))
