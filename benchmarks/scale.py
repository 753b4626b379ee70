"""Scale benchmark: a fleet of ``--series`` series (default 1,000,000) × ``--points`` points,
generated in partitions by the workers themselves (``regbot.datasets.fleet_partitions``: never
all in one process), detected and deduplicated end to end (``fleet_report``: what `regbot
detect` runs) on Dask with 1, 2, ... workers (``--workers 1 2 4``), beside the in-process run.

Prints, per run: engine, workers, wall seconds, the speed-up over one Dask worker and the
scaling efficiency (speed-up / workers), peak RSS of this process (the parent: it holds ids and
candidates, not the fleet), and whether the report equals the in-process one (ids, series,
change times and funnel). The config is regbot's default except the workload's threshold,
set to an absolute 1e-6 gCPU so that candidates reach every dedup stage (the default 1e-4
removes every change of this fleet's small subroutines at the threshold; ``--threshold``).

    python benchmarks/scale.py [--series 1000000] [--points 1500] [--partition 20000]
                               [--workers 1 2] [--no-local] [--seed 1]

Each partition is simulated twice per run (detection, then the survey of ids before it and the
gathering of dedup's series after it regenerate it), so the figures include the simulation;
the simulation's own time is printed first for one partition.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from dataclasses import replace
from typing import Any

from regbot.bot.config import Config, Threshold
from regbot.bot.execution.executors import open_executor
from regbot.bot.execution.fleet_detection import survey_partitions
from regbot.bot.execution.fleet_report import fleet_report
from regbot.bot.views.progress import RunProgress
from regbot.datasets.fleet_partitions import simulated_partitions


def _config(threshold: float = 1e-6) -> Config:
    config = Config()
    default = config.workloads["default"]
    workloads = {"default": replace(default, threshold=Threshold("absolute", threshold))}
    return replace(config, workloads=workloads)


def _run(
    engine: str, workers: int, parts: list[Any], threshold: float = 1e-6
) -> tuple[float, dict[str, Any]]:
    from rich.console import Console

    config = _config(threshold)
    settings = config.detection_for(None)
    quiet = RunProgress(Console(stderr=True), quiet=True)
    start = time.perf_counter()
    with open_executor(engine, workers) as executor:
        survey = survey_partitions(parts, executor)
        report = fleet_report(parts, survey, config, settings, None, executor, quiet)
    return time.perf_counter() - start, report.to_json()


def _essence(report: dict[str, Any]) -> str:
    rows = [(r["id"], r["series"], r["change_time"]) for r in report["regressions"]]
    return json.dumps({"regressions": rows, "funnel": report["funnel"]}, sort_keys=True)


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=1_000_000)
    parser.add_argument("--points", type=int, default=1500)
    parser.add_argument("--partition", type=int, default=20_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--no-local", action="store_true", help="skip the in-process run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--threshold", type=float, default=1e-6, help="absolute gCPU threshold (default 1e-6)"
    )
    args = parser.parse_args()

    parts = simulated_partitions(args.series, args.points, args.partition, args.seed)
    start = time.perf_counter()
    parts[0].load()
    print(
        f"fleet: {args.series:,} series x {args.points:,} points in {len(parts)} partitions "
        f"of <= {args.partition:,}; one partition simulates in {time.perf_counter() - start:.1f}s"
    )
    runs = [] if args.no_local else [("local", 1)]
    runs += [("dask", w) for w in args.workers]
    print(
        f"\n{'engine':<8} {'workers':>7} {'wall s':>8} {'speed-up':>9} {'efficiency':>10} "
        f"{'parent peak MB':>15} {'same report':>12}"
    )
    reference: str | None = None
    one_worker: float | None = None
    for engine, workers in runs:
        seconds, report = _run(engine, workers, parts, args.threshold)
        essence = _essence(report)
        reference = reference or essence
        if engine == "dask" and workers == 1:
            one_worker = seconds  # speed-ups are over a measured one-worker run, else not shown
        speedup = (one_worker / seconds) if one_worker else float("nan")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{engine:<8} {workers:>7} {seconds:>8.1f} {speedup:>9.2f} "
            f"{speedup / workers:>10.0%} {peak:>15,.0f} {str(essence == reference):>12}"
        )
    funnel = json.loads(reference or "{}").get("funnel", {})
    print("\nfunnel: " + ", ".join(f"{k} {v:,}" for k, v in funnel.items()))


if __name__ == "__main__":
    main()
