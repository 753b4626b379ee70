"""`regbot run`: the post-deploy job. Series for the deploy's release window from the configured
sources, detection and dedup, attribution of each remaining regression to the commits of
``previous..deploy`` (FBDetect §5.6), the SPEC §4 report, and the state store.

Which deploy: ``--deploy`` (default: the repository's HEAD). When it happened: ``--deployed-at``,
else the state's deploy log. What it replaced: ``--previous``, else the newest logged deploy
before it. Every run logs its deploy, so after the first run of a service only the sha is needed.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence

import numpy as np
from rich.console import Console

from regbot import __version__
from regbot.atomic import write_atomic
from regbot.attribution.attribute import (
    AttributionSettings,
    DeployChanges,
    RegressionEvidence,
    attribute,
    prepare_changes,
)
from regbot.attribution.changes import read_change_set, resolve_revision
from regbot.attribution.model import Attribution, ScoredCommit
from regbot.attribution.rank import RankSettings
from regbot.attribution.stack_paths import heaviest_paths
from regbot.bot.config import Config, load_config
from regbot.bot.dedup_context import build_dedup_context
from regbot.bot.detect_command import dedup_settings
from regbot.bot.sources import RunSeries, gather_series
from regbot.bot.state import StateStore, open_state
from regbot.bot.views import attribution_table, detection_table, funnel_line
from regbot.detection.dedup import deduplicate
from regbot.detection.model import Candidate, DetectionSettings, WindowBounds, subroutine_of_series
from regbot.detection.pipeline import detect_in_windows
from regbot.detection.report import build_report
from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.sample_index import SampleIndex
from regbot.timefmt import parse_time

RANKED_IN_REPORT = 10  # the ranking kept for `regbot explain` beyond the named candidates


def attribution_settings(config: Config) -> AttributionSettings:
    """Attribution's settings from ``regbot.yml``."""
    a = config.attribution
    return AttributionSettings(
        rank=RankSettings(
            gcpu_attribution=a.weights.gcpu_attribution,
            text_similarity=a.weights.text_similarity,
            correlation=a.weights.correlation,
            confidence_floor=a.confidence_floor,
            top1_margin=a.top1_margin,
            max_candidates=a.max_candidates,
        ),
        scope=a.scope,  # type: ignore[arg-type]
        fuzzy_floor=a.fuzzy_floor,
    )


def candidate_entry(scored: ScoredCommit) -> dict[str, object]:
    """One suspect commit in SPEC §4 form, with the author and the matched frames as extras."""
    commit = scored.commit
    return {
        "commit": commit.sha,
        "pull_request": commit.pull_request,
        "title": commit.title,
        "score": round(scored.score, 6),
        "parts": {
            "gcpu_attribution": round(scored.parts.gcpu_attribution, 6),
            "text_similarity": round(scored.parts.text_similarity, 6),
            "correlation": round(scored.parts.correlation, 6),
        },
        "author": commit.author,
        "matched": list(scored.matched),
    }


def evidence_of(candidate: Candidate) -> RegressionEvidence:
    return RegressionEvidence(
        id=candidate.regression_id,
        series_id=candidate.series_id,
        kind=candidate.kind,
        subroutine=subroutine_of_series(candidate.series_id),
        change_time_s=candidate.change_time_s,
        window_start_s=candidate.windows.historical_start_s,
        window_end_s=candidate.windows.end_s,
        times_s=np.asarray(candidate.times_s, np.float64),
        values=np.asarray(candidate.values, np.float64),
    )


def fill_attribution(
    entry: dict, result: Attribution, index: SampleIndex | None, candidate: Candidate
) -> None:
    """Write one regression's attribution into its report entry (SPEC §4 ``candidates`` and
    ``confidence``; extras: the wider ranking, notes, and the stack paths that carry it)."""
    entry["candidates"] = [candidate_entry(s) for s in result.candidates]
    entry["confidence"] = result.confidence
    entry["ranking"] = [candidate_entry(s) for s in result.ranked[:RANKED_IN_REPORT]]
    entry["attribution_notes"] = list(result.notes)
    sub = subroutine_of_series(candidate.series_id)
    entry["stack_paths"] = (
        heaviest_paths(index, sub, candidate.change_time_s, candidate.windows.end_s)
        if index is not None and sub is not None
        else []
    )


def cut_at(series: Sequence[Series], now_s: float) -> list[Series]:
    """The series as they were at ``now_s`` (SPEC §5: data after ``--now`` is ignored)."""
    cut = []
    for s in series:
        keep = np.asarray(s.timestamps_s) <= now_s
        cut.append(
            Series(s.id, s.kind, s.timestamps_s[keep], s.values[keep], s.unit, s.labels)
            if not keep.all()
            else s
        )
    return cut


def _deploy_window(
    args: argparse.Namespace, config: Config, state: StateStore
) -> tuple[str, str, float]:
    repo = config.repository.path
    deploy = resolve_revision(repo, args.deploy or "HEAD")
    if args.deployed_at is not None:
        deployed_at = parse_time(args.deployed_at, "--deployed-at")
    else:
        logged = state.deploy_time(deploy)
        if logged is None:
            raise InputError(
                "--deployed-at",
                f"the deploy time of {deploy[:12]} (it is not in the deploy log of {config.state})",
            )
        deployed_at = logged
    if args.previous is not None:
        previous = resolve_revision(repo, args.previous)
    else:
        logged_previous = state.previous_deploy(deployed_at)
        if logged_previous is None:
            raise InputError(
                "--previous",
                f"the sha deployed before {deploy[:12]} (the deploy log of {config.state} has none)",
            )
        previous = resolve_revision(repo, logged_previous[0])
    return deploy, previous, deployed_at


def analyse(
    config: Config,
    run_series: RunSeries,
    windows: WindowBounds,
    changes: DeployChanges,
    state: StateStore,
    workload: str | None,
) -> tuple[dict, list, Mapping[str, Candidate]]:
    """Detection, dedup (with the deploy's commit → subroutines map) and attribution."""
    settings = DetectionSettings(
        workload=config.workload(workload or "default"), higher_is_better=config.higher_is_better
    )
    result = detect_in_windows(run_series.series, settings, windows)
    context = build_dedup_context(
        result.reported,
        run_series.series,
        run_series.index,
        windows,
        config.higher_is_better,
        changes.commit_subroutines(),
    )
    dedup_config = dedup_settings(config)
    since = windows.historical_start_s - dedup_config.pairwise.max_gap_s
    dedup = deduplicate(
        result.reported, context, state.known_regressions(), state.groups(since), dedup_config
    )
    report = build_report(result, __version__, dedup)
    by_id = {c.regression_id: c for c in dedup.representatives}
    attribution = attribution_settings(config)
    for entry in report["regressions"]:
        candidate = by_id[entry["id"]]
        found = attribute(
            evidence_of(candidate), changes, run_series.index, run_series.signals, attribution
        )
        fill_attribution(entry, found, run_series.index, candidate)
    return report, dedup.groups, by_id


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    config = load_config(args.config)
    with open_state(config.state) as state:
        deploy, previous, deployed_at = _deploy_window(args, config, state)
        workload = config.workload(args.workload or "default")
        windows = WindowBounds.starting_at(deployed_at, workload.windows)
        run_series = gather_series(config, windows.historical_start_s, windows.end_s)
        if args.now is not None:
            now_s = parse_time(args.now, "--now")
            run_series = RunSeries(
                cut_at(run_series.series, now_s),
                run_series.signals,
                run_series.index,
                run_series.counts,
            )
        commits = read_change_set(config.repository.path, previous, deploy)
        changes = prepare_changes(
            commits, run_series.index, attribution_settings(config).fuzzy_floor
        )
        report, groups, _ = analyse(config, run_series, windows, changes, state, args.workload)
        report["deploy"] = {
            "sha": deploy,
            "previous": previous,
            "deployed_at": deployed_at,
            "commits": len(commits),
            "dry_run": bool(args.dry_run),
        }
        report["sources"] = dict(run_series.counts)
        run_at = time.time()
        state.record_run(run_at, report, groups, report["regressions"])
        state.record_deploy(deploy, previous, deployed_at, run_at)
    out.print(detection_table(report))
    out.print(attribution_table(report))
    out.print(funnel_line(report["funnel"]), highlight=False)
    if args.output is not None:
        payload = json.dumps(report, indent=2, allow_nan=False).encode()
        write_atomic(args.output, lambda handle: handle.write(payload))
        err.print(f"wrote {args.output}", highlight=False)
    return 0
