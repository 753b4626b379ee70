"""Peer detectors run from their own virtual environment: Apache Otava's E-divisive.

``apache-otava`` pins numpy 2.2 and scipy < 1.17, so it cannot share regbot's venv. This module
builds (once, cached) a separate venv with ``python3.11 -m venv`` and ``pip install
apache-otava==OTAVA_VERSION``, writes a small worker script into a temporary folder, and runs it
with that venv's interpreter: the worker reads the series from a JSON file and writes the change
points (and seconds per series) as JSON.

The detector is ``otava.analysis.compute_change_points`` with Otava's own defaults (the ones its
CLI uses): the windowed E-divisive of Fleming et al., "Hunter: Using Change Point Detection to
Hunt for Performance Regressions" (ICPE 2023) — E-divisive (Matteson & James 2014) in sliding
windows of 50 points with a first-pass p-value of 0.01, then a merge step keeping change points
whose two-sided t-test p-value is below 0.001 (minimum relative magnitude 0). It is
deterministic (no permutation test). Indices are the first point of the new segment, as regbot's.

    run_otava(series, venv) -> change points per series     (what the benchmark scripts import)

Run ``python benchmarks/peers.py [--venv DIR]`` to build the venv and run a seeded smoke check.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VENV = REPO / ".bench-venvs" / "otava"
OTAVA_VERSION = "0.8.0"
PYTHON = "python3.11"
MARKER = ".regbot-otava-ready"
INSTALL_TIMEOUT_S = 900

WORKER = """
import json, sys, time
from importlib.metadata import version
from otava.analysis import compute_change_points

job = json.load(open(sys.argv[1]))
points, seconds = [], []
for values in job["series"]:
    t = time.perf_counter()
    found, _weak = compute_change_points([float(v) for v in values])
    seconds.append(time.perf_counter() - t)
    points.append(sorted(int(c.index) for c in found))
json.dump({"change_points": points, "seconds": seconds, "otava": version("apache-otava"),
           "numpy": version("numpy"), "scipy": version("scipy")}, open(sys.argv[2], "w"))
"""


class OtavaUnavailable(RuntimeError):
    """The Otava venv could not be built or the worker failed; the message says why."""


INSTALL_HINT = "pip install -e '.[bench]'"


def require_ruptures():
    """The ruptures module, or exit 2 with the install hint (ruptures is a benchmark extra)."""
    try:
        import ruptures
    except ImportError:
        print(
            f"ruptures is not installed; install the benchmark extras: {INSTALL_HINT}",
            file=sys.stderr,
        )
        sys.exit(2)
    return ruptures


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_venv(venv: Path = DEFAULT_VENV) -> Path:
    """The venv's interpreter, building the venv first unless its ready-marker says it is built.

    Raises OtavaUnavailable with the failing step's output.
    """
    python = _venv_python(venv)
    marker = venv / MARKER
    if marker.exists() and marker.read_text().strip() == OTAVA_VERSION and python.exists():
        return python
    base = shutil.which(PYTHON)
    if base is None:
        raise OtavaUnavailable(f"{PYTHON} not found on PATH (needed to build {venv})")
    if venv.exists() and any(venv.iterdir()) and not (venv / "pyvenv.cfg").exists():
        raise OtavaUnavailable(f"{venv} exists and is not a virtual environment; not touching it")
    try:
        if venv.exists():
            shutil.rmtree(venv)  # a half-built or outdated venv of ours
        venv.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OtavaUnavailable(f"cannot prepare {venv}: {error}") from error
    steps = [
        [base, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", f"apache-otava=={OTAVA_VERSION}"],
        [str(python), "-c", "import otava.analysis"],
    ]
    for step in steps:
        print(f"[otava venv] {' '.join(step)}", file=sys.stderr)
        try:
            done = subprocess.run(
                step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise OtavaUnavailable(f"{' '.join(step)}: {error}") from error
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise OtavaUnavailable(
                f"{' '.join(step)} exited {done.returncode}: " + " | ".join(tail)
            )
    marker.write_text(OTAVA_VERSION + "\n")
    return python


def run_otava_timed(
    series: list[np.ndarray], venv: Path = DEFAULT_VENV
) -> tuple[list[list[int]], list[float], dict[str, str]]:
    """Change points of every series, the worker's seconds per series (interpreter start-up
    excluded), and the versions it ran with (otava, numpy, scipy)."""
    python = ensure_venv(venv)
    with tempfile.TemporaryDirectory(prefix="regbot-otava-") as folder:
        work = Path(folder)
        (work / "worker.py").write_text(WORKER)
        job = {"series": [np.asarray(s, dtype=np.float64).tolist() for s in series]}
        (work / "in.json").write_text(json.dumps(job))
        command = [
            str(python),
            str(work / "worker.py"),
            str(work / "in.json"),
            str(work / "out.json"),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-5:]
            raise OtavaUnavailable(f"worker exited {done.returncode}: " + " | ".join(tail))
        out = json.loads((work / "out.json").read_text())
    versions = {key: out[key] for key in ("otava", "numpy", "scipy")}
    return out["change_points"], out["seconds"], versions


def run_otava(series: list[np.ndarray], venv: Path = DEFAULT_VENV) -> list[list[int]]:
    """Otava E-divisive change points (first index of each new segment) of every series."""
    return run_otava_timed(series, venv)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(11)
    step = np.concatenate([rng.normal(0, 1, 200), rng.normal(3, 1, 200)])
    flat = rng.normal(0, 1, 400)
    try:
        points, seconds, versions = run_otava_timed([step, flat], args.venv)
    except OtavaUnavailable as error:
        print(f"otava unavailable: {error}", file=sys.stderr)
        return 2
    print(f"otava venv: {args.venv} ({', '.join(f'{k} {v}' for k, v in versions.items())})")
    print(f"step at 200 -> {points[0]} ({seconds[0]:.3f}s); white noise -> {points[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
