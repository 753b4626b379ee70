"""Sparse-series benchmark: per-build benchmark series run through `regbot detect` as a scheduled job.

The series come from ``tests/support/build_series_sim.py`` (irregular build times, 1-5 repeated
measurements per build written as repeated CSV rows, normal / heavy-tailed / bimodal noise,
labelled lasting steps of 1-25% and slow drifts, unlabelled improvements, transient spikes and a
spike on the last builds of one series). The job is the real CLI, one subprocess per run:
``regbot detect series.csv -c regbot.yml --now T -o run.json``, ``--now`` stepping through the
product's builds every ``--every`` builds (6), the state kept between runs (the config's
``state:``), threshold ``relative: 0.02``, windows of 120 / 6 / 6 builds: durations of one minute
widened by ``min_points`` (``--windows points``, the default), or, for a regbot without
``min_points``, durations of 120 / 6 / 6 median build gaps (``--windows durations``).

What is counted, over the distinct regression ids reported by all runs (a regression reported
again under the same id is one report, as the PR comment it gets is one):

* **recall**: a labelled change is found when a report on its series has its change within
  ±5 builds of it (a drift: anywhere from 5 builds before its start to 5 after its end);
* **false alarms per 1,000 points**: reports matching no label, per 1,000 distinct builds
  scanned over all series;
* **repeats**: reports of a labelled change beyond the first: further matching reports, plus
  unmatched reports on its series up to 60 builds after it (before the next label), which are
  also false alarms;
* **false alarms by what was there**: the planted decoy within ±5 builds (improvement, spike,
  end_spike), a late repeat, or other (noise: bimodal flips, heavy tails);
* **F1**: TCPDBench's F1 (``cpd_metrics.f1_score``, margin 5), per series with the labels'
  indices (a drift at its start) as the one annotation, averaged over series, beside the
  detector that never reports ("zero") scored the same way.

The default size (12 series x 700 builds, ~95 runs) takes a few minutes on 2 cores; ``--full``
runs the issue's size (40 series x 1,500-3,000 builds, ~480 runs).

    .venv/bin/python benchmarks/sparse.py [--full] [--windows points|durations] [-o OUT.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from build_series_sim import (  # noqa: E402
    BuildScenario,
    BuildSeries,
    Label,
    simulate_builds,
    write_builds_csv,
)
from cpd_metrics import f1_score  # noqa: E402

MARGIN = 5
LATE_REPEAT = 60
WINDOW_BUILDS = (120, 6, 6)


def config_text(mode: str, gap_s: float) -> str:
    """The scheduled job's regbot.yml."""
    if mode == "points":
        h, a, e = WINDOW_BUILDS
        windows = (
            "{historical: 1m, analysis: 1m, extended: 1m, "
            f"min_points: {{historical: {h}, analysis: {a}, extended: {e}}}}}"
        )
    else:
        h, a, e = (int(round(n * gap_s)) for n in WINDOW_BUILDS)
        windows = f"{{historical: {h}s, analysis: {a}s, extended: {e}s}}"
    return (
        "state: state.db\n"
        "workloads:\n"
        "  default:\n"
        "    threshold: {relative: 0.02}\n"
        f"    windows: {windows}\n"
    )


def run_job(
    csv_path: Path, workdir: Path, clock: np.ndarray, first: int, every: int, regbot: Path
) -> tuple[dict[str, dict], int]:
    """Every scheduled run; returns each distinct regression id's first report and the runs."""
    seen: dict[str, dict] = {}
    runs = 0
    for k in range(first, len(clock), every):
        out = workdir / "run.json"
        done = subprocess.run(
            [
                str(regbot),
                "detect",
                str(csv_path),
                "-c",
                str(workdir / "regbot.yml"),
                "--now",
                str(int(clock[k])),
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            cwd=workdir,
        )
        if done.returncode != 0:
            raise SystemExit(f"regbot detect failed at build {k}:\n{done.stderr}")
        runs += 1
        for entry in json.loads(out.read_text())["regressions"]:
            seen.setdefault(entry["id"], {**entry, "run_build": k})
    return seen, runs


def score(series: list[BuildSeries], labels: list[Label], reports: list[dict]) -> dict[str, float]:
    """Recall, false alarms per 1,000 points, repeats and F1 (detector and zero)."""
    by_series = {s.id: s for s in series}
    labels_of: dict[str, list[Label]] = {s.id: [] for s in series}
    for label in labels:
        labels_of[label.series_id].append(label)
    indices_of: dict[str, list[int]] = {s.id: [] for s in series}
    for r in reports:
        times = by_series[r["series"]].build_times_s
        index = int(np.clip(np.searchsorted(times, r["change_time"]), 0, len(times) - 1))
        indices_of[r["series"]].append(index)
    found = repeats = false_alarms = 0
    causes: dict[str, int] = {}
    f1, f1_zero = [], []
    for sid, own in labels_of.items():
        own = sorted(own, key=lambda lab: lab.index)
        hits = [0] * len(own)
        for index in indices_of[sid]:
            match = next(
                (
                    i
                    for i, lab in enumerate(own)
                    if lab.index - MARGIN <= index <= lab.end_index + MARGIN
                ),
                None,
            )
            if match is not None:
                hits[match] += 1
                continue
            false_alarms += 1
            before = [i for i, lab in enumerate(own) if lab.end_index < index]
            cause = next(
                (kind for kind, at in by_series[sid].decoys if abs(index - at) <= MARGIN), "other"
            )
            if before and index - own[before[-1]].end_index <= LATE_REPEAT:
                repeats += 1
                cause = "late repeat" if cause == "other" else cause
            causes[cause] = causes.get(cause, 0) + 1
        found += sum(h > 0 for h in hits)
        repeats += sum(max(h - 1, 0) for h in hits)
        n_obs = len(by_series[sid].build_times_s)
        truth = {"1": [lab.index for lab in own]}
        f1.append(f1_score(truth, sorted(set(indices_of[sid])), n_obs, MARGIN))
        f1_zero.append(f1_score(truth, [], n_obs, MARGIN))
    return {
        "labels": len(labels),
        "reports": len(reports),
        "recall": found / max(len(labels), 1),
        "false_alarms": false_alarms,
        "repeats": repeats,
        "f1": float(np.mean(f1)),
        "f1_zero": float(np.mean(f1_zero)),
        "false_alarm_causes": causes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="40 series x 1,500-3,000 builds")
    parser.add_argument("--series", type=int, default=12)
    parser.add_argument("--builds", type=int, default=700)
    parser.add_argument("--min-builds", type=int, default=400)
    parser.add_argument("--every", type=int, default=6, help="builds between scheduled runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--windows", choices=("points", "durations"), default="points")
    parser.add_argument("--regbot", type=Path, default=ROOT / ".venv" / "bin" / "regbot")
    parser.add_argument("-o", "--output", type=Path)
    args = parser.parse_args(argv)
    scenario = (
        BuildScenario()
        if args.full
        else BuildScenario(args.series, args.builds, min(args.min_builds, args.builds))
    )
    series, labels = simulate_builds(scenario, args.seed)
    clock = np.unique(np.concatenate([s.build_times_s for s in series]))
    points = sum(len(s.build_times_s) for s in series)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="regbot-sparse-") as tmp:
        workdir = Path(tmp)
        csv_path = workdir / "series.csv"
        rows = write_builds_csv(series, csv_path)
        gap_s = float(np.median(np.diff(clock)))
        (workdir / "regbot.yml").write_text(config_text(args.windows, gap_s))
        first = sum(WINDOW_BUILDS) + 12
        seen, runs = run_job(csv_path, workdir, clock, first, args.every, args.regbot)
    seconds = time.perf_counter() - started
    result = score(series, labels, list(seen.values()))
    result.update(
        series=len(series),
        points=points,
        rows=rows,
        runs=runs,
        seconds=seconds,
        windows=args.windows,
        false_alarms_per_1000_points=1000.0 * result["false_alarms"] / points,
    )
    print(
        f"{len(series)} series, {points} builds ({rows} rows with repeats), {len(labels)} labelled"
        f" changes, {runs} scheduled runs every {args.every} builds, windows {args.windows},"
        f" {seconds:.0f} s"
    )
    print(
        "| detector | recall (±5 builds) | false alarms / 1,000 points | repeats | reports"
        " | F1 (margin 5) |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| regbot | {result['recall']:.2f} | {result['false_alarms_per_1000_points']:.2f}"
        f" ({result['false_alarms']}) | {result['repeats']} | {result['reports']}"
        f" | {result['f1']:.3f} |"
    )
    print(f"| zero (never reports) | 0.00 | 0.00 | 0 | 0 | {result['f1_zero']:.3f} |")
    causes = ", ".join(f"{k} {v}" for k, v in sorted(result["false_alarm_causes"].items()))
    print(f"false alarms by what was there: {causes or 'none'}")
    if args.output is not None:
        args.output.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
