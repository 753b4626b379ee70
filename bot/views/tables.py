"""Rich renderables for the command line: built from result dataclasses, printed by the caller.

The tables of ``regbot detect`` and ``regbot run`` (:func:`detection_table`,
:func:`attribution_table`) fit the console they are printed on (:mod:`.fit`): one line per row,
series names shortened where a reader loses least (:mod:`.names`), and the columns a narrow
console cannot hold dropped in ``DETECTION_DROP_ORDER`` / ``SUSPECT_DROP_ORDER``, with a caption
pointing to ``regbot explain <id>`` for the rest."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

from regbot.bot.sources.profiles import IngestSummary
from regbot.bot.views.fit import FitColumn, FittedTable, Shortened
from regbot.bot.views.names import one_line, series_wanted_width, shorten_series
from regbot.bot.views.numbers import format_delta, format_relative, format_value
from regbot.profiles.gcpu import GcpuMatrix
from regbot.report.model import Funnel, RegressionEntry, Report, SuspectCommit
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
            Text(one_line(f"gcpu:{matrix.subroutines[i]}")),  # perf's [unknown] is not markup
            f"{matrix.overall[i]:.4%}",
            f"{row[0]:.4%}",
            f"{row[-1]:.4%}",
            str(len(row)),
        )
    table.caption = f"{len(matrix.subroutines):,} series above the triviality floor"
    return table


DETECTION_DROP_ORDER = ("group", "merged", "p-value", "detector", "delta", "change time")
"""The detection table's optional columns, first to go first when the console is narrow; the
id, series, change (before → after) and relative change stay (at 80 columns and wider)."""

DETECTION_LAST_RESORT = ("change", "relative")
"""What goes, in this order, only where the id and the series would not fit otherwise (under 60
columns or so); the id and the series always stay."""

SUSPECT_DROP_ORDER = ("corr.", "text", "gCPU attr.", "score")
"""The suspects table's optional columns (the score and its parts), first to go first; the
regression, confidence, commit, PR and title stay (at 80 columns and wider)."""

SUSPECT_LAST_RESORT = ("confidence", "PR")
"""What goes, in this order, only where the title would not fit otherwise; the regression, the
commit and the title always stay."""

TITLE_WANTED = 50

# The most regressions a table shows (``table_regressions``).
TABLE_ROWS = 50
"""The most cells the title column asks for before a score column is kept."""

_SCORE_PARTS = (
    ("score", "score", "{:.2f}"),
    ("gCPU attr.", "gcpu_attribution", "{:.0%}"),
    ("text", "text_similarity", "{:.0%}"),
    ("corr.", "correlation", "{:.0%}"),
)


def table_regressions(
    report: Report, limit: int = TABLE_ROWS
) -> tuple[tuple[RegressionEntry, ...], str | None]:
    """The regressions a table shows, in the report's order: all of them up to ``limit``, else the
    ``limit`` largest by relative change (a deploy of a big fleet can bring thousands: a terminal
    shows the ones to look at first, the report holds every one), with a note saying so."""
    rows = report.regressions
    if len(rows) <= limit:
        return rows, None
    size = [_size(r.relative_delta) for r in rows]
    largest = sorted(sorted(range(len(rows)), key=lambda i: -size[i])[:limit])
    note = f"the {limit} largest of {len(rows):,} regressions (relative change); -o: all"
    return tuple(rows[i] for i in largest), note


def _size(relative: float | None) -> float:
    return abs(relative) if relative is not None and math.isfinite(relative) else 0.0


def detection_table(report: Report, limit: int = TABLE_ROWS) -> FittedTable:
    """The reported regressions of a SPEC §4 report (at most ``limit``: ``table_regressions``),
    one line each, fitted to the console: id, series (shortened to fit), change and relative
    change always; change time, delta, detector, p-value, merged duplicates and dedup group as
    the width allows (``DETECTION_DROP_ORDER``)."""
    rows, note = table_regressions(report, limit)
    names = [one_line(r.series) for r in rows]
    wanted = max([len("series"), *(series_wanted_width(name) for name in names)])
    order = DETECTION_DROP_ORDER
    return FittedTable(
        "regbot detect",
        (
            FitColumn("id", tuple(Text(r.id) for r in rows)),
            FitColumn("series", tuple(Shortened(n, shorten_series) for n in names), wanted=wanted),
            _column("change", [_change(r) for r in rows], "right", DETECTION_LAST_RESORT),
            _column(
                "relative",
                [format_relative(r.relative_delta) for r in rows],
                "right",
                DETECTION_LAST_RESORT,
            ),
            _column("change time", [format_time(r.change_time_s) for r in rows], drop=order),
            _column("delta", [_plain(format_delta, r, r.delta) for r in rows], "right", order),
            _column("detector", [r.detector for r in rows], drop=order),
            _column("p-value", [_p_value(r.p_value) for r in rows], "right", order),
            _column("merged", [str(len(r.duplicates)) for r in rows], "right", order),
            _column("group", [_group(r) for r in rows], drop=order),
        ),
        empty_caption="no regressions",
        note=note,
    )


def attribution_table(report: Report, limit: int = TABLE_ROWS) -> FittedTable:
    """Each reported regression's suspect commits (the regressions ``table_regressions``
    shows), best first, one line each, fitted to the console: regression, confidence, short
    sha, PR and title (cut with ``…`` to fit) always; the score and its parts as the width
    allows (``SUSPECT_DROP_ORDER``)."""
    regressions, note = table_regressions(report, limit)
    rows = [(r, c) for r in regressions for c in r.candidates or [None]]
    first = [i == 0 or rows[i - 1][0] is not r for i, (r, _) in enumerate(rows)]
    titles = tuple(
        Text(one_line(c.title), no_wrap=True, overflow="ellipsis")
        if c is not None
        else Text("no confident suspect", style="italic")
        for _, c in rows
    )
    wanted = max([len("title"), *(min(t.cell_len, TITLE_WANTED) for t in titles)])
    parts = [
        _column(header, [_part(c, name, spec) for _, c in rows], "right", SUSPECT_DROP_ORDER)
        for header, name, spec in _SCORE_PARTS
    ]
    return FittedTable(
        "suspect commits",
        (
            _column("regression", [r.id if f else "" for (r, _), f in zip(rows, first)]),
            _column(
                "confidence",
                [r.confidence if f else "" for (r, _), f in zip(rows, first)],
                drop=SUSPECT_LAST_RESORT,
            ),
            _column("commit", [c.commit[:7] if c else "-" for _, c in rows]),
            _column("PR", [_pull_request(c) for _, c in rows], "right", SUSPECT_LAST_RESORT),
            FitColumn("title", titles, wanted=wanted),
            *parts,
        ),
        empty_caption="no regressions to attribute",
        note=note,
    )


def funnel_line(funnel: Funnel) -> str:
    """The funnel as one line, in pipeline order (like FBDetect Table 3)."""
    return "funnel: " + " → ".join(f"{key} {value:,}" for key, value in funnel.to_json().items())


def _column(
    header: str,
    cells: list[str],
    justify: JustifyMethod = "left",
    drop: tuple[str, ...] | None = None,
) -> FitColumn:
    """A fixed column, its cells printed as written; droppable when its header is in ``drop``
    (a drop order), at its place there; ``drop`` a ``*_LAST_RESORT`` order makes it a last
    resort."""
    rank = None if drop is None else drop.index(header) + 1
    last_resort = any(drop is order for order in (DETECTION_LAST_RESORT, SUSPECT_LAST_RESORT))
    return FitColumn(header, tuple(Text(c) for c in cells), justify, rank, last_resort)


def _plain(
    form: Callable[[RegressionEntry, float | None], str],
    entry: RegressionEntry,
    value: float | None,
) -> str:
    """``form`` (a :mod:`numbers` format) for a terminal: the unit as written, not escaped for
    markdown as the PR comment needs it."""
    shown = form(replace(entry, unit=None), value)
    if entry.is_gcpu or not entry.unit or value is None:
        return shown
    return f"{shown} {one_line(entry.unit)}"


def _change(entry: RegressionEntry) -> str:
    """Before → after in the series' unit (gCPU as a percentage of CPU)."""
    before = _plain(format_value, entry, entry.before)
    return f"{before} → {_plain(format_value, entry, entry.after)}"


def _p_value(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"


def _group(entry: RegressionEntry) -> str:
    """The dedup group, or "own" when the regression heads a group of its own id."""
    return "own" if entry.group == entry.id else one_line(entry.group)


def _pull_request(candidate: SuspectCommit | None) -> str:
    return f"#{candidate.pull_request}" if candidate and candidate.pull_request else "-"


def _part(candidate: SuspectCommit | None, name: str, spec: str) -> str:
    return "" if candidate is None else spec.format(getattr(candidate, name))
