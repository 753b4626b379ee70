"""Ingest benchmark: a folded corpus of 1,000 bucket files x 2,000 lines, regbot beside the floor.

Generates (seeded) 1,000 folded files of 2,000 lines each (2,000,000 lines) drawn from 50,000
distinct stacks of depth 10-40 over a call tree of py-spy-style frames, then runs, each in its own
process so peak memory is its own:

* floor   - merely reading every file and splitting its lines in Python (and, as a second floor,
            also splitting each line into stack and count);
* regbot  - `regbot ingest CORPUS --store DIR` (parse, intern, aggregate, write the store);
* gcpu    - opening the store and building every gCPU series (`build_gcpu`).

Prints seconds, lines/s and peak RSS side by side, and the ratios the issue asks about
(ingest / floor <= 3, gcpu < ingest).

    python benchmarks/ingest.py [--files 1000] [--lines 2000] [--stacks 50000] [--dir /tmp/x]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

FLOOR_LINES = """
import sys, time, resource
from pathlib import Path
t = time.perf_counter(); n = 0
for p in sorted(Path(sys.argv[1]).iterdir()):
    n += len(p.read_text().splitlines())
print(json.dumps({"seconds": time.perf_counter() - t, "lines": n,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

FLOOR_SPLIT = """
import sys, time, resource
from pathlib import Path
t = time.perf_counter(); n = 0
for p in sorted(Path(sys.argv[1]).iterdir()):
    for line in p.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n += 1
print(json.dumps({"seconds": time.perf_counter() - t, "lines": n,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

REGBOT_INGEST = """
import sys, time, resource, io
from rich.console import Console
from regbot.bot import cli
cli.consoles = lambda: (Console(file=io.StringIO()), Console(file=io.StringIO()))
t = time.perf_counter()
code = cli.main(["ingest", sys.argv[1], "--store", sys.argv[2]])
print(json.dumps({"seconds": time.perf_counter() - t, "exit": code,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

REGBOT_GCPU = """
import sys, time, resource
from pathlib import Path
from regbot.profiles.store import open_store
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.gcpu import build_gcpu
t = time.perf_counter()
store = open_store(Path(sys.argv[1]))
index = SampleIndex(store.table, store.records())
t_open = time.perf_counter() - t
matrix = build_gcpu(index)
print(json.dumps({"seconds": time.perf_counter() - t, "open_seconds": t_open,
                  "series": len(matrix.subroutines), "points": int(matrix.values.size),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def make_stacks(n_stacks: int, n_functions: int, rng: np.random.Generator) -> list[str]:
    """Distinct stacks of depth 10-40 as root-first paths in a random call tree.

    Each stack extends a random earlier stack's prefix (shared callers, as in real services) or
    starts at one of a few roots; frames are py-spy-style ``func (pkg/mod.py:LINE)``.
    """
    names = [
        f"{'handle' if i % 7 == 0 else 'compute'}_{i} (pkg{i % 40}/mod{i % 300}.py:{10 + i % 400})"
        for i in range(n_functions)
    ]
    roots = [f"<module> (app/main{i}.py:1)" for i in range(4)]
    stacks: set[str] = set()
    paths: list[list[str]] = []
    while len(paths) < n_stacks:
        depth = int(rng.integers(10, 41))
        if paths and rng.random() < 0.8:
            base = paths[int(rng.integers(len(paths)))]
            keep = int(rng.integers(1, min(len(base), depth)))
            path = base[:keep]
        else:
            path = [roots[int(rng.integers(len(roots)))]]
        while len(path) < depth:
            path.append(names[int(rng.integers(n_functions))])
        text = ";".join(path)
        if text not in stacks:
            stacks.add(text)
            paths.append(path)
    return [";".join(p) for p in paths]


def write_corpus(folder: Path, files: int, lines: int, n_stacks: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    stacks = make_stacks(n_stacks, max(2000, n_stacks // 10), rng)
    popularity = 1.0 / np.arange(1, n_stacks + 1) ** 0.6
    popularity /= popularity.sum()
    start = 1_763_800_000
    total = 0
    for f in range(files):
        chosen = rng.choice(n_stacks, size=lines, replace=False, p=popularity)
        counts = rng.integers(1, 60, size=lines)
        body = "\n".join(f"{stacks[s]} {c}" for s, c in zip(chosen.tolist(), counts.tolist()))
        path = folder / f"{start + 60 * f}.folded"
        path.write_text(body + "\n")
        total += path.stat().st_size
    return total


def run_child(code: str, *args: str) -> dict[str, float]:
    program = "import json\n" + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", program, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"benchmark step failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--stacks", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed)")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="regbot-bench-"))
    corpus, store = work / "corpus", work / "store"
    try:
        shutil.rmtree(store, ignore_errors=True)
        if not corpus.exists():
            corpus.mkdir(parents=True)
            t = time.perf_counter()
            size = write_corpus(corpus, args.files, args.lines, args.stacks, args.seed)
            print(
                f"corpus: {args.files} files x {args.lines} lines, {args.stacks} stacks, "
                f"{size / 1e6:,.0f} MB, written in {time.perf_counter() - t:.1f}s"
            )
        lines = args.files * args.lines
        run_child(FLOOR_LINES, str(corpus))  # warm the page cache so every step reads from memory
        floor = run_child(FLOOR_LINES, str(corpus))
        floor_split = run_child(FLOOR_SPLIT, str(corpus))
        ingest = run_child(REGBOT_INGEST, str(corpus), str(store))
        gcpu = run_child(REGBOT_GCPU, str(store))
        rows = [
            ("floor: read + split lines", floor["seconds"], floor["peak_mb"]),
            (
                "floor: read + split lines + rpartition",
                floor_split["seconds"],
                floor_split["peak_mb"],
            ),
            ("regbot ingest (parse, intern, store)", ingest["seconds"], ingest["peak_mb"]),
            ("regbot gCPU series from the store", gcpu["seconds"], gcpu["peak_mb"]),
        ]
        print(f"\n{'step':<42} {'seconds':>8} {'lines/s':>12} {'peak MB':>9}")
        for name, seconds, peak in rows:
            print(f"{name:<42} {seconds:>8.2f} {lines / seconds:>12,.0f} {peak:>9,.0f}")
        print(
            f"\ningest / floor (read + split lines): {ingest['seconds'] / floor['seconds']:.2f}x "
            f"(target <= 3x)"
        )
        print(
            f"gcpu / ingest: {gcpu['seconds'] / ingest['seconds']:.2f} (target < 1); "
            f"{gcpu['series']:,} series x {gcpu['points'] // max(gcpu['series'], 1):,} points; "
            f"store opened in {gcpu['open_seconds']:.2f}s"
        )
        store_mb = sum(p.stat().st_size for p in store.iterdir()) / 1e6
        print(f"store on disk: {store_mb:,.1f} MB")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
