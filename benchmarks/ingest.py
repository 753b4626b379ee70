"""Ingest benchmark: a folded corpus of 1,000 bucket files x 2,000 lines, regbot beside the floor.

Generates (seeded) 1,000 folded files of 2,000 lines each (2,000,000 lines) drawn from 50,000
distinct stacks of depth 10-40 over a call tree of py-spy-style frames, then runs, each in its own
process so peak memory is its own:

* floor   - merely reading every file and splitting its lines in Python (and, as a second floor,
            also splitting each line into stack and count);
* regbot  - `regbot ingest CORPUS --store DIR` (parse, intern, aggregate, write the store);
* gcpu    - opening the store and building every gCPU series (`build_gcpu`);
* append  - `regbot ingest` of one more file into (a copy of) that store.

regbot runs twice: this version, which writes Parquet segments (format regbot-store/2), and the
last version that wrote numpy .npz segments (regbot-store/1), its sources taken from git
(``git archive --npz-rev``, default: the parent of the commit that changed the store's format)
into a temporary folder and run from there. A third gCPU row has this version read the npz
store (the backward-compatible path).

Prints seconds, lines/s, peak RSS and the store's size on disk side by side, the ratios the issue
asks about (ingest / floor <= 3, gcpu < ingest), and Parquet against npz.

    python benchmarks/ingest.py [--files 1000] [--lines 2000] [--stacks 50000] [--dir /tmp/x]
                                [--npz-rev REV | --no-npz] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

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
if hasattr(SampleIndex, "of_store"):
    index = SampleIndex.of_store(store)
else:  # the npz version
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


def run_child(code: str, *args: str, sources: Path | None = None) -> dict[str, float]:
    """Run ``code`` in a fresh interpreter; with ``sources``, importing regbot from that laid-out
    package (``npz_sources``) rather than the installed one."""
    program = "import json\n" + textwrap.dedent(code)
    env = dict(os.environ)
    if sources is not None:
        env["PYTHONPATH"] = str(sources)
        check = (
            f"import regbot.profiles.store as s\nassert s.__file__.startswith({str(sources)!r})\n"
        )
        program = check + program
    done = subprocess.run(
        [sys.executable, "-c", program, *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=sources,
    )
    if done.returncode != 0:
        raise SystemExit(f"benchmark step failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def best_of(
    repeat: int,
    code: str,
    *args: str,
    sources: Path | None = None,
    prepare: Callable[[], object] | None = None,
) -> dict[str, float]:
    """``run_child`` ``repeat`` times (calling ``prepare`` before each run): the fastest run's
    figures, with the highest peak memory of all."""
    runs = []
    for _ in range(max(1, repeat)):
        if prepare is not None:
            prepare()
        runs.append(run_child(code, *args, sources=sources))
    fastest = min(runs, key=lambda run: run["seconds"])
    return {**fastest, "peak_mb": max(run["peak_mb"] for run in runs)}


def copy(store: Path, name: str) -> Callable[[], object]:
    """A fresh copy of ``store`` named ``name`` beside it, made when called."""

    def make() -> object:
        target = store.with_name(name)
        shutil.rmtree(target, ignore_errors=True)
        return shutil.copytree(store, target)

    return make


def one_more_file(corpus: Path, folder: Path, files: int) -> Path:
    """A folder holding one more bucket file: the corpus's last file, for the next minute."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    last = sorted(corpus.iterdir())[-1]
    shutil.copy(last, folder / f"{int(last.stem) + 60}.folded")
    return folder


def npz_revision() -> str | None:
    """The last commit whose store wrote npz segments: the parent of the commit that removed
    ``FORMAT = "regbot-store/1"`` from profiles/store.py (None outside a git checkout)."""
    done = subprocess.run(
        [
            "git",
            "log",
            "-1",
            "--format=%H",
            '-SFORMAT = "regbot-store/1"',
            "--",
            "profiles/store.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    changed = done.stdout.strip()
    return f"{changed}^" if done.returncode == 0 and changed else None


def npz_sources(revision: str, into: Path) -> Path:
    """regbot at ``revision`` (``git archive``, the repository untouched) laid out as installed:
    the top-level folders linked under ``regbot/`` as pyproject's package-dir maps them."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    with (into / "pyproject.toml").open("rb") as f:
        mapping: dict[str, str] = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    tree = into / "_installed"
    shutil.copytree(into / mapping["regbot"], tree / "regbot")
    for name, folder in mapping.items():
        if name != "regbot":
            tree.joinpath(*name.split(".")).symlink_to(into / folder, target_is_directory=True)
    return tree


def size_on_disk(folder: Path) -> float:
    """MB of every file under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--stacks", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed)")
    parser.add_argument("--npz-rev", help="git revision of the npz store (default: found in git)")
    parser.add_argument("--no-npz", action="store_true", help="skip the npz store")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run each step N times: fastest time, highest peak"
    )
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="regbot-bench-"))
    corpus, store, npz_store = work / "corpus", work / "store", work / "store-npz"
    npz_rev = None if args.no_npz else (args.npz_rev or npz_revision())
    try:
        for old in (store, npz_store, work / "npz-sources", work / "appended", work / "extra"):
            shutil.rmtree(old, ignore_errors=True)
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
        n = args.repeat
        floor = best_of(n, FLOOR_LINES, str(corpus))
        floor_split = best_of(n, FLOOR_SPLIT, str(corpus))
        ingest = best_of(
            n, REGBOT_INGEST, str(corpus), str(store), prepare=lambda: shutil.rmtree(store, True)
        )
        gcpu = best_of(n, REGBOT_GCPU, str(store))
        extra = one_more_file(corpus, work / "extra", args.files)
        append = best_of(
            n, REGBOT_INGEST, str(extra), str(work / "appended"), prepare=copy(store, "appended")
        )
        rows = [
            ("floor: read + split lines", floor, None),
            ("floor: read + split lines + rpartition", floor_split, None),
            ("regbot ingest, Parquet (parse, intern, store)", ingest, size_on_disk(store)),
            ("regbot gCPU series from the Parquet store", gcpu, None),
            ("regbot ingest of 1 more file into it", append, None),
        ]
        if npz_rev is not None:
            sources = npz_sources(npz_rev, work / "npz-sources")
            npz_ingest = best_of(
                n,
                REGBOT_INGEST,
                str(corpus),
                str(npz_store),
                sources=sources,
                prepare=lambda: shutil.rmtree(npz_store, True),
            )
            npz_gcpu = best_of(n, REGBOT_GCPU, str(npz_store), sources=sources)
            npz_append = best_of(
                n,
                REGBOT_INGEST,
                str(extra),
                str(work / "appended"),
                sources=sources,
                prepare=copy(npz_store, "appended"),
            )
            npz_read = best_of(n, REGBOT_GCPU, str(npz_store))
            rows += [
                ("regbot ingest, npz (the npz version)", npz_ingest, size_on_disk(npz_store)),
                ("regbot gCPU series from the npz store", npz_gcpu, None),
                ("regbot ingest of 1 more file into it", npz_append, None),
                ("gCPU from the npz store, read by this version", npz_read, None),
            ]
        print(f"\n{'step':<48} {'seconds':>8} {'lines/s':>12} {'peak MB':>9} {'store MB':>9}")
        for name, got, store_mb in rows:
            seconds, peak = got["seconds"], got["peak_mb"]
            on_disk = f"{store_mb:>9,.1f}" if store_mb is not None else f"{'':>9}"
            step_lines = args.lines if "1 more file" in name else lines
            rate = f"{step_lines / seconds:>12,.0f}"
            print(f"{name:<48} {seconds:>8.2f} {rate} {peak:>9,.0f} {on_disk}")
        print(
            f"\ningest / floor (read + split lines): {ingest['seconds'] / floor['seconds']:.2f}x "
            f"(target <= 3x)"
        )
        print(
            f"gcpu / ingest: {gcpu['seconds'] / ingest['seconds']:.2f} (target < 1); "
            f"{gcpu['series']:,} series x {gcpu['points'] // max(gcpu['series'], 1):,} points; "
            f"store opened in {gcpu['open_seconds']:.2f}s"
        )
        if npz_rev is not None:
            print(
                f"Parquet / npz ({npz_rev}): ingest "
                f"{ingest['seconds'] / npz_ingest['seconds']:.2f}x time, "
                f"{ingest['peak_mb'] / npz_ingest['peak_mb']:.2f}x peak; gCPU "
                f"{gcpu['seconds'] / npz_gcpu['seconds']:.2f}x time, "
                f"{gcpu['peak_mb'] / npz_gcpu['peak_mb']:.2f}x peak; store "
                f"{size_on_disk(store) / size_on_disk(npz_store):.2f}x size"
            )
            if npz_gcpu["series"] != gcpu["series"] or npz_read["series"] != gcpu["series"]:
                raise SystemExit("the npz and Parquet stores give different gCPU series")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
