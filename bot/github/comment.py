"""The PR comment regbot posts for one regression, and the job-summary markdown of a report.

Both are built from a SPEC §4 report (plain mappings, as ``regbot detect`` writes them) and
return markdown text; nothing here talks to GitHub. Every piece of text that came from outside
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

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from regbot.bot.github.markdown_safe import code_block, code_span, inline
from regbot.bot.report_view import (
    RegressionView,
    SuspectCommit,
    format_delta,
    format_number,
    format_percent,
    format_relative,
    format_share,
    format_value,
    read_field,
    read_finite,
    read_list,
    read_mapping,
    read_pull_request,
    read_regression,
)
from regbot.errors import InputError
from regbot.timefmt import format_time

__all__ = [
    "CHART_MAX_POINTS",
    "MAX_CANDIDATES",
    "MAX_EVIDENCE_LINES",
    "SHRINK_STEPS",
    "Layout",
    "comment_marker",
    "evidence_lines",
    "find_marker",
    "mermaid_chart",
    "render_comment",
    "render_summary",
]

GITHUB_COMMENT_LIMIT = 65_536
CHART_MAX_POINTS = 60
MAX_CANDIDATES = 10
MAX_EVIDENCE_LINES = 20
MAX_SUMMARY_ROWS = 200
MAX_MISSING_LISTED = 100
FRAME_CHARS = 200
SERIES_CHARS = 200
REASON_CHARS = 300
INLINE_STACK_FRAMES = 6  # longer stack paths are shortened inline and listed in <details>

_MARKER_ID = re.compile(r"[A-Za-z0-9_-]+")
_MARKER = re.compile(r"<!-- regbot:v1 group=([A-Za-z0-9_-]+) pr=([1-9][0-9]*) -->")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_MERMAID_TEXT = re.compile(r"[^A-Za-z0-9 ._:/()%+,-]+")


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
# Reading a report entry
























# ---------------------------------------------------------------------------------------------
# Numbers
















# ---------------------------------------------------------------------------------------------
# The chart


@dataclass(frozen=True, slots=True)
class _TimeUnit:
    name: str
    seconds: float


_MINUTES, _HOURS, _DAYS = (
    _TimeUnit("minutes", 60.0),
    _TimeUnit("hours", 3600.0),
    _TimeUnit("days", 86400.0),
)
_EIGHTH = 0.125


def _ceil_eighth(value: float) -> float:
    return max(_EIGHTH, math.ceil(value / _EIGHTH - 1e-9) * _EIGHTH)


def _mermaid_text(text: str, max_chars: int = 60) -> str:
    """Text for a quoted mermaid string: a conservative character set (no quote, backtick,
    ``<``, ``>`` or ``%%`` comment), one line, cut to ``max_chars``."""
    shown = " ".join(_MERMAID_TEXT.sub(" ", text).split()).replace("%%", "%")
    return shown[:max_chars].strip()


def _decimal(value: float, decimals: int) -> str:
    """A plain decimal (mermaid's number syntax has no exponent), without a negative zero."""
    shown = f"{value:.{decimals}f}"
    return shown[1:] if shown.startswith("-") and float(shown) == 0 else shown


def _plain(value: float) -> str:
    """A multiple of 1/16 as the shortest plain decimal (``-27.5``, ``0.0625``, ``3``)."""
    return _decimal(value, 4).rstrip("0").rstrip(".") or "0"


@dataclass(frozen=True, slots=True)
class _Buckets:
    unit: _TimeUnit
    width: float  # in ``unit``
    first: int  # bucket index of the first bucket; bucket k spans [k, k+1) * width from the change
    means: np.ndarray
    filled: int  # buckets that held points (the others are interpolated)
    points: int


def _bucket_series(
    points: Sequence[tuple[float, float]], change_time_s: float, max_points: int
) -> _Buckets | None:
    """Bucket means of the series around the change, or None when fewer than two buckets.

    The chart shows everything after the change and up to ``max(3 x that, 1 day)`` before it,
    so the level after the change takes at least a quarter of the width. Buckets are aligned on
    the change (one bucket boundary is the change time, so the step falls between two points)
    and are a multiple of 1/8 of the time unit wide, at least the median point spacing and just
    wide enough for ``max_points`` buckets; their centres are then exact binary fractions, which
    mermaid's evenly spaced x positions reproduce without rounding. Empty buckets (gaps in the
    data) are linearly interpolated from their neighbours, as mermaid needs a value per point.
    """
    data = np.asarray(
        [(float(t), float(v)) for t, v in points if math.isfinite(t) and math.isfinite(v)],
        dtype=np.float64,
    ).reshape(-1, 2)
    if len(data) < 2:
        return None
    data = data[np.argsort(data[:, 0], kind="stable")]
    times, values = data[:, 0], data[:, 1]
    after_s = max(0.0, float(times[-1]) - change_time_s)
    keep = times >= change_time_s - max(3.0 * after_s, 86400.0)
    times, values = times[keep], values[keep]
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    span_s = float(times[-1] - times[0])
    unit = _MINUTES if span_s <= 3 * 3600 else _HOURS if span_s <= 4 * 86400 else _DAYS
    offsets = (times - change_time_s) / unit.seconds
    gaps = np.diff(offsets)
    spacing = float(np.median(gaps[gaps > 0])) if np.any(gaps > 0) else 0.0
    width = _ceil_eighth(max(spacing, (offsets[-1] - offsets[0]) / max_points))

    def count(w: float) -> int:
        return math.floor(offsets[-1] / w) - math.floor(offsets[0] / w) + 1

    while count(width) > max_points:  # at most a few steps: n <= span / w + 2
        width += _EIGHTH
    first = math.floor(offsets[0] / width)
    index = np.floor(offsets / width).astype(np.int64) - first
    n = int(index[-1]) + 1
    if n < 2:
        return None
    sums = np.bincount(index, weights=values, minlength=n)
    counts = np.bincount(index, minlength=n)
    has = counts > 0
    means = np.empty(n, dtype=np.float64)
    means[has] = sums[has] / counts[has]
    slots = np.arange(n)
    means[~has] = np.interp(slots[~has], slots[has], means[has])
    return _Buckets(unit, width, first, means, int(has.sum()), len(times))


def _fenced(text: str, info: str) -> str:
    """regbot's own text (the mermaid chart, built from numbers and :func:`_mermaid_text`) as a
    fenced block, kept verbatim: :func:`~regbot.bot.github.markdown_safe.code_block` would break the
    ``-->`` that mermaid's axis syntax needs."""
    if "`" in text:
        raise ValueError("regbot's own fenced text must not hold a backtick")
    return f"```{info}\n{text}\n```"


def _duration(seconds: float) -> str:
    for name, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{format_number(seconds / size)} {name}"
    return f"{format_number(seconds)} s"


def mermaid_chart(
    points: Sequence[tuple[float, float]],
    *,
    change_time_s: float,
    y_title: str,
    scale: float = 1.0,
    max_points: int = CHART_MAX_POINTS,
) -> str | None:
    """A fenced ``mermaid`` ``xychart-beta`` line chart of ``points`` (epoch seconds, value;
    values multiplied by ``scale``) downsampled to at most ``max_points`` bucket means around
    the change (:func:`_bucket_series`), then a one-line caption; None when there is too little
    data to draw a line.

    The x-axis is numeric, in minutes, hours or days from the change (0 is the change; mermaid
    labels a few ticks). A categorical ``x-axis [...]`` would need one label per point: mermaid
    pairs line values with categories one to one and drops the values beyond the last category,
    so a few time labels would leave a few points. The y-axis spans the values padded by 10% of
    their range on each side (not below zero for a series that never goes negative).
    """
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 3:
        raise InputError("chart points", "a whole number of at least 3", max_points)
    change_time_s = read_finite(change_time_s, "change_time_s", "a finite time")
    checked = [_point(p, i) for i, p in enumerate(read_list(points, "series_points"))]
    buckets = _bucket_series(checked, change_time_s, max_points)
    if buckets is None:
        return None
    values = buckets.means * scale
    lo, hi = float(values.min()), float(values.max())
    pad = 0.1 * (hi - lo) if hi > lo else 0.1 * abs(hi) or 1.0
    bottom = lo - pad
    if lo >= 0:
        bottom = max(0.0, bottom)
    top = hi + pad
    decimals = min(12, max(0, 3 - math.floor(math.log10(top - bottom))))
    step = 10.0**-decimals
    bottom = math.floor(bottom / step) * step
    top = math.ceil(top / step) * step
    w, first = buckets.width, buckets.first
    x_lo, x_hi = (first + 0.5) * w, (first + len(values) - 0.5) * w
    when = datetime.fromtimestamp(change_time_s, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    x_title = _mermaid_text(f"{buckets.unit.name} from the change at {when}")
    line = ", ".join(_decimal(float(v), decimals) for v in values)
    chart = "\n".join(
        [
            "xychart-beta",
            f'    x-axis "{x_title}" {_plain(x_lo)} --> {_plain(x_hi)}',
            f'    y-axis "{_mermaid_text(y_title)}" {_decimal(bottom, decimals)} --> '
            f"{_decimal(top, decimals)}",
            f"    line [{line}]",
        ]
    )
    gaps = len(values) - buckets.filled
    caption = (
        f"Means of {buckets.points:,} points in {len(values)} buckets of "
        f"{_duration(w * buckets.unit.seconds)}"
        + (f" ({gaps} empty, interpolated)" if gaps else "")
        + "; the change is at 0."
    )
    return _fenced(chart, "mermaid") + "\n\n" + caption


# ---------------------------------------------------------------------------------------------
# Why regbot believes it


def _num(verdict: Mapping[str, object], key: str) -> float | None:
    value = verdict.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _reason(verdict: Mapping[str, object]) -> str:
    reason = verdict.get("reason")
    return inline(reason, REASON_CHARS) if isinstance(reason, str) and reason else "passed"


def _went_away(verdict: Mapping[str, object], view: RegressionView) -> str:
    facts = []
    share, n_post = _num(verdict, "post_invalid_share"), _num(verdict, "n_post")
    if share is not None and verdict.get("new_pattern") is True:
        of = f" of the {n_post:,.0f}" if n_post is not None else ""
        facts.append(
            f"{format_share(share)}{of} points after the change sit at levels not seen before it"
        )
    last = _num(verdict, "gone_away_points")
    if verdict.get("regression_gone_away") is False and last is not None:
        facts.append(f"the last {last:,.0f} points have not returned to the baseline")
    text = "; ".join(facts) if facts else _reason(verdict)
    return f"**Lasting, not a blip** (went-away check): {text}."


def _seasonality(verdict: Mapping[str, object], view: RegressionView) -> str:
    period = _num(verdict, "period_s")
    if period is None:
        tried = verdict.get("periods_tried_s")
        cycles = (
            " or ".join(_duration(p) for p in tried if isinstance(p, (int, float)))
            if isinstance(tried, list)
            else ""
        )
        text = f"no {cycles + ' ' if cycles else ''}cycle explains it"
    else:
        zs = [_num(verdict, "z_analysis"), _num(verdict, "z_extended")]
        z = max((v for v in zs if v is not None), default=None)
        threshold = _num(verdict, "threshold")
        text = f"still there after removing the {_duration(period)} cycle"
        if z is not None:
            text += f" (z = {z:.1f}" + (f" ≥ {threshold:g})" if threshold is not None else ")")
    return f"**Not seasonal** (seasonality check): {text}."


def _threshold(verdict: Mapping[str, object], view: RegressionView) -> str:
    measured, threshold = _num(verdict, "measured"), _num(verdict, "threshold")
    if measured is None or threshold is None:
        return f"**Big enough** (threshold): {_reason(verdict)}."
    if verdict.get("mode") == "relative":
        text = f"relative change {format_percent(measured)} ≥ the {format_percent(threshold)} threshold"
    else:
        shown = format_delta(view, measured).lstrip("+")
        limit = format_delta(view, threshold).lstrip("+")
        text = f"absolute change {shown} ≥ the {limit} threshold"
    return f"**Big enough** (threshold): {text}."


def _cost_shift(verdict: Mapping[str, object], view: RegressionView) -> str:
    names = verdict.get("domain_names")
    checked = len(names) if isinstance(names, list) else 0
    if checked:
        text = f"{checked} cost domain{'s' if checked != 1 else ''} checked, none moved this cost"
        text += " from elsewhere"
    else:
        text = _reason(verdict)
    return f"**Not a cost shift** (cost-shift check): {text}."


def _same_regression(verdict: Mapping[str, object], view: RegressionView) -> str:
    seen = verdict.get("regression_id")
    if verdict.get("seen_before") is True and isinstance(seen, str):
        return f"**Seen before** as {code_span(seen, 80)}: the regression is still there."
    return "**New**: not reported before for this series."


def _som_dedup(verdict: Mapping[str, object], view: RegressionView) -> str:
    members = verdict.get("members")
    if isinstance(members, list) and len(members) > 1:
        return (
            f"**Representative** (SOM dedup): stands for {len(members)} series that regressed "
            "together."
        )
    return f"**Representative** (SOM dedup): {_reason(verdict)}."


def _long_term(verdict: Mapping[str, object], view: RegressionView) -> str:
    text = _reason(verdict)
    z = _num(verdict, "z")
    if z is not None:
        text += f" (z = {z:.1f})"
    return f"**Long-term rise** (long-term detector): {text}."


def _generic(label: str) -> Callable[[Mapping[str, object], RegressionView], str]:
    def line(verdict: Mapping[str, object], view: RegressionView) -> str:
        return f"**{label}**: {_reason(verdict)}."

    return line


_EVIDENCE: dict[str, Callable[[Mapping[str, object], RegressionView], str]] = {
    "long_term": _long_term,
    "went_away": _went_away,
    "seasonality": _seasonality,
    "threshold": _threshold,
    "same_regression": _same_regression,
    "som_dedup": _som_dedup,
    "cost_shift": _cost_shift,
    "stack_dedup": _generic("Root of its stack (stack dedup)"),
}
_GROUP_STAGES = frozenset({"pairwise_dedup", "group"})


def evidence_lines(view: RegressionView) -> list[str]:
    """One markdown list item per filter the regression passed, known stages in pipeline order
    with their key numbers, then the dedup group with its duplicates, then any other stage with
    its reason (at most :data:`MAX_EVIDENCE_LINES`)."""
    lines = []
    passed = {s: v for s, v in view.verdicts.items() if v.get("passed") is not False}
    for stage, describe in _EVIDENCE.items():
        if stage in passed:
            lines.append(f"- {describe(passed[stage], view)}")
    n = len(view.duplicates)
    lines.append(
        f"- **Deduplicated**: group {code_span(view.group, 80)} with {n} duplicate"
        f"{'s' if n != 1 else ''} merged into this report."
    )
    for stage, verdict in passed.items():
        if stage not in _EVIDENCE and stage not in _GROUP_STAGES:
            lines.append(f"- **{inline(stage, 40)}**: {_reason(verdict)}.")
    return lines[:MAX_EVIDENCE_LINES]


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
    view: RegressionView
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
    regression: Mapping[str, object],
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
        view=read_regression(regression),
        pull_request=pull_request,
        marker=marker,
        points=[_point(p, i) for i, p in enumerate(points)],
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


def _point(point: object, i: int) -> tuple[float, float]:
    where = f"series_points[{i}]"
    if isinstance(point, (str, bytes)) or not isinstance(point, Sequence) or len(point) != 2:
        raise InputError(where, "a (time, value) pair", point)
    t, v = point
    for x in (t, v):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise InputError(where, "numbers", point)
    return float(t), float(v)


# ---------------------------------------------------------------------------------------------
# The job summary


def _funnel(report: Mapping[str, object]) -> list[str]:
    funnel = read_mapping(read_field(report, "funnel", "report"), "report.funnel")
    rows = ["| Stage | Count |", "|---|---:|"]
    for stage, count in funnel.items():
        if isinstance(count, bool) or not isinstance(count, int):
            raise InputError(f"report.funnel.{stage}", "a whole number", count)
        rows.append(f"| {inline(str(stage).replace('_', ' '), 60)} | {count:,} |")
    return rows


def _summary_row(view: RegressionView) -> str:
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


def _missing_block(missing: Sequence[str]) -> list[str]:
    names = list(missing)
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise InputError(f"missing[{i}]", "a series or source name", name)
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


def render_summary(report: Mapping[str, object], *, missing: Sequence[str] = ()) -> str:
    """The job-summary markdown of a SPEC §4 report: a warning listing the series or sources
    with missing baselines (when any), the funnel as a table, and the regressions with their
    confidence and top suspect (at most :data:`MAX_SUMMARY_ROWS` rows, with a count of the
    rest). Same escaping rules as the comment."""
    report = read_mapping(report, "report")
    entries = read_list(read_field(report, "regressions", "report"), "report.regressions")
    views = [
        read_regression(read_mapping(e, f"report.regressions[{i}]"), f"report.regressions[{i}]")
        for i, e in enumerate(entries)
    ]
    missing = read_list(missing, "missing")
    out = ["## regbot", ""]
    window = report.get("window")
    analysis = window.get("analysis") if isinstance(window, Mapping) else None
    if (
        isinstance(analysis, Sequence)
        and len(analysis) == 2
        and all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
            for t in analysis
        )
    ):
        out += [f"Analysis window {format_time(analysis[0])} → {format_time(analysis[1])}.", ""]
    if missing:
        out += [*_missing_block(missing), ""]
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
