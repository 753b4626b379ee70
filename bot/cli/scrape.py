"""`regbot scrape`: CPU profiles pulled from pprof HTTP endpoints into the sample store.

Rules:

* **Settings** come from ``sources.scrape`` in ``regbot.yml`` (``-c``, else ``./regbot.yml``
  when there is one), and each flag overrides its key: ``--target`` (repeatable; replaces the
  file's targets), ``--store``, ``--seconds``, ``--interval``, ``--timeout``, ``--retries``.
  A new store's bucket width and the pprof sample type are ``profiles.bucket`` and
  ``profiles.sample_type`` (``--bucket``, ``--sample-type``), as for ``regbot ingest``.
* **Rounds.** ``--once`` is one round (cron, tests), ``--count K`` K rounds, neither: rounds
  until interrupted. Rounds start ``interval`` apart; when one takes longer, the next starts
  at once.
* **Validation first.** The config, the targets, every number, ``$REGBOT_SCRAPE_RETRY_SCALE``
  and the store (a regbot store of the same bucket width, or an empty or absent folder) are
  checked before the first request, so bad input writes nothing.
* **Output.** Each round prints a table on stdout (``bot/views/scrape.py``) and, on stderr, one
  line per failed target: ``regbot: scrape NAME (URL): expected ..., found ...``.
* **Exit code.** 0 when at least one profile was stored over the run (failed targets are
  reported and the others kept); 2 when none was (every target failed in every round, which
  ends with one more line saying so) or the input was bad.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from regbot.bot import config_values as values
from regbot.bot.cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from regbot.bot.config import CONFIG_NAME, Config, ScrapeSource, load_config
from regbot.bot.scrape_targets import ScrapeTarget, distinct_targets, target_from_text
from regbot.bot.sources.http_get import wait_scale
from regbot.bot.sources.pprof_scrape import RETRY_SCALE_ENV, ScrapeRequest, scrape_round
from regbot.bot.sources.scrape_store import append_round
from regbot.bot.views.scrape import scrape_table
from regbot.errors import InputError
from regbot.profiles.model import ParseOptions
from regbot.profiles.store import open_store
from regbot.timefmt import parse_duration


@dataclass(frozen=True, slots=True)
class ScrapePlan:
    """One ``regbot scrape`` run, checked: whom to ask, how, how often, and where to store."""

    targets: tuple[ScrapeTarget, ...]
    store: Path
    request: ScrapeRequest
    interval_s: float
    rounds: int | None
    bucket_s: int | None


def _config(path: Path | None) -> Config | None:
    if path is None and (Path.cwd() / CONFIG_NAME).is_file():
        path = Path.cwd() / CONFIG_NAME
    return load_config(path) if path is not None else None


def _whole(text: str | None, flag: str, default: int, least: int) -> int:
    if text is None:
        return default
    found = values.count(text, flag)
    if found < least:
        raise InputError(flag, f"a whole number >= {least}", text)
    return found


def _duration(text: str | None, flag: str, default: float) -> float:
    return default if text is None else parse_duration(text, flag)


def plan_from(args: argparse.Namespace) -> ScrapePlan:
    """The run ``args`` and the config ask for, every part checked (module rules)."""
    config = _config(args.config)
    scrape = (config.sources.scrape if config else None) or ScrapeSource()
    where = f"sources.scrape.targets in {config.source}" if config else "--target URL"
    if args.target:
        where_flag = "--target"
        targets = distinct_targets(
            [target_from_text(t, where_flag) for t in args.target], where_flag
        )
    else:
        targets = scrape.targets
    if not targets:
        raise InputError("--target", f"at least one target ({where})")
    store = args.store
    if store is None:
        if config is None or config.sources.scrape is None:
            raise InputError("--store", "a store folder (--store DIR, or sources.scrape.store)")
        store = scrape.store
    bucket_s = int(config.profiles.bucket_s) if config else None
    if args.bucket is not None:
        bucket_s = int(parse_duration(args.bucket, "--bucket"))
        if bucket_s < 1:
            raise InputError("--bucket", "a width of at least 1s", args.bucket)
    sample_type = args.sample_type or (config.profiles.sample_type if config else None)
    request = ScrapeRequest(
        seconds=_whole(args.seconds, "--seconds", scrape.seconds, 1),
        timeout_s=_duration(args.timeout, "--timeout", scrape.timeout_s),
        retries=_whole(args.retries, "--retries", scrape.retries, 0),
        wait_scale=wait_scale(RETRY_SCALE_ENV),
        options=ParseOptions(sample_type=sample_type),
    )
    rounds = 1 if args.once else _whole(args.count, "--count", 0, 1) if args.count else None
    open_store(store, bucket_s)  # an error now if it is no store, or one of another width
    return ScrapePlan(
        targets,
        store,
        request,
        _duration(args.interval, "--interval", scrape.interval_s),
        rounds,
        bucket_s,
    )


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    plan = plan_from(args)
    answered = 0
    started = time.monotonic()
    number = 0
    while plan.rounds is None or number < plan.rounds:
        if number:
            time.sleep(max(0.0, started + number * plan.interval_s - time.monotonic()))
        results = scrape_round(plan.targets, plan.request)
        totals = append_round(plan.store, results, plan.bucket_s)
        for result in results:
            if result.error is not None:
                err.print(f"regbot: {result.error}", markup=False, highlight=False, soft_wrap=True)
        number += 1
        out.print(scrape_table(results, totals, number, plan.rounds))
        answered += sum(r.samples is not None for r in results)
    if answered:
        return EXIT_OK
    rounds = f"{number} rounds" if number != 1 else "1 round"
    err.print(
        f"regbot: scrape: expected at least one target to answer with a profile, none did "
        f"({len(plan.targets)} targets, {rounds}); {plan.store} unchanged",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    return EXIT_BAD_INPUT
