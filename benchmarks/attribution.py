"""Attribution benchmark: how often regbot names the commit that caused a regression, over many
seeded scenarios (``regbot.bot.scenario``: a generated Python service in a real git repository,
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

    python benchmarks/attribution.py [--seeds 200] [--first-seed 0] [--workers 1]
    python benchmarks/attribution.py --full [--seeds 10]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from regbot.attribution.attribute import AttributionSettings, RegressionEvidence, attribute_all
from regbot.attribution.changes import read_change_set
from regbot.attribution.gcpu_attribution import TimeSplit, attributed_share
from regbot.attribution.model import Attribution, Commit
from regbot.attribution.rank import RankSettings, rank_commits
from regbot.bot.ingest import collect_profile_paths, ingest_profiles
from regbot.bot.scenario import BUCKET_S, Scenario, build_scenario
from regbot.detection.model import subroutine_of_series
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store

METHODS = ("regbot", "fbdetect-stack-alone", "text-only", "most-recent")
METHOD_TITLES = {
    "regbot": "regbot (informative scope, deepest frame)",
    "fbdetect-stack-alone": "FBDetect paper (stack scope, alone)",
    "text-only": "text similarity only",
    "most-recent": "most recent commit",
}


@dataclass(frozen=True)
class MethodResult:
    """Where the culprit ranks (0 = first; None: not ranked) and whether a suggestion is made."""

    rank: int | None
    suggested: bool
    confidence: str
    named: bool  # the culprit is among the named candidates
    top_role: str  # what the first-ranked commit is (culprit, a decoy kind, filler)


@dataclass(frozen=True)
class SeedResult:
    seed: int
    kind: str
    ambiguous: bool
    commits: int
    methods: dict[str, MethodResult]
    build_s: float
    attribution_s: float
    parts_s: dict[str, float] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# One seed.


def _role_of(scenario: Scenario) -> Callable[[str], str]:
    roles = {sha: kind for kind, sha in scenario.decoys.items()}
    roles[scenario.culprit_sha] = "culprit"
    return lambda sha: roles.get(sha, "filler")


def _result(
    ranking: Sequence[str],
    culprit: str,
    suggested: bool,
    confidence: str,
    named: Sequence[str],
    role: Callable[[str], str],
) -> MethodResult:
    rank = ranking.index(culprit) if culprit in ranking else None
    top = role(ranking[0]) if ranking else "none"
    return MethodResult(rank, suggested, confidence, culprit in named, top)


def _from_attribution(found: Attribution, culprit: str, role: Callable[[str], str]) -> MethodResult:
    return _result(
        [s.commit.sha for s in found.ranked],
        culprit,
        found.confidence != "none",
        found.confidence,
        [s.commit.sha for s in found.candidates],
        role,
    )


def evidence_for(scenario: Scenario, index: SampleIndex) -> RegressionEvidence:
    """The culprit's gCPU series as `regbot run` would hand it to attribution."""
    subroutine = subroutine_of_series(scenario.culprit_function)
    assert subroutine is not None
    gcpu = build_gcpu(index)
    row = gcpu.subroutines.index(subroutine)
    start, end = scenario.window_s
    keep = (gcpu.timestamps_s >= start) & (gcpu.timestamps_s <= end)
    return RegressionEvidence(
        id=f"seed-{scenario.seed}",
        series_id=scenario.culprit_function,
        kind="gcpu",
        subroutine=subroutine,
        change_time_s=scenario.deployed_at_s,
        window_start_s=start,
        window_end_s=end,
        times_s=gcpu.timestamps_s[keep],
        values=gcpu.values[row][keep],
    )


def baselines(
    evidence: RegressionEvidence,
    commits: Sequence[Commit],
    modified: Sequence[tuple[str, ...]],
    index: SampleIndex,
    regbot: Attribution,
    culprit: str,
    role: Callable[[str], str],
) -> dict[str, MethodResult]:
    """The three baselines over the same candidates and the same text part as regbot."""
    rank_settings = RankSettings()
    text = {s.commit.sha: s.parts.text_similarity for s in regbot.ranked}
    split = TimeSplit(evidence.window_start_s, evidence.change_time_s, evidence.window_end_s)
    assert evidence.subroutine is not None
    alone = [
        attributed_share(index, evidence.subroutine, m, split, "stack").fraction for m in modified
    ]
    stack_parts = [
        {"gcpu_attribution": g, "text_similarity": text[c.sha], "correlation": None}
        for c, g in zip(commits, alone, strict=True)
    ]
    text_parts = [
        {"gcpu_attribution": None, "text_similarity": text[c.sha], "correlation": None}
        for c in commits
    ]
    results = {
        "fbdetect-stack-alone": _from_attribution(
            rank_commits(commits, stack_parts, rank_settings, modified), culprit, role
        ),
        "text-only": _from_attribution(
            rank_commits(commits, text_parts, rank_settings, modified), culprit, role
        ),
    }
    recent = [c.sha for c in reversed(commits)]
    results["most-recent"] = _result(recent, culprit, True, "always", recent[:1], role)
    return results


def run_seed(seed: int) -> SeedResult:
    """Build one scenario and attribute its culprit's regression by every method."""
    with tempfile.TemporaryDirectory(prefix=f"regbot-attribution-{seed}-") as folder:
        root = Path(folder)
        started = time.perf_counter()
        scenario = build_scenario(root / "scenario", seed)
        built = time.perf_counter()
        commits = read_change_set(scenario.repo_path, scenario.previous_sha, scenario.deploy_sha)
        read = time.perf_counter()
        ingest_profiles(
            collect_profile_paths([scenario.profiles_dir]), root / "store", bucket_width_s=BUCKET_S
        )
        store = open_store(root / "store")
        index = SampleIndex(store.table, store.records())
        ingested = time.perf_counter()
        evidence = evidence_for(scenario, index)
        changes, found = attribute_all([evidence], commits, index, [], AttributionSettings())
        regbot = found[evidence.id]
        attributed = time.perf_counter()
        role = _role_of(scenario)
        methods = {"regbot": _from_attribution(regbot, scenario.culprit_sha, role)}
        methods.update(
            baselines(
                evidence,
                changes.commits,
                changes.modified,
                index,
                regbot,
                scenario.culprit_sha,
                role,
            )
        )
        return SeedResult(
            seed=seed,
            kind=scenario.kind,
            ambiguous=bool(scenario.details.get("ambiguous")),
            commits=len(changes.commits),
            methods=methods,
            build_s=built - started,
            attribution_s=attributed - built,
            parts_s={
                "change set": read - built,
                "ingest": ingested - read,
                "attribute": attributed - ingested,
            },
        )


# ---------------------------------------------------------------------------------------------
# Tables.


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def _accuracy_row(results: Sequence[MethodResult]) -> list[str]:
    n = len(results)
    suggested = [r for r in results if r.suggested]
    top1 = sum(r.rank == 0 for r in results)
    top3 = sum(r.rank is not None and r.rank < 3 for r in results)
    s1 = sum(r.rank == 0 for r in suggested)
    s3 = sum(r.rank is not None and r.rank < 3 for r in suggested)
    return [
        str(n),
        _pct(top1, n),
        _pct(top3, n),
        _pct(len(suggested), n),
        _pct(s1, len(suggested)),
        _pct(s3, len(suggested)),
    ]


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    out = [title, line.format(*header), line.format(*("-" * w for w in widths))]
    out += [line.format(*row) for row in rows]
    return "\n".join(out)


ACCURACY_HEADER = ("", "seeds", "top-1", "top-3", "suggests", "top-1|sugg", "top-3|sugg")


def report(results: Sequence[SeedResult]) -> str:
    """The benchmark's tables (see the module docstring)."""
    n = len(results)
    kinds = Counter(r.kind for r in results)
    out = [
        f"attribution benchmark: {n} seeds ("
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        + f"; ambiguous {sum(r.ambiguous for r in results)});"
        f" {statistics.mean(r.commits for r in results):.1f} candidate commits per deploy",
        "",
    ]
    rows = [[METHOD_TITLES[m], *_accuracy_row([r.methods[m] for r in results])] for m in METHODS]
    out += [_table("all methods (accuracy over each ranking)", ACCURACY_HEADER, rows), ""]

    def regbot_of(selected: Sequence[SeedResult]) -> list[MethodResult]:
        return [r.methods["regbot"] for r in selected]

    rows = []
    for kind in sorted(kinds):
        for ambiguous in (False, True):
            selected = [r for r in results if r.kind == kind and r.ambiguous == ambiguous]
            if selected:
                label = f"{kind}{' (ambiguous)' if ambiguous else ''}"
                rows.append([label, *_accuracy_row(regbot_of(selected))])
    out += [_table("regbot by scenario kind", ACCURACY_HEADER, rows), ""]
    rows = []
    for confidence in ("high", "low", "none"):
        selected = [r for r in results if r.methods["regbot"].confidence == confidence]
        res = regbot_of(selected)
        rows.append(
            [
                confidence,
                str(len(selected)),
                _pct(sum(m.rank == 0 for m in res), len(res)),
                _pct(sum(m.rank is not None and m.rank < 3 for m in res), len(res)),
                _pct(sum(m.named for m in res), len(res)),
            ]
        )
    out += [
        _table(
            "regbot by confidence",
            ("confidence", "seeds", "top-1", "top-3", "culprit named"),
            rows,
        ),
        "",
    ]
    beaten = Counter(r.methods["regbot"].top_role for r in results if r.methods["regbot"].rank != 0)
    out.append(
        "first-ranked commit when regbot's top-1 is wrong: "
        + (", ".join(f"{k} {v}" for k, v in beaten.most_common()) or "none")
    )
    build = [r.build_s for r in results]
    attribution = [r.attribution_s for r in results]
    parts = {k: statistics.mean(r.parts_s[k] for r in results) for k in results[0].parts_s}
    out.append(
        f"time per scenario: build {statistics.mean(build):.2f}s (max {max(build):.2f}s),"
        f" attribution {statistics.mean(attribution):.2f}s (max {max(attribution):.2f}s: "
        + ", ".join(f"{k} {v:.2f}s" for k, v in parts.items())
        + ")"
    )
    res = regbot_of(results)
    suggested = [m for m in res if m.suggested]
    top3 = sum(m.rank is not None and m.rank < 3 for m in suggested)
    share = len(suggested) / n if n else 0.0
    accuracy = top3 / len(suggested) if suggested else 0.0
    out.append(
        f"targets: top-3 where suggested {100 * accuracy:.1f}% (>= 95%: "
        f"{'met' if accuracy >= 0.95 else 'NOT met'}); suggestions {100 * share:.1f}% "
        f"(>= 60%: {'met' if share >= 0.6 else 'NOT met'})"
    )
    return "\n".join(out)


def misses(results: Sequence[SeedResult]) -> str:
    """One row per seed where regbot's first-ranked commit is not the culprit."""
    rows = [
        [
            str(r.seed),
            r.kind,
            "yes" if r.ambiguous else "no",
            m.confidence,
            "-" if m.rank is None else str(m.rank + 1),
            m.top_role,
            "yes" if m.named else "no",
        ]
        for r in results
        if (m := r.methods["regbot"]).rank != 0
    ]
    header = ("seed", "kind", "ambiguous", "confidence", "culprit rank", "ranked first", "named")
    return _table("regbot's top-1 misses", header, rows)


# ---------------------------------------------------------------------------------------------
# --full: the whole `regbot run --dry-run`.


def _fate(report: dict, series: str, depth: int = 0) -> str:
    """Where a series went in a run's report: REPORTED, "no change point", the stage that
    removed it, or the dedup stage that merged it into another regression (and that one's
    fate, when it was not reported either)."""
    if any(entry["series"] == series for entry in report["regressions"]):
        return "REPORTED"
    entry = next((e for e in report.get("filtered", []) if e["series"] == series), None)
    if entry is None:
        return "no change point"
    for stage, verdict in entry["verdicts"].items():
        if not isinstance(verdict, dict) or verdict.get("passed") is not False:
            continue
        reason = str(verdict.get("reason", ""))
        if not reason.startswith("duplicate of ") or depth > 3:
            return stage
        into = reason.removeprefix("duplicate of ").strip()
        fate = _fate(report, into, depth + 1)
        if fate == "REPORTED":
            return f"{stage} into a reported regression"
        return f"{stage} into {into.split(' (')[0]}, itself {fate}"
    return "filtered"


@dataclass(frozen=True)
class FullResult:
    """One seed's `regbot run`: where the culprit's series went, the regression that names the
    culprit (its own or the one its group was merged into), where the false alarms went."""

    seed: int
    kind: str
    culprit_fate: str
    named_by: str  # series of the first reported regression naming the culprit ("" for none)
    confidence: str
    first: bool
    reported: int
    fates: dict[str, str]
    seconds: float


def run_full(seed: int) -> FullResult:
    from regbot.bot.cli import main

    with tempfile.TemporaryDirectory(prefix=f"regbot-attribution-full-{seed}-") as folder:
        scenario = build_scenario(Path(folder) / "scenario", seed)
        output = Path(folder) / "report.json"
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(scenario.run_arguments(output))
        seconds = time.perf_counter() - started
        if code != 0:
            raise SystemExit(f"seed {seed}: regbot run exited {code}")
        report = json.loads(output.read_text())
    naming = [
        r
        for r in report["regressions"]
        if scenario.culprit_sha in [c["commit"] for c in r["candidates"]]
    ]
    naming.sort(key=lambda r: r["series"] != scenario.culprit_function)
    entry = naming[0] if naming else None
    own = next((r for r in report["regressions"] if r["series"] == scenario.culprit_function), None)
    shown = entry or own
    return FullResult(
        seed=seed,
        kind=scenario.kind,
        culprit_fate=_fate(report, scenario.culprit_function),
        named_by=entry["series"] if entry else "",
        confidence=shown["confidence"] if shown else "-",
        first=bool(entry) and entry["candidates"][0]["commit"] == scenario.culprit_sha,
        reported=len(report["regressions"]),
        fates={s: _fate(report, s) for s in scenario.planted_false_alarms},
        seconds=seconds,
    )


def _short(series: str) -> str:
    return series.split(" (")[0].removeprefix("gcpu:").rsplit("/", 1)[-1]


def full_report(results: Sequence[FullResult]) -> str:
    rows = [
        [
            str(r.seed),
            r.kind,
            r.culprit_fate,
            ("its own" if r.culprit_fate == "REPORTED" else _short(r.named_by))
            if r.named_by
            else "-",
            r.confidence,
            "yes" if r.first else "no",
            str(r.reported),
            ", ".join(_short(s) for s, f in r.fates.items() if f == "REPORTED") or "-",
            f"{r.seconds:.1f}s",
        ]
        for r in results
    ]
    header = (
        "seed",
        "kind",
        "culprit's series",
        "culprit named by",
        "confidence",
        "#1",
        "reported",
        "false alarms reported",
        "run",
    )
    out = [_table("regbot run --dry-run per seed", header, rows), ""]
    n = len(results)
    reported = sum(r.culprit_fate == "REPORTED" for r in results)
    covered = sum("into a reported" in r.culprit_fate for r in results)
    out.append(
        f"culprit's series: reported {_pct(reported, n)}, merged into a reported regression"
        f" {_pct(covered, n)}; culprit named by a reported regression"
        f" {_pct(sum(bool(r.named_by) for r in results), n)}, ranked #1"
        f" {_pct(sum(r.first for r in results), n)}"
    )
    lost = Counter(
        re.sub(r" into [^,]+, itself", " into a group itself", r.culprit_fate)
        for r in results
        if r.culprit_fate != "REPORTED" and "into a reported" not in r.culprit_fate
    )
    out.append(
        "culprit's series lost: " + (", ".join(f"{k} ×{v}" for k, v in lost.most_common()) or "-")
    )
    fates: Counter[str] = Counter()
    for r in results:
        for series, fate in r.fates.items():
            name = "gcpu cost shift" if series.startswith("gcpu:") else _short(series)
            fates[f"{name}: {re.sub(r' into [^,]+, itself', ' into a group itself', fate)}"] += 1
    out.append("planted false alarms: " + ", ".join(f"{k} ×{v}" for k, v in sorted(fates.items())))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------


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
    args = parser.parse_args(argv)
    count = args.seeds if args.seeds is not None else (10 if args.full else 200)
    seeds = list(range(args.first_seed, args.first_seed + count))
    if args.full:
        print(full_report(_map(run_full, seeds, args.workers, not args.quiet)))
    else:
        results = _map(run_seed, seeds, args.workers, not args.quiet)
        print(report(results))
        if args.misses:
            print("\n" + misses(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
