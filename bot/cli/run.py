"""`regbot run`: the post-deploy job. Series for the deploy's release window from the configured
sources, detection and dedup, attribution of each remaining regression to the commits of
``previous..deploy`` (FBDetect §5.6), missing baselines, the gate, the SPEC §4 report, the state
store, and — unless ``--dry-run`` — the PR comments and the gate on GitHub.

Which deploy: ``--deploy`` (default: the repository's HEAD). When it happened: ``--deployed-at``,
else the state's deploy log. What it replaced: ``--previous``, else the newest logged deploy
before it (:mod:`regbot.bot.deploy_range`). Every run logs its deploy, so after the first run of
a service only the sha is needed.

Order of a publishing run (not ``--dry-run``, ``repository.github`` set; otherwise stderr says
that publishing is off and why):

1. the feedback on regbot's earlier comments is read and recorded
   (:mod:`regbot.bot.cli.feedback`); groups marked false positive are annotated in the
   report and not commented on again (a GitHub failure here stops the run before anything is
   analysed or recorded);
2. detection, dedup and attribution (:mod:`regbot.bot.attribution_entries`); the missing
   baselines (:mod:`regbot.bot.sources.baseline`, in the report as ``missing_baseline``) and the
   gate decision (:mod:`regbot.bot.gate`, ``gate``);
3. the run is recorded in the state *before* anything is published, so a publishing failure
   loses nothing: the next run dedups against it and upserts the same comments;
4. comments (:mod:`regbot.bot.github.publish`; ``comments`` and ``comments_skipped`` in the report),
   then the gate on the deploy commit (check run, or commit status fallback; ``gate.published_as``);
5. the stored report is updated with what was published, and the JSON report (``-o``) and the
   job summary (``--summary``, default ``$GITHUB_STEP_SUMMARY``, appended;
   :mod:`regbot.bot.github.step_summary`) are written — also when publishing failed, with
   ``publishing.error`` saying what failed.

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
import time
from collections.abc import Mapping
from dataclasses import replace

from rich.console import Console

from regbot import __version__
from regbot.atomic import write_json_atomic
from regbot.attribution.attribute import DeployChanges, prepare_changes, with_lines
from regbot.attribution.changes import read_change_set
from regbot.bot.attribution_entries import attribute_entries
from regbot.bot.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK
from regbot.bot.config import Config, load_config
from regbot.bot.dedup_context import build_dedup_context, deduplicate_against_state
from regbot.bot.deploy_range import deploy_line_reader, resolve_deploy_range
from regbot.bot.execution.executors import open_executor
from regbot.bot.execution.fleet_detection import detect_in_windows_on
from regbot.bot.gate import GateDecision, decide_gate
from regbot.bot.github.api import GitHubClient, GitHubError
from regbot.bot.github.chart import series_points
from regbot.bot.github.feedback import annotate_report, collect_feedback
from regbot.bot.github.publish import (
    PublishingPlan,
    PublishResult,
    open_client,
    publish_comments,
    publish_gate,
    publishing_plan,
)
from regbot.bot.github.step_summary import append_job_summary, summary_path
from regbot.bot.sources.baseline import configured_source_names, missing_baselines_of_run
from regbot.bot.sources.gather import RunSeries, gather_series, series_at
from regbot.bot.state import StateStore, open_state
from regbot.bot.views.run_outcome import feedback_line, outcome_lines
from regbot.bot.views.tables import attribution_table, detection_table, funnel_line
from regbot.detection.dedup_context import Group
from regbot.detection.model import Candidate
from regbot.detection.report import build_report
from regbot.detection.series_batch import WindowBounds
from regbot.partition_ranges import partition_ranges
from regbot.profiles.series_partitions import SeriesPartition
from regbot.report.model import DeploySection, Publishing, Report
from regbot.timefmt import parse_time


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
    series = run_series.series
    ranges = partition_ranges(len(series), settings.partition_series)
    partitions = [SeriesPartition(series=tuple(series[a:b])) for a, b in ranges]
    execution = config.execution
    with open_executor(execution.engine, execution.workers, execution.scheduler) as executor:
        result = detect_in_windows_on(partitions, settings, windows, executor)
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
    report = attribute_entries(
        report, by_id, changes, run_series.index, run_series.signals, config.attribution
    )
    return report, dedup.groups, by_id


def _write_outputs(
    args: argparse.Namespace, report: Report, decision: GateDecision, err: Console
) -> None:
    if args.output is not None:
        write_json_atomic(args.output, report.to_json())
        err.print(f"wrote {args.output}", highlight=False)
    path = summary_path(getattr(args, "summary", None))
    if path is not None:
        append_job_summary(path, report, decision)


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
        repo = config.repository.path
        deployed = resolve_deploy_range(
            repo,
            state,
            config.state,
            deploy=args.deploy,
            previous=args.previous,
            deployed_at=args.deployed_at,
        )
        deploy, previous, deployed_at = deployed.deploy, deployed.previous, deployed.deployed_at_s
        if client is not None:
            new = collect_feedback(client, state, time.time())
            if new:
                err.print(feedback_line(len(new)), markup=False, highlight=False)
        workload = config.workload(args.workload or "default")
        windows = WindowBounds.starting_at(deployed_at, workload.windows)
        run_series = gather_series(config, windows.historical_start_s, windows.end_s)
        now_s = parse_time(args.now, "--now") if args.now is not None else None
        if now_s is not None:
            run_series = series_at(run_series, now_s)
        commits = read_change_set(repo, previous, deploy)
        changes = with_lines(
            prepare_changes(commits, run_series.index, config.attribution.fuzzy_floor),
            deploy_line_reader(repo, state, deployed, commits),
        )
        report, groups, by_id = analyse(config, run_series, windows, changes, state, args.workload)
        missing = missing_baselines_of_run(
            configured_source_names(config.sources),
            run_series.counts,
            run_series.series,
            windows,
            index=run_series.index,
            now_s=now_s,
        )
        report = replace(
            report,
            deploy=DeploySection(deploy, previous, deployed_at, len(commits), bool(args.dry_run)),
            sources=dict(run_series.counts),
            missing_baseline=tuple(missing),
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
            report = replace(report, publishing=Publishing(plan.enabled, plan.reason, str(error)))
            raise
        finally:
            state.update_run_report(run_id, report)
            _write_outputs(args, report, decision, err)
    for line in outcome_lines(report):
        err.print(line, markup=False, highlight=False, soft_wrap=True)
    if enforced and decision.state == "failure":
        err.print(f"regbot: gate failed: {decision.title}", markup=False, highlight=False)
        return EXIT_GATE_FAILED
    return EXIT_OK
