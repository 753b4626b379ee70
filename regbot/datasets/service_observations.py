"""What the scenario's service was seen doing: py-spy-style folded profiles per 10-minute bucket
(each deploy's code from its deploy time to the next one) and the metric series with their
planted false alarms.

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from regbot.datasets.service_model import (
    ANALYSIS_S,
    BUCKET_S,
    DAY_S,
    EXTENDED_S,
    HANDLE,
    HOST,
    State,
)
from regbot.datasets.service_source import render
from regbot.datasets.service_stacks import Stacks, costs_of, stacks_of


def _write_profiles(
    folder: Path,
    rng: np.random.Generator,
    periods: list[tuple[int, int, Stacks]],
    kappa: float,
    samples: np.ndarray,
    rate: np.ndarray,
    mix: np.ndarray,
    first_s: int,
) -> None:
    folder.mkdir(parents=True)
    for start, end, stacks in periods:
        rows = np.arange((start - first_s) // BUCKET_S, (end - first_s) // BUCKET_S)
        share = kappa * stacks.work[None, :] * rate[rows, None] * mix[rows][:, stacks.group]
        idle = 1.0 - share.sum(axis=1)
        if idle.min() < 0.05:
            raise AssertionError("scenario service busier than its samples allow")
        counts = rng.multinomial(samples[rows], np.column_stack([share, idle]))
        for row, bucket in zip(counts, rows, strict=True):
            lines = [f"{t} {n}" for t, n in zip(stacks.texts, row[:-1].tolist()) if n]
            lines.append(f"{stacks.idle} {int(row[-1])}")
            at = first_s + int(bucket) * BUCKET_S
            (folder / f"{at}-{HOST}.folded").write_text("\n".join(lines) + "\n")


def _write_metrics(
    folder: Path,
    rng: np.random.Generator,
    service: str,
    times: np.ndarray,
    work_ratio: np.ndarray,
    rate: np.ndarray,
    deploy_s: int,
) -> list[str]:
    """latency_p50 (rises with the culprit), throughput (flat), and the planted false alarms;
    returns the false alarms' ids."""
    n = len(times)
    cpu_ms, io_ms, rps = rng.uniform(12, 25), rng.uniform(20, 40), rng.uniform(150, 400)
    latency = (io_ms + cpu_ms * work_ratio) * np.exp(rng.normal(0, 0.012, n))
    throughput = rps * rate * np.exp(rng.normal(0, 0.005, n))
    upstream = rng.uniform(90, 150) * np.exp(rng.normal(0, 0.03, n))
    begin = deploy_s + BUCKET_S * int(rng.integers(1, 7))
    spike = (times >= begin) & (times < begin + BUCKET_S * int(rng.integers(3, 7)))
    upstream[spike] *= rng.uniform(1.5, 2.2)
    trough = deploy_s - 3600 * rng.uniform(1, 3)
    amplitude = rng.uniform(6, 10)
    wait = 30 - amplitude * np.cos(2 * np.pi * (times - trough) / DAY_S) + rng.normal(0, 0.8, n)
    memory = rng.uniform(400, 900) + rng.normal(0, 4, n)
    prefix = f"{service}/"
    rows = ["timestamp,series,value,kind,unit"]
    columns = (
        ("latency_p50", latency, "latency", "ms"),
        ("throughput", throughput, "throughput", "rps"),
        ("upstream_p99", upstream, "latency", "ms"),
        ("report_queue_wait", wait, "latency", "ms"),
        ("memory_rss", memory, "memory", "MB"),
    )
    for name, values, kind, unit in columns:
        rows.extend(
            f"{int(t)},{prefix}{name},{v:.4f},{kind},{unit}"
            for t, v in zip(times.tolist(), values.tolist())
        )
    folder.mkdir(parents=True)
    (folder / "service.csv").write_text("\n".join(rows) + "\n")
    return [f"{prefix}upstream_p99", f"{prefix}report_queue_wait", f"{prefix}memory_rss"]


def write_observations(
    rng: np.random.Generator,
    root: Path,
    state: State,
    snapshots: list[State],
    deploy_times: list[int],
    kappa: float,
) -> list[str]:
    """Profiles (each deploy's code from its deploy time to the next one) and metric series;
    returns the metric series' planted false alarms."""
    first_s, last_s = deploy_times[0], deploy_times[-1]
    end_s = last_s + ANALYSIS_S + EXTENDED_S
    periods = []
    for k, snapshot in enumerate(snapshots):
        stop = deploy_times[k + 1] if k + 1 < len(deploy_times) else end_s
        periods.append((deploy_times[k], stop, stacks_of(snapshot, render(snapshot))))
    buckets = (end_s - first_s) // BUCKET_S
    rate = np.exp(rng.normal(0, 0.015, buckets))
    groups = len(state.functions[HANDLE].calls) + 1
    mix = np.exp(rng.normal(0, 0.03, (buckets, groups)))
    mix[:, 0] = 1.0
    per_bucket = int(rng.choice([4, 5, 6, 8])) * BUCKET_S
    samples = per_bucket - rng.poisson(2, buckets)
    _write_profiles(root / "profiles", rng, periods, kappa, samples, rate, mix, first_s)
    total = costs_of(state).total
    ratio = np.ones(buckets)
    for start, stop, stacks in periods:
        ratio[(start - first_s) // BUCKET_S : (stop - first_s) // BUCKET_S] = (
            stacks.total_work / total
        )
    times = first_s + BUCKET_S * np.arange(buckets)
    return _write_metrics(root / "metrics", rng, state.service, times, ratio, rate, last_s)
