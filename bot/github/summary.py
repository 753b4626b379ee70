"""The job-summary markdown of a run's report: missing baselines, the funnel, and the
regressions with their confidence and top suspect. Same escaping rules as the PR comment
(:mod:`regbot.bot.github.comment`). O(regressions shown)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from regbot.bot.github.markdown_safe import code_span, inline
from regbot.bot.views.numbers import format_relative, format_value
from regbot.errors import InputError
from regbot.report.decode import read_list
from regbot.report.model import RegressionEntry, Report
from regbot.timefmt import format_time

__all__ = ["MAX_SUMMARY_ROWS", "render_summary"]

MAX_SUMMARY_ROWS = 200
MAX_MISSING_LISTED = 100


def _funnel(report: Report) -> list[str]:
    rows = ["| Stage | Count |", "|---|---:|"]
    for stage, count in report.funnel.to_json().items():
        rows.append(f"| {inline(stage.replace('_', ' '), 60)} | {count:,} |")
    return rows


def _summary_row(view: RegressionEntry) -> str:
    top = view.candidates[0] if view.candidates else None
    if top is None:
        suspect = "—"
    else:
        pr = f" #{top.pull_request}" if top.pull_request is not None else ""
        suspect = f"{code_span(top.commit[:7])}{pr} {inline(top.title, 60)} ({top.score:.2f})"
    change = f"{format_value(view, view.before)} → {format_value(view, view.after)}"
    return (
        f"| {code_span(view.id, 40, in_table=True)} | {code_span(view.series, 80, in_table=True)} "
        f"| {change} | {format_relative(view.relative_delta)} | {format_time(view.change_time_s)} "
        f"| {view.confidence} | {suspect} |"
    )


def _names(missing: object) -> list[str]:
    """The missing-baseline names given, each checked to be text."""
    names = []
    for i, name in enumerate(read_list(missing, "missing")):
        if not isinstance(name, str):
            raise InputError(f"missing[{i}]", "a series or source name", name)
        names.append(name)
    return names


def _missing_block(names: Sequence[str]) -> list[str]:
    n = len(names)
    lines = [
        f"> ⚠️ **Missing baselines**: {n} series or source{'s' if n != 1 else ''} had no "
        "historical data, so regbot could not judge a change there:",
        ">",
    ]
    lines += [f"> - {code_span(name, 120)}" for name in names[:MAX_MISSING_LISTED]]
    if n > MAX_MISSING_LISTED:
        lines.append(f"> - … and {n - MAX_MISSING_LISTED:,} more")
    return lines


def render_summary(report: Report, *, missing: Sequence[str] = ()) -> str:
    """The job-summary markdown of a SPEC §4 report: a warning listing the series or sources
    with missing baselines (when any), the funnel as a table, and the regressions with their
    confidence and top suspect (at most :data:`MAX_SUMMARY_ROWS` rows, with a count of the
    rest). Same escaping rules as the comment."""
    views = report.regressions
    names = _names(missing)
    out = ["## regbot", ""]
    analysis = report.window.nominal.analysis
    if all(math.isfinite(t) for t in analysis):
        out += [f"Analysis window {format_time(analysis[0])} → {format_time(analysis[1])}.", ""]
    if names:
        out += [*_missing_block(names), ""]
    out += ["### Funnel", "", *_funnel(report), ""]
    out += [f"### Regressions ({len(views)})", ""]
    if views:
        out += [
            "| Regression | Series | Change | Relative | Changed at | Confidence | Top suspect |",
            "|---|---|---|---:|---|---|---|",
            *(_summary_row(v) for v in views[:MAX_SUMMARY_ROWS]),
        ]
        if len(views) > MAX_SUMMARY_ROWS:
            out += ["", f"{len(views) - MAX_SUMMARY_ROWS:,} more in the JSON report."]
    else:
        out.append("No regressions reported.")
    return "\n".join(out) + "\n"
