"""Ties on one function split by its lines: a loop bound owns the loop's extra runs, an edited
statement only what it costs more itself (real sample stores of folded stacks with lines)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sample_stores import index_of

from regbot.attribution.deploy_lines import DeployLines, FileLines
from regbot.attribution.gcpu_attribution import TimeSplit, attributed_shares
from regbot.attribution.line_credit import LineEvidence
from regbot.profiles.sample_index import SampleIndex

SPLIT = TimeSplit(0, 60, 120)
PRICE = "price (app/orders.py)"
# price(): line 7 `for i in range(N):`, line 8 its body, line 10 a new statement in the loop.
LOOP = {8: (7,), 10: (7,)}
HEADER = {7: 7}
SAME = {n: n for n in range(1, 20)}


def _folded(lines: dict[int, int], rest: int) -> str:
    out = [f"main (app/main.py:3);price (app/orders.py:{line}) {n}" for line, n in lines.items()]
    return "\n".join([*out, f"main (app/main.py:5);idle (app/main.py:9) {rest}"]) + "\n"


def _evidence(owner: dict[int, str], since_s: float = 0.0, moved: int = 0) -> LineEvidence:
    facts = FileLines(
        owner=owner,
        from_previous={n: n + moved for n in range(1, 20)},
        header=HEADER,
        loops=LOOP,
    )
    return LineEvidence(
        DeployLines({"app/orders.py": facts}, since_s), {PRICE: "app/orders.py"}, ("A", "B")
    )


def _fractions(index: SampleIndex, evidence: LineEvidence | None) -> list[float | None]:
    shares = attributed_shares(index, PRICE, [[PRICE], [PRICE]], SPLIT, lines=evidence)
    return [s.fraction for s in shares]


def test_a_larger_loop_bound_owns_the_loop_and_a_reworded_body_nothing(tmp_path: Path) -> None:
    """A raised the range on line 7, B changed the multiplier on line 8: both lines ran twice as
    often, so the rise is the loop's extra runs, A's."""
    index = index_of(tmp_path, _folded({7: 20, 8: 80}, 900), _folded({7: 40, 8: 161}, 799))
    assert _fractions(index, None) == [1.0, 1.0]  # without lines: a tie
    a, b = _fractions(index, _evidence({7: "A", 8: "B"}))
    assert a == pytest.approx(1.0, abs=0.02) and b == pytest.approx(0.0, abs=0.02)


def test_a_costlier_statement_owns_its_rise_beside_an_edited_header(tmp_path: Path) -> None:
    """B made line 8 cost twice as much per run; A rewrote the header without changing how often
    the loop runs (its samples stayed)."""
    index = index_of(tmp_path, _folded({7: 20, 8: 80}, 900), _folded({7: 20, 8: 160}, 820))
    a, b = _fractions(index, _evidence({7: "A", 8: "B"}))
    assert a == pytest.approx(0.0, abs=0.02) and b == pytest.approx(1.0, abs=0.02)


def test_both_kinds_at_once_are_split_by_log_ratio(tmp_path: Path) -> None:
    """A doubled the runs (line 7: 20 → 40), B doubled line 8's cost per run (80 → 320): line
    8's growth ×4 is half the loop's (log 2) and half its own (log 2)."""
    index = index_of(tmp_path, _folded({7: 20, 8: 80}, 900), _folded({7: 40, 8: 320}, 640))
    a, b = _fractions(index, _evidence({7: "A", 8: "B"}))
    # A: line 7's rise (20) and half of line 8's (120); B: the other half of line 8's.
    assert a == pytest.approx(140 / 260, abs=0.01)
    assert b == pytest.approx(120 / 260, abs=0.01)


def test_new_code_is_its_editors(tmp_path: Path) -> None:
    """B added line 10 inside the loop; A edited line 8 without changing its cost."""
    index = index_of(tmp_path, _folded({7: 20, 8: 80}, 900), _folded({7: 20, 8: 80, 10: 60}, 840))
    a, b = _fractions(index, _evidence({8: "A", 10: "B"}))
    assert a == pytest.approx(0.0, abs=0.01) and b == pytest.approx(1.0, abs=0.01)


def test_a_rise_on_lines_neither_edited_leaves_the_tie(tmp_path: Path) -> None:
    """price is simply called more (every line ×2); A and B edited lines that carry no samples
    (a guard, a comment-free constant): the lines say nothing, both keep the rise."""
    index = index_of(tmp_path, _folded({7: 20, 8: 80}, 900), _folded({7: 40, 8: 160}, 800))
    assert _fractions(index, _evidence({3: "A", 4: "B"})) == [1.0, 1.0]


def test_before_lines_are_mapped_to_the_deploys(tmp_path: Path) -> None:
    """The previous deploy had the loop four lines higher (3 and 4)."""
    index = index_of(tmp_path, _folded({3: 20, 4: 80}, 900), _folded({7: 40, 8: 161}, 799))
    a, b = _fractions(index, _evidence({7: "A", 8: "B"}, moved=4))
    assert a == pytest.approx(1.0, abs=0.02) and b == pytest.approx(0.0, abs=0.02)
    # Read without the mapping, every line would look new and each editor would own its own.
    a, b = _fractions(index, _evidence({7: "A", 8: "B"}, moved=0))
    assert b > 0.5


def test_no_lines_before_the_previous_deploy_leave_the_tie(tmp_path: Path) -> None:
    index = index_of(tmp_path, _folded({7: 20, 8: 80}, 900), _folded({7: 40, 8: 161}, 799))
    assert _fractions(index, _evidence({7: "A", 8: "B"}, since_s=60.0)) == [1.0, 1.0]
