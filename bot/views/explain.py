"""Rich renderables for `regbot explain`, built from an ``Explanation`` (plain data in, nothing
read or written here).

Untrusted text (series ids, frames, commit titles, authors, reasons that quote them) never goes
through rich's markup parser: it is put into ``Text`` objects, which rich prints as written, after
``markdown_safe.clean`` has dropped control and bidirectional-format characters (an escape
sequence in a frame name must not reach the terminal). Only regbot's own fixed strings are markup.

The chart (``SeriesChart``) is drawn here with braille characters (2 × 4 dots per cell), to the
width rich gives it, so it fits any console: the series as a line (points further apart than
five times the median positive spacing are not joined: a gap in the data stays visible), the means before
and after the change as dotted levels, the change as a dotted vertical line. A cell takes the
colour of the most important thing drawn in it (series, then means, then the change marker).
With an ASCII-only console the same picture is drawn with ``*``, ``-`` and ``|``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from regbot.bot.explanation.lookup import ordered_verdicts, stages_not_reached
from regbot.bot.explanation.model import Explanation, Finding, GroupView, MemberSeries
from regbot.bot.github.markdown_safe import clean
from regbot.bot.views.numbers import format_number, format_relative
from regbot.detection.dedup_context import subroutine_of_series
from regbot.profiles.model import subroutine_of
from regbot.timefmt import format_time

LIST_ITEMS_SHOWN = 8
GAP_FACTOR = 5.0

# Layers of the chart, by importance (a cell shows the style of its most important layer).
_CHANGE, _BEFORE, _AFTER, _SERIES = 1, 2, 3, 4
_LAYER_STYLE = {_CHANGE: "magenta", _BEFORE: "green", _AFTER: "red", _SERIES: "bold cyan"}
_ASCII_MARK = {_CHANGE: "|", _BEFORE: "-", _AFTER: "-", _SERIES: "*"}
# Braille dot bits, indexed [row within the cell (0..3)][column within the cell (0..1)].
_BRAILLE_BITS = np.array([[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]], np.int64)


def safe(text: object, style: str = "") -> Text:
    """Untrusted text as a ``Text`` (never parsed as markup), control characters dropped."""
    return Text(clean(str(text)), style=style)


# --- numbers --------------------------------------------------------------------------------


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def level(kind: str, value: object) -> str:
    """A level of a series: gCPU (a share of CPU) as a percentage, others as a number."""
    number = _finite(value)
    if number is None:
        return "n/a"
    return f"{format_number(number * 100)}%" if kind == "gcpu" else format_number(number)


def change(kind: str, value: object) -> str:
    """A signed change: gCPU in percentage points, others in the series' own unit."""
    number = _finite(value)
    if number is None:
        return "n/a"
    shown = format_number(number * 100 if kind == "gcpu" else number)
    signed = shown if shown.startswith("-") else f"+{shown}"
    return f"{signed} pp" if kind == "gcpu" else signed


def _time(value: object) -> str:
    number = _finite(value)
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


# --- header ---------------------------------------------------------------------------------


def status_text(finding: Finding) -> Text:
    status = finding.status
    style = {"reported": "bold red", "filtered": "yellow", "duplicate": "cyan"}[status.kind]
    text = Text(status.describe(), style=style)
    if status.reason:
        text.append(": ")
        text.append_text(safe(status.reason))
    return text


def header(finding: Finding, title: str = "regression") -> Panel:
    """Series, kind, detector, change time (UTC), before → after, delta, p-value, confidence,
    group and status of one regression."""
    e = finding.entry
    kind = str(e.get("kind", ""))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("series", safe(e.get("series", "n/a")))
    grid.add_row("kind", safe(kind or "n/a"))
    grid.add_row("detector", safe(e.get("detector", "n/a")))
    grid.add_row("change time", Text(_time(e.get("change_time"))))
    grid.add_row(
        "before → after", Text(f"{level(kind, e.get('before'))} → {level(kind, e.get('after'))}")
    )
    grid.add_row(
        "delta",
        Text(
            f"{change(kind, e.get('delta'))} ({format_relative(_finite(e.get('relative_delta')))})"
        ),
    )
    p_value = _finite(e.get("p_value"))
    grid.add_row("p-value", Text(f"{p_value:.3g}" if p_value is not None else "n/a"))
    grid.add_row("confidence", safe(e.get("confidence", "none")))
    grid.add_row("group", safe(e.get("group", finding.id)))
    grid.add_row("status", status_text(finding))
    seen = []
    if finding.run is not None:
        seen.append(f"run {finding.run} of {finding.runs} stored")
    if finding.first_seen_s is not None and finding.last_seen_s is not None:
        seen.append(f"first seen {_time(finding.first_seen_s)}, last {_time(finding.last_seen_s)}")
    if seen:
        grid.add_row("report", Text("; ".join(seen)))
    return Panel(grid, title=safe(f"{title} {finding.id}"), title_align="left", expand=False)


# --- the chart ------------------------------------------------------------------------------


class SeriesChart:
    """A line chart of one stored series around its change, as wide as the console allows."""

    def __init__(
        self,
        times_s: np.ndarray,
        values: np.ndarray,
        change_time_s: float,
        before: float | None,
        after: float | None,
        kind: str,
        height: int = 10,
    ) -> None:
        self.times_s = np.asarray(times_s, np.float64)
        self.values = np.asarray(values, np.float64)
        self.change_time_s = float(change_time_s)
        self.before = before
        self.after = after
        self.kind = kind
        self.height = max(3, height)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width, ascii_only=options.ascii_only)

    def lines(self, width: int, *, ascii_only: bool = False) -> list[Text]:
        keep = np.isfinite(self.times_s) & np.isfinite(self.values)
        times, values = self.times_s[keep], self.values[keep]
        if len(times) == 0:
            return [Text("no finite points stored for this series", style="dim")]
        order = np.argsort(times, kind="stable")
        times, values = times[order], values[order]
        levels = [v for v in (self.before, self.after) if v is not None and math.isfinite(v)]
        low = float(min(values.min(), *levels)) if levels else float(values.min())
        high = float(max(values.max(), *levels)) if levels else float(values.max())
        pad = (high - low) * 0.05 if high > low else (abs(high) * 0.05 or 1e-9)
        low, high = low - pad, high + pad
        rows = self.height
        labels = [
            level(self.kind, high - (r * 4 + 1.5) / (rows * 4 - 1) * (high - low))
            for r in range(rows)
        ]
        label_width = max(len(labels[0]), len(labels[rows // 2]), len(labels[-1]))
        columns = max(8, width - label_width - 2)
        t0 = min(float(times[0]), self.change_time_s)
        t1 = max(float(times[-1]), self.change_time_s)
        grid = self._draw(times, values, t0, t1, low, high, rows * 4, columns * 2)
        change_column = self._x(self.change_time_s, t0, t1, columns * 2) // 2
        out = []
        for r, cell_row in enumerate(self._cells(grid, rows, columns, ascii_only)):
            shown = labels[r] if r in (0, rows // 2, rows - 1) else ""
            line = Text(shown.rjust(label_width) + (" ┤" if not ascii_only else " |"), style="dim")
            line.append_text(cell_row)
            out.append(line)
        axis = ["─" if not ascii_only else "-"] * columns
        axis[change_column] = "┴" if not ascii_only else "+"
        out.append(
            Text(
                " " * label_width + (" └" if not ascii_only else " +") + "".join(axis), style="dim"
            )
        )
        out.append(self._time_labels(t0, t1, label_width + 2, columns))
        out.append(self._legend(len(times), ascii_only))
        return out

    @staticmethod
    def _x(t: float, t0: float, t1: float, dots: int) -> int:
        return int(round((t - t0) / (t1 - t0) * (dots - 1))) if t1 > t0 else 0

    def _draw(
        self,
        times: np.ndarray,
        values: np.ndarray,
        t0: float,
        t1: float,
        low: float,
        high: float,
        height: int,
        width: int,
    ) -> np.ndarray:
        """A (height × width) dot grid holding, per dot, its most important layer (0: empty)."""
        grid = np.zeros((height, width), np.int8)

        def y(v: float) -> int:
            return int(round((high - v) / (high - low) * (height - 1)))

        def mark(row: int, column: int, layer: int) -> None:
            if 0 <= row < height and 0 <= column < width and grid[row, column] < layer:
                grid[row, column] = layer

        xc = self._x(self.change_time_s, t0, t1, width)
        for row in range(0, height, 2):
            mark(row, xc, _CHANGE)
        if self.before is not None and math.isfinite(self.before):
            for column in range(0, xc, 2):
                mark(y(self.before), column, _BEFORE)
        if self.after is not None and math.isfinite(self.after):
            for column in range(xc, width, 2):
                mark(y(self.after), column, _AFTER)
        xs = [self._x(float(t), t0, t1, width) for t in times]
        ys = [y(float(v)) for v in values]
        steps = np.diff(times)
        positive = steps[steps > 0]
        gap = GAP_FACTOR * float(np.median(positive)) if len(positive) else math.inf
        for i in range(len(xs)):
            mark(ys[i], xs[i], _SERIES)
            if i and steps[i - 1] <= gap:
                for row, column in _segment(xs[i - 1], ys[i - 1], xs[i], ys[i]):
                    mark(row, column, _SERIES)
        return grid

    @staticmethod
    def _cells(grid: np.ndarray, rows: int, columns: int, ascii_only: bool) -> list[Text]:
        cells = grid.reshape(rows, 4, columns, 2)
        layers = cells.max(axis=(1, 3))
        bits = ((cells > 0) * _BRAILLE_BITS[None, :, None, :]).sum(axis=(1, 3))
        out = []
        for r in range(rows):
            line = Text()
            for c in range(columns):
                layer = int(layers[r, c])
                if layer == 0:
                    line.append(" ")
                elif ascii_only:
                    line.append(_ASCII_MARK[layer], style=_LAYER_STYLE[layer])
                else:
                    line.append(chr(0x2800 + int(bits[r, c])), style=_LAYER_STYLE[layer])
            out.append(line)
        return out

    def _time_labels(self, t0: float, t1: float, indent: int, columns: int) -> Text:
        start, end = format_time(t0), format_time(t1)
        if columns >= len(start) + len(end) + 1:
            return Text(
                " " * indent + start + " " * (columns - len(start) - len(end)) + end, style="dim"
            )
        return Text(" " * indent + f"{start} → {end}", style="dim")

    def _legend(self, points: int, ascii_only: bool) -> Text:
        dot = "*" if ascii_only else "⠒"
        legend = Text("  ")
        legend.append(dot, style=_LAYER_STYLE[_SERIES])
        legend.append(f" series ({points} points)  ")
        legend.append(dot, style=_LAYER_STYLE[_BEFORE])
        legend.append(f" before {level(self.kind, self.before)}  ")
        legend.append(dot, style=_LAYER_STYLE[_AFTER])
        legend.append(f" after {level(self.kind, self.after)}  ")
        legend.append("|" if ascii_only else "⡇", style=_LAYER_STYLE[_CHANGE])
        legend.append(f" change {format_time(self.change_time_s)}")
        return legend


def _segment(x0: int, y0: int, x1: int, y1: int) -> Iterable[tuple[int, int]]:
    """The dots of a straight line from (x0, y0) to (x1, y1) (Bresenham), as (row, column)."""
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    error = dx + dy
    while True:
        yield y0, x0
        if x0 == x1 and y0 == y1:
            return
        twice = 2 * error
        if twice >= dy:
            error += dy
            x0 += sx
        if twice <= dx:
            error += dx
            y0 += sy


def chart(finding: Finding, series: MemberSeries | None) -> RenderableType:
    """The chart of the stored series, or why there is none."""
    if series is None:
        return Text(
            "no series stored for this regression: the state keeps the series of dedup group "
            "members only (regressions that reached pairwise dedup)",
            style="dim",
        )
    e = finding.entry
    return SeriesChart(
        series.times_s,
        series.values,
        series.change_time_s,
        _finite(e.get("before")),
        _finite(e.get("after")),
        series.kind,
    )


# --- verdicts -------------------------------------------------------------------------------

_DOMAIN_KEYS = (
    "domain_kinds",
    "domain_names",
    "domain_members",
    "domain_before",
    "domain_after",
    "domain_delta",
    "domain_checks",
)


def _padded(values: list, length: int) -> list:
    return list(values[:length]) + [None] * (length - len(values))


def cost_shift_domains(verdict: Mapping[str, object], kind: str) -> Table | None:
    """The cost domains the cost-shift stage checked: one row each."""
    columns = [verdict.get(k) for k in _DOMAIN_KEYS]
    if not all(isinstance(c, list) for c in columns) or not columns[0]:
        return None
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    for name, justify in (
        ("domain", "left"),
        ("kind", "left"),
        ("members", "right"),
        ("before", "right"),
        ("after", "right"),
        ("delta", "right"),
        ("check", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    rows = zip(*(_padded(c, len(columns[0])) for c in columns))  # type: ignore[arg-type]
    for kind_of, name, members, before, after, delta, check in rows:
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


def verdict_cell(stage: str, verdict: Mapping[str, object], kind: str) -> RenderableType:
    """A verdict's reason, then its numbers (``key=value``); cost shift adds its domains."""
    parts: list[RenderableType] = [safe(verdict.get("reason", ""))]
    domains = cost_shift_domains(verdict, kind) if stage == "cost_shift" else None
    skip = {"passed", "reason"} | (set(_DOMAIN_KEYS) if domains is not None else set())
    numbers = Text(style="dim")
    for key, value in verdict.items():
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


def verdicts_table(entry: Mapping[str, object]) -> Table:
    """Every stage's verdict in pipeline order: passed or failed, reason and numbers."""
    kind = str(entry.get("kind", ""))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, expand=True)
    table.add_column("stage", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("reason and numbers", ratio=1)
    for stage, verdict in ordered_verdicts(entry):
        passed = verdict.get("passed")
        result = (
            Text("passed", style="green")
            if passed is True
            else Text("FAILED", style="bold red")
            if passed is False
            else Text("-")
        )
        table.add_row(safe(stage), result, verdict_cell(stage, verdict, kind))
    for stage in stages_not_reached(entry):
        table.add_row(
            safe(stage), Text("not reached", style="dim"), Text("removed earlier", style="dim")
        )
    if not table.rows:
        table.caption = "no verdicts stored"
    return table


# --- the group ------------------------------------------------------------------------------


def group_table(group: GroupView, subject_id: str) -> RenderableType:
    """The dedup group's members (representative marked) and the duplicates merged into it."""
    if not group.members and not group.merged:
        return Text(
            "not in a stored dedup group (groups hold regressions that reached pairwise dedup)",
            style="dim",
        )
    table = Table(title=safe(f"dedup group {group.id}"), box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("role", no_wrap=True)
    table.add_column("regression", no_wrap=True)
    table.add_column("series", ratio=1)
    table.add_column("kind")
    table.add_column("change time", no_wrap=True)
    table.add_column("stored", no_wrap=True)
    for m in group.members:
        role = Text("representative" if m.representative else "member")
        if m.representative:
            role.stylize("bold")
        if m.regression_id == subject_id:
            role.append(" ◀", style="bold")
        table.add_row(
            role,
            safe(m.regression_id),
            safe(m.series_id),
            safe(m.kind),
            format_time(m.change_time_s),
            f"{len(m.times_s)} points, {m.stack_count} stacks",
        )
    for d in group.merged:
        table.add_row(
            Text(f"duplicate ({d.stage or 'merged'})", style="cyan"),
            safe(d.regression_id),
            safe(d.series_id or "n/a"),
            "",
            _time(d.change_time_s),
            "not stored",
        )
    return table


# --- stack paths ----------------------------------------------------------------------------


def _trie(paths: Sequence[Sequence[str]]) -> dict:
    root: dict = {}
    for path in paths:
        node = root
        for frame in path:
            node = node.setdefault(str(frame), {})
    return root


def stack_tree(paths: Sequence[Sequence[str]], series_id: str) -> RenderableType:
    """The stacks carrying the regression, root first, shared prefixes merged, single-child
    chains on one line (``a → b → c``); the regressed frame in bold red, frames below it dim."""
    if not paths:
        return Text("no stack paths (not a gCPU series, or no profiles behind it)", style="dim")
    subroutine = subroutine_of_series(series_id)
    tree = Tree(safe(f"stacks carrying {subroutine or series_id} (heaviest first, root → leaf)"))

    def add(parent: Tree, children: dict, below: bool) -> None:
        for frame, grandchildren in children.items():
            label = Text()
            node_below = below
            chain = [(frame, grandchildren)]
            while len(chain[-1][1]) == 1:
                chain.append(next(iter(chain[-1][1].items())))
            for position, (name, _) in enumerate(chain):
                regressed = subroutine is not None and subroutine_of(name) == subroutine
                if position:
                    label.append(" → ", style="dim")
                label.append_text(
                    safe(name, "bold red" if regressed else "dim" if node_below else "")
                )
                node_below = node_below or regressed
            add(parent.add(label), chain[-1][1], node_below)

    add(tree, _trie(paths), False)
    return tree


# --- attribution ----------------------------------------------------------------------------


def candidates_table(entry: Mapping[str, object]) -> RenderableType:
    """Every ranked commit with its score's parts and matched frames; the named ones marked."""
    ranking = entry.get("ranking")
    named = entry.get("candidates")
    ranked = ranking if isinstance(ranking, list) and ranking else named
    if not isinstance(ranked, list) or not ranked:
        return Text(
            "no attribution: no commit was ranked (reports of `regbot detect` carry none; "
            "`regbot run` attributes representatives to the deploy's commits)",
            style="dim",
        )
    named_shas = {c.get("commit") for c in named or [] if isinstance(c, Mapping)}
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("commit", no_wrap=True)
    table.add_column("PR", justify="right", no_wrap=True)
    table.add_column("title / author", ratio=2)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("score parts", no_wrap=True)
    table.add_column("matched frames", ratio=1)
    for rank, c in enumerate(ranked, 1):
        if not isinstance(c, Mapping):
            continue
        raw_parts = c.get("parts")
        parts = raw_parts if isinstance(raw_parts, Mapping) else {}
        pr = c.get("pull_request")
        matched = c.get("matched") if isinstance(c.get("matched"), list) else []
        is_named = c.get("commit") in named_shas
        title = safe(c.get("title", ""))
        if c.get("author"):
            title.append("\n")
            title.append_text(safe(f"by {c['author']}", "dim"))
        score = _finite(c.get("score"))
        table.add_row(
            Text(f"{rank} ✔" if is_named else str(rank), style="bold green" if is_named else ""),
            safe(str(c.get("commit", ""))[:10]),
            safe(f"#{pr}") if pr else Text("-"),
            title,
            f"{score:.3f}" if score is not None else "n/a",
            Text(
                "\n".join(
                    f"{label} {_share(parts.get(key))}"
                    for label, key in (
                        ("gCPU attr.", "gcpu_attribution"),
                        ("text sim.", "text_similarity"),
                        ("corr.", "correlation"),
                    )
                )
            ),
            Text("\n").join(safe(f) for f in matched) if matched else Text("-"),
        )
    table.caption = "✔ named in the report (SPEC §4 candidates); the rest of the ranking follows"
    return table


def _share(value: object) -> str:
    number = _finite(value)
    return f"{number:.0%}" if number is not None else "n/a"


def attribution_notes(entry: Mapping[str, object]) -> Text:
    named = entry.get("candidates")
    count = len(named) if isinstance(named, list) else 0
    text = Text(f"confidence: {clean(str(entry.get('confidence', 'none')))}; ")
    text.append(f"{count} commit{'s' if count != 1 else ''} named in the report")
    notes = entry.get("attribution_notes")
    for note in notes if isinstance(notes, list) else []:
        text.append("\n• ")
        text.append_text(safe(note))
    return text


# --- deploy and window ----------------------------------------------------------------------


def deploy_and_window(finding: Finding) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    deploy = finding.deploy
    if deploy:
        grid.add_row("deploy", safe(deploy.get("sha", "n/a")))
        grid.add_row("previous", safe(deploy.get("previous") or "n/a"))
        grid.add_row("deployed at", Text(_time(deploy.get("deployed_at"))))
        extras = []
        if isinstance(deploy.get("commits"), int):
            extras.append(f"{deploy['commits']} commits in previous..deploy")
        if deploy.get("dry_run"):
            extras.append("dry run")
        if extras:
            grid.add_row("", Text(", ".join(extras)))
    else:
        grid.add_row("deploy", Text("none (the report came from `regbot detect`)", style="dim"))
    window = finding.window or {}
    for name in ("historical", "analysis", "extended"):
        edges = window.get(name)
        if isinstance(edges, list) and len(edges) == 2:
            grid.add_row(f"{name} window", Text(f"{_time(edges[0])} .. {_time(edges[1])}"))
    return grid


# --- everything -----------------------------------------------------------------------------


def _section(title: str) -> Rule:
    return Rule(Text(title, style="bold"), align="left")


def subject_sections(explanation: Explanation) -> list[RenderableType]:
    finding = explanation.subject
    entry = finding.entry
    series_id = str(entry.get("series", ""))
    paths = entry.get("stack_paths")
    return [
        header(finding, "representative" if explanation.representative else "regression"),
        _section("series around the change"),
        chart(finding, explanation.series),
        _section("verdicts (pipeline order)"),
        verdicts_table(entry),
        _section("dedup group"),
        group_table(explanation.group, finding.id),
        _section("stack paths"),
        stack_tree(paths if isinstance(paths, list) else [], series_id),
        _section("suspect commits"),
        candidates_table(entry),
        attribution_notes(entry),
        _section("deploy"),
        deploy_and_window(finding),
    ]


def explain_renderables(explanation: Explanation) -> list[RenderableType]:
    """Every section, in reading order. For a duplicate: a banner, its own header, chart and
    verdicts, then its representative in full."""
    regression = explanation.regression
    if explanation.representative is None:
        return subject_sections(explanation)
    banner = Text(f"{regression.id} is a ", style="bold")
    banner.append_text(status_text(regression))
    banner.append(f"; the representative {explanation.representative.id} is explained below.")
    own: list[RenderableType] = [Panel(banner, expand=False), header(regression)]
    if explanation.regression_series is not None:
        own += [_section("its series"), chart(regression, explanation.regression_series)]
    if regression.entry.get("verdicts"):
        own += [_section("its verdicts (pipeline order)"), verdicts_table(regression.entry)]
    return own + [Rule(), *subject_sections(explanation)]


# --- settings -------------------------------------------------------------------------------


def _settings_line(values: Mapping[str, object], skip: tuple[str, ...] = ()) -> Text:
    return safe(" · ".join(f"{k} {number_text(v)}" for k, v in values.items() if k not in skip))


def settings_renderables(settings: Mapping[str, object]) -> list[RenderableType]:
    """The detection and dedup constants in force (``explain_command.settings_in_force``): one
    line per stage, after a rule naming where they come from."""
    source = settings.get("source")
    title = f"settings (from {clean(str(source))})" if source else "settings (defaults)"
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    detection = settings.get("detection")
    for name, values in (detection if isinstance(detection, Mapping) else {}).items():
        if isinstance(values, Mapping):
            grid.add_row(str(name), _settings_line(values))
    dedup = settings.get("dedup")
    if isinstance(dedup, Mapping):
        parts = ("som", "pairwise", "cost_shift")
        grid.add_row("dedup", _settings_line(dedup, parts))
        for name in parts:
            values = dedup.get(name)
            shown = _settings_line(values) if isinstance(values, Mapping) else Text("off")
            grid.add_row(name, shown)
    return [Rule(Text(title, style="bold"), align="left"), grid]

