"""The `ingest` and `gcpu` commands: arguments and config in, store and tables out."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from regbot.bot.cli.exit_codes import EXIT_OK
from regbot.bot.sources.profiles import collect_profile_paths, ingest_profiles
from regbot.bot.views.tables import gcpu_table, ingest_table
from regbot.errors import InputError
from regbot.profiles.gcpu import TRIVIALITY_FLOOR, build_gcpu
from regbot.profiles.model import ParseOptions
from regbot.profiles.sample_index import SampleIndex
from regbot.profiles.store import open_store
from regbot.timefmt import parse_duration, parse_time

PROGRESS_FROM_BYTES = 32 * 1024 * 1024  # a progress bar for inputs bigger than this


def _profile_settings(config_path: Path | None) -> tuple[int | None, str | None, float]:
    """Bucket width, pprof sample type and triviality floor from the config (None: defaults)."""
    if config_path is None:
        return None, None, TRIVIALITY_FLOOR
    from regbot.bot.config import load_config

    profiles = load_config(config_path).profiles
    return int(profiles.bucket_s), profiles.sample_type, profiles.gcpu_floor


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    bucket_s, sample_type, _ = _profile_settings(args.config)
    if args.bucket is not None:
        bucket_s = int(parse_duration(args.bucket, "--bucket"))
        if bucket_s < 1:
            raise InputError("--bucket", "a width of at least 1s", args.bucket)
    at_s = parse_time(args.at, "--at") if args.at is not None else None
    options = ParseOptions(sample_type=args.sample_type or sample_type)
    paths = collect_profile_paths(args.profiles)
    total_bytes = sum(p.stat().st_size for p in paths)
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=total_bytes < PROGRESS_FROM_BYTES,
    )
    with progress:
        task = progress.add_task(f"ingesting {len(paths)} files", total=total_bytes)
        summary = ingest_profiles(
            paths,
            args.store,
            at_s=at_s,
            bucket_width_s=bucket_s,
            options=options,
            on_file=lambda _path, size: progress.advance(task, size),
        )
    out.print(ingest_table(summary))
    return EXIT_OK


def run_gcpu(args: argparse.Namespace, out: Console, err: Console) -> int:
    _, _, floor = _profile_settings(args.config)
    if args.floor is not None:
        try:
            floor = float(args.floor)
        except ValueError:
            raise InputError("--floor", "a share such as 0.00001", args.floor) from None
    if not (args.store / "manifest.json").exists():
        raise InputError(str(args.store), "a sample store made by `regbot ingest --store`")
    store = open_store(args.store)
    index = SampleIndex.of_store(store)
    matrix = build_gcpu(index, floor=floor, self_share=args.self_share)
    out.print(gcpu_table(matrix, args.top))
    if args.output is not None:
        from regbot.profiles.series_csv import write_series_csv
        from regbot.profiles.series_jsonl import write_series_jsonl

        suffix = args.output.suffix.lower()
        if suffix == ".parquet":
            from regbot.profiles.series_arrow import write_series_parquet

            writer = write_series_parquet
        else:
            writer = write_series_csv if suffix == ".csv" else write_series_jsonl
        writer(matrix.series(), args.output)
        err.print(f"wrote {len(matrix.subroutines):,} series to {args.output}", highlight=False)
    return EXIT_OK
