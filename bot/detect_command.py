"""The `detect` command: series files in, detection and dedup, table out, SPEC §4 report to -o,
regressions and groups into the state store."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from rich.console import Console

from regbot import __version__
from regbot.atomic import write_json_atomic
from regbot.bot.config import Config, load_config
from regbot.bot.detection_settings import detection_settings
from regbot.bot.dedup_context import build_dedup_context, open_profile_index
from regbot.bot.state import open_state
from regbot.bot.views import detection_table, funnel_line
from regbot.detection.dedup import DedupSettings, deduplicate
from regbot.detection.model import (
    CostShiftSettings,
    MergeRule,
    PairwiseSettings,
    SomSettings,
)
from regbot.detection.pipeline import run_detection
from regbot.detection.report import build_report
from regbot.errors import InputError
from regbot.profiles.series_files import find_series_files, read_series_files
from regbot.timefmt import parse_time


def dedup_settings(config: Config) -> DedupSettings:
    """The dedup stages' settings from ``regbot.yml``."""
    written = config.dedup
    rules = tuple(MergeRule(r.feature, r.threshold) for r in written.rules)  # type: ignore[arg-type]
    pairwise = PairwiseSettings(max_gap_s=written.pairwise_max_gap_s, combine=written.combine)  # type: ignore[arg-type]
    if rules:
        pairwise = replace(pairwise, rules=rules)
    cost = config.cost_shift
    return DedupSettings(
        method=written.method,  # type: ignore[arg-type]
        merge_gap_s=written.merge_gap_s,
        som=SomSettings(seed=written.seed),
        cost_shift=CostShiftSettings(
            domain_cost_ratio=cost.domain_cost_ratio,
            negligible_share=cost.negligible_share,
            custom_domains=tuple((d.name, d.regex) for d in cost.domains),
        )
        if cost.enabled
        else None,
        pairwise=pairwise,
    )


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    config = load_config(args.config)
    settings = detection_settings(config, args.workload)
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
    dedup_config = dedup_settings(config)
    if args.no_state:
        dedup = deduplicate(result.reported, context, [], [], dedup_config)
        report = build_report(result, __version__, dedup)
    else:
        with open_state(config.state) as state:
            since = result.windows.historical_start_s - dedup_config.pairwise.max_gap_s
            dedup = deduplicate(
                result.reported,
                context,
                state.known_regressions(),
                state.groups(since),
                dedup_config,
            )
            report = build_report(result, __version__, dedup)
            state.record_run(time.time(), report, dedup.groups, report["regressions"])
    out.print(detection_table(report))
    out.print(funnel_line(report["funnel"]), highlight=False)
    if args.output is not None:
        write_json_atomic(args.output, report)
        err.print(f"wrote {args.output}", highlight=False)
    return 0
