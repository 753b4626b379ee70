"""The detection benchmark's ``--full`` mode: the whole `regbot detect` command, file to report,
every stage on, on a fleet written as one Parquet file (default 100,000 series × 1,500 points).

1. The fleet is simulated in partitions (``regbot.datasets.fleet_partitions``; the planted truth
   kept) and appended partition by partition to ``fleet.parquet`` (series by series, as
   ``regbot gcpu -o`` writes), so this process never holds the fleet either.
2. ``regbot detect fleet.parquet -c regbot.yml -o out.json --no-state -q`` runs in a child
   process: wall seconds, CPU seconds (user + system, all its threads and processes), peak RSS
   (the largest of the child and its workers), the funnel. ``regbot.yml`` is the default config
   but for the workload's threshold, an absolute 1e-6 gCPU, so that the fleet's small
   subroutines' changes reach every dedup stage (the default 1e-4 removes them all at the
   threshold, and the dedup stages would not run). ``--engine processes`` or ``dask`` runs it on
   that executor with ``--workers``.
3. Quality against the planted truth: recall per step size (in MDE), creeps reported, false
   positives per 1,000 quiet series, transients and seasonal peaks filtered.
4. Peers on the first ``--peer-series`` series of the first partition (the same series):
   ruptures KernelCPD (linear kernel, Pelt's search in C) and Binseg, a plain CUSUM and Apache
   Otava (``--no-otava`` to skip): precision, recall, F1, FPR and CPU seconds per 1,000 series,
   regbot's row from the whole run.

    python benchmarks/detect.py --full [--series 100000] [--points 1500] [--partition 20000]
                                       [--engine local] [--workers 0] [--peer-series 300]
                                       [--no-otava] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from detect_peers import peer_rows
from detect_scale import scores

from regbot.datasets.fleet import PlantedEvent
from regbot.datasets.fleet_partitions import SimulatedPartition, simulated_partitions

MEASURED = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[1:]).returncode
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": code, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_mb": usage.ru_maxrss / 1024}))
"""


def write_fleet(parts: list[SimulatedPartition], path: Path) -> list[PlantedEvent]:
    """Append each partition's series to one Parquet file (series by series); the truth."""
    events: list[PlantedEvent] = []
    writer = None
    for part in parts:
        series = part.load()
        events += part.events()
        counts = np.array([len(s.values) for s in series])
        codes = np.repeat(np.arange(len(series), dtype=np.int32), counts)
        table = pa.table(
            {
                "timestamp": pa.array(np.concatenate([s.timestamps_s for s in series])),
                "series": pa.DictionaryArray.from_arrays(
                    pa.array(codes), pa.array([s.id for s in series])
                ),
                "value": pa.array(np.concatenate([s.values for s in series])),
                "kind": pa.DictionaryArray.from_arrays(
                    pa.array(np.zeros(len(codes), np.int32)), pa.array(["gcpu"])
                ),
            }
        )
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=1 << 20)
        del series, table
    if writer is not None:
        writer.close()
    return events


def run_detect(folder: Path, engine: str, workers: int) -> dict[str, Any]:
    config = folder / "regbot.yml"
    config.write_text(
        "workloads:\n  default:\n    threshold: {absolute: 1e-6}\n"
        f"execution:\n  engine: {engine}\n  workers: {workers}\n"
    )
    command = [sys.executable, "-m", "regbot", "detect", str(folder / "fleet.parquet")]
    command += ["-c", str(config), "-o", str(folder / "out.json"), "--no-state", "-q"]
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *command], capture_output=True, text=True, check=True
    )
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if measured["code"] != 0:
        raise SystemExit(f"regbot detect failed: {done.stderr}")
    measured["report"] = json.loads((folder / "out.json").read_text())
    return measured


def quality(report: dict[str, Any], events: list[PlantedEvent]) -> dict[str, tuple[int, int]]:
    reported = {r["series"] for r in report["regressions"]}
    by_kind: dict[str, tuple[int, int]] = {}
    for e in events:
        key = e.kind if e.kind != "step" else f"step {e.size_in_mde:g}x"
        total, hits = by_kind.get(key, (0, 0))
        by_kind[key] = (total + 1, hits + (e.series_id in reported))
    return by_kind


def full_run(args: argparse.Namespace) -> None:
    """The ``--full`` mode (module docstring)."""
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="regbot-full-"))
    folder.mkdir(parents=True, exist_ok=True)
    parts = simulated_partitions(args.series, args.points, args.partition, args.seed)
    start = time.perf_counter()
    events = write_fleet(parts, folder / "fleet.parquet")
    size_mb = (folder / "fleet.parquet").stat().st_size / 1e6
    print(
        f"fleet: {args.series:,} series x {args.points:,} points, {size_mb:,.0f} MB Parquet "
        f"(simulated and written in {time.perf_counter() - start:.0f}s)"
    )
    run = run_detect(folder, args.engine, args.workers)
    report = run["report"]
    per_1000 = run["cpu_s"] / args.series * 1000
    print(
        f"regbot detect ({args.engine}): {run['wall_s']:.1f}s wall, {run['cpu_s']:.1f} CPU s "
        f"({per_1000:.2f} per 1,000 series), peak RSS {run['peak_mb']:,.0f} MB "
        "(targets: <= 30 s, <= 4,096 MB, <= 0.3 CPU s per 1,000 on 2 cores)"
    )
    print("funnel: " + ", ".join(f"{k} {v:,}" for k, v in report["funnel"].items()))
    by_kind = quality(report, events)
    print(f"\n{'planted event':<22} {'series':>8} {'reported':>9} {'share':>7}")
    for kind, (total, hits) in sorted(by_kind.items()):
        print(f"{kind:<22} {total:>8,} {hits:>9,} {hits / total:>7.1%}")
    quiet_total, quiet_hits = by_kind.get("none", (0, 0))
    print(f"false positives per 1,000 quiet series: {1000 * quiet_hits / max(quiet_total, 1):.2f}")

    first = parts[0].load()[: args.peer_series]
    first_events = parts[0].events()[: args.peer_series]
    times = np.asarray(first[0].timestamps_s)
    analysis = parts[0].scenario.analysis_points + parts[0].scenario.extended_points
    lo = len(times) - analysis
    hi = len(times) - parts[0].scenario.extended_points
    truth = [e.is_regression for e in first_events]
    quiet = [e.kind == "none" for e in first_events]
    reported = {r["series"] for r in report["regressions"]}
    rows = {
        "regbot detect (whole run)": ([s.id in reported for s in first], run["cpu_s"] / args.series)
    }
    rows.update(peer_rows(first, lo, hi, not args.no_otava))
    print(
        f"\nsame {len(first)} series; positives = planted steps and creeps ({sum(truth)}), "
        f"quiet series {sum(quiet)}"
    )
    print(f"{'method':<30} {'precision':>9} {'recall':>7} {'F1':>6} {'FPR':>7} {'CPU s/1000':>11}")
    for name, (flags, per_series) in rows.items():
        p, r, f1, fpr = scores(flags, truth, quiet)
        print(f"{name:<30} {p:>9.3f} {r:>7.3f} {f1:>6.3f} {fpr:>7.2%} {per_series * 1000:>11.3f}")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
