"""The `detect` command: series files in, detection and dedup, table out, SPEC §4 report to -o,
regressions and groups into the state store."""

from __future__ import annotations

import argparse
import time

from rich.console import Console

from regbot import __version__
from regbot.atomic import write_json_atomic
from regbot.bot.cli.exit_codes import EXIT_OK
from regbot.bot.config import load_config
from regbot.bot.dedup_context import (
    build_dedup_context,
    deduplicate_against_state,
    open_profile_index,
)
from regbot.bot.state import open_state
from regbot.bot.views.tables import detection_table, funnel_line
from regbot.detection.dedup import deduplicate
from regbot.detection.pipeline import run_detection
from regbot.detection.report import build_report
from regbot.errors import InputError
from regbot.profiles.series_files import find_series_files, read_series_files
from regbot.timefmt import parse_time


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    config = load_config(args.config)
    settings = config.detection_for(args.workload)
    if not find_series_files(args.series):
        raise InputError(
            " ".join(map(str, args.series)), "series files (.csv, .jsonl, or folders of them)"
        )
    series = read_series_files(args.series)
    now_s = parse_time(args.now, "--now") if args.now is not None else None
    result = run_detection(series, settings, now_s)
    index = open_profile_index(config.sources.profiles)
    context = build_dedup_context(
        result.reported, series, index, result.windows, config.higher_is_better
    )
    if args.no_state:
        dedup = deduplicate(result.reported, context, [], [], config.dedup, config.cost_shift)
        report = build_report(result, __version__, dedup)
    else:
        with open_state(config.state) as state:
            dedup = deduplicate_against_state(
                result.reported, context, state, result.windows.historical_start_s, config
            )
            report = build_report(result, __version__, dedup)
            state.record_run(time.time(), report, dedup.groups)
    out.print(detection_table(report))
    out.print(funnel_line(report.funnel), highlight=False)
    if args.output is not None:
        write_json_atomic(args.output, report.to_json())
        err.print(f"wrote {args.output}", highlight=False)
    return EXIT_OK
