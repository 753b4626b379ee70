"""The number formats of a SPEC §4 regression that the comment, the gate and the views share
(levels, changes and shares, with the entry's unit; gCPU as a percentage of CPU)."""

from __future__ import annotations

import math

from regbot.bot.github.markdown_safe import inline
from regbot.report.model import RegressionEntry

__all__ = [
    "format_delta",
    "format_number",
    "format_percent",
    "format_relative",
    "format_share",
    "format_value",
]


def format_number(value: float | None, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, never rounding away integer digits (``1,000``
    with thousands separators from ``10**digits`` up), in exponent form below ``1e-4``;
    ``n/a`` for None or a non-finite value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 10**digits:
        return f"{value:,.0f}"
    if magnitude < 1e-4:
        return f"{value:.{digits - 1}e}"
    shown = f"{value:.{digits}g}"
    return f"{value:,.0f}" if "e" in shown else shown  # 999.6 rounds up to 1e+03


def _signed(text: str, value: float) -> str:
    return text if text.startswith("-") or text == "n/a" else f"+{text}"


def format_value(view: RegressionEntry, value: float | None) -> str:
    """A level of the series: gCPU (a share of CPU) as a percentage, ``0.0123`` -> ``1.23%``;
    other kinds as a number with the entry's unit when it has one."""
    if view.is_gcpu:
        return "n/a" if value is None else f"{format_number(value * 100)}%"
    shown = format_number(value)
    return f"{shown} {inline(view.unit, 20)}" if view.unit and value is not None else shown


def format_delta(view: RegressionEntry, value: float | None) -> str:
    """A signed change: gCPU in percentage points (``+0.19 pp``), others in the series' unit."""
    if value is None:
        return "n/a"
    if view.is_gcpu:
        return f"{_signed(format_number(value * 100), value)} pp"
    shown = _signed(format_number(value), value)
    return f"{shown} {inline(view.unit, 20)}" if view.unit else shown


def format_percent(value: float) -> str:
    """``value`` (a share) as a percentage, sign only when negative: one decimal, or two
    significant digits below 0.1% so a small share does not read as zero."""
    percent = value * 100
    return f"{percent:.1f}%" if abs(percent) >= 0.1 or percent == 0 else f"{percent:.2g}%"


def format_relative(value: float | None) -> str:
    """A signed relative change as a percentage: one decimal (``+12.3%``), or two significant
    digits below 0.1% so a small change does not read as zero; "new" where there is none (the
    level before was zero or near it: ``detection.ratios``)."""
    if value is None or not math.isfinite(value):
        return "new"
    return _signed(format_percent(value), value)


def format_share(value: float) -> str:
    return f"{value * 100:.0f}%"
