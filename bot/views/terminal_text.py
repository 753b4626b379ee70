"""Text for the terminal views: untrusted text made safe to print, and numbers as `regbot
explain` shows them (levels, changes, times, verdict numbers).

Untrusted text (series ids, frames, commit titles, authors, reasons that quote them) never goes
through rich's markup parser: it is put into ``Text`` objects, which rich prints as written, after
``markdown_safe.clean`` has dropped control and bidirectional-format characters (an escape
sequence in a frame name must not reach the terminal). Only regbot's own fixed strings are markup.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text

from regbot.bot.github.markdown_safe import clean
from regbot.bot.views.numbers import format_number
from regbot.report.plain import finite_number
from regbot.timefmt import format_time

LIST_ITEMS_SHOWN = 8


def safe(text: object, style: str = "") -> Text:
    """Untrusted text as a ``Text`` (never parsed as markup), control characters dropped."""
    return Text(clean(str(text)), style=style)


def level(kind: str, value: object) -> str:
    """A level of a series: gCPU (a share of CPU) as a percentage, others as a number."""
    number = finite_number(value)
    if number is None:
        return "n/a"
    return f"{format_number(number * 100)}%" if kind == "gcpu" else format_number(number)


def change(kind: str, value: object) -> str:
    """A signed change: gCPU in percentage points, others in the series' own unit."""
    number = finite_number(value)
    if number is None:
        return "n/a"
    shown = format_number(number * 100 if kind == "gcpu" else number)
    signed = shown if shown.startswith("-") else f"+{shown}"
    return f"{signed} pp" if kind == "gcpu" else signed


def time_text(value: object) -> str:
    """A time in UTC, or n/a."""
    number = finite_number(value)
    return format_time(number) if number is not None else "n/a"


def number_text(value: object) -> str:
    """A verdict number as shown: floats to four significant digits, long lists cut."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_number(value, 4)
    if isinstance(value, list):
        shown = ", ".join(number_text(v) for v in value[:LIST_ITEMS_SHOWN])
        more = f", … (+{len(value) - LIST_ITEMS_SHOWN})" if len(value) > LIST_ITEMS_SHOWN else ""
        return f"[{shown}{more}]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {number_text(v)}" for k, v in value.items()) + "}"
    return str(value)
