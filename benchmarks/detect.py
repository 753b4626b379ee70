"""Detection benchmark: the whole `regbot detect` command on realistic fleets (default), or the
speed of the short-term path on a 100,000-series fleet (``--scale``); peers on the same series.

**Fleet quality (default).** For each of ``--fleets`` seeded fleets from
``tests/support/fleet_sim.py`` (3,000 series × 1,500 ten-minute points: gCPU from a call tree,
latency, throughput, a shared load term, ~75 regressions of 1–10× MDE in one analysis window,
cascades, creeps, transients, seasonal peaks, cost shifts, improvements), the fleet is written as
a SPEC §2 CSV beside an empty ``regbot.yml`` in a temporary folder and the command a user types is
run: ``regbot detect series.csv -c regbot.yml -o out.json`` (default config: dedup on, no stacks,
state in that folder), timed; then again with ``dedup: {method: kdd18}``. From ``out.json``:

* a true regression (step or cascade) is *found* when a reported regression (a representative in
  ``regressions``) lies on one of its true group's series with its change time within ±6 buckets;
  recall per MDE multiple of its origin series;
* change-time error: per true regression, the report on its group's series nearest in time
  (median and p90 |error| in buckets, share within ±6 at ≥ 4× MDE); coverage of the report's
  ``change_time_interval`` [lo, hi] when the report has one;
* creeps reported (a report on the creep's series after its ramp began), by detector;
* false positives per 1,000 series by what the reported series carries: transient, seasonal peak,
  cost-shift member, improvement, quiet (how many of them bimodal or heavy-tailed), mistimed (a
  true regression's series reported > 6 buckets away);
* duplicates per true group: representatives beyond the first within ±6 buckets of one true
  regression, over the true regressions found;
* group purity: each representative's members are rebuilt from its ``duplicates`` ids and from
  the ``filtered`` candidates whose ``som_dedup``/``pairwise_dedup`` verdict names it as
  ``representative`` (``stack_dedup``: ``explained_by``); purity = the share of merged members
  that belong to the representative's true group;
* the funnel (mean per fleet) and, for true regressions ≥ 1.5× MDE that were missed, the stage
  whose verdict removed their candidate.

Beside it, on the same series: the maximum-likelihood single change point (least-squares split
over the whole series; the limit for change-time accuracy), ruptures Binseg (l2, penalty
3·log(n)·σ̂²) and Apache Otava (``peers.py``; ``--no-otava`` to skip). A peer reports a series when
it places an upward (oriented: worse) change point in the analysis window; it is scored by the
same rules. Peers run on every series of a planted event plus a seeded sample of quiet series (up
to ``--peer-series`` per fleet); their false positives per 1,000 series scale each decoy type's
rate in the subset to its count in the fleet.

    python benchmarks/detect.py [--series 3000] [--points 1500] [--fleets 3 | --seeds 1 2 3]
                                [--peer-series 400] [--no-otava] [--no-kdd18]

**Scale (``--scale``).**

1. regbot, in a child process (so peak memory is its own): simulate a fleet
   (``detection.simulate``, default 100,000 series × 1,500 ten-minute points, seed 1), pack it,
   and run the whole short-term path (change points → went-away → seasonality → thresholds,
   threshold 0 so that only the statistics decide) over it. Prints seconds, peak RSS and the
   funnel, and the quality against the planted truth: recall per step size (in multiples of the
   minimum detectable effect), false-positive rate per quiet series, and the share of transient
   dips/spikes and seasonal peaks filtered.
2. Peers on the first ``--peer-series`` series of the same fleet: ruptures Binseg (l2) and Pelt
   (l2, run as KernelCPD with the linear kernel: the same cost in ruptures' C code) with an
   MBIC-like penalty 3·log(n)·σ̂² (σ̂ from the MAD of first differences), a plain
   CUSUM (k = 0.5σ, h = 5σ) without regbot's filters, and Apache Otava's E-divisive from its own
   venv (``--no-otava`` to skip). A peer "reports" a series when it puts an upward change point
   in the analysis window. Table: method, precision, recall, F1, false-positive rate, seconds per
   1,000 series — regbot's row from the same subset.

    python benchmarks/detect.py --scale [--series 100000] [--points 1500] [--seed 1]
                                        [--peer-series 300] [--no-otava]

**Full (``--full``).** The whole `regbot detect` command, file to report with every stage on,
on a 100,000-series Parquet file, with wall and CPU seconds and peak RSS, quality against the
planted truth, and ruptures KernelCPD, Binseg, CUSUM and Otava on a subset (``detect_full``).

    python benchmarks/detect.py --full [--series 100000] [--points 1500] [--engine local]

Modules: ``detect_full`` (``--full``), ``detect_fleet`` (the default mode's run),
``detect_fleet_tally`` (what it counts and the targets),
``detect_fleet_scoring`` (regbot's report against the truth),
``detect_fleet_peer_scoring`` (the limit and the peers by the same rules), ``detect_fleet_table``;
``detect_scale`` (``--scale``) and ``detect_scale_regbot`` (its child process);
``detect_peers`` (ruptures, plain CUSUM, Otava on the same series).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from detect_fleet import fleet_run
from detect_full import full_run
from detect_scale import scale_run


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", action="store_true", help="the 100,000-series speed run")
    parser.add_argument(
        "--full", action="store_true", help="`regbot detect` file to report at 100,000 series"
    )
    parser.add_argument("--partition", type=int, default=20_000, help="--full: series per part")
    parser.add_argument("--engine", default="local", help="--full: local, processes or dask")
    parser.add_argument("--workers", type=int, default=0, help="--full: executor workers")
    parser.add_argument(
        "--series",
        type=int,
        default=None,
        help="series per fleet (default 3,000; --scale: 100,000)",
    )
    parser.add_argument("--points", type=int, default=1500)
    parser.add_argument("--fleets", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=None)
    parser.add_argument("--seed", type=int, default=1, help="--scale only")
    parser.add_argument(
        "--peer-series",
        type=int,
        default=None,
        help="series per fleet the peers run on (default 400; --scale: 300)",
    )
    parser.add_argument("--no-otava", action="store_true")
    parser.add_argument("--no-kdd18", action="store_true")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep each fleet's series.csv, regbot.yml and out.json under this folder",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.full:
        args.series = args.series or 100_000
        args.peer_series = args.peer_series or 300
        full_run(args)
    elif args.scale:
        args.series = args.series or 100_000
        args.peer_series = args.peer_series or 300
        scale_run(args)
    else:
        args.peer_series = args.peer_series or 400
        fleet_run(args)


if __name__ == "__main__":
    main()
