"""The detection stages' speed and their results, before and after a change to their code.

``record OUT.json`` runs the detection (one process, ``workers=1``) on seeded fleets and writes
every candidate with its verdicts, the funnel and the CPU seconds of each stage; run it with the
code before the change (another worktree, its own interpreter) and after, each a few times.
``compare BEFORE.json... --after AFTER.json...`` then counts the results that differ, by number
(floats: not bit-equal, and beyond ``--rtol`` relative, listed), and prints the stages' table:
CPU seconds before and after (the least over each side's recordings), per candidate or row.

Fleets: ``sim10k`` (``regbot.datasets.fleet.simulate_fleet``, 10,000 × 1,500, seed 1, the
default config), ``sim10k-t0`` (the same with ``threshold: absolute 0``, so that candidates reach
every filter and the long-term path), ``sim3k-t0`` (3,000 series, seed 2) and ``realistic``
(``tests/support/fleet_sim.py``, its default fleet, seed 1). Each stage is timed by wrapping the
function the pipeline calls (``time.process_time``: CPU seconds, one BLAS thread); the
went-away and seasonality filters are also timed alone, one call per candidate.

    python benchmarks/filters_speed.py record /tmp/after.json
    python benchmarks/filters_speed.py compare /tmp/before*.json --after /tmp/after*.json
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

# (name, module, attribute): the functions timed, as the pipeline and its stages look them up.
TIMED = [
    ("remove_fleet_load", "regbot.detection.pipeline", "remove_fleet_load"),
    ("adjust_for_season", "regbot.detection.pipeline", "adjust_for_season"),
    ("subtract_phase_profile", "regbot.detection.season_adjust", "subtract_phase_profile"),
    ("subtract_phase_profile", "regbot.detection.long_term", "subtract_phase_profile"),
    ("detect_window_changes", "regbot.detection.pipeline", "detect_window_changes"),
    ("change_test", "regbot.detection.pipeline", "change_test"),
    ("judge_candidates", "regbot.detection.pipeline", "judge_candidates"),
    ("screen_long_term", "regbot.detection.pipeline", "screen_long_term"),
    ("detect_long_term", "regbot.detection.pipeline", "detect_long_term"),
]
# what each stage's time is divided by in the table
PER = {
    "judge_candidates": "candidate",
    "went_away_verdict": "candidate",
    "seasonality_verdict": "candidate",
    "change_test": "call",
    "detect_long_term": "call",
}


def fleets(names: list[str]) -> dict[str, Callable[[], tuple[list[Any], Any]]]:
    """Each fleet's series and its detection settings, built on demand."""
    from regbot.bot.config import load_config
    from regbot.datasets.fleet import FleetScenario, simulate_fleet
    from regbot.detection.presets import Threshold

    base = replace(load_config(None).detection_for(None), workers=1)
    zero = replace(base, workload=replace(base.workload, threshold=Threshold("absolute", 0.0)))

    def sim(n: int, seed: int, settings: Any) -> Callable[[], tuple[list[Any], Any]]:
        def build() -> tuple[list[Any], Any]:
            scenario = FleetScenario(n_series=n, n_points=1500, samples_per_bucket=20 * n)
            return simulate_fleet(scenario, seed)[0], settings

        return build

    def realistic() -> tuple[list[Any], Any]:
        sys.path.insert(0, str(REPO / "tests" / "support"))
        import fleet_sim

        return fleet_sim.simulate_realistic_fleet(fleet_sim.FleetSpec(), 1)[0], base

    known = {
        "sim10k": sim(10000, 1, base),
        "sim10k-t0": sim(10000, 1, zero),
        "sim3k-t0": sim(3000, 2, zero),
        "realistic": realistic,
    }
    return {name: known[name] for name in names}


class Timer:
    """CPU seconds and calls of wrapped functions, by name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.candidates = 0
        self.rows = 0
        self.judged: list[Any] = []

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.process_time() - start
                self.calls[name] = self.calls.get(name, 0) + 1
                if name == "judge_candidates":
                    self.candidates += len(args[0])
                    self.judged.extend(args[0])
                if name == "screen_long_term":
                    self.rows += len(args[0])

        return timed


def install(timer: Timer) -> Callable[[], None]:
    """Wrap the timed functions; returns the undo."""
    import importlib

    saved = []
    for name, module_name, attribute in TIMED:
        module = importlib.import_module(module_name)
        original = getattr(module, attribute)
        saved.append((module, attribute, original))
        setattr(module, attribute, timer.wrap(name, original))

    def undo() -> None:
        for module, attribute, original in saved:
            setattr(module, attribute, original)

    return undo


def plain(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [plain(v) for v in x]
    return x


def candidate_json(c: Any) -> dict[str, Any]:
    return plain(
        {
            "series_id": c.series_id,
            "detector": c.detector,
            "change_index": int(c.change_index),
            "change_time_s": float(c.change_time_s),
            "mean_before": float(c.mean_before),
            "mean_after": float(c.mean_after),
            "llr": float(c.llr),
            "p_value": float(c.p_value),
            "change_interval_s": c.change_interval_s,
            "verdicts": {
                str(stage.value): {"passed": v.passed, "reason": v.reason, "numbers": v.numbers}
                for stage, v in c.verdicts.items()
            },
        }
    )


def filters_alone(candidates: list[Any], settings: Any) -> dict[str, float]:
    """CPU seconds of the went-away and seasonality filters, one call per candidate."""
    from regbot.detection.seasonality import seasonality_verdict
    from regbot.detection.went_away import went_away_verdict

    start = time.process_time()
    for c in candidates:
        went_away_verdict(c, settings.went_away)
    went = time.process_time() - start
    start = time.process_time()
    for c in candidates:
        seasonality_verdict(c, settings.seasonality)
    return {"went_away_verdict": went, "seasonality_verdict": time.process_time() - start}


def record(out: Path, names: list[str]) -> None:
    from regbot.detection.pipeline import run_detection

    result: dict[str, Any] = {}
    for name, build in fleets(names).items():
        series, settings = build()
        timer = Timer()
        undo = install(timer)
        start = time.process_time()
        try:
            detected = run_detection(series, settings)
        finally:
            undo()
        total = time.process_time() - start
        alone = filters_alone(timer.judged, settings)
        seconds = {"run_detection": total, **timer.seconds, **alone}
        calls = {**timer.calls, "went_away_verdict": len(timer.judged)}
        calls["seasonality_verdict"] = len(timer.judged)
        result[name] = {
            "series": len(series),
            "candidates": timer.candidates,
            "rows": timer.rows,
            "seconds": seconds,
            "calls": calls,
            "funnel": detected.funnel.to_json(),
            "reported": [candidate_json(c) for c in detected.reported],
            "filtered": [candidate_json(c) for c in detected.filtered],
        }
        print(f"{name}: {len(series)} series, {timer.candidates} candidates, {total:.2f} CPU s")
        for stage, s in seconds.items():
            print(f"  {stage:24s} {s:8.3f} s")
    out.write_text(json.dumps(result))


def differences(a: Any, b: Any, rtol: float, path: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ (floats within ``rtol`` relative count as equal)."""
    if isinstance(a, float) and isinstance(b, float):
        if a == b or abs(a - b) <= rtol * max(abs(a), abs(b)):
            return []
        return [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                found.append(f"{path}/{key}: only in {'after' if key in b else 'before'}")
            else:
                found += differences(a[key], b[key], rtol, f"{path}/{key}")
        return found
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)} items"]
        found = []
        for i, (x, y) in enumerate(zip(a, b)):
            found += differences(x, y, rtol, f"{path}[{i}]")
        return found
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


def summarise(found: list[str]) -> dict[str, tuple[int, float]]:
    """Differences by the number they are in (list indices dropped): how many, and the largest
    relative difference of the floats among them (inf for any other difference)."""
    out: dict[str, tuple[int, float]] = {}
    for line in found:
        path, _, rest = line.partition(": ")
        key = re.sub(r"\[\d+\]", "[*]", path)
        a, _, b = rest.partition(" != ")
        try:
            x, y = float(a), float(b)
            rel = abs(x - y) / max(abs(x), abs(y))
        except ValueError:
            rel = math.inf
        count, worst = out.get(key, (0, 0.0))
        out[key] = (count + 1, max(worst, rel))
    return out


def compare(befores: list[Path], afters: list[Path], rtol: float) -> int:
    """Results of the first recording of each side; each stage's CPU seconds the least over
    the recordings of its side (other work on the machine only ever adds time)."""
    before_runs = [json.loads(p.read_text()) for p in befores]
    after_runs = [json.loads(p.read_text()) for p in afters]
    before, after = before_runs[0], after_runs[0]
    status = 0
    for name in before:
        if name not in after:
            continue
        b, a = before[name], after[name]
        print(f"\n## {name}: {b['series']} series, {b['candidates']} candidates judged")
        keys = ("funnel", "reported", "filtered")
        exact = sum((differences(b[k], a[k], 0.0, k) for k in keys), [])
        close = sum((differences(b[k], a[k], rtol, k) for k in keys), [])
        print(f"results: {len(exact)} values not bit-equal, {len(close)} beyond rtol {rtol:g}")
        for key, (count, worst) in sorted(summarise(exact).items()):
            print(f"  {count:5d} × {key}: largest relative difference {worst:.1e}")
        for line in close[:40]:
            print("  beyond rtol: " + line)
        status |= bool(close)
        print("\n| stage | calls | before s | after s | speed-up | before | after | per |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for stage in b["seconds"]:
            s_before = min(r[name]["seconds"][stage] for r in before_runs if name in r)
            s_after = min(r[name]["seconds"].get(stage, math.inf) for r in after_runs if name in r)
            unit, count = PER.get(stage, "call"), b["calls"].get(stage, 1)
            if stage in ("judge_candidates", "went_away_verdict", "seasonality_verdict"):
                unit, count = "candidate", b["candidates"]
            elif stage in ("screen_long_term", "subtract_phase_profile", "remove_fleet_load"):
                unit, count = "row", b["series"]
            elif stage in ("run_detection", "adjust_for_season", "detect_window_changes"):
                unit, count = "1,000 rows", b["series"] / 1000
            print(
                f"| {stage} | {b['calls'].get(stage, 1)} | {s_before:.3f} | {s_after:.3f} "
                f"| {s_before / s_after:.1f}× | {1e3 * s_before / count:.3f} ms "
                f"| {1e3 * s_after / count:.3f} ms | {unit} |"
            )
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--fleets", nargs="+", default=["sim10k", "sim10k-t0", "realistic"])
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path, nargs="+", help="recordings of the code before")
    cmp.add_argument("--after", type=Path, nargs="+", required=True, help="and after")
    cmp.add_argument("--rtol", type=float, default=1e-9)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out, args.fleets)
        return 0
    return compare(args.before, args.after, args.rtol)


if __name__ == "__main__":
    sys.exit(main())
