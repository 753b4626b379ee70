"""Rich renderables for the command line: built from result dataclasses, printed by the caller."""

from __future__ import annotations

from collections import Counter

from rich.markup import escape
from rich.table import Table

from regbot.bot.sources.profiles import IngestSummary
from regbot.profiles.gcpu import GcpuMatrix
from regbot.report.model import Funnel, Report
from regbot.timefmt import format_time


def ingest_table(summary: IngestSummary) -> Table:
    """One row per format read, then the store's totals."""
    table = Table(title="regbot ingest", show_edge=False)
    table.add_column("format")
    table.add_column("files", justify="right")
    table.add_column("skipped (already in store)", justify="right")
    table.add_column("records", justify="right")
    table.add_column("samples", justify="right")
    by_format: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    records: Counter[str] = Counter()
    samples: dict[str, float] = {}
    types: dict[str, set[str]] = {}
    for result in summary.files:
        by_format[result.format] += 1
        skipped[result.format] += result.skipped
        records[result.format] += result.records
        samples[result.format] = samples.get(result.format, 0.0) + result.samples
        if not result.skipped:
            types.setdefault(result.format, set()).add(result.sample_type)
    for name in sorted(by_format):
        unit = ", ".join(sorted(types.get(name, ()))) or "-"
        table.add_row(
            name,
            str(by_format[name]),
            str(skipped[name]),
            f"{records[name]:,}",
            f"{samples[name]:,.6g} ({unit})",
        )
    span = (
        f"{format_time(summary.first_bucket_s)} .. {format_time(summary.last_bucket_s)}"
        if summary.first_bucket_s is not None and summary.last_bucket_s is not None
        else "-"
    )
    table.caption = (
        f"store: {summary.frames:,} frames (+{summary.new_frames:,}), "
        f"{summary.stacks:,} stacks (+{summary.new_stacks:,}), {summary.buckets:,} time buckets "
        f"of {summary.bucket_width_s}s, {span}"
    )
    return table


def gcpu_table(matrix: GcpuMatrix, top: int) -> Table:
    """The ``top`` subroutines by gCPU over the whole range, with first and last bucket."""
    kind = "self" if matrix.self_share else "inclusive"
    table = Table(
        title=f"top {min(top, len(matrix.subroutines))} gCPU series ({kind})", show_edge=False
    )
    table.add_column("series")
    table.add_column("gCPU overall", justify="right")
    table.add_column("first bucket", justify="right")
    table.add_column("last bucket", justify="right")
    table.add_column("points", justify="right")
    order = sorted(
        range(len(matrix.subroutines)), key=lambda i: (-matrix.overall[i], matrix.subroutines[i])
    )
    for i in order[:top]:
        row = matrix.values[i]
        table.add_row(
            f"gcpu:{matrix.subroutines[i]}",
            f"{matrix.overall[i]:.4%}",
            f"{row[0]:.4%}",
            f"{row[-1]:.4%}",
            str(len(row)),
        )
    table.caption = f"{len(matrix.subroutines):,} series above the triviality floor"
    return table


def detection_table(report: Report) -> Table:
    """The reported regressions of a SPEC §4 report, one row each."""
    table = Table(title="regbot detect", show_edge=False)
    for name, justify in (
        ("id", "left"),
        ("series", "left"),
        ("detector", "left"),
        ("change time", "left"),
        ("before", "right"),
        ("after", "right"),
        ("delta", "right"),
        ("relative", "right"),
        ("p-value", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in report.regressions:
        relative, p_value = r.relative_delta, r.p_value
        table.add_row(
            r.id,
            escape(r.series),
            r.detector,
            format_time(r.change_time_s),
            _general(r.before, ".6g"),
            _general(r.after, ".6g"),
            _general(r.delta, "+.6g"),
            f"{relative:+.2%}" if relative is not None else "new",
            f"{p_value:.2g}" if p_value is not None else "-",
        )
    if not report.regressions:
        table.caption = "no regressions"
    return table


def attribution_table(report: Report) -> Table:
    """Each reported regression's suspect commits (best first) with the score parts."""
    table = Table(title="suspect commits", show_edge=False)
    for name, justify in (
        ("regression", "left"),
        ("confidence", "left"),
        ("commit", "left"),
        ("PR", "right"),
        ("title", "left"),
        ("score", "right"),
        ("gCPU attr.", "right"),
        ("text", "right"),
        ("corr.", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in report.regressions:
        if not r.candidates:
            table.add_row(r.id, r.confidence, "-", "", "no confident suspect", "", "", "", "")
        for rank, c in enumerate(r.candidates):
            table.add_row(
                r.id if rank == 0 else "",
                r.confidence if rank == 0 else "",
                c.commit[:10],
                f"#{c.pull_request}" if c.pull_request else "-",
                escape(c.title[:60]),
                f"{c.score:.2f}",
                f"{c.gcpu_attribution:.0%}",
                f"{c.text_similarity:.0%}",
                f"{c.correlation:.0%}",
            )
    if not report.regressions:
        table.caption = "no regressions to attribute"
    return table


def funnel_line(funnel: Funnel) -> str:
    """The funnel as one line, in pipeline order (like FBDetect Table 3)."""
    return "funnel: " + " → ".join(f"{key} {value:,}" for key, value in funnel.to_json().items())


def _general(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)
