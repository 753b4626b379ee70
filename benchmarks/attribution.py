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
from regbot.attribution.deploy_lines import DeployLines, read_deploy_lines
from regbot.attribution.gcpu_attribution import TimeSplit, attributed_share
from regbot.attribution.model import Attribution, Commit
from regbot.attribution.rank import RankSettings, rank_commits
from regbot.bot.sources.profiles import collect_profile_paths, ingest_profiles
from regbot.datasets.service import BUCKET_S, Scenario, build_scenario
from regbot.detection.dedup_context import subroutine_of_series
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


def _line_reader(
    scenario: Scenario, commits: Sequence[Commit]
) -> Callable[[set[str]], DeployLines]:
    """The deploy's line facts as `regbot run` reads them (the previous deploy's time from the
    deploy log)."""
    previous_s = scenario.deploys[-2][1]
    return lambda paths: read_deploy_lines(
        scenario.repo_path, scenario.previous_sha, scenario.deploy_sha, paths, commits, previous_s
    )


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
        changes, found = attribute_all(
            [evidence], commits, index, [], AttributionSettings(), _line_reader(scenario, commits)
        )
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


def _spec(real_history, library: str, name: str) -> dict:
    return next(s for s in real_history.fixture(library)["scenarios"] if s["name"] == name)


def _run_quietly(
    arguments: Callable[[Path], list[str]], folder: Path, label: str
) -> tuple[dict, float]:
    """`regbot run` in-process with its output silenced: its report and wall seconds."""
    from regbot.bot.cli import main

    output = folder / "report.json"
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(arguments(output))
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{label}: regbot run exited {code}")
    return json.loads(output.read_text()), seconds


def run_full(seed: int) -> FullResult:
    with tempfile.TemporaryDirectory(prefix=f"regbot-attribution-full-{seed}-") as folder:
        scenario = build_scenario(Path(folder) / "scenario", seed)
        report, seconds = _run_quietly(scenario.run_arguments, Path(folder), f"seed {seed}")
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
# --real: the whole `regbot run --dry-run` on the real histories of real libraries.

SUPPORT = Path(__file__).resolve().parents[1] / "tests" / "support"
REAL_DECOYS = ("docstring_only", "local_rename", "speed_up", "caller_edit", "names_function")


def _real_history():
    """tests/support/real_history.py (not part of the installed package)."""
    if str(SUPPORT) not in sys.path:
        sys.path.insert(0, str(SUPPORT))
    import real_history

    return real_history


@dataclass(frozen=True)
class Named:
    """What one reported regression names: its series, confidence, the role of its first
    candidate (culprit, a decoy kind, filler; "-" without candidates) and of the ranking's first
    commit, and the culprit's place in its ranking (None: not ranked)."""

    series: str
    confidence: str
    first: str
    first_title: str
    ranked_first: str
    culprit_rank: int | None
    parts_first: dict[str, float]
    parts_culprit: dict[str, float] | None
    delta: float
    regressed: bool  # a regressed series, or the regression one was merged into


@dataclass(frozen=True)
class RealResult:
    library: str
    name: str
    kind: str
    culprit_functions: tuple[str, ...]  # per culprit: the function its edit changed
    culprits_high: tuple[bool, ...]  # per culprit: first candidate of a high regression
    culprits_first: tuple[bool, ...]  # per culprit: first candidate of any reported regression
    culprits_top3: tuple[bool, ...]  # per culprit: in the first 3 of some reported ranking
    decoys_high: tuple[str, ...]  # decoy kinds named first by a high regression
    decoys_in_high: tuple[str, ...]  # decoy kinds among the candidates of a high regression
    gate: str
    fates: dict[str, str]
    named: tuple[Named, ...]
    zero_gcpu_ok: bool  # docstring_only / local_rename decoys got gcpu_attribution 0 everywhere
    seconds: float


def _representative(report: dict, series: str, depth: int = 0) -> str | None:
    """The reported regression that stands for ``series``: itself, or the one a dedup stage
    merged it into (following the chain); None when it was not reported or merged."""
    if any(entry["series"] == series for entry in report["regressions"]):
        return series
    entry = next((e for e in report.get("filtered", []) if e["series"] == series), None)
    if entry is None or depth > 3:
        return None
    for verdict in entry["verdicts"].values():
        if isinstance(verdict, dict) and verdict.get("passed") is False:
            reason = str(verdict.get("reason", ""))
            if reason.startswith("duplicate of "):
                return _representative(
                    report, reason.removeprefix("duplicate of ").strip(), depth + 1
                )
            return None
    return None


def _role(scenario, sha: str) -> str:
    role = scenario.role(sha)
    return "culprit" if role == "culprit" else role


@dataclass(frozen=True)
class CleanResult:
    """A clean deploy (only neutral commits, the release's recordings on both sides): the
    gate's state and what was reported anyway."""

    library: str
    name: str
    gate: str
    reported: tuple[str, ...]
    seconds: float


def run_clean(library: str, name: str, seed: int = 0) -> CleanResult:
    real_history = _real_history()
    with tempfile.TemporaryDirectory(prefix=f"regbot-clean-{library}-{name}-") as folder:
        scenario = real_history.build_real_scenario(
            library, name, Path(folder) / "s", seed, clean=True
        )
        report, seconds = _run_quietly(
            scenario.run_arguments, Path(folder), f"{library}/{name} (clean)"
        )
    return CleanResult(
        library,
        name,
        str(report["gate"]["state"]),
        tuple(_short(r["series"]) for r in report["regressions"]),
        seconds,
    )


def clean_report(results: Sequence[CleanResult]) -> str:
    rows = [
        [f"{r.library}/{r.name}", r.gate, ", ".join(r.reported) or "-", f"{r.seconds:.0f}s"]
        for r in results
    ]
    passed = sum(r.gate == "success" for r in results)
    table = _table(
        "clean deploys (the scenario's leading neutral commits; the release's recordings on"
        " both sides)",
        ("deploy", "gate", "reported", "run"),
        rows,
    )
    verdict = "met" if passed == len(results) else "NOT met"
    return f"{table}\ngate passed on {passed}/{len(results)} clean deploys (target: all): {verdict}"


def run_real(library: str, name: str, seed: int = 0) -> RealResult:
    real_history = _real_history()
    with tempfile.TemporaryDirectory(prefix=f"regbot-real-{library}-{name}-") as folder:
        scenario = real_history.build_real_scenario(library, name, Path(folder) / "s", seed)
        report, seconds = _run_quietly(scenario.run_arguments, Path(folder), f"{library}/{name}")
    regressions = report["regressions"]
    high = [r for r in regressions if r["confidence"] == "high"]

    def first(r: dict) -> str:
        return r["candidates"][0]["commit"] if r["candidates"] else ""

    culprits = scenario.culprits
    carriers = set(scenario.series) | {
        rep for series in scenario.series if (rep := _representative(report, series))
    }
    named = []
    for r in regressions:
        ranking = [c["commit"] for c in r.get("ranking", r["candidates"])]
        rank = next((i for i, sha in enumerate(ranking) if sha in culprits), None)
        top = r["candidates"][0] if r["candidates"] else None
        culprit_entry = r["ranking"][rank] if rank is not None else None
        named.append(
            Named(
                series=r["series"],
                confidence=r["confidence"],
                first=_role(scenario, top["commit"]) if top else "-",
                first_title=top["title"] if top else "",
                ranked_first=_role(scenario, ranking[0]) if ranking else "-",
                culprit_rank=rank,
                parts_first=dict(r["ranking"][0]["parts"]) if r.get("ranking") else {},
                parts_culprit=dict(culprit_entry["parts"]) if culprit_entry else None,
                delta=float(r["delta"]),
                regressed=r["series"] in carriers,
            )
        )
    cosmetic = {
        scenario.decoys[k] for k in ("docstring_only", "local_rename") if k in scenario.decoys
    }
    zero_ok = all(
        c["parts"]["gcpu_attribution"] == 0
        for r in regressions
        for c in r.get("ranking", []) + r["candidates"]
        if c["commit"] in cosmetic
    )
    decoy_of = {sha: kind for kind, sha in scenario.decoys.items()}
    return RealResult(
        library=library,
        name=name,
        kind=scenario.kind,
        culprit_functions=tuple(
            _short(scenario.touches[c][0]) if scenario.touches.get(c) else "?" for c in culprits
        ),
        culprits_high=tuple(any(first(r) == c for r in high) for c in culprits),
        culprits_first=tuple(any(first(r) == c for r in regressions) for c in culprits),
        culprits_top3=tuple(
            any(c in [x["commit"] for x in r.get("ranking", [])[:3]] for r in regressions)
            for c in culprits
        ),
        decoys_high=tuple(sorted({decoy_of[first(r)] for r in high if first(r) in decoy_of})),
        decoys_in_high=tuple(
            sorted(
                {
                    decoy_of[c["commit"]]
                    for r in high
                    for c in r["candidates"]
                    if c["commit"] in decoy_of
                }
            )
        ),
        gate=str(report["gate"]["state"]),
        fates={s: _fate(report, s) for s in scenario.series},
        named=tuple(named),
        zero_gcpu_ok=zero_ok,
        seconds=seconds,
    )


def _mark(flags: Sequence[bool]) -> str:
    return "/".join("yes" if f else "no" for f in flags)


def _named_line(n: Named) -> str:
    culprit = "-" if n.culprit_rank is None else f"#{n.culprit_rank + 1}"
    star = "*" if n.regressed else ""
    return f"{star}{_short(n.series)}={n.first}({n.confidence}, culprit {culprit})"


def real_report(results: Sequence[RealResult], seeded: Sequence[SeedResult]) -> str:
    rows = [
        [
            f"{r.library}/{r.name}",
            r.kind,
            ", ".join(f"{_short(s)}: {f}" for s, f in r.fates.items()),
            _mark(r.culprits_high),
            _mark(r.culprits_first),
            ", ".join(r.decoys_high) or "-",
            r.gate,
            str(len(r.named)),
            f"{r.seconds:.0f}s",
        ]
        for r in results
    ]
    header = (
        "scenario",
        "kind",
        "regressed series",
        "culprit #1 high",
        "culprit #1",
        "decoys #1 high",
        "gate",
        "reported",
        "run",
    )
    out = [_table("regbot run --dry-run on real histories (default settings)", header, rows), ""]
    out.append(
        "what the reported regressions name first (series=role of the first candidate"
        " (confidence, the culprit's rank in its ranking)); * a regressed series or the"
        " regression it was merged into:"
    )
    for r in results:
        naming = [n for n in r.named if n.confidence != "none" or n.regressed]
        silent = len(r.named) - len(naming)
        out.append(
            f"  {r.library}/{r.name}: "
            + ("; ".join(_named_line(n) for n in naming) or "-")
            + (f"; and {silent} with no suggestion" if silent else "")
        )
    out.append("")
    misses = [r for r in results if not all(r.culprits_high)]
    if misses:
        out.append(
            "misses: per regression that names a commit or carries a regressed series (*), the"
            " first-ranked commit and the culprit, with their parts"
        )
        for r in misses:
            out.append(f"  {r.library}/{r.name} ({r.kind}):")
            for n in r.named:
                if not n.parts_first or (n.confidence == "none" and not n.regressed):
                    continue
                parts = ", ".join(f"{k} {v:.2f}" for k, v in n.parts_first.items())
                culprit = (
                    ", ".join(f"{k} {v:.2f}" for k, v in n.parts_culprit.items())
                    if n.parts_culprit
                    else "not ranked"
                )
                out.append(
                    f"    {'*' if n.regressed else ''}{_short(n.series)} ({n.confidence},"
                    f" delta {n.delta:+.4f}): first"
                    f" {n.ranked_first} [{parts}]; culprit #"
                    f"{'-' if n.culprit_rank is None else n.culprit_rank + 1} [{culprit}]"
                )
        out.append("")
    such = [r for r in results if r.kind in ("slower", "caller_calls_more")]
    two = [r for r in results if r.kind == "two_culprits"]
    more = [r for r in results if r.kind == "caller_calls_more"]
    decoys_high = sum(len(r.decoys_high) for r in results)
    decoys_in = sum(len(r.decoys_in_high) for r in results)
    gate = sum(r.gate == "failure" for r in results)
    hits = sum(all(r.culprits_high) for r in such)
    rows = [
        [
            "culprit #1 with high (slower, caller_calls_more)",
            f"{hits}/{len(such)}",
            ">= 9/10",
            "met" if len(such) and hits >= 0.9 * len(such) else "NOT met",
        ],
        [
            "decoys named #1 with high",
            str(decoys_high),
            "0",
            "met" if decoys_high == 0 else "NOT met",
        ],
        [
            "  by kind",
            ", ".join(
                f"{k} {v}"
                for k, v in Counter(k for r in results for k in r.decoys_high).most_common()
            )
            or "-",
            "",
            "",
        ],
        ["decoys among candidates of high regressions", str(decoys_in), "-", ""],
        [
            "gate failed",
            f"{gate}/{len(results)}",
            f"{len(results)}/{len(results)}",
            "met" if gate == len(results) else "NOT met",
        ],
        [
            "two culprits: each #1 with high",
            ", ".join(
                f"{r.library} {_mark(r.culprits_high)}"
                + "".join(
                    f" (not {f})"
                    for f, h in zip(r.culprit_functions, r.culprits_high, strict=True)
                    if not h
                )
                for r in two
            )
            or "-",
            "yes/yes",
            "",
        ],
        [
            "caller calls more: caller's commit #1 with high",
            ", ".join(f"{r.library} {_mark(r.culprits_high)}" for r in more) or "-",
            "yes",
            "",
        ],
        [
            "docstring/rename decoys with gCPU credit 0",
            f"{sum(r.zero_gcpu_ok for r in results)}/{len(results)}",
            f"{len(results)}/{len(results)}",
            "",
        ],
    ]
    out += [_table("summary (real histories)", ("", "result", "target", ""), rows), ""]
    n = len(such)
    first = sum(all(r.culprits_first) for r in such)
    top3 = sum(all(r.culprits_top3) for r in such)
    res = [s.methods["regbot"] for s in seeded]
    rows = [
        [
            "real histories, whole run (slower + caller_calls_more)",
            str(n),
            _pct(first, n),
            _pct(hits, n),
            _pct(top3, n),
        ],
    ]
    if seeded:
        rows.append(
            [
                "seeded generator, attribution of the culprit's series",
                str(len(res)),
                _pct(sum(m.rank == 0 for m in res), len(res)),
                _pct(sum(m.rank == 0 and m.confidence == "high" for m in res), len(res)),
                _pct(sum(m.rank is not None and m.rank < 3 for m in res), len(res)),
            ]
        )
    out.append(
        _table(
            "beside the seeded generator",
            ("", "scenarios", "top-1", "top-1 high", "top-3"),
            rows,
        )
    )
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
        real_history = _real_history()
        names = real_history.scenario_names()
        real = []
        for i, (library, name) in enumerate(names, start=1):
            real.append(run_real(library, name, args.real_seed))
            if not args.quiet:
                print(f"  {i}/{len(names)} real scenarios", file=sys.stderr, flush=True)
        clean = [
            run_clean(library, name, args.real_seed)
            for library, name in names
            if real_history.clean_deploy(_spec(real_history, library, name))
        ]
        seeded_seeds = list(range(args.first_seed, args.first_seed + args.seeded_seeds))
        seeded = _map(run_seed, seeded_seeds, args.workers, not args.quiet) if seeded_seeds else []
        print(real_report(real, seeded))
        print("\n" + clean_report(clean))
    elif args.full:
        print(full_report(_map(run_full, seeds, args.workers, not args.quiet)))
    else:
        results = _map(run_seed, seeds, args.workers, not args.quiet)
        print(report(results))
        if args.misses:
            print("\n" + misses(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
