"""The PR comment regbot posts for one regression (its chart: :mod:`.chart`, its evidence
lines: :mod:`.evidence`; the job summary: :mod:`.summary`).

Built from one typed SPEC §4 entry (:class:`regbot.report.RegressionEntry`); returns markdown
text; nothing here talks to GitHub. Every piece of text that came from outside
regbot (series ids, frames, commit titles, author names, units, stage names, the reasons the
filters wrote, which quote series ids) goes through :mod:`regbot.bot.github.markdown_safe`; numbers are
validated and formatted here, so the only raw markdown in the output is regbot's own.

The comment starts with a hidden marker (:func:`comment_marker`), so regbot finds and updates
its own comment instead of posting a new one on every run; the marker's fields are restricted to
``[A-Za-z0-9_-]`` and digits, and no escaped text can contain ``<!--`` or ``-->``, so the marker
appears exactly once.

The comment must fit GitHub's 65,536-character limit (``max_chars``). It is rendered at full
detail first, then shrunk in this order until it fits (:data:`SHRINK_STEPS`): the stack path's
frame list (100, 20, 6, then 2 frames: its first and last halves, with a count of the omitted
middle), then the candidates' titles (60, 30, 12 characters), then the chart (30, 15 points),
then the chart is dropped. Every other part is bounded by construction (at most
:data:`MAX_CANDIDATES` suspect rows, :data:`MAX_EVIDENCE_LINES` evidence lines, each text cut to
a fixed length), so a comment that still does not fit means ``max_chars`` is too small for any
comment: that raises :class:`~regbot.errors.InputError` instead of posting a broken one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from regbot.bot.github.chart import CHART_MAX_POINTS, mermaid_chart, read_point
from regbot.bot.github.evidence import evidence_lines
from regbot.bot.github.markdown_safe import code_block, code_span, inline
from regbot.bot.views.numbers import format_delta, format_relative, format_share, format_value
from regbot.errors import InputError
from regbot.report.decode import read_list, read_pull_request
from regbot.report.model import RegressionEntry, SuspectCommit
from regbot.timefmt import format_time

__all__ = [
    "MAX_CANDIDATES",
    "SHRINK_STEPS",
    "Layout",
    "comment_marker",
    "find_marker",
    "render_comment",
]

GITHUB_COMMENT_LIMIT = 65_536
MAX_CANDIDATES = 10
FRAME_CHARS = 200
SERIES_CHARS = 200
INLINE_STACK_FRAMES = 6  # longer stack paths are shortened inline and listed in <details>

_MARKER_ID = re.compile(r"[A-Za-z0-9_-]+")
_MARKER = re.compile(r"<!-- regbot:v1 group=([A-Za-z0-9_-]+) pr=([1-9][0-9]*) -->")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


# ---------------------------------------------------------------------------------------------
# The hidden marker


def comment_marker(group_id: str, pull_request: int) -> str:
    """The hidden first line of regbot's comment on ``pull_request`` about dedup group
    ``group_id``: ``<!-- regbot:v1 group=<id> pr=<n> -->``. The id may hold only letters,
    digits, ``_`` and ``-`` (anything else could end the HTML comment or forge a second marker)."""
    if not isinstance(group_id, str) or not _MARKER_ID.fullmatch(group_id):
        raise InputError("comment marker group", "letters, digits, '_' or '-'", group_id)
    read_pull_request(pull_request, "comment marker pr")
    return f"<!-- regbot:v1 group={group_id} pr={pull_request} -->"


def find_marker(body: str) -> tuple[str, int] | None:
    """``(group id, pull request)`` of the first regbot marker in a comment body, or None."""
    match = _MARKER.search(body)
    return None if match is None else (match.group(1), int(match.group(2)))


# ---------------------------------------------------------------------------------------------
# The comment


@dataclass(frozen=True, slots=True)
class Layout:
    """How much detail one rendering keeps: frames listed in the stack path's ``<details>``
    (None: all), characters per candidate title, chart points (0: no chart)."""

    stack_frames: int | None
    title_chars: int
    chart_points: int


SHRINK_STEPS: tuple[Layout, ...] = (
    Layout(None, 120, CHART_MAX_POINTS),
    Layout(100, 120, CHART_MAX_POINTS),
    Layout(20, 120, CHART_MAX_POINTS),
    Layout(6, 120, CHART_MAX_POINTS),
    Layout(2, 120, CHART_MAX_POINTS),
    Layout(2, 60, CHART_MAX_POINTS),
    Layout(2, 30, CHART_MAX_POINTS),
    Layout(2, 12, CHART_MAX_POINTS),
    Layout(2, 12, 30),
    Layout(2, 12, 15),
    Layout(2, 12, 0),
)

_CONFIDENCE_TEXT = {
    "high": "one commit clearly stands out",
    "low": "several commits fit; the ranking is a hint",
    "none": "regbot is not confident enough to name a commit",
}


@dataclass(frozen=True, slots=True)
class _CommentInput:
    view: RegressionEntry
    pull_request: int
    marker: str
    points: Sequence[tuple[float, float]]
    stack: tuple[str, ...]
    explain_command: str
    repository: str | None


def _commit_cell(suspect: SuspectCommit, repository: str | None) -> str:
    short = code_span(suspect.commit[:7])
    if repository is None:
        return short
    return f"[{short}](https://github.com/{repository}/commit/{suspect.commit})"


def _pr_cell(suspect: SuspectCommit, repository: str | None) -> str:
    if suspect.pull_request is None:
        return "—"
    if repository is None:
        return f"#{suspect.pull_request}"
    url = f"https://github.com/{repository}/pull/{suspect.pull_request}"
    return f"[#{suspect.pull_request}]({url})"


def _candidate_rows(data: _CommentInput, title_chars: int) -> list[str]:
    suspects = data.view.candidates
    shown = list(suspects[:MAX_CANDIDATES])
    ours = [s for s in suspects if s.pull_request == data.pull_request]
    shown += [s for s in ours[:1] if s not in shown]
    rows = [
        "| Rank | Commit | PR | Title | Score | gCPU attribution | Text similarity | Correlation |",
        "|---:|---|---|---|---:|---:|---:|---:|",
    ]
    for s in shown:
        rank = f"**{s.rank}** (this PR)" if s.pull_request == data.pull_request else str(s.rank)
        title = inline(s.title, title_chars) or "—"
        if s.author:
            title += f" — {inline(s.author, 40)}"
        rows.append(
            f"| {rank} | {_commit_cell(s, data.repository)} | {_pr_cell(s, data.repository)} | "
            f"{title} | {s.score:.2f} | {format_share(s.gcpu_attribution)} | "
            f"{format_share(s.text_similarity)} | {format_share(s.correlation)} |"
        )
    hidden = len(suspects) - len(shown)
    if hidden > 0:
        rows.append("")
        rows.append(f"{hidden} more suspect{'s' if hidden != 1 else ''}: see `regbot explain`.")
    return rows


def _frame_list(stack: Sequence[str], keep: int | None) -> list[str]:
    if keep is None or len(stack) <= keep:
        return [f"{i}. {code_span(f, FRAME_CHARS)}" for i, f in enumerate(stack, 1)]
    head = (keep + 1) // 2
    tail = keep - head
    lines = [f"{i}. {code_span(f, FRAME_CHARS)}" for i, f in enumerate(stack[:head], 1)]
    lines.append(f"{head + 1}. … {len(stack) - keep:,} frames omitted …")
    start = len(stack) - tail + 1
    lines += [
        f"{i}. {code_span(f, FRAME_CHARS)}" for i, f in enumerate(stack[len(stack) - tail :], start)
    ]
    return lines


def _stack_section(stack: Sequence[str], keep: int | None) -> list[str]:
    if not stack:
        return []
    arrow = " → "
    if len(stack) <= INLINE_STACK_FRAMES:
        path = arrow.join(code_span(f, FRAME_CHARS) for f in stack)
        return ["#### Stack path", "", f"Root → regressed frame: {path}"]
    first = arrow.join(code_span(f, FRAME_CHARS) for f in stack[:2])
    last = arrow.join(code_span(f, FRAME_CHARS) for f in stack[-3:])
    omitted = len(stack) - 5
    return [
        "#### Stack path",
        "",
        f"Root → regressed frame ({len(stack):,} frames): {first} → … {omitted:,} more … → {last}",
        "",
        "<details>",
        f"<summary>All {len(stack):,} frames, root first</summary>",
        "",
        *_frame_list(stack, keep),
        "",
        "</details>",
    ]


def _render(data: _CommentInput, layout: Layout) -> str:
    view = data.view
    ours = next((s for s in view.candidates if s.pull_request == data.pull_request), None)
    if ours is not None:
        # "#n" would link issue n: the rank is written without a hash.
        standing = f"This PR's commit ranks **{ours.rank}** of {len(view.candidates)} suspects."
    elif view.candidates:
        standing = "This PR is not among the ranked suspects."
    else:
        standing = "regbot could not name a commit for it."
    out = [
        data.marker,
        f"### ⚠️ Performance regression in {code_span(view.series, SERIES_CHARS)}",
        "",
        f"regbot found a lasting change in this series after the deploy. {standing}",
        "",
        f"- **Change**: {format_value(view, view.before)} → {format_value(view, view.after)} "
        f"(**{format_delta(view, view.delta)}**, **{format_relative(view.relative_delta)}**)",
        f"- **When**: {format_time(view.change_time_s)} ({inline(view.detector, 40)} detector"
        + (f", p = {view.p_value:.2g})" if view.p_value is not None else ")"),
        f"- **Series**: {code_span(view.series, SERIES_CHARS)} ({inline(view.kind, 40)})",
        f"- **Confidence**: **{view.confidence}** — {_CONFIDENCE_TEXT[view.confidence]}",
        "",
    ]
    if layout.chart_points:
        scale, y_title = (100.0, "gCPU (%)") if view.is_gcpu else (1.0, view.kind)
        if not view.is_gcpu and view.unit:
            y_title = f"{view.kind} ({view.unit})"
        chart = mermaid_chart(
            data.points,
            change_time_s=view.change_time_s,
            y_title=y_title,
            scale=scale,
            max_points=layout.chart_points,
        )
        if chart is not None:
            out += ["#### The series around the change", "", chart, ""]
    out += ["#### Why regbot believes it", "", *evidence_lines(view), ""]
    stack = _stack_section(data.stack, layout.stack_frames)
    if stack:
        out += [*stack, ""]
    out += ["#### Suspect commits", ""]
    if view.candidates:
        out += _candidate_rows(data, layout.title_chars)
    else:
        out.append("No commit scored high enough to be named; the regression is still reported.")
    out += [
        "",
        "#### Look closer",
        "",
        "Every filter's numbers, the dedup group and all scores, from a checkout with regbot's state:",
        "",
        code_block(data.explain_command),
        "",
        "---",
        "Wrong? React with 👎 to this comment or reply `/regbot false-positive`; regbot keeps the "
        "feedback with this regression group.",
    ]
    return "\n".join(out) + "\n"


def render_comment(
    regression: RegressionEntry,
    *,
    pull_request: int,
    marker: str,
    series_points: Sequence[tuple[float, float]],
    stack_path: Sequence[str],
    explain_command: str,
    repository: str | None = None,
    max_chars: int = GITHUB_COMMENT_LIMIT,
) -> str:
    """The markdown of regbot's comment on ``pull_request`` about one SPEC §4 regression entry.

    ``marker`` is :func:`comment_marker`'s line (first line of the comment); ``series_points``
    the series as ``(epoch seconds, value)`` for the chart; ``stack_path`` the frames from the
    root to the regressed frame (empty: no stack section); ``explain_command`` the exact command
    shown (``regbot explain <id>``); ``repository`` (``owner/name``) turns commits and PRs into
    links to github.com (None: PRs as ``#n``, which GitHub links within the repository itself).
    The result is at most ``max_chars`` characters (see the module docstring for how it shrinks).
    """
    if not isinstance(marker, str) or _MARKER.fullmatch(marker) is None:
        raise InputError("marker", "a line made by comment_marker()", marker)
    read_pull_request(pull_request, "pull_request")
    if repository is not None and (
        not isinstance(repository, str) or not _REPOSITORY.fullmatch(repository)
    ):
        raise InputError("repository", "owner/name", repository)
    if not isinstance(explain_command, str) or not explain_command.strip():
        raise InputError("explain_command", "the regbot explain command line", explain_command)
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise InputError("max_chars", "a positive whole number", max_chars)
    frames: list[str] = []
    for i, frame in enumerate(read_list(stack_path, "stack_path")):
        if not isinstance(frame, str):
            raise InputError(f"stack_path[{i}]", "a frame name", frame)
        frames.append(frame)
    points = read_list(series_points, "series_points")
    data = _CommentInput(
        view=regression,
        pull_request=pull_request,
        marker=marker,
        points=[read_point(p, i) for i, p in enumerate(points)],
        stack=tuple(frames),
        explain_command=explain_command,
        repository=repository,
    )
    body = ""
    for layout in SHRINK_STEPS:
        body = _render(data, layout)
        if len(body) <= max_chars:
            return body
    raise InputError(
        "max_chars", f"at least {len(body):,} characters for the smallest comment", max_chars
    )
