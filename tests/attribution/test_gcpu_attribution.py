"""Subroutine gCPU attribution (FBDetect §5.6, Table 2) from a real sample store."""

from __future__ import annotations

from pathlib import Path

import pytest
from sample_stores import index_of

from regbot.attribution.gcpu_attribution import (
    TimeSplit,
    attributed_share,
    attributed_shares,
    service_wide_shares,
)
from regbot.profiles.sample_index import SampleIndex

SPLIT = TimeSplit(0, 60, 120)


# Table 2 as samples out of 100 per bucket; X;Y carries the rest of the service.
TABLE2_BEFORE = "A;B;C 1\nB;E;F 2\nD;B;C 2\nB;E;D 4\nX;Y 91\n"
TABLE2_AFTER = "A;B;C 2\nB;E;F 3\nD;B;C 2\nB;E;D 6\nG;B;D 1\nX;Y 86\n"


@pytest.fixture
def table2(tmp_path: Path) -> SampleIndex:
    return index_of(tmp_path, TABLE2_BEFORE, TABLE2_AFTER)


def test_table2_gives_80_percent_with_the_default_scope(table2: SampleIndex) -> None:
    share = attributed_share(table2, "B", ["A", "E"], SPLIT)
    assert share.regression == pytest.approx(0.05)
    assert share.attributed == pytest.approx(0.04)
    assert share.fraction == pytest.approx(0.80)


def test_table2_under_each_scope(table2: SampleIndex) -> None:
    assert attributed_share(table2, "B", ["A", "E"], SPLIT, "stack").fraction == pytest.approx(0.8)
    # Downstream only: A is B's caller, so A -> B -> C no longer counts (0.03 / 0.05).
    downstream = attributed_share(table2, "B", ["A", "E"], SPLIT, "downstream")
    assert downstream.attributed == pytest.approx(0.03)
    assert downstream.fraction == pytest.approx(0.60)


def test_a_change_to_b_itself_explains_all_of_it(table2: SampleIndex) -> None:
    for scope in ("informative", "downstream", "stack"):
        assert attributed_share(table2, "B", ["B"], SPLIT, scope).fraction == pytest.approx(1.0)


def test_a_caller_on_every_stack_of_b_is_not_credited(tmp_path: Path) -> None:
    """main and serve are on all of slow's stacks: under the paper's counting a commit touching
    them ties with the one that made slow slower; the default scope credits only the latter."""
    before = "main;serve;slow 10\nmain;serve;fast 40\nmain;idle 50\n"
    after = "main;serve;slow 20\nmain;serve;fast 40\nmain;idle 40\n"
    index = index_of(tmp_path, before, after)
    assert attributed_share(index, "slow", ["serve"], SPLIT, "stack").fraction == 1.0
    serve, slow = attributed_shares(index, "slow", [["serve"], ["slow"]], SPLIT)
    assert serve.fraction == 0.0 and slow.fraction == pytest.approx(1.0)
    # Paper scope, each change alone: a tie.
    assert attributed_share(index, "slow", ["slow"], SPLIT, "stack").fraction == pytest.approx(1.0)
    # A sibling on the caller's other path shares no stack with slow.
    assert attributed_share(index, "slow", ["fast"], SPLIT, "stack").fraction == 0.0


def test_callee_of_b_is_downstream(tmp_path: Path) -> None:
    before = "main;b;c 10\nmain;b 10\nmain;x 80\n"
    after = "main;b;c 30\nmain;b 10\nmain;x 60\n"
    index = index_of(tmp_path, before, after)
    share = attributed_share(index, "b", ["c"], SPLIT)
    assert share.regression == pytest.approx(0.20)
    assert share.fraction == pytest.approx(1.0)


def test_fraction_is_clipped_and_undefined_without_a_rise(tmp_path: Path) -> None:
    # B's e-path grew by 0.2 while its f-path fell by 0.1: R = 0.1, L(e) = 0.2 -> clipped to 1.
    before = "b;e 10\nb;f 20\nx 70\n"
    after = "b;e 30\nb;f 10\nx 60\n"
    index = index_of(tmp_path, before, after)
    assert attributed_share(index, "b", ["e"], SPLIT).fraction == 1.0
    assert attributed_share(index, "b", ["f"], SPLIT).fraction == 0.0
    falling = attributed_share(index, "f", ["f"], SPLIT)
    assert falling.regression < 0 and falling.fraction is None
    assert attributed_share(index, "b", [], SPLIT).attributed == 0.0


def test_service_wide_shares_for_series_without_a_subroutine(tmp_path: Path) -> None:
    before = "main;a 10\nmain;b 10\nmain;c 80\n"
    after = "main;a 30\nmain;b 15\nmain;c 55\n"
    index = index_of(tmp_path, before, after)
    shares = service_wide_shares(index, [["a"], ["b"], ["c"], []], SPLIT)
    assert shares == pytest.approx([1.0, 0.25, 0.0, 0.0])
    assert service_wide_shares(index, [["c"]], SPLIT) == [None]


def test_a_stack_goes_to_the_change_with_the_deepest_modified_frame(tmp_path: Path) -> None:
    """A tidy-up in handle (the regressed function) and a slower compute below it: compute's
    stacks carry the rise, so they go to the compute change, not to the edit of handle."""
    before = "main;handle;compute 10\nmain;handle 10\nmain;idle 80\n"
    after = "main;handle;compute 30\nmain;handle 10\nmain;idle 60\n"
    index = index_of(tmp_path, before, after)
    tidy, slower, both = attributed_shares(
        index, "handle", [["handle"], ["compute"], ["compute"]], SPLIT
    )
    assert tidy.fraction == 0.0
    assert slower.fraction == pytest.approx(1.0) and both.fraction == pytest.approx(1.0)
    # Alone, the tidy-up would explain all of it (FBDetect's single-change ℒ).
    assert attributed_share(index, "handle", ["handle"], SPLIT).fraction == pytest.approx(1.0)


def test_a_caller_on_every_stack_is_credited_when_nothing_else_was_touched(tmp_path: Path) -> None:
    """serve, slow's only caller, now calls it twice as often; no change touched slow: the
    deepest of the touched callers on every stack takes the rise (main is above serve)."""
    before = "main;serve;slow 10\nmain;idle 90\n"
    after = "main;serve;slow 20\nmain;idle 80\n"
    index = index_of(tmp_path, before, after)
    serve, main_change, docs = attributed_shares(index, "slow", [["serve"], ["main"], []], SPLIT)
    assert serve.fraction == pytest.approx(1.0)
    assert main_change.fraction == 0.0 and docs.fraction == 0.0


def test_service_wide_shares_go_to_the_deepest_change(tmp_path: Path) -> None:
    before = "main;handle;parse 10\nmain;handle 10\nmain;idle 80\n"
    after = "main;handle;parse 30\nmain;handle 10\nmain;idle 60\n"
    index = index_of(tmp_path, before, after)
    assert service_wide_shares(index, [["handle"], ["parse"]], SPLIT) == pytest.approx([0.0, 1.0])


def test_an_inflated_rise_is_not_owned_by_an_edited_frame_on_it(tmp_path: Path) -> None:
    """A speed-up elsewhere (``fast`` gives up 20 of 100 samples' worth of work) inflates every
    other share by 1.25: ``small`` and its callee ``helper`` (edited, but no slower) rise from
    8 to 10 per 100. Measured against the inflated level, the rise is nobody's; ``slow``, 50%
    slower in the same deploy, keeps its own."""
    before = "main;small;helper 8\nmain;slow 20\nmain;fast 24\nmain;rest 48\n"
    # after: helper 8 -> 10 (x1.25), slow 20 -> 37.5 (x1.5 x1.25), fast 24 -> 5, rest 48 -> 60
    after = "main;small;helper 20\nmain;slow 75\nmain;fast 10\nmain;rest 95\n"
    index = index_of(tmp_path, before, after)
    inflated = attributed_share(index, "small", ["helper"], SPLIT)
    assert inflated.fraction == pytest.approx(1.0)  # without the ratio: the whole rise
    owned = attributed_share(index, "small", ["helper"], SPLIT, share_ratio=1.25)
    assert owned.regression == pytest.approx(0.0, abs=1e-12)
    assert owned.fraction is None  # no rise left to own
    slow = attributed_share(index, "slow", ["slow"], SPLIT, share_ratio=1.25)
    assert slow.regression == pytest.approx(0.375 - 1.25 * 0.2)
    assert slow.fraction == pytest.approx(1.0)


def test_a_separating_caller_keeps_only_the_rise_beyond_bs_other_paths(tmp_path: Path) -> None:
    """B is called twice as often on every path (its only caller F, on every stack, now calls it
    twice). C sits above B on three quarters of its samples, edited: its stacks rose, but no
    more than B's other stacks did, so it separates nothing and takes nothing; F's change, found
    through the callers on every stack, takes the rise."""
    before = "R;C;F;B 30\nR;O;F;B 10\nR;O;F 20\nR;Y 140\n"
    after = "R;C;F;B 60\nR;O;F;B 20\nR;O;F 20\nR;Y 140\n"
    index = index_of(tmp_path, before, after)
    calls_more, separating = attributed_shares(index, "B", [["F"], ["C"]], SPLIT)
    assert separating.fraction == 0.0
    assert calls_more.fraction == pytest.approx(1.0)
    # when only C's paths rose, C says which samples rose and keeps them
    after_c = "R;C;F;B 60\nR;O;F;B 10\nR;O;F 20\nR;Y 140\n"
    index = index_of(tmp_path / "c", before, after_c)
    calls_more, separating = attributed_shares(index, "B", [["F"], ["C"]], SPLIT)
    assert separating.fraction == pytest.approx(1.0, abs=0.15)
    assert calls_more.fraction == 0.0
