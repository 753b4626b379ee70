"""``regbot scrape``'s table: one row per target of a round, and the store's totals."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from regbot.bot.sources.pprof_scrape import TargetResult
from regbot.bot.sources.scrape_store import StoreTotals
from regbot.bot.views.terminal_text import safe
from regbot.timefmt import format_time


def scrape_table(
    results: Sequence[TargetResult],
    totals: StoreTotals | None,
    round_number: int,
    rounds: int | None,
) -> Table:
    """Target, outcome (stored, or failed: its line is on stderr), samples, their type and the
    profile's time; the caption says what the store holds (or that nothing was written)."""
    of = f" of {rounds}" if rounds is not None else ""
    title = "regbot scrape" if rounds == 1 else f"regbot scrape, round {round_number}{of}"
    table = Table(title=title, show_edge=False)
    table.add_column("target")
    table.add_column("outcome")
    table.add_column("samples", justify="right")
    table.add_column("type")
    table.add_column("profile time", no_wrap=True)
    for result in results:
        name = safe(result.target.name)
        samples = result.samples
        if samples is None:
            table.add_row(name, "failed", "-", "-", "-")
            continue
        when = format_time(float(samples.times_s[0])) if len(samples.times_s) else "-"
        weight = float(samples.weights.sum())
        table.add_row(name, "stored", f"{weight:,.6g}", samples.sample_type, when)
    if totals is None:
        table.caption = "store: nothing written (no target answered with a profile)"
        return table
    span = (
        f"{format_time(totals.first_bucket_s)} .. {format_time(totals.last_bucket_s)}"
        if totals.first_bucket_s is not None and totals.last_bucket_s is not None
        else "-"
    )
    already = f" ({totals.already} already there)" if totals.already else ""
    table.caption = (
        f"store: +{totals.stored} profiles{already}; {totals.frames:,} frames, "
        f"{totals.stacks:,} stacks, {totals.buckets:,} time buckets of "
        f"{totals.bucket_width_s}s, {span}"
    )
    return table
