"""`regbot run`: the post-deploy job. Series for the deploy's release window from the configured
sources, detection and dedup, attribution of each remaining regression to the commits of
``previous..deploy`` (FBDetect §5.6), missing baselines, the gate, the SPEC §4 report, the state
store, and — unless ``--dry-run`` — the PR comments and the gate on GitHub.

Which deploy: ``--deploy`` (default: the repository's HEAD). When it happened: ``--deployed-at``,
else the state's deploy log. What it replaced: ``--previous``, else the newest logged deploy
before it. Every run logs its deploy, so after the first run of a service only the sha is needed.

Order of a publishing run (not ``--dry-run``, ``repository.github`` set; otherwise stderr says
that publishing is off and why):

1. the feedback on regbot's earlier comments is read and recorded
   (:mod:`regbot.bot.cli.feedback`); groups marked false positive are annotated in the
   report and not commented on again (a GitHub failure here stops the run before anything is
   analysed or recorded);
2. detection, dedup and attribution; the missing baselines (:mod:`regbot.bot.sources.baseline`, in the
   report as ``missing_baseline``) and the gate decision (:mod:`regbot.bot.gate`, ``gate``);
3. the run is recorded in the state *before* anything is published, so a publishing failure
   loses nothing: the next run dedups against it and upserts the same comments;
4. comments (:mod:`regbot.bot.github.publish`; ``comments`` and ``comments_skipped`` in the report),
   then the gate on the deploy commit (check run, or commit status fallback; ``gate.published_as``);
5. the stored report is updated with what was published, and the JSON report (``-o``) and the
   job summary (``--summary``, default ``$GITHUB_STEP_SUMMARY``, appended) are written — also
   when publishing failed, with ``publishing.error`` saying what failed.

Exit codes: 2 for bad input or configuration and for a GitHub failure (the one-line message of
the failed call, naming the missing permission when GitHub refused); otherwise 1 when the gate
is ``failure`` and 0 when not. ``--dry-run`` never exits 1: it is "show me, change nothing" (the
report still carries the gate decision with ``"enforced": false``). A run without ``--dry-run``
and without ``repository.github`` enforces the gate through the exit code alone, which is how a
CI job without a token gates a deploy. A missing baseline prints a one-line warning on stderr.

``REGBOT_GITHUB_RETRY_SCALE`` (a number ≥ 0) scales the GitHub client's retry waits (tests set 0).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console

from regbot import __version__
from regbot.atomic import write_json_atomic
from regbot.attribution.attribute import (
    DeployChanges,
    RegressionEvidence,
    attribute,
    prepare_changes,
    with_lines,
)
from regbot.attribution.changes import read_change_set, resolve_revision
from regbot.attribution.deploy_lines import DeployLines, read_deploy_lines
from regbot.attribution.model import Attribution, Commit, ScoredCommit
from regbot.attribution.stack_paths import heaviest_paths
from regbot.bot.config import Config, load_config
from regbot.bot.dedup_context import build_dedup_context, deduplicate_against_state
from regbot.bot.gate import GateDecision, decide_gate
from regbot.bot.github.api import GitHubClient, GitHubError
from regbot.bot.github.feedback import annotate_report, collect_feedback
from regbot.bot.github.markdown_safe import inline
from regbot.bot.github.publish import (
    PublishingPlan,
    PublishResult,
    open_client,
    publish_comments,
    publish_gate,
    publishing_plan,
)
from regbot.bot.github.summary import render_summary
from regbot.bot.sources.baseline import MissingBaseline, find_missing_baselines, missing_names
from regbot.bot.sources.gather import RunSeries, gather_series
from regbot.bot.state import StateStore, open_state
from regbot.bot.views.tables import attribution_table, detection_table, funnel_line
from regbot.detection.dedup_context import Group, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.pipeline import detect_in_windows
from regbot.detection.report import build_report
from regbot.detection.series_batch import WindowBounds
from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.sample_index import SampleIndex
from regbot.report.model import (
    DeploySection,
    Publishing,
    RegressionEntry,
    Report,
    SuspectCommit,
)
from regbot.timefmt import parse_time

RANKED_IN_REPORT = 10  # the ranking kept for `regbot explain` beyond the named candidates
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def suspect_commit(scored: ScoredCommit, rank: int) -> SuspectCommit:
    """One suspect commit in SPEC §4 form (scores to 6 decimals), with the author and the
    matched frames as extras."""
    commit = scored.commit
    return SuspectCommit(
        commit=commit.sha,
        pull_request=commit.pull_request,
        title=commit.title,
        score=round(scored.score, 6),
        gcpu_attribution=round(scored.parts.gcpu_attribution, 6),
        text_similarity=round(scored.parts.text_similarity, 6),
        correlation=round(scored.parts.correlation, 6),
        author=commit.author,
        matched=tuple(scored.matched),
        rank=rank,
    )


def _suspects(scored: Sequence[ScoredCommit]) -> tuple[SuspectCommit, ...]:
    return tuple(suspect_commit(s, i + 1) for i, s in enumerate(scored))


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
        share_ratio=share_ratio_of(candidate),
    )


def share_ratio_of(candidate: Candidate) -> float:
    """The deploy's share inflation at the candidate's change, from its ``share_inflation``
    verdict: the common ratio when it was significantly above 1, else 1."""
    verdict = candidate.verdicts.get("share_inflation")
    if verdict is None or "inflating" not in verdict.numbers:
        return 1.0
    return float(verdict.numbers["ratio"]) if verdict.numbers["inflating"] else 1.0


def attributed(
    entry: RegressionEntry, result: Attribution, index: SampleIndex | None, candidate: Candidate
) -> RegressionEntry:
    """One regression's entry with its attribution (SPEC §4 ``candidates`` and ``confidence``;
    extras: the wider ranking, notes, and the stack paths that carry it)."""
    sub = subroutine_of_series(candidate.series_id)
    paths = (
        heaviest_paths(index, sub, candidate.change_time_s, candidate.windows.end_s)
        if index is not None and sub is not None
        else []
    )
    return replace(
        entry,
        candidates=_suspects(result.candidates),
        confidence=result.confidence,
        ranking=_suspects(result.ranked[:RANKED_IN_REPORT]),
        attribution_notes=tuple(result.notes),
        stack_paths=tuple(tuple(p) for p in paths),
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


def _line_reader(
    config: Config, state: StateStore, previous: str, deploy: str, commits: Sequence[Commit]
) -> Callable[[set[str]], DeployLines] | None:
    """Reads the deploy's line facts (``attribution.deploy_lines``) when the deploy log knows
    when ``previous`` was deployed: before-window frames carry its line numbers only after
    that. None otherwise (ties on one function then stand)."""
    since_s = state.deploy_time(previous)
    if since_s is None:
        return None
    repo = config.repository.path
    return lambda paths: read_deploy_lines(repo, previous, deploy, paths, commits, since_s)


def analyse(
    config: Config,
    run_series: RunSeries,
    windows: WindowBounds,
    changes: DeployChanges,
    state: StateStore,
    workload: str | None,
) -> tuple[Report, list[Group], Mapping[str, Candidate]]:
    """Detection, dedup (with the deploy's commit → subroutines map) and attribution."""
    settings = config.detection_for(workload)
    result = detect_in_windows(run_series.series, settings, windows)
    context = build_dedup_context(
        result.reported,
        run_series.series,
        run_series.index,
        windows,
        config.higher_is_better,
        changes.commit_subroutines(),
    )
    dedup = deduplicate_against_state(
        result.reported, context, state, windows.historical_start_s, config
    )
    report = build_report(result, __version__, dedup)
    by_id = {c.regression_id: c for c in dedup.representatives}
    attribution = config.attribution
    entries = []
    for entry in report.regressions:
        candidate = by_id[entry.id]
        found = attribute(
            evidence_of(candidate), changes, run_series.index, run_series.signals, attribution
        )
        entries.append(attributed(entry, found, run_series.index, candidate))
    return replace(report, regressions=tuple(entries)), dedup.groups, by_id


def missing_baselines(
    config: Config, run_series: RunSeries, windows: WindowBounds, now_s: float | None
) -> list[MissingBaseline]:
    """The run's missing baselines: the profiles' gCPU series judged as one source by the sample
    store's buckets, every other series on its own (:mod:`regbot.bot.sources.baseline`)."""
    sources = config.sources
    configured = [
        name
        for name, on in (
            ("profiles", bool(sources.profiles)),
            ("series", bool(sources.series)),
            ("prometheus", sources.prometheus is not None),
        )
        if on
    ]
    index = run_series.index
    buckets = None
    profile_ids: set[str] = set()
    if index is not None:
        buckets = np.asarray(index.bucket_times_s, np.float64)
        if now_s is not None:
            buckets = buckets[buckets <= now_s]
        profile_ids = {f"gcpu:{name}" for name in index.subroutines}
    judged = [s for s in run_series.series if not (s.kind == "gcpu" and s.id in profile_ids)]
    return find_missing_baselines(
        configured, run_series.counts, judged, windows, profile_buckets_s=buckets
    )


def series_points(by_id: Mapping[str, Candidate]) -> dict[str, list[tuple[float, float]]]:
    """Each reported regression's series within the run's windows, in the series' own direction
    (the detection candidate holds oriented values), for the comment's chart."""
    return {
        rid: [
            (float(t), float(c.sign * v))
            for t, v in zip(np.asarray(c.times_s), np.asarray(c.values))
        ]
        for rid, c in by_id.items()
    }


def _summary_path(args: argparse.Namespace) -> Path | None:
    if getattr(args, "summary", None) is not None:
        return Path(args.summary)
    from_env = os.environ.get(STEP_SUMMARY_ENV, "").strip()
    return Path(from_env) if from_env else None


def job_summary(report: Report, decision: GateDecision) -> str:
    """The job summary: the report's missing baselines, funnel and regressions
    (``render_summary``), the gate's state, title and policy (its full summary is the check
    run's), and what was published."""
    text = render_summary(report, missing=missing_names(report.missing_baseline or ()))
    text += f"\n### Gate: {decision.state}\n\n**{inline(decision.title, 300)}**\n\n"
    text += f"{decision.policy}\n"
    if decision.failing:
        text += f"\nFailing: {', '.join(f'`{rid}`' for rid in decision.failing[:50])}\n"
    comments = report.comments or ()
    if comments:
        text += "\n### PR comments\n\n" + "".join(
            f"- #{c.pull_request}: {c.outcome} ({c.url})\n" for c in comments
        )
    skipped = report.comments_skipped or ()
    if skipped:
        text += f"\n{len(skipped)} comment(s) not posted; see `comments_skipped` in the report.\n"
    error = report.publishing.error if report.publishing is not None else None
    if error:
        text += f"\n**Publishing failed**: {inline(str(error), 500)}\n"
    return text


def _write_outputs(
    args: argparse.Namespace, report: Report, decision: GateDecision, err: Console
) -> None:
    if args.output is not None:
        write_json_atomic(args.output, report.to_json())
        err.print(f"wrote {args.output}", highlight=False)
    summary_path = _summary_path(args)
    if summary_path is not None:
        try:
            with summary_path.open("a", encoding="utf-8") as handle:
                handle.write(job_summary(report, decision))
        except OSError as error:
            raise InputError(
                str(summary_path), "a writable job summary file", error.strerror
            ) from None


def _print_outcome(report: Report, err: Console) -> None:
    for c in report.comments or ():
        err.print(
            f"comment {c.outcome} on #{c.pull_request}: {c.url}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    for skipped in report.comments_skipped or ():
        pr = f" on #{skipped.pull_request}" if skipped.pull_request else ""
        err.print(
            f"no comment for {skipped.regression_id}{pr}: {skipped.reason}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    gate = report.gate
    assert gate is not None  # a run's report always has its gate
    if gate.published_as:
        where = f" (set as a {gate.published_as.replace('_', ' ')})"
    elif not gate.enforced:
        where = " (dry run: not set on GitHub, exit code unaffected)"
    else:
        where = " (not set on GitHub: publishing is off; the exit code follows it)"
    err.print(
        f"gate {gate.name}: {gate.state} — {gate.title}{where}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    """``regbot run`` (module docstring)."""
    config = load_config(args.config)
    plan = publishing_plan(config, bool(args.dry_run))
    if not plan.enabled:
        err.print(f"publishing is off: {plan.reason}", markup=False, highlight=False)
    client = open_client(config) if plan.enabled else None
    try:
        return _run(args, config, plan, client, out, err)
    finally:
        if client is not None:
            client.close()


def _run(
    args: argparse.Namespace,
    config: Config,
    plan: PublishingPlan,
    client: GitHubClient | None,
    out: Console,
    err: Console,
) -> int:
    with open_state(config.state) as state:
        deploy, previous, deployed_at = _deploy_window(args, config, state)
        if client is not None:
            new = collect_feedback(client, state, time.time())
            if new:
                err.print(
                    f"recorded {len(new)} new false-positive feedback entr"
                    f"{'y' if len(new) == 1 else 'ies'} (see `regbot feedback`)",
                    markup=False,
                    highlight=False,
                )
        workload = config.workload(args.workload or "default")
        windows = WindowBounds.starting_at(deployed_at, workload.windows)
        run_series = gather_series(config, windows.historical_start_s, windows.end_s)
        now_s = parse_time(args.now, "--now") if args.now is not None else None
        if now_s is not None:
            run_series = RunSeries(
                cut_at(run_series.series, now_s),
                run_series.signals,
                run_series.index,
                run_series.counts,
            )
        commits = read_change_set(config.repository.path, previous, deploy)
        changes = with_lines(
            prepare_changes(commits, run_series.index, config.attribution.fuzzy_floor),
            _line_reader(config, state, previous, deploy, commits),
        )
        report, groups, by_id = analyse(config, run_series, windows, changes, state, args.workload)
        report = replace(
            report,
            deploy=DeploySection(deploy, previous, deployed_at, len(commits), bool(args.dry_run)),
            sources=dict(run_series.counts),
            missing_baseline=tuple(missing_baselines(config, run_series, windows, now_s)),
        )
        flagged = state.false_positive_groups()
        report = annotate_report(report, flagged)
        decision = decide_gate(report, config.gate)
        enforced = not args.dry_run
        report = replace(
            report,
            gate=decision.section(config.gate.name, enforced),
            publishing=Publishing(plan.enabled, plan.reason),
            comments=(),
            comments_skipped=(),
        )
        run_at = time.time()
        run_id = state.record_run(run_at, report, groups)
        state.record_deploy(deploy, previous, deployed_at, run_at)
        out.print(detection_table(report))
        out.print(attribution_table(report))
        out.print(funnel_line(report.funnel), highlight=False)
        if decision.warning is not None:
            err.print(
                f"regbot: warning: {decision.warning}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        published = PublishResult()
        try:
            if client is not None:
                try:
                    publish_comments(
                        client,
                        report,
                        points=series_points(by_id),
                        policy=config.github.comments,
                        repository=config.repository.github,
                        state=state,
                        now_s=run_at,
                        flagged_groups=flagged,
                        result=published,
                    )
                finally:
                    report = replace(
                        report,
                        regressions=tuple(
                            published.entries.get(e.id, e) for e in report.regressions
                        ),
                        comments=tuple(published.comments),
                        comments_skipped=tuple(published.skipped),
                    )
                gate = replace(
                    decision.section(config.gate.name, enforced),
                    published_as=publish_gate(client, deploy, config.gate.name, decision),
                )
                report = replace(report, gate=gate)
        except GitHubError as error:
            report = replace(
                report, publishing=Publishing(plan.enabled, plan.reason, str(error))
            )
            raise
        finally:
            state.update_run_report(run_id, report)
            _write_outputs(args, report, decision, err)
    _print_outcome(report, err)
    if enforced and decision.state == "failure":
        err.print(f"regbot: gate failed: {decision.title}", markup=False, highlight=False)
        return 1
    return 0
