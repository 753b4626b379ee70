"""regbot's side of the detection benchmark's ``--scale`` mode: the simulated fleet
(``scenario``: ``detection.simulate`` with samples per bucket growing with the fleet) and the
child process that simulates it and runs the whole short-term path over it, so that peak memory
is its own (``run_regbot``: seconds, peak RSS, funnel, reported series per planted event)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REGBOT_RUN = """
import json, resource, sys, time
from collections import Counter
import numpy as np
from regbot.datasets.fleet import FleetScenario, simulate_fleet
from regbot.detection.series_batch import SeriesBatch
from regbot.detection.stage_settings import DetectionSettings, LongTermSettings
from regbot.detection.presets import Threshold, Windows, WorkloadSettings
from regbot.detection.pipeline import detect_batch
from regbot.detection.stages import DEDUP_STAGES
from detect_scale_regbot import scenario

n, points, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
t0 = time.perf_counter()
series, events, bounds = simulate_fleet(scenario(n, points), seed)
simulated_s = time.perf_counter() - t0
windows = Windows(bounds.analysis_start_s - bounds.historical_start_s,
                  bounds.extended_start_s - bounds.analysis_start_s,
                  bounds.end_s - bounds.extended_start_s)
settings = DetectionSettings(
    workload=WorkloadSettings(Threshold("absolute", 0.0), windows, 3600.0),
    long_term=LongTermSettings(enabled=False),
)
t1 = time.perf_counter()
batch = SeriesBatch.from_series(series, start_s=bounds.historical_start_s, end_s=bounds.end_s)
del series
result = detect_batch(batch, settings, bounds)
detect_s = time.perf_counter() - t1
reported = {c.series_id for c in result.reported}
by_kind = {}
for e in events:
    key = e.kind if e.kind != "step" else f"step {e.size_in_mde:g}x"
    total, hits = by_kind.get(key, (0, 0))
    by_kind[key] = (total + 1, hits + (e.series_id in reported))
print(json.dumps({
    "simulated_s": simulated_s, "detect_s": detect_s, "funnel": {
        k: v for k, v in result.funnel.to_json().items()
        if k not in {s.funnel_key for s in DEDUP_STAGES}  # detection only: no dedup ran
    },
    "by_kind": by_kind, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "reported_first": sorted(
        int(i) for i, e in enumerate(events) if e.series_id in reported
    ),
}))
"""


SAMPLES_PER_SERIES = (
    20  # stack samples per subroutine per bucket, the simulator's 10,000-series default
)


def scenario(n: int, points: int):
    """The fleet: samples per bucket grow with the number of subroutines (20 each, as the
    simulator's 10,000-series default has), so a fleet of 100,000 subroutines is sampled as
    densely per subroutine as one of 10,000 rather than falling below one sample per bucket,
    under FBDetect's triviality floor."""
    from regbot.datasets.fleet import FleetScenario

    return FleetScenario(n_series=n, n_points=points, samples_per_bucket=SAMPLES_PER_SERIES * n)


def run_regbot(n: int, points: int, seed: int) -> dict:
    program = textwrap.dedent(REGBOT_RUN)
    done = subprocess.run(
        [sys.executable, "-c", program, str(n), str(points), str(seed)],
        cwd=Path(__file__).resolve().parent,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"regbot run failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])
