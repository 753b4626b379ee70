"""The `detect` command: series files in, detection pipeline, table out, SPEC §4 report to -o."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from regbot import __version__
from regbot.atomic import write_atomic
from regbot.bot.config import load_config
from regbot.bot.views import detection_table, funnel_line
from regbot.detection.model import DetectionSettings
from regbot.detection.pipeline import run_detection
from regbot.detection.report import build_report
from regbot.errors import InputError
from regbot.profiles.series_files import find_series_files, read_series_files
from regbot.timefmt import parse_time


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    config = load_config(args.config)
    workload = config.workload(args.workload or "default")
    settings = DetectionSettings(workload=workload, higher_is_better=config.higher_is_better)
    if not find_series_files(args.series):
        raise InputError(
            " ".join(map(str, args.series)), "series files (.csv, .jsonl, or folders of them)"
        )
    series = read_series_files(args.series)
    now_s = parse_time(args.now, "--now") if args.now is not None else None
    result = run_detection(series, settings, now_s)
    report = build_report(result, __version__)
    out.print(detection_table(report))
    out.print(funnel_line(report["funnel"]), highlight=False)
    if args.output is not None:
        payload = json.dumps(report, indent=2, allow_nan=False).encode()
        write_atomic(args.output, lambda handle: handle.write(payload))
        err.print(f"wrote {args.output}", highlight=False)
    return 0
