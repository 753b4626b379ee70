"""The peers of the detection benchmark, on the same series as regbot: ruptures Binseg and Pelt
(l2, penalty 3·log(n)·σ̂² with σ̂ from the MAD of first differences), a plain CUSUM and Apache
Otava (``peers.py``); a peer reports a series when it places an upward change point in the
analysis window."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

INSTALL_HINT = "pip install -e '.[bench]'"


def noise_sigma(values: np.ndarray) -> float:
    return float(
        1.4826 * np.median(np.abs(np.diff(values) - np.median(np.diff(values)))) / math.sqrt(2)
    )


def upward_in_window(values: np.ndarray, breakpoints: list[int], lo: int, hi: int) -> bool:
    """A peer reports a series when one of its change points lies in [lo, hi) and the segment
    after it has a higher mean than the segment before it."""
    edges = [0, *sorted(b for b in breakpoints if 0 < b < len(values)), len(values)]
    for i in range(1, len(edges) - 1):
        b = edges[i]
        if lo <= b < hi and values[b : edges[i + 1]].mean() > values[edges[i - 1] : b].mean():
            return True
    return False


def upward_points(x: np.ndarray, breakpoints: list[int], lo: int, hi: int) -> list[int]:
    """Change points in [lo, hi) after which the (oriented) mean rises."""
    edges = [0, *sorted(b for b in breakpoints if 0 < b < len(x)), len(x)]
    return [
        edges[i]
        for i in range(1, len(edges) - 1)
        if lo <= edges[i] < hi
        and x[edges[i] : edges[i + 1]].mean() > x[edges[i - 1] : edges[i]].mean()
    ]


def peer_rows(series, lo: int, hi: int, use_otava: bool) -> dict[str, tuple[list[bool], float]]:
    """method -> (reported per series, seconds per series)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from plain_cusum import plain_cusum

    rows: dict[str, tuple[list[bool], float]] = {}
    arrays = [np.asarray(s.values, dtype=np.float64) for s in series]
    try:
        import ruptures as rpt
    except ImportError:
        print(f"ruptures is not installed; peers skipped ({INSTALL_HINT})")
        rpt = None
    if rpt is not None:
        for name, make in (
            ("ruptures Binseg l2", lambda: rpt.Binseg(model="l2", min_size=3, jump=1)),
            # Pelt with the l2 cost, in ruptures' C code (KernelCPD with the linear kernel is the
            # same cost and search; the pure-Python Pelt is O(n^2) per series here).
            ("ruptures Pelt l2 (KernelCPD)", lambda: rpt.KernelCPD(kernel="linear", min_size=3)),
        ):
            flags, t = [], time.perf_counter()
            for x in arrays:
                pen = 3 * math.log(len(x)) * max(noise_sigma(x), 1e-12) ** 2
                bkps = make().fit(x).predict(pen=pen)[:-1]
                flags.append(upward_in_window(x, bkps, lo, hi))
            rows[name] = (flags, (time.perf_counter() - t) / len(arrays))
    flags, t = [], time.perf_counter()
    for x in arrays:
        sigma = max(noise_sigma(x), 1e-12)
        flags.append(upward_in_window(x, plain_cusum((x - np.median(x)) / sigma), lo, hi))
    rows["plain CUSUM k=0.5 h=5"] = (flags, (time.perf_counter() - t) / len(arrays))
    if use_otava:
        from peers import OtavaUnavailable, run_otava_timed

        try:
            found, seconds, versions = run_otava_timed(arrays)
            rows[f"otava e-divisive {versions['otava']}"] = (
                [upward_in_window(x, b, lo, hi) for x, b in zip(arrays, found)],
                float(np.mean(seconds)),
            )
        except OtavaUnavailable as error:
            print(f"otava row skipped: {error}")
    return rows


def binseg_points(arrays: list[np.ndarray]) -> tuple[list[list[int]], float]:
    import ruptures as rpt

    t, out = time.perf_counter(), []
    for x in arrays:
        pen = 3 * math.log(len(x)) * max(noise_sigma(x), 1e-12) ** 2
        out.append(rpt.Binseg(model="l2", min_size=3, jump=1).fit(x).predict(pen=pen)[:-1])
    return out, (time.perf_counter() - t) / max(len(arrays), 1)
