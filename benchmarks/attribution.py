"""Attribution benchmark: how often regbot names the commit that caused a regression, over many
seeded scenarios (``regbot.datasets.service``: a generated Python service in a real git repository,
its py-spy-style profiles across three deploys, one planted culprit among realistic decoys).

Per seed: build the scenario in a temporary folder; read the last deploy's change set
(``read_change_set``); ingest the folded profiles into a sample store; build the evidence of the
culprit's gCPU series (its points from ``build_gcpu``, the change at the last deploy, the deploy's
run windows) and run ``attribute_all`` with default settings. The same inputs are ranked by three
baselines in the same run:

* FBDetect's paper scope: gCPU attribution with ``scope="stack"`` and every change scored alone
  (``attributed_share`` per commit, so two changes on one stack are both credited with it), the
  same text similarity, the same ranking and confidence rule;
* text similarity only (the ranking and confidence rule on the text part alone);
* the most recent commit first (the naive "blame the last change").

Printed: top-1 and top-3 accuracy over each ranking, the share of regressions with a suggestion
(confidence high or low; always for "most recent"), accuracy where a suggestion is made, regbot's
results by scenario kind, by ambiguity and by confidence, the decoys that beat the culprit, and the
time per scenario (build vs. attribution). FBDetect's targets: top-3 accuracy >= 95% where a
suggestion is made, a suggestion for >= 60% of regressions.

``--full`` runs the whole ``regbot run --dry-run`` command on a few seeds instead and reports
whether detection reported the culprit's series, whether attribution named the culprit, and
where each planted false alarm went (which filter removed it, or which regression absorbed it).

``--real`` runs the whole ``regbot run --dry-run``, with regbot's default settings, on the
scenarios of ``tests/fixtures/real_history``: the released histories of two real libraries
(sqlparse, Python-Markdown) with regbot's deploys on top, profiled by real py-spy recordings of
every code state (``tests/support/real_history.py`` lays them out over three days and ten
hours). Per scenario: whether a culprit is ranked first with confidence ``high`` by some
reported regression (each culprit separately for two culprits), the decoys a ``high``
regression names first (and those among its candidates), the gate, where the regressed series
went, and what every reported regression names. Targets: culprit first with ``high`` in >= 9 of
the 10 ``slower`` and ``caller_calls_more`` scenarios, no decoy ever named with ``high``, the gate
failing on every scenario. The seeded generator's top-1 / top-3 on ``--seeded-seeds`` seeds
(attribution of the culprit's series, as the default mode) are printed beside.

    python benchmarks/attribution.py [--seeds 200] [--first-seed 0] [--workers 1]
    python benchmarks/attribution.py --full [--seeds 10]
    python benchmarks/attribution.py --real [--seeded-seeds 40] [--real-seed 0]

Modules: ``attribution_seeded`` (one seed through regbot and the baselines) and
``attribution_seeded_report`` (its tables); ``attribution_regbot_run`` (the whole run, in-process,
and where a series went in its report); ``attribution_full`` (``--full``); ``attribution_real``
and ``attribution_real_report`` (``--real``); ``attribution_table`` (the plain-text tables).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor

from attribution_full import full_report, run_full
from attribution_real import load_real_history, run_clean, run_real, scenario_spec
from attribution_real_report import clean_report, real_report
from attribution_seeded import run_seed
from attribution_seeded_report import seeded_misses, seeded_report


def _map(function: Callable, seeds: Sequence[int], workers: int, progress: bool) -> list:
    results = []
    if workers <= 1:
        iterator = map(function, seeds)
    else:
        pool = ProcessPoolExecutor(workers)
        iterator = pool.map(function, seeds)
    for i, result in enumerate(iterator, start=1):
        results.append(result)
        if progress and (i % 10 == 0 or i == len(seeds)):
            print(f"  {i}/{len(seeds)} seeds", file=sys.stderr, flush=True)
    if workers > 1:
        pool.shutdown()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, help="how many seeds (default 200; 10 with --full)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="processes (timings are per seed)")
    parser.add_argument("--full", action="store_true", help="run `regbot run --dry-run` per seed")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--misses", action="store_true", help="list the seeds where regbot's top-1 is wrong"
    )
    parser.add_argument(
        "--real", action="store_true", help="`regbot run --dry-run` on the real histories"
    )
    parser.add_argument(
        "--seeded-seeds", type=int, default=40, help="with --real: seeded scenarios beside"
    )
    parser.add_argument("--real-seed", type=int, default=0, help="with --real: the timeline seed")
    args = parser.parse_args(argv)
    count = args.seeds if args.seeds is not None else (10 if args.full else 200)
    seeds = list(range(args.first_seed, args.first_seed + count))
    if args.real:
        real_history = load_real_history()
        names = real_history.scenario_names()
        real = []
        for i, (library, name) in enumerate(names, start=1):
            real.append(run_real(library, name, args.real_seed))
            if not args.quiet:
                print(f"  {i}/{len(names)} real scenarios", file=sys.stderr, flush=True)
        clean = [
            run_clean(library, name, args.real_seed)
            for library, name in names
            if real_history.clean_deploy(scenario_spec(real_history, library, name))
        ]
        seeded_seeds = list(range(args.first_seed, args.first_seed + args.seeded_seeds))
        seeded = _map(run_seed, seeded_seeds, args.workers, not args.quiet) if seeded_seeds else []
        print(real_report(real, seeded))
        print("\n" + clean_report(clean))
    elif args.full:
        print(full_report(_map(run_full, seeds, args.workers, not args.quiet)))
    else:
        results = _map(run_seed, seeds, args.workers, not args.quiet)
        print(seeded_report(results))
        if args.misses:
            print("\n" + seeded_misses(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
