"""The detection and suspects tables fit the console they are printed on (an injected
``Console(width=W)``, W = 80 and 160): no line wider than W, one line per row, every regression id
whole, each series' function name kept, markup in names printed as written, columns dropped in
the documented order; and the name shortening they use (``bot/views/names.py``)."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from factories import build_report, regression_json
from rich.cells import cell_len
from rich.console import Console, RenderableType

from regbot.bot.views.names import (
    MIN_FUNCTION,
    WANTED_CAP,
    one_line,
    series_wanted_width,
    shorten_series,
)
from regbot.bot.views.tables import (
    DETECTION_DROP_ORDER,
    DETECTION_LAST_RESORT,
    SUSPECT_DROP_ORDER,
    SUSPECT_LAST_RESORT,
    TABLE_ROWS,
    attribution_table,
    detection_table,
    gcpu_table,
)
from regbot.profiles.gcpu import GcpuMatrix

WIDTHS = (80, 160)
ID = re.compile(r"r-[0-9a-f]{12}")

CHECKOUT = "handle_checkout_request_with_retries"
SERIALIZE = "serialize_order_line_items_for_ledger_export"
HOSTILE_FUNCTION = "render[bold]_page[/]"
PROMETHEUS = (
    'http_request_duration_seconds{job="checkout",handler="/api/v2/cart/items",quantile="0.99"}'
)
LONG_TITLE = (
    "perf(checkout): retry the payment provider with exponential backoff and jitter, and cache "
    "the merchant configuration between attempts"
)
HOSTILE_TITLE = "Fix [/] escaping in [bold]names[/bold] \\"
FUNCTIONS = {
    "r-0a1b2c3d4e5f": CHECKOUT,
    "r-1b2c3d4e5f60": SERIALIZE,
    "r-2c3d4e5f6071": HOSTILE_FUNCTION,
}


def _candidate(sha: str, pull: int, title: str, score: float) -> dict:
    return {
        "commit": sha * 20,
        "pull_request": pull,
        "title": title,
        "score": score,
        "parts": {"gcpu_attribution": 0.9, "text_similarity": 0.31, "correlation": 0.05},
    }


@pytest.fixture(scope="module")
def report():
    """Long gCPU ids, one with markup in its function and path, a Prometheus id with a unit,
    long and hostile PR titles, several suspects for one regression and none for another."""
    return build_report(
        [
            regression_json(
                "r-0a1b2c3d4e5f",
                series=f"gcpu:{CHECKOUT} (services/payments/checkout/handlers/views.py)",
                title=LONG_TITLE,
                candidates=[
                    _candidate("12", 4812, LONG_TITLE, 0.81),
                    _candidate("34", 4790, "Bump the ledger client to 3.2", 0.22),
                ],
                duplicates=["r-9f9f9f9f9f9f"],
            ),
            regression_json(
                "r-1b2c3d4e5f60",
                series=f"gcpu:{SERIALIZE} (services/ledger/export/serializers/orders.py)",
                title=HOSTILE_TITLE,
                group="r-ffffffffffff",
            ),
            regression_json(
                "r-2c3d4e5f6071", series=f"gcpu:{HOSTILE_FUNCTION} (app/[red]pages[/].py)"
            ),
            regression_json(
                "r-3d4e5f607182", series=PROMETHEUS, kind="latency", unit="s", confidence="none"
            ),
        ]
    )


def render(renderable: RenderableType, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def header_cells(text: str) -> list[str]:
    """The column headers: the line that holds the heavy header separators."""
    line = next(line for line in text.splitlines() if "┃" in line)
    return [cell.strip() for cell in line.split("┃")]


def body_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if "│" in line]


def suspect_rows(rows: list[str], rid: str) -> list[str]:
    """The suspects table's rows of regression ``rid``: its own, then those with no id."""
    start = next(i for i, row in enumerate(rows) if rid in row)
    rest = [row for row in rows[start + 1 :]]
    more = next((i for i, row in enumerate(rest) if ID.search(row.split("│")[0])), len(rest))
    return [rows[start], *rest[:more]]


def row_of(text: str, rid: str) -> str:
    return next(row for row in body_rows(text) if rid in row)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("table", [detection_table, attribution_table])
def test_no_line_is_wider_than_the_console(report, table, width) -> None:
    text = render(table(report), width)
    assert text.strip()
    assert max(cell_len(line) for line in text.splitlines()) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_one_line_per_regression_and_every_id_whole(report, width) -> None:
    text = render(detection_table(report), width)
    rows = body_rows(text)
    assert len(rows) == len(report.regressions)
    assert [ID.search(row)[0] for row in rows] == [r.id for r in report.regressions]


@pytest.mark.parametrize("width", WIDTHS)
def test_one_line_per_suspect_and_titles_never_wrap(report, width) -> None:
    text = render(attribution_table(report), width)
    rows = body_rows(text)
    expected = sum(max(1, len(r.candidates)) for r in report.regressions)
    assert len(rows) == expected
    assert sorted(set(ID.findall(text))) == sorted(r.id for r in report.regressions)
    for entry in report.regressions:
        for candidate, row in zip(entry.candidates, suspect_rows(rows, entry.id)):
            commit, title = (cell.strip() for cell in row.split("│")[2:5:2])
            assert commit == candidate.commit[:7]
            assert title == candidate.title or (
                title.endswith("…") and candidate.title.startswith(title[:-1]) and len(title) > 16
            ), row
    none = next(r for r in report.regressions if not r.candidates)
    assert "no confident suspect" in row_of(text, none.id)


def test_function_names_whole_at_160(report) -> None:
    text = render(detection_table(report), 160)
    for rid, function in FUNCTIONS.items():
        assert f"gcpu:{function} (" in row_of(text, rid)


def test_function_names_or_a_prefix_at_80(report) -> None:
    text = render(detection_table(report), 80)
    for rid, function in FUNCTIONS.items():
        series = row_of(text, rid).split("│")[1].strip()
        assert series.startswith("gcpu:"), series
        shown = series.removeprefix("gcpu:").split(" (")[0]
        assert shown == function or (
            shown.endswith("…") and function.startswith(shown[:-1]) and len(shown) > MIN_FUNCTION
        ), series


def test_paths_are_cut_from_the_left(report) -> None:
    text = render(detection_table(report), 160)
    assert f"gcpu:{CHECKOUT} (…/" in text and "views.py)" in text
    assert "services/payments" not in text  # the full id does not fit at 160 beside the others


@pytest.mark.parametrize("width", WIDTHS)
def test_markup_in_names_and_titles_is_printed_as_written(report, width) -> None:
    detect = render(detection_table(report), width)
    assert f"gcpu:{HOSTILE_FUNCTION}" in detect
    suspects = render(attribution_table(report), 160)
    assert HOSTILE_TITLE in suspects


@pytest.mark.parametrize("width", WIDTHS)
def test_control_characters_cannot_break_a_row_or_reach_the_terminal(width) -> None:
    report = build_report(
        [
            regression_json(
                "r-00000000abcd",
                series="gcpu:a\nb (x.py)",
                title="line one\nline two\x1b[31m red",
                kind="latency",
                unit="[b]req_s*",
            )
        ]
    )
    detect, suspects = (
        render(detection_table(report), width),
        render(attribution_table(report), width),
    )
    assert len(body_rows(detect)) == len(body_rows(suspects)) == 1
    assert "gcpu:a b (x.py)" in detect
    assert "\x1b" not in detect + suspects
    assert "line one line two" in suspects
    assert (
        "0.1 [b]req_s* → 0.12 [b]req_s*" in detect
    )  # the unit as written, not escaped for markdown


def test_the_gcpu_table_prints_frames_in_brackets() -> None:
    matrix = GcpuMatrix(
        ["[unknown]", "[kernel.kallsyms]"],
        np.array([0.0, 60.0]),
        np.array([[0.5, 0.4], [0.2, 0.3]]),
        np.array([0.45, 0.25]),
    )
    text = render(gcpu_table(matrix, top=2), 80)
    assert "gcpu:[unknown]" in text and "gcpu:[kernel.kallsyms]" in text


def test_160_shows_more_columns_than_80(report) -> None:
    for table, kept in (
        (detection_table, ["id", "series", "change", "relative"]),
        (attribution_table, ["regression", "confidence", "commit", "PR", "title"]),
    ):
        narrow, wide = (
            header_cells(render(table(report), 80)),
            header_cells(render(table(report), 160)),
        )
        assert len(wide) > len(narrow)
        assert narrow == kept
        assert wide[: len(kept)] == kept


def test_the_caption_names_what_explain_shows(report) -> None:
    narrow = render(detection_table(report), 80)
    hidden = [h for h in DETECTION_DROP_ORDER if h not in header_cells(narrow)]
    lines = narrow.splitlines()
    last_row = max(i for i, line in enumerate(lines) if "│" in line)
    caption = " ".join(" ".join(lines[last_row + 1 :]).split())  # wrapped or not
    assert caption.startswith("`regbot explain <id>` shows the rest:")
    assert all(h in caption for h in hidden) and "series in full" in caption


@pytest.mark.parametrize(
    "table, order, last_resort, always",
    [
        (detection_table, DETECTION_DROP_ORDER, DETECTION_LAST_RESORT, ["id", "series"]),
        (attribution_table, SUSPECT_DROP_ORDER, SUSPECT_LAST_RESORT, ["regression", "commit"]),
    ],
)
def test_columns_are_dropped_in_the_documented_order(
    report, table, order, last_resort, always
) -> None:
    seen = set()
    everything = order + last_resort
    for width in range(200, 35, -3):
        text = render(table(report), width)
        assert max(cell_len(line) for line in text.splitlines()) <= width
        headers = header_cells(text)
        hidden = [h for h in everything if h not in headers]
        assert hidden == list(everything[: len(hidden)]), (width, hidden)
        assert set(always) <= set(headers)
        first_cells = [row.split("│")[0].strip() for row in body_rows(text)]
        assert [c for c in first_cells if c] == [r.id for r in report.regressions], width
        if width >= 80:
            assert not set(hidden) & set(last_resort), width
        seen.add(len(hidden))
    assert seen >= {0, len(order), len(everything)}  # all, all but the optional ones, the least


def test_a_report_with_short_names_shows_everything_at_160() -> None:
    report = build_report([regression_json("r-00000000abcd", series="gcpu:f (a.py)")])
    text = render(detection_table(report), 160)
    assert header_cells(text)[4:] == list(reversed(DETECTION_DROP_ORDER))
    assert "regbot explain" not in text
    assert "gcpu:f (a.py)" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_an_empty_report_says_so(width) -> None:
    report = build_report([])
    assert "no regressions" in render(detection_table(report), width)
    assert "no regressions to attribute" in render(attribution_table(report), width)


# --- shorten_series ---------------------------------------------------------------------------

GCPU = f"gcpu:{CHECKOUT} (services/payments/checkout/handlers/views.py)"


@pytest.mark.parametrize(
    "series, width, shown",
    [
        (GCPU, 200, GCPU),
        (GCPU, len(GCPU), GCPU),
        (GCPU, 75, f"gcpu:{CHECKOUT} (…/checkout/handlers/views.py)"),
        (GCPU, 63, f"gcpu:{CHECKOUT} (…/handlers/views.py)"),
        (GCPU, 62, f"gcpu:{CHECKOUT} (…/views.py)"),
        (GCPU, 54, f"gcpu:{CHECKOUT} (…/views.py)"),
        (GCPU, 53, f"gcpu:{CHECKOUT} (…)"),
        (GCPU, 45, f"gcpu:{CHECKOUT} (…)"),
        (GCPU, 44, f"gcpu:{CHECKOUT} …"),
        (GCPU, 43, f"gcpu:{CHECKOUT} …"),
        (GCPU, 42, f"gcpu:{CHECKOUT}…"),
        (GCPU, 41, "gcpu:handle_checkout_request_with_retrie…"),
        (GCPU, 13, "gcpu:handle_…"),
        (GCPU, 12, "handle_chec…"),
        ("gcpu:compute", 12, "gcpu:compute"),
        ("gcpu:compute", 11, "compute"),  # below gcpu: + MIN_FUNCTION cells gcpu: goes first
        ("gcpu:f (a/b.py)", 5, "f …"),
        (PROMETHEUS, 60, 'http_request_duration_seconds{job="checkout",…}'),
        (PROMETHEUS, 40, "http_request_duration_seconds{…}"),
        (PROMETHEUS, 20, "http_request_durati…"),
        ("bazaar/latency_p50", 10, "bazaar/la…"),
        ("svc{not labels}", 10, "svc{not l…"),
    ],
)
def test_shorten_series(series, width, shown) -> None:
    assert shorten_series(series, width) == shown


@pytest.mark.parametrize(
    "series",
    [GCPU, PROMETHEUS, "gcpu:compute", "gcpu:x (a/b.py)", "plain/id", "gcpu:函数名 (应用/视图.py)"],
)
def test_shorten_series_fits_every_width_and_never_leaves_only_gcpu(series) -> None:
    for width in range(0, cell_len(series) + 2):
        shown = shorten_series(series, width)
        assert cell_len(shown) <= width
        assert not shown.startswith("gcpu:…")
        if width >= 1:
            assert shown
        if cell_len(series) <= width:
            assert shown == series


def test_shorten_series_counts_terminal_cells() -> None:
    series = "gcpu:处理请求 (服务/支付/视图.py)"
    assert shorten_series(series, 25) == "gcpu:处理请求 (…/视图.py)"
    assert shorten_series(series, 24) == "gcpu:处理请求 (…)"
    assert shorten_series(series, 17) == "gcpu:处理请求 (…)"
    assert shorten_series(series, 16) == "gcpu:处理请求 …"
    assert shorten_series(series, 14) == "gcpu:处理请求…"
    assert shorten_series(series, 13) == "gcpu:处理请…"  # 12 cells: a wide character is not split


def test_wanted_width_keeps_the_function_and_the_file_name() -> None:
    assert series_wanted_width(GCPU) == cell_len(f"gcpu:{CHECKOUT} (…/views.py)")
    assert series_wanted_width("gcpu:f (a.py)") == len("gcpu:f (a.py)")
    assert series_wanted_width(PROMETHEUS) == len("http_request_duration_seconds{…}")
    assert series_wanted_width("x" * 500) == WANTED_CAP


def test_one_line_removes_control_characters_and_keeps_markup() -> None:
    assert one_line("a\nb\tc\x1b[31md\x9b") == "a b c [31md "
    assert one_line("[bold]x[/]") == "[bold]x[/]"


@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_report_shows_its_largest_regressions_and_says_so(width) -> None:
    """Beyond TABLE_ROWS regressions the tables show the largest by relative change, in the
    report's order, and a note says the report holds them all."""
    deltas = [0.001 * (i % 37 + 1) for i in range(TABLE_ROWS + 25)]
    entries = [regression_json(f"r-{i:012x}", delta=d) for i, d in enumerate(deltas)]
    entries.append(regression_json("r-ffffffffffff", delta=None))
    report = build_report(entries)
    text = render(detection_table(report), width)
    ids = [ID.search(row)[0] for row in body_rows(text)]
    cut = sorted(deltas, reverse=True)[TABLE_ROWS - 1]
    assert len(ids) == TABLE_ROWS
    assert ids == sorted(ids)  # the report's order
    assert all(deltas[int(i[2:], 16)] >= cut for i in ids)
    assert "r-ffffffffffff" not in ids
    assert f"the {TABLE_ROWS} largest of {len(entries)} regressions (relative change)" in " ".join(
        text.split()
    )
    suspects = render(attribution_table(report), width)
    assert {ID.search(row)[0] for row in body_rows(suspects) if ID.search(row)} == set(ids)
