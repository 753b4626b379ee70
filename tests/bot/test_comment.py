"""The PR comment and the job summary: sections, numbers, the mermaid chart, the size limit, and
hostile text (mentions, HTML, fences, autolinks, huge titles and stacks) that must stay inert.

Markdown is checked with a real CommonMark parser (markdown-it-py, which rich already depends
on) with raw HTML enabled, as GitHub allows it; GitHub's second pass (mentions, issue links,
emoji, bare URLs on the text outside code) is checked on the text the parser produced.
"""

from __future__ import annotations

import copy
import html
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from rich.console import Console
from series_csv import LongCsv

from regbot.bot.cli import main
from regbot.bot.github.chart import CHART_MAX_POINTS, mermaid_chart
from regbot.bot.github.comment import SHRINK_STEPS, comment_marker, find_marker, render_comment
from regbot.bot.github.markdown_safe import ZWSP, code_block, code_span, inline
from regbot.bot.github.summary import render_summary as render_typed_summary
from regbot.bot.views.numbers import (
    format_delta,
    format_number,
    format_relative,
    format_value,
)
from regbot.errors import InputError
from regbot.report import read_regression, read_report

CHANGE = 1_763_867_000.0
STEP_S = 600.0

# The structure of a real `regbot detect` report entry (the gCPU step of tests/bot/
# test_cli_detect.py's scenario), verdict numbers trimmed to a representative subset, plus
# the candidates attribution adds.
REGRESSION: dict[str, object] = {
    "id": "r-74496e365a69",
    "series": "gcpu:leaf (app/views.py)",
    "kind": "gcpu",
    "detector": "short-term",
    "change_time": CHANGE,
    "before": 0.00998046774419898,
    "after": 0.011872157009221876,
    "delta": 0.0018916892650228962,
    "relative_delta": 0.1895391391974005,
    "p_value": 1.7693367970628376e-132,
    "group": "r-74496e365a69",
    "duplicates": ["r-a437533380f5"],
    "verdicts": {
        "went_away": {
            "passed": True,
            "reason": "kept: new pattern, 96% of post-change points in letters not valid before "
            "the change (> 50%)",
            "n_points": 1500,
            "n_pre": 1445,
            "n_post": 55,
            "post_invalid_share": 0.9636363636363636,
            "new_pattern": True,
            "gone_away_points": 37,
            "regression_gone_away": False,
        },
        "seasonality": {
            "passed": True,
            "reason": "no significant seasonality",
            "period_s": None,
            "periods_tried_s": [86400.0, 604800.0],
            "acf_tried": [0.03176159626970657, None],
            "z_analysis": None,
            "z_extended": None,
            "threshold": 3.0,
        },
        "threshold": {
            "passed": True,
            "reason": "relative change 0.189539 >= threshold 0.01",
            "mode": "relative",
            "threshold": 0.01,
            "delta": 0.0018916892650228962,
            "relative_delta": 0.1895391391974005,
            "measured": 0.1895391391974005,
        },
        "same_regression": {
            "passed": True,
            "reason": "new regression",
            "regression_id": "r-74496e365a69",
            "seen_before": False,
        },
        "som_dedup": {
            "passed": True,
            "reason": "representative of 1 in cell (0, 0)",
            "cell": [0, 0],
            "members": ["gcpu:leaf (app/views.py)"],
        },
        "cost_shift": {
            "passed": True,
            "reason": "kept: no domain shows a cost shift (2 no change)",
            "subroutine": "leaf (app/views.py)",
            "domain_kinds": ["caller", "class"],
            "domain_names": ["handle", "Views"],
            "domain_checks": ["no change", "no change"],
            "shift_domain": None,
        },
        "pairwise_dedup": {
            "passed": True,
            "reason": "new group r-74496e365a69: no group changed within 21600 s",
            "group": None,
            "correlation": None,
        },
    },
    "candidates": [
        {
            "commit": "3f2a9c1d0b8e7f6a5d4c3b2a19080706f5e4d3c2",
            "pull_request": 42,
            "title": "Render views through the template cache",
            "author": "Dana Developer",
            "score": 0.82,
            "parts": {"gcpu_attribution": 0.75, "text_similarity": 0.4, "correlation": 0.9},
        },
        {
            "commit": "9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c",
            "pull_request": 43,
            "title": "Bump requests to 2.32",
            "score": 0.31,
            "parts": {"gcpu_attribution": 0.1, "text_similarity": 0.2, "correlation": 0.5},
        },
        {
            "commit": "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
            "pull_request": None,
            "title": "Direct push: fix typo",
            "score": 0.05,
            "parts": {"gcpu_attribution": 0.0, "text_similarity": 0.05, "correlation": 0.1},
        },
    ],
    "confidence": "high",
}
STACK = [
    "main (app/main.py:12)",
    "dispatch (app/router.py:88)",
    "handle (app/views.py:10)",
    "leaf (app/views.py:42)",
]
MARKER = comment_marker("r-74496e365a69", 42)
EXPLAIN = "regbot explain r-74496e365a69"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
TABLE_PIPE = re.compile(r"(?<!\\)\|")


def points(seed: int = 3, before: int = 144 * 3, after: int = 55) -> list[tuple[float, float]]:
    """10-minute gCPU shares: ``before`` points at 1.0%, then ``after`` points at 1.19%."""
    rng = np.random.default_rng(seed)
    times = CHANGE + STEP_S * np.arange(-before, after)
    values = 0.0100 + rng.normal(0, 0.0003, len(times))
    values[before:] += 0.0019
    return list(zip(times.tolist(), values.tolist()))


def render(regression: dict[str, object] | None = None, **overrides: object) -> str:
    arguments: dict[str, object] = {
        "pull_request": 42,
        "marker": MARKER,
        "series_points": points(),
        "stack_path": STACK,
        "explain_command": EXPLAIN,
        "repository": "acme/shop",
    }
    arguments.update(overrides)
    entry = read_regression(regression or REGRESSION)
    return render_comment(entry, **arguments)  # type: ignore[arg-type]


def render_summary(report: object, **arguments: object) -> str:
    """The summary of a report written as JSON (read as ``regbot explain`` reads stored ones)."""
    return render_typed_summary(read_report(report), **arguments)  # type: ignore[arg-type]


def parse(markdown: str) -> str:
    """HTML from a CommonMark parser with GFM tables and raw HTML on (as GitHub has)."""
    return (
        MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)
    )


def github_second_pass_text(rendered: str) -> str:
    """The text GitHub's mention, issue-reference, emoji and URL filters read: text nodes of
    the HTML outside ``code``, ``pre`` and ``a`` elements, entities decoded."""
    outside_code = re.sub(r"<(code|pre|a)\b.*?</\1>", " ", rendered, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", outside_code))


def assert_fences_balanced(markdown: str) -> int:
    """Every fence line that opens a block has a closing fence line; returns the block count."""
    open_fence: str | None = None
    blocks = 0
    for line in markdown.splitlines():
        match = FENCE.match(line)
        if match is None:
            continue
        run, rest = match.group(1), match.group(2)
        if open_fence is None:
            assert run[0] != "`" or "`" not in rest, f"not a fence but looks like one: {line!r}"
            open_fence, blocks = run, blocks + 1
        elif run[0] == open_fence[0] and len(run) >= len(open_fence) and not rest.strip():
            open_fence = None
    assert open_fence is None, "a fenced block is never closed"
    return blocks


def mermaid_lines(markdown: str) -> list[str]:
    block = re.search(r"^```mermaid\n(.*?)\n```$", markdown, flags=re.DOTALL | re.MULTILINE)
    assert block is not None
    return block.group(1).split("\n")


def table_rows(markdown: str, header_start: str) -> list[str]:
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


# ---------------------------------------------------------------------------------------------
# The marker


def test_marker_is_a_hidden_comment_with_validated_fields() -> None:
    assert comment_marker("r-1a_B", 7) == "<!-- regbot:v1 group=r-1a_B pr=7 -->"
    assert find_marker(f"{MARKER}\n### heading") == ("r-74496e365a69", 42)
    assert find_marker("no marker here") is None
    for bad in ["", "a b", "x-->", "r<!--", "grp\n", "ü"]:
        with pytest.raises(InputError, match="comment marker group"):
            comment_marker(bad, 1)
    for bad_pr in [0, -3, True, "3", 2.0]:
        with pytest.raises(InputError, match="comment marker pr"):
            comment_marker("r-1", bad_pr)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="marker"):
        render(marker="<!-- regbot:v1 group=x pr=1 --> @org")


# ---------------------------------------------------------------------------------------------
# A plain comment


def test_plain_comment_renders_every_section() -> None:
    body = render()
    lines = body.splitlines()
    assert lines[0] == MARKER and body.count("<!--") == 1
    assert lines[1] == "### ⚠️ Performance regression in `gcpu:leaf (app/views.py)`"
    assert "- **Change**: 0.998% → 1.19% (**+0.189 pp**, **+19.0%**)" in lines
    assert "- **When**: 2025-11-23T03:03:20Z (short-term detector, p = 1.8e-132)" in lines
    assert "- **Confidence**: **high** — one commit clearly stands out" in lines
    assert "This PR's commit ranks **1** of 3 suspects." in body
    assert "```mermaid" in lines and "#### The series around the change" in lines
    why = body[body.index("#### Why regbot believes it") : body.index("#### Stack path")]
    assert "96% of the 55 points after the change sit at levels not seen before it" in why
    assert "the last 37 points have not returned to the baseline" in why
    assert "no 1 d or 7 d cycle explains it" in why
    assert "relative change 19.0% ≥ the 1.0% threshold" in why
    assert "2 cost domains checked, none moved this cost from elsewhere" in why
    assert "group `r-74496e365a69` with 1 duplicate merged into this report" in why
    assert "**New**: not reported before" in why
    assert (
        "Root → regressed frame: `main (app/main.py:12)` → `dispatch (app/router.py:88)` → "
        "`handle (app/views.py:10)` → `leaf (app/views.py:42)`" in lines
    )
    assert "<details>" not in body  # a short stack path is not collapsed
    rows = table_rows(body, "| Rank |")
    assert len(rows) == 2 + 3
    assert rows[2] == (
        "| **1** (this PR) | [`3f2a9c1`](https://github.com/acme/shop/commit/"
        "3f2a9c1d0b8e7f6a5d4c3b2a19080706f5e4d3c2) | [#42](https://github.com/acme/shop/pull/42) "
        "| Render views through the template cache — Dana Developer | 0.82 | 75% | 40% | 90% |"
    )
    assert rows[3].startswith("| 2 | ") and "| 0.31 | 10% | 20% | 50% |" in rows[3]
    assert rows[4].startswith("| 3 | ") and "| — | Direct push: fix typo |" in rows[4]
    assert "```\nregbot explain r-74496e365a69\n```" in body
    assert "React with 👎" in body and "`/regbot false-positive`" in body
    assert assert_fences_balanced(body) == 2
    rendered = parse(body)
    assert "<h3>" in rendered and rendered.count("<table>") == 1
    assert '<pre><code class="language-mermaid">xychart-beta' in rendered
    assert "<code>regbot explain r-74496e365a69\n</code>" in rendered


def test_without_repository_prs_are_plain_references_and_commits_not_links() -> None:
    body = render(repository=None)
    rows = table_rows(body, "| Rank |")
    assert rows[2].startswith("| **1** (this PR) | `3f2a9c1` | #42 | ")
    assert "https://" not in body


def test_this_pr_ranked_low_or_absent() -> None:
    regression = copy.deepcopy(REGRESSION)
    many = []
    for i in range(12):
        many.append(
            {
                "commit": f"{i:02x}" * 20,
                "pull_request": 100 + i,
                "title": f"change {i}",
                "score": round(0.9 - i * 0.05, 2),
                "parts": {"gcpu_attribution": 0.5, "text_similarity": 0.5, "correlation": 0.5},
            }
        )
    regression["candidates"] = many
    body = render(regression, pull_request=111)
    rows = table_rows(body, "| Rank |")[2:]
    assert len(rows) == 11  # the top 10, then this PR's own row at its real rank
    assert rows[-1].startswith("| **12** (this PR) |")
    assert "This PR's commit ranks **12** of 12 suspects." in body
    assert "1 more suspect: see `regbot explain`." in body
    other = render(regression, pull_request=7)
    assert "This PR is not among the ranked suspects." in other
    assert "(this PR)" not in other


def test_no_candidates_and_a_long_term_regression_without_p_value() -> None:
    regression = copy.deepcopy(REGRESSION)
    regression.update(candidates=[], confidence="none", p_value=None, detector="long-term")
    regression["verdicts"] = {
        "long_term": {
            "passed": True,
            "reason": "step long-term rise: trend 0.01 -> 0.0119",
            "z": 6.25,
        }
    }
    body = render(regression, stack_path=[])
    assert "No commit scored high enough to be named" in body
    assert "- **When**: 2025-11-23T03:03:20Z (long-term detector)" in body
    assert (
        "**Long-term rise** (long-term detector): step long-term rise: trend 0.01 -&gt; 0.0119"
        in body
    )
    assert "(z = 6.2)" in body or "(z = 6.3)" in body
    assert "#### Stack path" not in body and "| Rank |" not in body
    assert "regbot could not name a commit for it." in body


# ---------------------------------------------------------------------------------------------
# Numbers


def test_numbers_are_formatted_as_specified() -> None:
    gcpu = read_regression(REGRESSION)
    assert format_value(gcpu, 0.0123) == "1.23%"
    assert format_value(gcpu, 0.5) == "50%"
    assert format_delta(gcpu, 0.0019) == "+0.19 pp"
    assert format_delta(gcpu, -0.000123) == "-0.0123 pp"
    assert format_relative(0.123) == "+12.3%"
    assert format_relative(-0.0294) == "-2.9%"
    assert format_relative(0.0004) == "+0.04%"
    assert format_relative(None) == "new"
    assert format_number(1000.078) == "1,000"
    assert format_number(123456.7) == "123,457"
    assert format_number(970.64) == "971"
    assert format_number(0.000012345) == "1.23e-05"
    assert format_number(float("nan")) == "n/a"
    qps = read_regression({**REGRESSION, "kind": "throughput", "unit": "req/s"})
    assert format_value(qps, 970.64) == "971 req/s"
    assert format_delta(qps, -29.44) == "-29.4 req/s"
    plain = read_regression({**REGRESSION, "kind": "latency"})
    assert format_value(plain, 12.5) == "12.5"
    body = render(
        {
            **REGRESSION,
            "kind": "throughput",
            "unit": "req/s",
            "before": 1000.078,
            "after": 970.64,
            "delta": -29.44,
            "relative_delta": -0.02943,
        }
    )
    assert "- **Change**: 1,000 req/s → 971 req/s (**-29.4 req/s**, **-2.9%**)" in body
    assert 'y-axis "throughput (req/s)"' in body


# ---------------------------------------------------------------------------------------------
# The chart


NUMBER = r"-?\d+(?:\.\d+)?"


def parse_chart(markdown: str) -> tuple[float, float, str, float, float, list[float]]:
    lines = mermaid_lines(markdown)
    assert lines[0] == "xychart-beta"
    x = re.fullmatch(rf'    x-axis "([^"`%]*)" ({NUMBER}) --> ({NUMBER})', lines[1])
    y = re.fullmatch(rf'    y-axis "([^"`]*)" ({NUMBER}) --> ({NUMBER})', lines[2])
    line = re.fullmatch(rf"    line \[((?:{NUMBER}, )*{NUMBER})\]", lines[3])
    assert x and y and line, lines[:3]
    values = [float(v) for v in line.group(1).split(", ")]
    return (
        float(x.group(2)),
        float(x.group(3)),
        y.group(1),
        float(y.group(2)),
        float(y.group(3)),
        values,
    )


def mermaid_x_positions(lo: float, hi: float, n: int) -> int:
    """How many x positions mermaid's linear-axis loop makes for ``n`` values (xychartDb:
    ``for (i = min; i <= max; i += step)``, step = (max - min) / (n - 1))."""
    step = (hi - lo) / (n - 1)
    count, i = 0, lo
    while i <= hi:
        count, i = count + 1, i + step
    return count


def test_mermaid_block_is_valid_xychart_with_the_step_visible() -> None:
    body = render()
    x_lo, x_hi, y_title, y_lo, y_hi, values = parse_chart(body)
    assert y_title == "gCPU (%)"
    assert 2 <= len(values) <= CHART_MAX_POINTS
    assert mermaid_x_positions(x_lo, x_hi, len(values)) == len(values)
    assert x_lo < 0 < x_hi  # hours from the change: before and after are both shown
    width = (x_hi - x_lo) / (len(values) - 1)
    assert (x_lo / width + 0.5) == pytest.approx(round(x_lo / width + 0.5))  # 0 is a boundary
    assert all(y_lo <= v <= y_hi for v in values)
    assert y_lo < min(values) and max(values) < y_hi  # padded
    before = [v for i, v in enumerate(values) if x_lo + i * width < 0]
    after = [v for i, v in enumerate(values) if x_lo + i * width > 0]
    assert np.mean(before) == pytest.approx(1.00, abs=0.02)  # percent, not a share
    assert np.mean(after) == pytest.approx(1.19, abs=0.03)
    assert "hours from the change at 2025-11-23 03:03 UTC" in body


def test_chart_downsamples_a_long_gappy_series() -> None:
    rng = np.random.default_rng(11)
    times = CHANGE + 60.0 * np.arange(-14 * 1440, 600)
    values = 50 + rng.normal(0, 1, len(times))
    values[times >= CHANGE] += 5
    keep = (times < CHANGE - 6 * 3600) | (times > CHANGE - 2 * 3600)  # a 4-hour hole
    values[::97] = np.nan
    pts = list(zip(times[keep].tolist(), values[keep].tolist()))
    chart = mermaid_chart(pts, change_time_s=CHANGE, y_title="latency (ms)")
    assert chart is not None
    x_lo, x_hi, title, y_lo, y_hi, line = parse_chart(chart)
    assert len(line) <= CHART_MAX_POINTS
    assert mermaid_x_positions(x_lo, x_hi, len(line)) == len(line)
    assert title == "latency (ms)" and y_lo > 0
    assert "empty, interpolated" in chart
    assert x_lo >= -31 and x_hi <= 10.5  # 10 h after: 30 h before shown, not two weeks
    for n in (3, 15, 30):
        small = mermaid_chart(pts, change_time_s=CHANGE, y_title="x", max_points=n)
        assert small is not None and len(parse_chart(small)[5]) <= n
    assert mermaid_chart(pts[:1], change_time_s=CHANGE, y_title="x") is None
    assert mermaid_chart([(CHANGE, float("nan"))] * 5, change_time_s=CHANGE, y_title="x") is None
    body = render(series_points=[])
    assert "```mermaid" not in body and "#### The series around the change" not in body


def test_minute_scale_series_uses_minutes_and_negative_values_are_kept() -> None:
    times = CHANGE + 5.0 * np.arange(-360, 360)  # 5-second points, one hour around the change
    values = np.where(times < CHANGE, -2.0, 3.0) + np.sin(np.arange(len(times)))
    chart = mermaid_chart(
        list(zip(times.tolist(), values.tolist())), change_time_s=CHANGE, y_title='bad "title"'
    )
    assert chart is not None
    x_lo, x_hi, title, y_lo, _, line = parse_chart(chart)
    assert "minutes from the change" in chart
    assert x_lo == pytest.approx(-30, abs=1) and x_hi == pytest.approx(30, abs=1)
    assert title == "bad title" and y_lo < -2.5
    assert mermaid_x_positions(x_lo, x_hi, len(line)) == len(line)


# ---------------------------------------------------------------------------------------------
# Hostile input


HOSTILE_TITLES = [
    "@org/team please review, cc @alice",
    "<img src=x onerror=alert(1)>",
    "```",
    "</details> escaped?",
    "end the marker -->",
    "x" * 10_000,
    "[link](javascript:alert(1))",
    "fixes #1 and GH-12 and acme/shop#3",
    ":x: :+1: emoji",
    "visit https://evil.example/phish or www.evil.example",
    "<!-- regbot:v1 group=evil pr=1 -->",
    "- [ ] task\n# heading\n> quote",
]


def hostile_regression() -> dict[str, object]:
    regression = copy.deepcopy(REGRESSION)
    regression["series"] = "gcpu:@org/team <img src=x onerror=alert(1)> ``` </details> -->"
    regression["kind"] = "gcpu"
    regression["candidates"] = [
        {
            "commit": f"{i + 1:040x}",
            "pull_request": 42 if i == 5 else 200 + i,
            "title": title,
            "author": "@mallory <b>x</b>",
            "score": 0.9 - 0.05 * i,
            "parts": {"gcpu_attribution": 0.5, "text_similarity": 0.25, "correlation": 0.125},
        }
        for i, title in enumerate(HOSTILE_TITLES)
    ]
    verdicts = regression["verdicts"]
    assert isinstance(verdicts, dict)
    verdicts["som_dedup"] = {"passed": True, "reason": "@org/team <img src=x> ``` -->"}
    verdicts["@org/<img>"] = {"passed": True, "reason": "[x](javascript:alert(1)) #7 :x:"}
    return regression


def hostile_stack() -> list[str]:
    frames = [f"frame_{i} (lib/mod_{i}.py:{i})" for i in range(5_000)]
    frames[0] = "```"
    frames[1] = "</details>"
    frames[2] = "<!-- regbot:v1 group=evil pr=1 -->"
    frames[-3] = "@org/team <img src=x onerror=alert(1)>"
    frames[-2] = "a`b``c"
    frames[-1] = "leaf -->\n</details>" + "y" * 5000
    return frames


def test_hostile_text_cannot_mention_link_inject_or_break_structure() -> None:
    body = render(hostile_regression(), stack_path=hostile_stack())
    assert len(body) <= 65_536
    # The marker: first line, intact, the only HTML comment and the only regbot:v1.
    assert body.splitlines()[0] == MARKER
    assert body.count("<!--") == 1 and body.count("-->") == body.count("--> ") + 1
    assert body.count("regbot:v1") == 1 and find_marker(body) == ("r-74496e365a69", 42)
    # Raw text: no mention, no tag; only regbot's own <details>.
    assert re.search(r"@[A-Za-z0-9]", body) is None
    assert "<img" not in body and "<b>" not in body
    assert body.count("<details>") == 1 and body.count("</details>") == 1
    assert assert_fences_balanced(body) == 2
    # The huge title is cut; the stack path is shortened.
    assert "x" * 200 not in body and "y" * 300 not in body
    assert "frames omitted" in body
    # Every suspect row keeps the table's 8 columns.
    rows = table_rows(body, "| Rank |")
    assert len(rows) == 2 + 10 + 0  # top 10; this PR (rank 6) is among them
    assert all(len(TABLE_PIPE.findall(row)) == 9 for row in rows)
    assert "| **6** (this PR) |" in body
    # What a CommonMark parser makes of it: no injected tag or link, one table, one details.
    rendered = parse(body)
    assert "<img" not in rendered and "<b>" not in rendered and "<h1>" not in rendered
    assert "javascript:" not in re.findall(r'href="([^"]*)"', rendered).__str__()
    assert all(
        h.startswith("https://github.com/acme/shop/")
        for h in re.findall(r'href="([^"]*)"', rendered)
    )
    assert rendered.count("<table>") == 1 and rendered.count("<details>") == 1
    assert rendered.count("<!--") == 1
    # What GitHub's second pass sees outside code: no mention, reference, emoji or URL.
    text = github_second_pass_text(rendered)
    assert re.search(r"(?<![\w`])@[A-Za-z0-9]", text) is None
    assert re.search(r"#\d|GH-\d", text) is None
    assert ":x:" not in text and ":+1:" not in text  # the shortcodes the input held
    assert "https://evil" not in text and "www.evil" not in text
    # The hostile text is still shown, just inert.
    assert f"@{ZWSP}org/team please review" in body
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in body
    assert "\\[link\\]\\(javascript:" in body


any_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    series=any_text,
    kind=any_text,
    unit=any_text,
    title=any_text,
    author=any_text,
    reason=any_text,
    frames=st.lists(any_text, max_size=12),
)
def test_any_text_keeps_the_comment_inert(
    series: str, kind: str, unit: str, title: str, author: str, reason: str, frames: list[str]
) -> None:
    regression = copy.deepcopy(REGRESSION)
    regression.update(series=series, kind=kind, unit=unit)
    candidates = regression["candidates"]
    assert isinstance(candidates, list)
    candidates[0].update(title=title, author=author)
    verdicts = regression["verdicts"]
    assert isinstance(verdicts, dict)
    verdicts["went_away"] = {"passed": True, "reason": reason}
    verdicts[reason[:30] or "x"] = {"passed": True, "reason": reason}
    body = render(regression, stack_path=frames)
    assert body.splitlines()[0] == MARKER and find_marker(body) == ("r-74496e365a69", 42)
    assert body.count("<!--") == 1 and body.count("regbot:v1") == 1
    assert re.search(r"@[^\u200b]", body) is None
    assert (
        re.search(r"<(?!!-- regbot:v1 group|details>|/details>|summary>|/summary>)", body) is None
    )
    assert assert_fences_balanced(body) in (1, 2)
    rows = table_rows(body, "| Rank |")
    assert all(len(TABLE_PIPE.findall(row)) == 9 for row in rows)
    rendered = parse(body)
    assert rendered.count("<table>") == 1 and rendered.count("<!--") == 1
    assert all(
        h.startswith("https://github.com/acme/shop/")
        for h in re.findall(r'href="([^"]*)"', rendered)
    )


def test_comment_shrinks_in_the_documented_order_and_fails_below_its_minimum() -> None:
    regression = copy.deepcopy(REGRESSION)
    regression["candidates"] = [
        {
            "commit": f"{i + 1:040x}",
            "pull_request": 300 + i,
            "title": f"Title {i} " + "w" * 200,
            "score": 0.5,
            "parts": {"gcpu_attribution": 0.5, "text_similarity": 0.5, "correlation": 0.5},
        }
        for i in range(10)
    ]
    stack = [f"f{i} (m.py:{i})" for i in range(3_000)]
    full = render(regression, stack_path=stack, max_chars=10**9)

    def features(body: str) -> tuple[int, int, int]:
        listed = len(re.findall(r"^\d+\. `", body, flags=re.MULTILINE))
        title = max(len(m) for m in re.findall(r"Title \d+ w*…?", body))
        chart = len(parse_chart(body)[5]) if "```mermaid" in body else 0
        return listed, title, chart

    assert features(full) == (3_000, 120, features(full)[2])
    seen = []
    limit = len(full)
    while True:  # each limit one character below the last comment: every shrink step in turn
        try:
            body = render(regression, stack_path=stack, max_chars=limit)
        except InputError as error:
            assert "max_chars" in str(error) and "smallest comment" in str(error)
            break
        assert len(body) <= limit
        seen.append(features(body))
        limit = len(body) - 1
    assert len(seen) == len(SHRINK_STEPS)
    # Frames shrink first (titles and chart intact), then titles, then the chart, then no chart.
    for listed, title, chart in seen:
        if listed > 2:
            assert title == 120 and chart == seen[0][2]
        if title < 120:
            assert listed == 2
        if title > 12:
            assert chart == seen[0][2]
        if chart < seen[0][2]:
            assert listed == 2 and title == 12
    assert {listed for listed, _, _ in seen} >= {3_000, 100, 20, 6, 2}
    assert {title for _, title, _ in seen} >= {120, 60, 30, 12}
    assert seen[-1][2] == 0
    with pytest.raises(InputError, match="max_chars"):
        render(regression, stack_path=stack, max_chars=500)


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"series": None}, "regression.series"),
        ({"before": "1.0"}, "regression.before"),
        ({"change_time": float("inf")}, "regression.change_time"),
        ({"confidence": "maybe"}, "regression.confidence"),
        ({"verdicts": []}, "regression.verdicts"),
        ({"candidates": [{"commit": "zzz", "title": "t", "score": 1, "parts": {}}]}, "commit"),
        (
            {"candidates": [{"commit": "abcdef1", "title": "t", "score": 1, "parts": {}}]},
            "regression.candidates[0].parts.gcpu_attribution",
        ),
    ],
)
def test_bad_regression_fields_raise_input_error(change: dict[str, object], where: str) -> None:
    with pytest.raises(InputError, match=re.escape(where)):
        render({**REGRESSION, **change})


def test_missing_field_and_bad_arguments_raise_input_error() -> None:
    broken = {k: v for k, v in REGRESSION.items() if k != "series"}
    with pytest.raises(InputError, match=r"regression\.series: expected a value \(missing\)"):
        render(broken)
    with pytest.raises(InputError, match="repository"):
        render(repository="acme/shop/../evil")
    with pytest.raises(InputError, match=r"series_points\[1\]"):
        render(series_points=[(1.0, 2.0), ("t", 3.0)])
    with pytest.raises(InputError, match=r"stack_path\[0\]"):
        render(stack_path=[None])
    with pytest.raises(InputError, match="pull_request"):
        render(pull_request=0)
    with pytest.raises(InputError, match="explain_command"):
        render(explain_command=" ")


# ---------------------------------------------------------------------------------------------
# The job summary


def summary_report() -> dict[str, object]:
    throughput = {
        **copy.deepcopy(REGRESSION),
        "id": "r-dc6d61642ea3",
        "series": "qps:web|<img src=x>",
        "kind": "throughput",
        "before": 1000.078,
        "after": 970.64,
        "delta": -29.44,
        "relative_delta": -0.02943,
        "candidates": [],
        "confidence": "none",
    }
    return {
        "regbot_version": "0.1.0",
        "window": {
            "historical": [1_762_999_400.0, 1_763_863_400.0],
            "analysis": [1_763_863_400.0, 1_763_877_800.0],
            "extended": [1_763_877_800.0, 1_763_899_400.0],
        },
        "funnel": {
            "series": 3,
            "change_points": 3,
            "after_went_away": 3,
            "after_threshold": 3,
            "after_pairwise_dedup": 2,
            "long_term": 0,
        },
        "regressions": [throughput, copy.deepcopy(REGRESSION)],
    }


def test_summary_has_funnel_regressions_and_missing_baselines() -> None:
    summary = render_summary(
        summary_report(), missing=["gcpu:new_fn (app/x.py)", "@org/team <img>"]
    )
    assert "Analysis window 2025-11-23T02:03:20Z → 2025-11-23T06:03:20Z." in summary
    warning = [line for line in summary.splitlines() if line.startswith(">")]
    assert warning[0].startswith("> ⚠️ **Missing baselines**: 2 series or sources had no")
    assert "> - `gcpu:new_fn (app/x.py)`" in warning
    assert f"> - `@{ZWSP}org/team <{ZWSP}img>`" in warning
    funnel = table_rows(summary, "| Stage |")
    assert funnel[2:] == [  # every SPEC §4 stage; those the report leaves out count 0
        "| series | 3 |",
        "| change points | 3 |",
        "| after went away | 3 |",
        "| after seasonality | 0 |",
        "| after threshold | 3 |",
        "| after share inflation | 0 |",
        "| after same regression merge | 0 |",
        "| after som dedup | 0 |",
        "| after cost shift | 0 |",
        "| after pairwise dedup | 2 |",
        "| long term | 0 |",
    ]
    rows = table_rows(summary, "| Regression |")[2:]
    assert len(rows) == 2 and all(len(TABLE_PIPE.findall(row)) == 8 for row in rows)
    assert "| 1,000 → 971 | -2.9% | 2025-11-23T03:03:20Z | none | — |" in rows[0]
    assert "| 0.998% → 1.19% | +19.0% |" in rows[1]
    assert "| high | `3f2a9c1` #42 Render views through the template cache (0.82) |" in rows[1]
    assert "<img" not in summary and re.search(r"@[A-Za-z0-9]", summary) is None
    rendered = parse(summary)
    assert rendered.count("<table>") == 2 and "<blockquote>" in rendered and "<img" not in rendered
    quiet = render_summary(summary_report())
    assert "Missing baselines" not in quiet and "<blockquote>" not in parse(quiet)
    many = render_summary(summary_report(), missing=[f"s{i}" for i in range(150)])
    assert "> - … and 50 more" in many and many.count("> - `s") == 100


def test_summary_without_regressions_and_with_bad_input() -> None:
    report = {**summary_report(), "regressions": []}
    assert "### Regressions (0)\n\nNo regressions reported." in render_summary(report)
    with pytest.raises(InputError, match=r"report\.funnel\.series"):
        render_summary({**report, "funnel": {"series": "3"}})
    with pytest.raises(InputError, match=r"report\.regbot_version: expected a value"):
        render_summary({"funnel": {}})  # the first field missing, in SPEC §4 order
    with pytest.raises(InputError, match=r"report\.regressions: expected a value"):
        render_summary({k: v for k, v in report.items() if k != "regressions"})
    with pytest.raises(InputError, match=r"report\.regressions\[0\]\.id"):
        render_summary({**report, "regressions": [{"series": "x"}]})
    with pytest.raises(InputError, match=r"missing\[1\]"):
        render_summary(report, missing=["ok", 3])  # type: ignore[list-item]


# ---------------------------------------------------------------------------------------------
# A live `regbot detect` report


def test_a_live_detect_report_renders(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    start = 1_763_000_000.0
    n = 1440 + 24 + 36
    times = start + STEP_S * np.arange(n)
    csv = LongCsv()
    step = 0.010 + rng.normal(0, 0.0005, n)
    step[1445:] += 0.002
    csv.add("gcpu:leaf (app/views.py)", "gcpu", times, step)
    qps = 1000 + rng.normal(0, 5, n)
    qps[1443:] -= 30
    csv.add("qps:web", "throughput", times, qps)
    csv.write(tmp_path / "m.csv")
    (tmp_path / "regbot.yml").write_text(
        "workloads:\n  default:\n    threshold: {relative: 0.01}\n"
        "    windows: {historical: 10d, analysis: 4h, extended: 6h}\n"
    )
    out = tmp_path / "report.json"
    quiet = Console(file=io.StringIO(), width=200)
    code = main(
        [
            "detect",
            str(tmp_path / "m.csv"),
            "-c",
            str(tmp_path / "regbot.yml"),
            "-o",
            str(out),
            "--no-state",
        ],
        out=quiet,
        err=quiet,
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert len(report["regressions"]) == 2
    for entry in report["regressions"]:
        entry["candidates"] = copy.deepcopy(REGRESSION["candidates"])
        series = step if entry["kind"] == "gcpu" else qps
        body = render_comment(
            read_regression(entry),
            pull_request=43,
            marker=comment_marker(entry["group"], 43),
            series_points=list(zip(times.tolist(), series.tolist())),
            stack_path=STACK if entry["kind"] == "gcpu" else [],
            explain_command=f"regbot explain {entry['id']}",
        )
        assert body.startswith(comment_marker(entry["group"], 43) + "\n")
        assert "This PR's commit ranks **2** of 3 suspects." in body
        assert "**Lasting, not a blip**" in body and "**Not a cost shift**" in body
        assert assert_fences_balanced(body) == 2
        _, _, _, _, _, values = parse_chart(body)
        assert 2 <= len(values) <= CHART_MAX_POINTS
    summary = render_summary(report)
    assert "| after pairwise dedup |" in summary and "### Regressions (2)" in summary


# ---------------------------------------------------------------------------------------------
# markdown_safe


def unescaped(text: str, chars: str) -> list[str]:
    """Markdown characters in ``text`` not preceded by a backslash."""
    return [m.group(0) for m in re.finditer(rf"(?<!\\)[{re.escape(chars)}]", text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("@org/team", f"@{ZWSP}org/team"),
        ("mail me@example.com", f"mail me@{ZWSP}example.com"),
        ("<details>", "&lt;details&gt;"),
        ("<!-- x -->", "&lt;\\!-- x --&gt;"),
        ("a &#64;b", f"a &amp;\\#{ZWSP}64;b"),
        ("*bold* _it_ ~s~ `c` $x$", "\\*bold\\* \\_it\\_ \\~s\\~ \\`c\\` \\$x\\$"),
        ("#12 GH-3 not#x", f"\\#{ZWSP}12 GH-{ZWSP}3 not\\#x"),
        ("https://e.x www.e.x", f"https:{ZWSP}//e.x www{ZWSP}.e.x"),
        (":x: a: b", f":{ZWSP}x: a: b"),
        ("- item", "\\- item"),
        ("+ item", "\\+ item"),
        ("12. item", "12\\. item"),
        ("> quote", "&gt; quote"),
        ("a\r\nb\tc\x00d\u202ee  f", "a b cde f"),
        ("  padded  ", "padded"),
    ],
)
def test_inline_escapes(text: str, expected: str) -> None:
    assert inline(text) == expected


def test_inline_truncates_visible_characters() -> None:
    assert inline("x" * 10_000, 120) == "x" * 119 + "…"
    assert inline("short", 120) == "short"
    cut = inline("a_b" * 50, 10)
    assert cut.endswith("…") and cut.replace("\\", "") == ("a_b" * 4)[:9] + "…"
    assert inline("ab\\", 2) == "a…"  # never a dangling backslash
    with pytest.raises(InputError, match="max_chars"):
        inline("x", 0)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet=st.characters(), max_size=200), st.integers(min_value=1, max_value=80))
def test_inline_is_always_inert(text: str, limit: int) -> None:
    out = inline(text, limit)
    assert "\n" not in out and "\r" not in out and "<" not in out and ">" not in out
    assert re.search(r"@[^\u200b]", out + " ") is None
    assert re.search(r"#\d", out) is None
    assert not unescaped(out, "`*_[]()|~!$")
    shown = html.unescape(out.replace("\\", "").replace(ZWSP, ""))
    assert len(shown) <= limit
    rendered = parse(f"| a |\n|---|\n| {out} |")
    assert rendered.count("<td>") == 1  # one cell: nothing splits the row
    paragraph = parse(f"- {out}")
    assert "<ul>" in paragraph and paragraph.count("<li>") == 1
    assert "<a " not in paragraph and "<em>" not in paragraph and "<code>" not in paragraph


@pytest.mark.parametrize(
    "text", ["plain", "a`b", "``x``", "`starts", "ends`", "a ``` b", "x|y", "<img src=x>", "-->"]
)
def test_code_span_shows_the_text(text: str) -> None:
    span = code_span(text)
    rendered = parse(f"frame: {span}")
    code = re.search(r"<code>(.*?)</code>", rendered, flags=re.DOTALL)
    assert code is not None
    assert html.unescape(code.group(1)).replace(ZWSP, "") == text
    in_table = parse(f"| a |\n|---|\n| {code_span(text, in_table=True)} |")
    assert in_table.count("<td>") == 1
    assert "\n" not in code_span("a\nb") and code_span("") == "` `"
    assert code_span("z" * 500, 50).count("z") == 49


def test_code_block_fence_outlasts_any_backtick_run() -> None:
    text = "````\n```python\nprint(1)\n```\n</details>\n<!-- x -->\n@org"
    block = code_block(text, "text")
    assert block.startswith("`````text\n") and block.endswith("\n`````")
    tokens = MarkdownIt("commonmark", {"html": True}).parse(block + "\n\nafter")
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].info == "text"
    assert fences[0].content.replace(ZWSP, "") == text + "\n"
    assert "</details>" not in block and "<!--" not in block and "@org" not in block
    with pytest.raises(InputError, match="code block language"):
        code_block("x", "py thon")
