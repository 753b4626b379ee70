"""The `detect` command: series files in, detection and dedup, table out, SPEC §4 report to -o,
regressions and groups into the state store.

The series are detected in partitions (``regbot.bot.execution.fleet_detection``) on the
configured executor (``execution:``); a large clustered Parquet or Arrow file is never read
whole: each partition reads its own rows, and the dedup stages get only the series they ask
for (``dedup_series_needed``)."""

from __future__ import annotations

import argparse

from rich.console import Console

from regbot.atomic import write_json_atomic
from regbot.bot.cli.exit_codes import EXIT_OK
from regbot.bot.config import load_config
from regbot.bot.execution.executors import open_executor
from regbot.bot.execution.fleet_report import fleet_report
from regbot.bot.state import open_state
from regbot.bot.views.progress import RunProgress
from regbot.bot.views.tables import detection_table, funnel_line
from regbot.errors import InputError
from regbot.profiles.series_files import find_series_files
from regbot.profiles.series_partitions import plan_series_partitions
from regbot.timefmt import parse_time


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    config = load_config(args.config)
    settings = config.detection_for(args.workload)
    if not find_series_files(args.series):
        raise InputError(
            " ".join(map(str, args.series)),
            "series files (.csv, .jsonl, .parquet, .arrow, or folders of them)",
        )
    now_s = parse_time(args.now, "--now") if args.now is not None else None
    execution = config.execution
    with RunProgress(err, getattr(args, "quiet", False)) as progress:
        progress.stage("reading series")
        partitions, survey = plan_series_partitions(args.series, settings.partition_series)
        with open_executor(execution.engine, execution.workers, execution.scheduler) as executor:
            if args.no_state:
                report = fleet_report(
                    partitions, survey, config, settings, now_s, executor, progress
                )
            else:
                with open_state(config.state) as state:
                    report = fleet_report(
                        partitions, survey, config, settings, now_s, executor, progress, state
                    )
    out.print(detection_table(report))
    out.print(funnel_line(report.funnel), highlight=False)
    if args.output is not None:
        write_json_atomic(args.output, report.to_json())
        err.print(f"wrote {args.output}", highlight=False)
    return EXIT_OK
