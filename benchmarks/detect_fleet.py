"""The detection benchmark's fleet mode: per seeded realistic fleet
(``tests/support/fleet_sim.py``), the whole ``regbot detect`` command as a user types it (default
config, then ``dedup: {method: kdd18}``), the maximum-likelihood limits and the peers on the
same series, all scored against the fleet's truth; then the table."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from detect_fleet_peer_scoring import oriented, peer_subset, score_ml, score_peer
from detect_fleet_scoring import score_report
from detect_fleet_table import print_fleet_table
from detect_fleet_tally import LIMITS, Tally
from detect_peers import INSTALL_HINT, binseg_points

REPO = Path(__file__).resolve().parent.parent
KDD18_CONFIG = "dedup:\n  method: kdd18\n"


def fleet_sim():
    """The simulator module from tests/support (not part of the installed package)."""
    sys.path.insert(0, str(REPO / "tests" / "support"))
    import fleet_sim as module

    return module


def fleet_spec(sim, n_series: int, n_points: int):
    """The simulator's default fleet, its event counts scaled to ``n_series`` (3,000 = as is)."""
    spec = sim.FleetSpec(n_series=n_series, n_points=n_points)
    if n_series == 3000:
        return spec
    f = n_series / 3000
    counts = {
        name: max(round(getattr(spec, name) * f), low)
        for name, low in (
            ("n_regressions", 12),
            ("n_latency_steps", 1),
            ("n_throughput_steps", 1),
            ("n_linked_latency", 1),
            ("n_linked_throughput", 1),
            ("n_creeps", 2),
            ("n_transients", 4),
            ("n_seasonal_peaks", 2),
            ("n_cost_shifts", 2),
            ("n_improvements", 3),
        )
    }
    return sim.FleetSpec(n_series=n_series, n_points=n_points, **counts)


def regbot_command() -> str:
    here = Path(sys.executable).with_name("regbot")
    found = str(here) if here.exists() else shutil.which("regbot")
    if found is None:
        raise SystemExit(
            "the regbot command is not installed in this environment (pip install -e .)"
        )
    return found


def run_detect(csv_path: Path, folder: Path, config_text: str) -> tuple[dict, float]:
    """``regbot detect series.csv -c regbot.yml -o out.json`` in ``folder``: (report, seconds)."""
    folder.mkdir()
    (folder / "regbot.yml").write_text(config_text)
    command = [regbot_command(), "detect", str(csv_path), "-c", "regbot.yml", "-o", "out.json"]
    t = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return json.loads((folder / "out.json").read_text()), seconds


def fleet_run(args: argparse.Namespace) -> None:
    """The default mode (module docstring)."""
    sim = fleet_sim()
    seeds = args.seeds or list(range(1, args.fleets + 1))
    spec = fleet_spec(sim, args.series or 3000, args.points)
    methods = ["regbot", *([] if args.no_kdd18 else ["regbot kdd18"]), *LIMITS]
    tallies: dict[str, Tally] = defaultdict(Tally)
    peers_note, otava_error = "", None
    try:
        import ruptures  # noqa: F401

        has_ruptures = True
    except ImportError:
        has_ruptures = False
        peers_note = f"ruptures is not installed; Binseg skipped ({INSTALL_HINT}). "
    started = time.perf_counter()
    for seed in seeds:
        t = time.perf_counter()
        series, truth = sim.simulate_realistic_fleet(spec, seed)
        simulated_s = time.perf_counter() - t
        with tempfile.TemporaryDirectory(prefix="regbot-fleet-") as folder:
            work = Path(folder)
            if args.keep is not None:
                work = args.keep / f"fleet-{seed}"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir(parents=True)
            csv_path = work / "series.csv"
            sim.write_fleet_csv(series, csv_path)
            report, seconds = run_detect(csv_path, work / "default", "")
            score_report(report, truth, len(series), tallies["regbot"])
            tallies["regbot"].seconds.append(seconds)
            line = f"fleet seed {seed}: simulated {simulated_s:.1f}s; regbot detect {seconds:.1f}s"
            if not args.no_kdd18:
                report, seconds = run_detect(csv_path, work / "kdd18", KDD18_CONFIG)
                score_report(report, truth, len(series), tallies["regbot kdd18"])
                tallies["regbot kdd18"].seconds.append(seconds)
                line += f", with kdd18 dedup {seconds:.1f}s"
        score_ml({s.id: s for s in series}, truth, tallies["ML placement"])
        score_ml({s.id: s for s in series}, truth, tallies["ML in window"], in_window=True)
        subset = peer_subset(series, truth, args.peer_series, seed)
        arrays = [oriented(series[i]) for i in subset]
        if has_ruptures:
            points, per_series = binseg_points(arrays)
            score_peer(series, subset, points, truth, tallies["ruptures Binseg l2"])
            tallies["ruptures Binseg l2"].seconds.append(per_series)
            line += f"; Binseg {per_series * len(arrays):.0f}s on {len(arrays)} series"
        if not args.no_otava and otava_error is None:
            from peers import OtavaUnavailable, run_otava_timed

            try:
                points, per, versions = run_otava_timed(arrays)
                name = f"otava {versions['otava']}"
                score_peer(series, subset, points, truth, tallies[name])
                tallies[name].seconds.append(float(np.mean(per)))
                line += f"; Otava {sum(per):.0f}s"
            except OtavaUnavailable as error:
                otava_error = str(error)
        print(line)
    if otava_error:
        peers_note += f"Otava skipped: {otava_error}. "
    elif args.no_otava:
        peers_note += "Otava skipped (--no-otava). "
    print_fleet_table(tallies, methods, seeds, spec, args, peers_note)
    print(f"\nwhole benchmark: {time.perf_counter() - started:.0f}s")
