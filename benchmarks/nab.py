"""NAB level-shift benchmark: recall of lasting level shifts and false alarms outside NAB's labelled
windows, for regbot's binary segmentation, ruptures Pelt (l2), a plain CUSUM and Otava.

NAB (Ahmad et al. 2017) labels anomaly windows, not change points, and most anomalies are not
level shifts. A labelled window ``[a, b]`` (inclusive point indices, W = b − a + 1 points) counts
as a **lasting level shift** by this automatic rule:

* before = the W points before the window, after = the W points after it; both must have at least
  W/2 points (a window at the edge of a file cannot show that a shift lasts);
* σ_r = 1.4826 · the median absolute deviation of both sides, each around its own median (pooled
  MAD); when that is 0 (mostly constant data) 1.2533 · the mean absolute deviation, and when that
  is 0 too the sides are constant and any difference of medians qualifies;
* the median of ``after`` differs from the median of ``before`` by more than 3 σ_r, and so does
  the median of each half of ``after``, on the same side (the shift *stays*).

Scoring, per method: a level shift is recalled when a detection lies in ``[a − margin, b + margin]``
(margin 5 points by default); a false alarm is a detection outside every labelled window so
widened (level shift or not), counted per 1,000 points outside them. NAB's own scoring (earliest
detection, probationary first 15%, its 0–100 scale) is not used: every method here sees the
whole z-scored series at once (the CUSUM reads it in order).

Methods: regbot binseg (alpha 0.01); ruptures Pelt, cost l2, pen = 3·log(n) on z-scored data (as
``tcpd.py``), computed with ruptures' KernelCPD(kernel="linear") — the same cost and penalty in
ruptures' C Pelt, identical to ``Pelt(model="l2")`` on all TCPD series (``tcpd.py`` checks) but
usable at NAB's 1,000–22,000 points where the pure-Python Pelt takes minutes per series; the
plain CUSUM of ``plain_cusum.py``; Otava's E-divisive from ``peers.py`` (``--no-otava`` skips).

    python benchmarks/nab.py [--datasets ../shared/datasets] [--margin 5] [--no-otava]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from peers import DEFAULT_VENV, OtavaUnavailable, require_ruptures, run_otava_timed
from plain_cusum import plain_cusum

from regbot.detection.binseg import binary_segmentation
from regbot.detection.stage_settings import ChangePointSettings

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATASETS = REPO / ".." / "shared" / "datasets"
SHIFT_SIGMAS = 3.0

Detector = Callable[[np.ndarray], list[int]]


@dataclass
class NabSeries:
    key: str  # "<category>/<file>.csv"
    raw: np.ndarray  # as in the CSV
    values: np.ndarray  # z-scored (sample SD), what the detectors see
    windows: list[tuple[int, int]]  # inclusive point indices


@dataclass
class LevelShift:
    key: str
    window: tuple[int, int]
    median_before: float  # original units
    median_after: float
    sigmas: float  # (median after − median before) / σ_r


def load_nab(datasets: Path) -> list[NabSeries]:
    labels = json.loads((datasets / "nab" / "labels.json").read_text())
    out = []
    for key, windows in sorted(labels["windows"].items()):
        stamps, values = [], []
        with open(datasets / "nab" / key, newline="") as handle:
            for row in csv.DictReader(handle):
                stamps.append(row["timestamp"])
                values.append(float(row["value"]))
        times = np.array(stamps, dtype="datetime64[s]")
        spans = []
        for start, end in windows:  # "YYYY-MM-DD HH:MM:SS.ffffff", inclusive
            a = int(np.searchsorted(times, np.datetime64(start[:19]), "left"))
            b = int(np.searchsorted(times, np.datetime64(end[:19]), "right")) - 1
            spans.append((a, b))
        x = np.asarray(values)
        sd = x.std(ddof=1)
        out.append(NabSeries(key, x, (x - x.mean()) / (sd if sd > 0 else 1.0), spans))
    return out


def robust_sigma(before: np.ndarray, after: np.ndarray) -> float:
    deviations = np.concatenate(
        [np.abs(before - np.median(before)), np.abs(after - np.median(after))]
    )
    mad = 1.4826 * float(np.median(deviations))
    return mad if mad > 0 else 1.2533 * float(np.mean(deviations))


def level_shift(values: np.ndarray, window: tuple[int, int]) -> tuple[bool, float, float, float]:
    """(qualifies, median before, median after, shift in σ_r) for one window, by the rule above."""
    a, b = window
    width = b - a + 1
    before, after = values[max(0, a - width) : a], values[b + 1 : b + 1 + width]
    if len(before) < width / 2 or len(after) < width / 2:
        return False, math.nan, math.nan, math.nan
    base, level = float(np.median(before)), float(np.median(after))
    halves = [float(np.median(h)) for h in np.array_split(after, 2)]
    sigma = robust_sigma(before, after)
    if sigma == 0:
        shifts = [level - base, *(h - base for h in halves)]
        sigmas = math.copysign(math.inf, level - base) if level != base else 0.0
        ok = all(s != 0 and math.copysign(1, s) == math.copysign(1, shifts[0]) for s in shifts)
        return ok, base, level, sigmas
    shifts = [(level - base) / sigma, *((h - base) / sigma for h in halves)]
    ok = all(abs(s) > SHIFT_SIGMAS and np.sign(s) == np.sign(shifts[0]) for s in shifts)
    return ok, base, level, shifts[0]


def find_level_shifts(series: list[NabSeries]) -> list[LevelShift]:
    found = []
    for s in series:
        for window in s.windows:
            ok, base, level, sigmas = level_shift(s.raw, window)
            if ok:
                found.append(LevelShift(s.key, window, base, level, sigmas))
    return found


def detectors(rpt) -> dict[str, Detector]:
    def pelt_l2(z: np.ndarray) -> list[int]:
        algo = rpt.KernelCPD(kernel="linear", min_size=1).fit(z)
        return [int(b) for b in algo.predict(pen=3.0 * math.log(len(z)))[:-1]]

    return {
        "regbot binseg a=0.01": lambda z: binary_segmentation(z, ChangePointSettings(alpha=0.01)),
        "regbot binseg a=0.01 search-corrected": lambda z: binary_segmentation(
            z, ChangePointSettings(alpha=0.01), correct_for_search=True
        ),
        "ruptures Pelt l2 (C)": pelt_l2,
        "plain CUSUM k=0.5 h=5": plain_cusum,
    }


def run_all(series: list[NabSeries], rpt, otava: bool, venv: Path):
    """{method: ({key: change points}, {key: seconds})}."""
    runs = {}
    for name, detect in detectors(rpt).items():
        points, seconds = {}, {}
        for s in series:
            t = time.perf_counter()
            points[s.key] = sorted(int(p) for p in detect(s.values))
            seconds[s.key] = time.perf_counter() - t
        runs[name] = (points, seconds)
    if otava:
        try:
            found, elapsed, versions = run_otava_timed([s.values for s in series], venv)
        except OtavaUnavailable as error:
            print(f"otava row skipped: {error}")
        else:
            keys = [s.key for s in series]
            runs[f"otava e-divisive {versions['otava']}"] = (
                dict(zip(keys, found)),
                dict(zip(keys, elapsed)),
            )
    return runs


def hit(points: list[int], window: tuple[int, int], margin: int) -> bool:
    a, b = window
    return any(a - margin <= p <= b + margin for p in points)


def false_alarms(
    series: list[NabSeries], points: dict[str, list[int]], margin: int
) -> tuple[int, int]:
    """(detections outside every widened window, points outside them), summed over series."""
    alarms = outside = 0
    for s in series:
        inside = np.zeros(len(s.values), dtype=bool)
        for a, b in s.windows:
            inside[max(0, a - margin) : b + margin + 1] = True
        outside += int((~inside).sum())
        alarms += sum(1 for p in points[s.key] if not inside[p])
    return alarms, outside


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--margin", type=int, default=5, help="points either side of a window")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="Otava venv (peers.py)")
    parser.add_argument("--no-otava", action="store_true", help="skip the Otava row")
    args = parser.parse_args(argv)
    rpt = require_ruptures()
    datasets = args.datasets.resolve()
    if not (datasets / "nab" / "labels.json").exists():
        print(f"no NAB data at {datasets}/nab (set --datasets)", file=sys.stderr)
        return 2

    series = load_nab(datasets)
    n_windows = sum(len(s.windows) for s in series)
    n_points = sum(len(s.values) for s in series)
    shifts = find_level_shifts(series)
    print(
        f"{len(series)} NAB series, {n_points:,} points, {n_windows} labelled windows; "
        f"{len(shifts)} qualify as lasting level shifts (|shift| > {SHIFT_SIGMAS:g} robust SD "
        "over the next W points and in both halves of them, W = window length)"
    )
    runs = run_all(series, rpt, not args.no_otava, args.venv)

    print(
        f"\nlevel shifts recalled within ±{args.margin} points of the window; false alarms "
        "outside all widened windows"
    )
    print(f"{'method':<30} {'recall':>8} {'FA/1k pts':>10} {'FA':>7} {'cps':>7} {'s/series':>9}")
    for name, (points, seconds) in runs.items():
        recalled = sum(hit(points[ls.key], ls.window, args.margin) for ls in shifts)
        alarms, outside = false_alarms(series, points, args.margin)
        total = sum(len(p) for p in points.values())
        print(
            f"{name:<30} {recalled:>3}/{len(shifts):<4} {1000 * alarms / outside:>10.2f} "
            f"{alarms:>7} {total:>7} {np.mean(list(seconds.values())):>9.3f}"
        )

    names = list(runs)
    print("\nthe level shifts (x = recalled), columns in the order of the table above")
    print(f"{'series':<58} {'window':>13} {'before':>9} {'after':>9} {'/sd_r':>6}  hits")
    for ls in shifts:
        marks = "".join(
            "x" if hit(runs[n][0][ls.key], ls.window, args.margin) else "." for n in names
        )
        print(
            f"{ls.key:<58} {f'{ls.window[0]}-{ls.window[1]}':>13} {ls.median_before:>9.4g} "
            f"{ls.median_after:>9.4g} {ls.sigmas:>6.1f}  {marks}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
