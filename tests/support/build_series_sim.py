"""Per-build benchmark series with labelled lasting changes (the sparse-series scenario).

A CI system builds a product at irregular times (a few builds a day, quiet nights, longer gaps at
weekends); every build runs a set of benchmarks, each 1-5 times, and every repetition is written
as its own row with the build's timestamp (SPEC §2 CSV, repeated rows). The series are the
benchmarks' timings (kind ``latency``: higher is worse).

What a series may hold, each drawn from the seed:

* noise: normal (0.4-1.5% of the level), heavy-tailed (Student t, 2.5 degrees of freedom), or
  *bimodal*: the level flips between two or three modes 3-8% apart, staying in a mode for a few
  builds (shared hardware); a burst in an upper mode is not a regression;
* 0-3 labelled lasting steps of +1-25% (relative), at least 150 builds apart;
* a labelled slow drift (+3-6% over 500-900 builds) on a few series, labelled once, at its start
  (``Label.end_index`` gives its last build);
* unlabelled decoys: improvements (lasting drops), transient spikes of 1-3 builds, and on one
  series a spike on its last two builds (no report is due until the data confirms it).

Indices are the series' own build indices (its n-th distinct timestamp), the TCPDBench convention:
a label's ``index`` is the first build at the new level. ``simulate_builds(..., seed)`` returns
``(series, labels)`` and is deterministic in its seed.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HOUR_S = 3600.0
START_S = 1_700_000_000.0


@dataclass(frozen=True, slots=True)
class BuildSeries:
    """One benchmark: ``build_times_s`` (its distinct build timestamps, ascending), and per build
    its repeated measurements ``repeats[i]`` (1-5 values, all at ``build_times_s[i]``).
    ``noise``: "normal", "heavy" or "bimodal"; ``decoys``: the unlabelled events planted, as
    (kind, first build) with kind "improvement", "spike" or "end_spike"."""

    id: str
    noise: str
    build_times_s: np.ndarray
    repeats: tuple[np.ndarray, ...]
    decoys: tuple[tuple[str, int], ...] = ()

    @property
    def build_means(self) -> np.ndarray:
        """One value per build: the mean of its repeats (what the series reader keeps)."""
        return np.array([r.mean() for r in self.repeats])


@dataclass(frozen=True, slots=True)
class Label:
    """A labelled lasting change: ``kind`` "step" or "drift"; ``index`` its first build at the new
    level (for a drift, its first rising build; ``end_index`` its last); ``relative_delta`` the
    final change over the level before."""

    series_id: str
    kind: str
    index: int
    end_index: int
    time_s: float
    relative_delta: float


@dataclass(frozen=True, slots=True)
class BuildScenario:
    """Fleet size: ``n_series`` benchmarks over ``n_builds`` builds of the product; each series
    is measured from a start build so that it holds between ``min_builds`` and ``n_builds``."""

    n_series: int = 40
    n_builds: int = 3000
    min_builds: int = 1500


def build_times(n_builds: int, rng: np.random.Generator) -> np.ndarray:
    """Irregular build times: 1-12 builds a day by day, exponential gaps, a 2-day gap about
    every fifth day and nights without builds."""
    times = []
    t = START_S
    while len(times) < n_builds:
        gap_h = rng.exponential(24.0 / rng.uniform(1, 12))
        if rng.random() < 0.03:
            gap_h += 48.0
        t += max(gap_h, 0.05) * HOUR_S
        hour = (t % 86400.0) / HOUR_S
        if 1.0 <= hour < 6.0:  # no builds at night: wait for the morning
            t += (6.0 - hour) * HOUR_S
        times.append(round(t))
    return np.array(times, dtype=np.float64)


def simulate_builds(
    scenario: BuildScenario = BuildScenario(), seed: int = 0
) -> tuple[list[BuildSeries], list[Label]]:
    """Generate the scenario: (series, labels), deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    clock = build_times(scenario.n_builds, rng)
    series: list[BuildSeries] = []
    labels: list[Label] = []
    end_spike = int(rng.integers(scenario.n_series))
    for s in range(scenario.n_series):
        sid = f"bench/{s:03d}"
        n = int(rng.integers(scenario.min_builds, scenario.n_builds + 1))
        times = clock[scenario.n_builds - n :]
        noise = str(rng.choice(["normal", "normal", "heavy", "bimodal"]))
        level, own, decoys = _level(n, rng, sid, times, drift=s % 8 == 3)
        labels += own
        if s == end_spike:
            level[-2:] *= 1.2
            decoys.append(("end_spike", n - 2))
        values = level * _modes(n, noise, rng)
        repeats = []
        sd = rng.uniform(0.004, 0.015)
        for i in range(n):
            k = int(rng.integers(1, 6))
            eps = rng.standard_t(2.5, k) * sd * 0.6 if noise == "heavy" else rng.normal(0, sd, k)
            repeats.append(values[i] * (1.0 + eps))
        series.append(BuildSeries(sid, noise, times, tuple(repeats), tuple(decoys)))
    return series, labels


def _level(
    n: int, rng: np.random.Generator, sid: str, times: np.ndarray, drift: bool
) -> tuple[np.ndarray, list[Label], list[tuple[str, int]]]:
    """A series' level per build: its lasting steps, drift and decoys; its labels and decoys."""
    level = np.full(n, float(rng.uniform(5.0, 500.0)))
    labels: list[Label] = []
    # Change positions leave room for a history (150 builds) and a confirmation (20 builds).
    slots = np.arange(150, n - 20, 150)
    rng.shuffle(slots)
    taken = list(slots[: int(rng.integers(0, 4))])
    if drift and len(slots) > 4:
        start = int(slots[4])
        length = int(min(rng.integers(500, 900), n - 40 - start))
        if length >= 200:
            rise = float(rng.uniform(0.03, 0.06))
            ramp = np.clip((np.arange(n) - start) / length, 0.0, 1.0)
            level *= 1.0 + rise * ramp
            labels.append(Label(sid, "drift", start, start + length, float(times[start]), rise))
            taken = [k for k in taken if not start - 150 <= k <= start + length + 150]
    for k in sorted(int(k) for k in taken):
        size = float(np.exp(rng.uniform(np.log(0.01), np.log(0.25))))
        level[k:] *= 1.0 + size
        labels.append(Label(sid, "step", k, k, float(times[k]), size))
    decoys: list[tuple[str, int]] = []
    for k in slots[4 + drift : 6 + drift]:  # decoys at free slots
        k = int(k) + int(rng.integers(-40, 40))
        if any(abs(k - lab.index) < 60 for lab in labels) or not 60 < k < n - 30:
            continue
        if rng.random() < 0.5:
            level[k:] *= 1.0 - rng.uniform(0.03, 0.15)
            decoys.append(("improvement", k))
        else:
            width = int(rng.integers(1, 4))
            level[k : k + width] *= 1.0 + rng.uniform(0.1, 0.3)
            decoys.append(("spike", k))
    return level, labels, decoys


def _modes(n: int, noise: str, rng: np.random.Generator) -> np.ndarray:
    """Multiplicative mode per build: 1 except for bimodal series, where a sticky chain flips
    between two or three modes (mean stay 4-15 builds)."""
    if noise != "bimodal":
        return np.ones(n)
    count = int(rng.integers(2, 4))
    offsets = np.concatenate([[0.0], np.sort(rng.uniform(0.03, 0.08, count - 1))])
    stay = rng.uniform(4, 15)
    state = np.empty(n, dtype=np.int64)
    current = 0
    for i in range(n):
        if rng.random() < 1.0 / stay:
            current = int(rng.integers(count))
        state[i] = current
    return 1.0 + offsets[state]


def write_builds_csv(series: list[BuildSeries], path: Path) -> int:
    """SPEC §2 CSV (``timestamp,series,value,kind``), one row per repetition; returns the rows."""
    rows = 0
    with path.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["timestamp", "series", "value", "kind"])
        for s in series:
            for t, values in zip(s.build_times_s, s.repeats):
                for v in values:
                    writer.writerow([int(t), s.id, f"{v:.6g}", "latency"])
                    rows += 1
    return rows
