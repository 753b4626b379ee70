"""Scoring the limit and the peers on a fleet by the rules regbot's report is scored by: the
maximum-likelihood single change point (whole series, or the analysis window only), and a
peer's change points on a sample of the fleet (every planted event plus quiet series)."""

from __future__ import annotations

from collections import Counter

import numpy as np
from detect_fleet_tally import TOLERANCE_BUCKETS, Tally, decoy_type, multiple_of
from detect_peers import upward_points


def oriented(series) -> np.ndarray:
    values = np.asarray(series.values, dtype=np.float64)
    return -values if series.kind == "throughput" else values


def ml_change_point(x: np.ndarray, lo: int = 2, hi: int | None = None) -> np.ndarray:
    """Per row, the least-squares single split (first index of the new segment) searched over
    [lo, hi) (default: the whole row, at least 2 points each side): argmax of
    k(n−k)/n·(mean₁ − mean₂)²."""
    n = x.shape[1]
    k = np.arange(max(lo, 1), min(hi or n - 1, n))
    s = np.cumsum(x, axis=1)[:, k - 1]
    total = x.sum(axis=1, keepdims=True)
    gain = (s - k * total / n) ** 2 * n / (k * (n - k))
    return k[np.argmax(gain, axis=1)]


def score_ml(series_by_id: dict, truth, tally: Tally, in_window: bool = False) -> None:
    """Share of true regressions whose origin series' ML split lies within ±6 buckets; searched
    over the whole series, or over the analysis window only (what a detector searching the
    window, as regbot does, can reach)."""
    times = next(iter(series_by_id.values())).timestamps_s
    events = [e for e in truth.events if e.kind in ("step", "cascade")]
    x = np.stack([oriented(series_by_id[e.series_ids[0]]) for e in events])
    lo = int(np.searchsorted(times, truth.analysis_start_s))
    hi = int(np.searchsorted(times, truth.extended_start_s))
    placed = ml_change_point(x, lo, hi) if in_window else ml_change_point(x)
    for e, k in zip(events, placed):
        true_index = int(np.searchsorted(times, e.change_time_s))
        m = multiple_of(e)
        tally.total[m] += 1
        tally.found[m] += abs(int(k) - true_index) <= TOLERANCE_BUCKETS
        tally.errors.append((m, int(k) - true_index))


def peer_subset(series: list, truth, limit: int, seed: int) -> list[int]:
    """Every series of a planted event, plus a seeded sample of quiet series up to ``limit``."""
    event_of = truth.event_of()
    events = [i for i, s in enumerate(series) if event_of[s.id].kind != "none"]
    quiet = [i for i, s in enumerate(series) if event_of[s.id].kind == "none"]
    rng = np.random.default_rng(seed)
    extra = rng.choice(quiet, size=min(max(limit - len(events), 0), len(quiet)), replace=False)
    return sorted(events + [int(i) for i in extra])


def score_peer(
    series: list, subset: list[int], points: list[list[int]], truth, tally: Tally
) -> None:
    """One peer's change points on ``subset`` scored like regbot's reports; quiet false
    positives scaled from the subset's quiet series to the fleet's."""
    event_of = truth.event_of()
    times = series[0].timestamps_s
    lo = int(np.searchsorted(times, truth.analysis_start_s))
    hi = int(np.searchsorted(times, truth.extended_start_s))
    reported: dict[str, list[int]] = {}
    for i, bkps in zip(subset, points):
        up = upward_points(oriented(series[i]), bkps, lo, hi)
        if up:
            reported[series[i].id] = up
    in_subset = Counter(decoy_type(event_of[series[i].id].kind) for i in subset)
    in_fleet = Counter(decoy_type(e.kind) for e in truth.events for _ in e.series_ids)
    tally.series += len(series)
    fp = Counter()
    for sid, found in reported.items():
        e = event_of[sid]
        true_index = int(np.searchsorted(times, e.change_time_s))
        if e.kind in ("step", "cascade"):
            if not any(abs(k - true_index) <= TOLERANCE_BUCKETS for k in found):
                fp["mistimed"] += 1
        elif e.kind != "creep":
            fp[decoy_type(e.kind)] += 1
    for kind, count in fp.items():
        tally.fp[kind] += count * in_fleet[kind] / max(in_subset[kind], 1)
    tally.unsampled |= {kind for kind in in_fleet if kind != "mistimed" and not in_subset[kind]}
    for e in truth.events:
        if e.kind not in ("step", "cascade"):
            continue
        true_index = int(np.searchsorted(times, e.change_time_s))
        m = multiple_of(e)
        tally.total[m] += 1
        tally.found[m] += any(
            abs(k - true_index) <= TOLERANCE_BUCKETS
            for sid in e.series_ids
            for k in reported.get(sid, [])
        )
