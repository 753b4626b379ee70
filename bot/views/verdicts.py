"""The verdicts table of `regbot explain`: every stage's verdict on one regression in pipeline
order (passed or failed, the reason, the numbers it compared), the stages a removed regression
did not reach, and the cost domains the cost-shift stage checked."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from regbot.bot.explanation.lookup import ordered_verdicts, stages_not_reached
from regbot.bot.views.terminal_text import change, level, number_text, safe
from regbot.detection.stages import Stage
from regbot.report.model import RegressionEntry, VerdictEntry
from regbot.report.plain import JSONValue

_DOMAIN_KEYS = (
    "domain_kinds",
    "domain_names",
    "domain_members",
    "domain_before",
    "domain_after",
    "domain_delta",
    "domain_checks",
)
_DOMAIN_COLUMNS = (
    ("domain", "left"),
    ("kind", "left"),
    ("members", "right"),
    ("before", "right"),
    ("after", "right"),
    ("delta", "right"),
    ("check", "left"),
)


def _padded(values: Sequence[JSONValue], length: int) -> list[JSONValue]:
    return list(values[:length]) + [None] * (length - len(values))


def cost_shift_domains(verdict: VerdictEntry, kind: str) -> Table | None:
    """The cost domains the cost-shift stage checked: one row each."""
    columns = [verdict.numbers.get(k) for k in _DOMAIN_KEYS]
    lists = [c for c in columns if isinstance(c, list)]
    if len(lists) != len(columns) or not lists[0]:
        return None
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    for name, justify in _DOMAIN_COLUMNS:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # rich's Literal
    for kind_of, name, members, before, after, delta, check in zip(
        *(_padded(c, len(lists[0])) for c in lists)
    ):
        table.add_row(
            safe(name),
            safe(kind_of),
            number_text(members),
            level(kind, before),
            level(kind, after),
            change(kind, delta),
            safe(check, "bold red" if check == "shift" else ""),
        )
    return table


def verdict_cell(stage: str, verdict: VerdictEntry, kind: str) -> RenderableType:
    """A verdict's reason, then its numbers (``key=value``); cost shift adds its domains."""
    parts: list[RenderableType] = [safe(verdict.reason)]
    domains = cost_shift_domains(verdict, kind) if stage == Stage.COST_SHIFT else None
    skip = set(_DOMAIN_KEYS) if domains is not None else set()
    numbers = Text(style="dim")
    for key, value in verdict.numbers.items():
        if key in skip:
            continue
        if numbers:
            numbers.append("  ")
        numbers.append(f"{key}=")
        numbers.append_text(safe(number_text(value)))
    if numbers:
        parts.append(numbers)
    if domains is not None:
        parts.append(domains)
    return Group(*parts)


def verdicts_table(entry: RegressionEntry | None) -> Table:
    """Every stage's verdict in pipeline order: passed or failed, reason and numbers (none for
    a regression the report names only as a duplicate)."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, expand=True)
    table.add_column("stage", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("reason and numbers", ratio=1)
    if entry is None:
        table.caption = "no verdicts stored"
        return table
    for stage, verdict in ordered_verdicts(entry):
        result = (
            Text("passed", style="green") if verdict.passed else Text("FAILED", style="bold red")
        )
        table.add_row(safe(stage), result, verdict_cell(stage, verdict, entry.kind))
    for stage in stages_not_reached(entry):
        table.add_row(
            safe(stage), Text("not reached", style="dim"), Text("removed earlier", style="dim")
        )
    if not table.rows:
        table.caption = "no verdicts stored"
    return table
