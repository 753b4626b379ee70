"""The attribution benchmark's default mode, one seed at a time: build a seeded scenario
(``regbot.datasets.service``), hand the culprit's gCPU series to ``attribute_all`` as `regbot run`
would, and rank the same candidates by the baselines (FBDetect's per-commit stack scope, text
similarity alone, the most recent commit). ``run_seed(seed)`` -> ``SeedResult``."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from regbot.attribution.attribute import RegressionEvidence, attribute_all
from regbot.attribution.changes import read_change_set
from regbot.attribution.deploy_lines import DeployLines, read_deploy_lines
from regbot.attribution.gcpu_attribution import TimeSplit, attributed_share
from regbot.attribution.model import Attribution, Commit
from regbot.attribution.rank import RankSettings, rank_commits
from regbot.attribution.settings import AttributionSettings
from regbot.bot.sources.profiles import collect_profile_paths, ingest_profiles
from regbot.datasets.service import BUCKET_S, Scenario, build_scenario
from regbot.detection.dedup_context import subroutine_of_series
from regbot.profiles.gcpu import build_gcpu
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store

METHODS = ("regbot", "fbdetect-stack-alone", "text-only", "most-recent")


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
        index = SampleIndex.of_store(store)
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
