"""Series-file reading benchmark: regbot's `read_series_files` beside pyarrow's plain read.

Generates (seeded) the fleet-scale files of the issue in a temporary folder: 3,000 gCPU series x
1,500 points from `regbot.datasets.fleet.simulate_fleet` (ids like
`gcpu:handle_0001 (app/views_3.py)`), as

* CSV, long format `timestamp,series,value,kind` as `write_series_csv` writes it (rows grouped
  by series), and the same rows in time order (every series at one time, then the next time:
  the rows of a series spread over the whole file);
* the first CSV gzipped;
* JSON Lines (`write_series_jsonl`, one series per line);
* Parquet (`write_series_parquet`).

Each read runs in a child process of its own, so its peak memory (`ru_maxrss`) is its own; the
modules are imported before the clock starts (pyarrow imports pandas on its first conversion to
numpy; that is not timed either). For each file: regbot's `read_series_files` (parse, check,
group, normalise: the series as `regbot detect` gets them) and, as the floor, pyarrow's plain read
of the same file with default options (`pyarrow.csv.read_csv`, `pyarrow.json.read_json`,
`pyarrow.parquet.read_table`), which only parses into Arrow columns. Seconds are the median of
`--repeat` runs (the fastest in brackets); the page cache is warm.

Then the partitioned read of the Parquet file, as `regbot detect` reads a clustered file: the
survey (`plan_series_partitions`), every partition's `load` and the `SeriesBatch` the detector
builds of it (`SeriesBatch.from_series`), in CPU seconds (user + system, all threads), beside the
CPU seconds of pyarrow's `read_table` of the same file. `--file` measures only this, on a given
clustered Parquet or Arrow file (e.g. 100,000 series x 1,500 points).

    python benchmarks/read_series.py [--series 3000] [--points 1500] [--repeat 3] [--dir /tmp/x]
    python benchmarks/read_series.py --file fleet.parquet [--partition-series 10000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from regbot.profiles.model import Series

TARGET_CSV_SECONDS = 2.0

WARM_UP = """
import json, resource, sys, time
from pathlib import Path
import pyarrow as pa, pyarrow.csv, pyarrow.json, pyarrow.parquet
pa.array([0.0]).to_numpy()
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
"""

REGBOT = """
from regbot.profiles.series_files import read_series_files
import regbot.profiles.series_csv, regbot.profiles.series_jsonl, regbot.profiles.series_arrow
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
series = read_series_files([Path(sys.argv[1])])
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "series": len(series),
                  "points": sum(int(s.values.size) for s in series), "base_mb": base,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

FLOOR = """
read = {"csv": pyarrow.csv.read_csv, "jsonl": pyarrow.json.read_json,
        "parquet": pyarrow.parquet.read_table}[sys.argv[2]]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t, c = time.perf_counter(), cpu()
table = read(sys.argv[1])
seconds, cpu_seconds = time.perf_counter() - t, cpu() - c
print(json.dumps({"seconds": seconds, "cpu": cpu_seconds, "rows": table.num_rows, "base_mb": base,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

PARTITIONED = """
from regbot.detection.series_batch import SeriesBatch
from regbot.profiles.series_partitions import plan_series_partitions
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t, c = time.perf_counter(), cpu()
partitions, survey = plan_series_partitions([Path(sys.argv[1])], int(sys.argv[2]))
surveyed = cpu()
load = batch = 0.0
series = points = 0
for partition in partitions:
    a = cpu()
    loaded = partition.load()
    b = cpu()
    SeriesBatch.from_series(loaded)
    load, batch = load + b - a, batch + cpu() - b
    series, points = series + len(loaded), points + sum(int(s.values.size) for s in loaded)
    del loaded
print(json.dumps({"seconds": time.perf_counter() - t, "cpu": cpu() - c, "survey": surveyed - c,
                  "load": load, "batch": batch, "series": series, "points": points,
                  "streamed": survey.streamed, "partitions": len(partitions), "base_mb": base,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def fleet(n_series: int, n_points: int, seed: int) -> list[Series]:
    """The fleet's series as `timestamp,series,value,kind` rows carry them (no unit)."""
    from regbot.datasets.fleet import FleetScenario, simulate_fleet
    from regbot.profiles.model import Series

    simulated, _, _ = simulate_fleet(FleetScenario(n_series=n_series, n_points=n_points), seed)
    return [Series(s.id, s.kind, s.timestamps_s, s.values) for s in simulated]


def write_time_ordered_csv(series: list[Series], path: Path) -> None:
    """The rows `write_series_csv` writes, ordered by time, then by series."""
    import numpy as np

    times = series[0].timestamps_s
    values = np.stack([s.values for s in series], axis=1).tolist()
    middles = [f",{csv_cell(s.id)}," for s in series]
    with path.open("w", encoding="utf-8", newline="") as stream:
        stream.write("timestamp,series,value,kind\n")
        for t, row in zip(times.tolist(), values):
            stream.write("".join([f"{t!r}{m}{v!r},gcpu\n" for m, v in zip(middles, row)]))


def csv_cell(text: str) -> str:
    """A CSV cell as the csv module's minimal quoting writes it."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def file_names(folder: Path) -> dict[str, Path]:
    return {
        "CSV": folder / "fleet.csv",
        "CSV, rows in time order": folder / "fleet-by-time.csv",
        "CSV.gz": folder / "fleet.csv.gz",
        "JSONL": folder / "fleet.jsonl",
        "Parquet": folder / "fleet.parquet",
    }


def write_files(folder: Path, n_series: int, n_points: int, seed: int) -> None:
    """Run in a child process (``--write-files``): a parent that held the series would lend its
    peak memory to every child it starts (Linux keeps ``ru_maxrss`` across exec)."""
    from regbot.profiles.series_arrow import write_series_parquet
    from regbot.profiles.series_csv import write_series_csv
    from regbot.profiles.series_jsonl import write_series_jsonl

    files = file_names(folder)
    t = time.perf_counter()
    series = fleet(n_series, n_points, seed)
    write_series_csv(series, files["CSV"])
    write_time_ordered_csv(series, files["CSV, rows in time order"])
    with files["CSV"].open("rb") as source, gzip.open(files["CSV.gz"], "wb", 1) as target:
        shutil.copyfileobj(source, target, 1 << 20)
    write_series_jsonl(series, files["JSONL"])
    write_series_parquet(series, files["Parquet"])
    print(f"files: {n_series:,} series x {n_points:,} points, written in "
          f"{time.perf_counter() - t:.0f}s")  # fmt: skip


def warm_page_cache(path: Path) -> None:
    """Read the file once, a megabyte at a time (holding it whole would raise this process's
    peak memory, which its children inherit)."""
    with path.open("rb") as stream:
        while stream.read(1 << 20):
            pass


def run_child(code: str, *args: str) -> dict[str, float]:
    program = textwrap.dedent(WARM_UP) + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", program, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"benchmark step failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(code: str, repeat: int, *args: str) -> tuple[list[float], dict[str, float]]:
    runs = [run_child(code, *args) for _ in range(repeat)]
    return [run["seconds"] for run in runs], max(runs, key=lambda run: run["peak_mb"])


def shown(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):6.2f} ({min(seconds):.2f})"


def partitioned_read(path: Path, partition_series: int, repeat: int) -> None:
    """The partitioned read's CPU seconds (survey, loads, batches; medians of ``repeat`` runs,
    each in a child process) beside pyarrow's ``read_table`` of the same file."""
    warm_page_cache(path)
    runs = [run_child(PARTITIONED, str(path), str(partition_series)) for _ in range(repeat)]
    floors = [run_child(FLOOR, str(path), "parquet") for _ in range(repeat)]
    if not all(run["streamed"] for run in runs):
        print(f"{path.name}: not clustered, read whole (the general path)")

    def cpu(key: str, found: list[dict[str, float]]) -> str:
        return shown([run[key] for run in found])

    print(
        f"\npartitioned read of {path.name} ({runs[0]['series']:,.0f} series,"
        f" {runs[0]['points']:,.0f} points, {runs[0]['partitions']:,.0f} partitions"
        f" of <= {partition_series:,}), CPU s (user + system):"
    )
    print(
        f"{'survey':>14} {'loads':>14} {'batches':>14} {'total':>14} {'peak MB':>8}"
        f" {'read_table':>14} {'peak MB':>8} {'total/read_table':>17}"
    )
    total = statistics.median(run["cpu"] for run in runs)
    floor = statistics.median(run["cpu"] for run in floors)
    print(
        f"{cpu('survey', runs):>14} {cpu('load', runs):>14} {cpu('batch', runs):>14}"
        f" {cpu('cpu', runs):>14} {max(run['peak_mb'] for run in runs):>8,.0f}"
        f" {cpu('cpu', floors):>14} {max(run['peak_mb'] for run in floors):>8,.0f}"
        f" {total / floor:>16.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=3000)
    parser.add_argument("--points", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="work folder, kept (default: a temporary one)")
    parser.add_argument("--write-files", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help="only the partitioned read of this file")
    parser.add_argument("--partition-series", type=int, default=10_000)
    args = parser.parse_args()
    if args.write_files:
        write_files(args.write_files, args.series, args.points, args.seed)
        return
    if args.file:
        partitioned_read(args.file, args.partition_series, args.repeat)
        return
    work = args.dir or Path(tempfile.mkdtemp(prefix="regbot-read-series-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        files = file_names(work)
        if not all(path.exists() for path in files.values()):
            sizes = ["--series", str(args.series), "--points", str(args.points)]
            command = [sys.executable, __file__, "--write-files", str(work), *sizes]
            subprocess.run([*command, "--seed", str(args.seed)], check=True)
        print(
            f"\n{'format':<24} {'file MB':>8} {'regbot s':>14} {'peak MB':>8}"
            f" {'pyarrow s':>14} {'peak MB':>8} {'regbot/pyarrow':>15}"
        )
        results = {}
        for name, path in files.items():
            warm_page_cache(path)
            floor_kind = "csv" if ".csv" in path.name else path.suffix.lstrip(".")
            ours, our_peak = measure(REGBOT, args.repeat, str(path))
            floor, floor_peak = measure(FLOOR, args.repeat, str(path), floor_kind)
            expected = args.series * args.points
            if our_peak["points"] != expected or floor_peak["rows"] not in (expected, args.series):
                raise SystemExit(f"{name}: read {our_peak['points']:,} points, not {expected:,}")
            results[name] = statistics.median(ours)
            print(
                f"{name:<24} {path.stat().st_size / 1e6:>8,.0f} {shown(ours):>14}"
                f" {our_peak['peak_mb']:>8,.0f} {shown(floor):>14} {floor_peak['peak_mb']:>8,.0f}"
                f" {statistics.median(ours) / statistics.median(floor):>14.2f}x"
            )
        base = our_peak["base_mb"]
        print(f"\npeak MB includes about {base:,.0f} MB before reading (Python, numpy, pyarrow)")
        verdict = "met" if results["CSV"] <= TARGET_CSV_SECONDS else "NOT met"
        print(f"CSV read in {results['CSV']:.2f}s: target <= {TARGET_CSV_SECONDS:.0f}s {verdict}")
        print(f"Parquet faster than CSV: {results['Parquet'] < results['CSV']}")
        partition_series = min(args.partition_series, max(args.series // 3, 1))
        partitioned_read(files["Parquet"], partition_series, args.repeat)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
