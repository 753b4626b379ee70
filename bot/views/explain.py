"""Rich renderables for `regbot explain`, built from an ``Explanation`` (plain data in, nothing
read or written here): the header, the chart (:mod:`.chart`), the verdicts (:mod:`.verdicts`),
the dedup group, the stack paths, the ranked suspects and the deploy. Untrusted text goes
through :func:`regbot.bot.views.terminal_text.safe`, never through rich's markup parser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from regbot.bot.explanation.model import Explanation, Finding, GroupView, MemberSeries
from regbot.bot.github.markdown_safe import clean
from regbot.bot.views.chart import SeriesChart
from regbot.bot.views.numbers import format_relative
from regbot.bot.views.terminal_text import change, level, number_text, safe, time_text
from regbot.bot.views.verdicts import verdicts_table
from regbot.detection.dedup_context import subroutine_of_series
from regbot.profiles.model import subroutine_of
from regbot.report.model import RegressionEntry, SuspectCommit
from regbot.timefmt import format_time

# --- header ---------------------------------------------------------------------------------


def status_text(finding: Finding) -> Text:
    status = finding.status
    style = {"reported": "bold red", "filtered": "yellow", "duplicate": "cyan"}[status.kind]
    text = Text(status.describe(), style=style)
    if status.reason:
        text.append(": ")
        text.append_text(safe(status.reason))
    return text


def _entry_rows(entry: RegressionEntry | None, fallback_group: str) -> list[tuple[str, Text]]:
    """The header's rows of one SPEC §4 entry (n/a throughout when the report names the
    regression only as a duplicate)."""
    if entry is None:
        na = Text("n/a")
        return [
            ("series", na),
            ("kind", na),
            ("detector", na),
            ("change time", na),
            ("before → after", Text("n/a → n/a")),
            ("delta", Text(f"n/a ({format_relative(None)})")),
            ("p-value", na),
            ("confidence", Text("none")),
            ("group", safe(fallback_group)),
        ]
    kind = entry.kind
    p_value = entry.p_value
    return [
        ("series", safe(entry.series)),
        ("kind", safe(kind or "n/a")),
        ("detector", safe(entry.detector)),
        ("change time", Text(time_text(entry.change_time_s))),
        ("before → after", Text(f"{level(kind, entry.before)} → {level(kind, entry.after)}")),
        (
            "delta",
            Text(f"{change(kind, entry.delta)} ({format_relative(entry.relative_delta)})"),
        ),
        ("p-value", Text(f"{p_value:.3g}" if p_value is not None else "n/a")),
        ("confidence", safe(entry.confidence)),
        ("group", safe(entry.group)),
    ]


def header(finding: Finding, title: str = "regression") -> Panel:
    """Series, kind, detector, change time (UTC), before → after, delta, p-value, confidence,
    group and status of one regression."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for name, value in _entry_rows(finding.entry, finding.id):
        grid.add_row(name, value)
    grid.add_row("status", status_text(finding))
    seen = []
    if finding.run is not None:
        seen.append(f"run {finding.run} of {finding.runs} stored")
    if finding.first_seen_s is not None and finding.last_seen_s is not None:
        seen.append(
            f"first seen {time_text(finding.first_seen_s)}, last {time_text(finding.last_seen_s)}"
        )
    if seen:
        grid.add_row("report", Text("; ".join(seen)))
    return Panel(grid, title=safe(f"{title} {finding.id}"), title_align="left", expand=False)


# --- the chart ------------------------------------------------------------------------------


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
        e.before if e is not None else None,
        e.after if e is not None else None,
        series.kind,
    )


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
            time_text(d.change_time_s),
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

_NO_ATTRIBUTION = Text(
    "no attribution: no commit was ranked (reports of `regbot detect` carry none; "
    "`regbot run` attributes representatives to the deploy's commits)",
    style="dim",
)


def _score_parts(c: SuspectCommit) -> Text:
    return Text(
        "\n".join(
            f"{label} {value:.0%}"
            for label, value in (
                ("gCPU attr.", c.gcpu_attribution),
                ("text sim.", c.text_similarity),
                ("corr.", c.correlation),
            )
        )
    )


def candidates_table(entry: RegressionEntry) -> RenderableType:
    """Every ranked commit with its score's parts and matched frames; the named ones marked."""
    ranked = entry.ranking or entry.candidates
    if not ranked:
        return _NO_ATTRIBUTION
    named_shas = {c.commit for c in entry.candidates}
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("commit", no_wrap=True)
    table.add_column("PR", justify="right", no_wrap=True)
    table.add_column("title / author", ratio=2)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("score parts", no_wrap=True)
    table.add_column("matched frames", ratio=1)
    for rank, c in enumerate(ranked, 1):
        is_named = c.commit in named_shas
        title = safe(c.title)
        if c.author:
            title.append("\n")
            title.append_text(safe(f"by {c.author}", "dim"))
        table.add_row(
            Text(f"{rank} ✔" if is_named else str(rank), style="bold green" if is_named else ""),
            safe(c.commit[:10]),
            safe(f"#{c.pull_request}") if c.pull_request else Text("-"),
            title,
            f"{c.score:.3f}",
            _score_parts(c),
            Text("\n").join(safe(f) for f in c.matched) if c.matched else Text("-"),
        )
    table.caption = "✔ named in the report (SPEC §4 candidates); the rest of the ranking follows"
    return table


def attribution_notes(entry: RegressionEntry) -> Text:
    count = len(entry.candidates)
    text = Text(f"confidence: {clean(entry.confidence)}; ")
    text.append(f"{count} commit{'s' if count != 1 else ''} named in the report")
    for note in entry.attribution_notes or ():
        text.append("\n• ")
        text.append_text(safe(note))
    return text


# --- deploy and window ----------------------------------------------------------------------


def deploy_and_window(finding: Finding) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    deploy = finding.deploy
    if deploy is not None:
        grid.add_row("deploy", safe(deploy.sha))
        grid.add_row("previous", safe(deploy.previous or "n/a"))
        grid.add_row("deployed at", Text(time_text(deploy.deployed_at)))
        extras = [f"{deploy.commits} commits in previous..deploy"]
        if deploy.dry_run:
            extras.append("dry run")
        grid.add_row("", Text(", ".join(extras)))
    else:
        grid.add_row("deploy", Text("none (the report came from `regbot detect`)", style="dim"))
    if finding.window is not None:
        windows = finding.window.nominal
        for name, (start, end) in (
            ("historical", windows.historical),
            ("analysis", windows.analysis),
            ("extended", windows.extended),
        ):
            grid.add_row(f"{name} window", Text(f"{time_text(start)} .. {time_text(end)}"))
    return grid


# --- everything -----------------------------------------------------------------------------


def _section(title: str) -> Rule:
    return Rule(Text(title, style="bold"), align="left")


def _verdicts_and_suspects(entry: RegressionEntry | None) -> tuple[RenderableType, ...]:
    """The verdicts, and the suspects with the attribution notes, of an entry (None: a
    regression the report names only as a duplicate, with nothing stored of its own)."""
    if entry is None:
        return (
            verdicts_table(None),
            _NO_ATTRIBUTION,
            Text("confidence: none; 0 commits named in the report"),
        )
    return verdicts_table(entry), candidates_table(entry), attribution_notes(entry)


def subject_sections(explanation: Explanation) -> list[RenderableType]:
    finding = explanation.subject
    entry = finding.entry
    verdicts, suspects, notes = _verdicts_and_suspects(entry)
    return [
        header(finding, "representative" if explanation.representative else "regression"),
        _section("series around the change"),
        chart(finding, explanation.series),
        _section("verdicts (pipeline order)"),
        verdicts,
        _section("dedup group"),
        group_table(explanation.group, finding.id),
        _section("stack paths"),
        stack_tree(list(entry.stack_paths or ()) if entry else [], entry.series if entry else ""),
        _section("suspect commits"),
        suspects,
        notes,
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
    if regression.entry is not None and regression.entry.verdicts:
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
