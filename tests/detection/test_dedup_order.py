"""SOMDedup, then the cost-shift check (FBDetect §5.4-5.5): a group whose representative is a cost
shift does not take its genuine members with it (``regbot.detection.dedup``). Without stacks a
group needs evidence of one cause: here, callers whose gCPU holds the leaf's samples.

Hourly series; ``change_index`` is the first point after the change (``detection/model.py``).
"""

from __future__ import annotations

import numpy as np
from factories import build_candidate, grid_windows

from regbot.detection.dedup import DedupSettings, deduplicate
from regbot.detection.dedup_context import DedupContext, StackShare
from regbot.detection.model import Candidate
from regbot.detection.stages import Stage

HOUR_S = 3600.0
T0_S = 1_700_000_000.0
N_HIST, N_AFTER = 240, 48
N = N_HIST + N_AFTER
AT = N_HIST + 6
TIMES_S = T0_S + HOUR_S * np.arange(N)
WINDOWS = grid_windows(T0_S, HOUR_S, N_HIST, 24, T0_S + (N - 1) * HOUR_S)
SEEDS = range(10)


def series(rng: np.random.Generator, base: float, step: float, noise: float = 0.01) -> np.ndarray:
    values = base + rng.normal(0.0, noise, N)
    values[AT:] += step
    return values


def candidate(series_id: str, values: np.ndarray) -> Candidate:
    return build_candidate(
        series_id, values, AT, times=TIMES_S, windows=WINDOWS, llr=100.0, p_value=1e-9
    )


def verdicts_of(result, series_id: str) -> dict:
    found = [c for c in result.representatives + result.removed if c.series_id == series_id]
    assert len(found) == 1
    return dict(found[0].verdicts)


# --- one group without stacks: callers that hold the cost shift's samples -------------------

ADD, TOTAL = "gcpu:Cart.add (shop/cart.py)", "gcpu:Cart.total (shop/cart.py)"
CHARGE, REFUND = "gcpu:Pay.charge (shop/pay.py)", "gcpu:Pay.refund (shop/pay.py)"
RENDER, PARSE = "gcpu:render (app/views.py)", "gcpu:parse (app/io.py)"


def one_cell(seed: int) -> tuple[list[Candidate], DedupContext]:
    """Cart.add rises by 0.6 as Cart.total falls by as much (a cost shift inside the class).
    render, parse and Pay.charge call Cart.add: each one's gCPU holds Cart.add's samples (its
    noise and its step) beside its own, so SOMDedup makes the four one group on that evidence
    (no stack samples), Cart.add, the leaf with the largest relative rise, representing it.
    Pay.refund falls as Pay.charge rises, so Pay.charge is a cost shift too; render and parse
    are not."""
    rng = np.random.default_rng(seed)
    add = series(rng, 1.0, 0.6)
    values = {
        ADD: add,
        TOTAL: series(rng, 1.0, -0.6),
        CHARGE: add + series(rng, 1.5, 0.0),
        REFUND: series(rng, 1.0, -0.6),
        RENDER: add + series(rng, 1.0, 0.0),
        PARSE: add + series(rng, 2.0, 0.0),
    }
    candidates = [candidate(s, values[s]) for s in (ADD, RENDER, CHARGE, PARSE)]
    return candidates, DedupContext(series={s: (TIMES_S, v) for s, v in values.items()})


def test_genuine_members_survive_a_representative_removed_as_a_cost_shift() -> None:
    """Cart.add represents the group and is a cost shift. Re-evaluated, Pay.charge is a cost
    shift itself and goes; render and parse are not, and render, the next by ImportanceScore,
    represents them."""
    for seed in SEEDS:
        candidates, context = one_cell(seed)
        result = deduplicate(candidates, context, [], [], DedupSettings())
        add = verdicts_of(result, ADD)
        assert add["som_dedup"].passed and add["som_dedup"].numbers["members"] == [
            ADD,
            RENDER,
            CHARGE,
            PARSE,
        ]  # one group, on the evidence of their shared noise
        assert not add["cost_shift"].passed
        assert result.funnel[Stage.SOM_DEDUP] == 1 and result.funnel[Stage.COST_SHIFT] == 1

        assert [c.series_id for c in result.representatives] == [RENDER]
        render = verdicts_of(result, RENDER)["som_dedup"]
        assert render.passed and render.numbers["former_representative"] == ADD
        assert render.numbers["members"] == [RENDER, PARSE]
        assert f"after {ADD} was removed as a cost shift" in render.reason

        charge = verdicts_of(result, CHARGE)
        assert charge["som_dedup"].passed  # the group's verdict no longer removes it ...
        assert not charge["cost_shift"].passed  # ... its own cost-shift check does
        assert list(charge) == ["share_inflation", "same_regression", "som_dedup", "cost_shift"]

        parse = verdicts_of(result, PARSE)
        assert not parse["som_dedup"].passed and parse["cost_shift"].passed
        assert parse["som_dedup"].numbers["representative"] == RENDER
        assert parse["som_dedup"].numbers["importance"] < render.numbers["importance"]

        render_id = result.representatives[0].regression_id
        parse_id = next(c.regression_id for c in result.removed if c.series_id == PARSE)
        assert result.duplicates == {render_id: [parse_id]}


def test_a_group_of_cost_shifts_goes_whole() -> None:
    candidates, context = one_cell(0)
    only_shifts = [c for c in candidates if c.series_id in (ADD, CHARGE)]
    result = deduplicate(only_shifts, context, [], [], DedupSettings())
    assert result.representatives == []
    assert {c.series_id for c in result.removed} == {ADD, CHARGE}
    assert all(not c.verdicts["cost_shift"].passed for c in result.removed)


# --- with stacks: an orphan rejoins the group that explains it ------------------------------

LEAF, SHIFTED, SOURCE = "report (app/report.py)", "label (app/ship.py)", "route (app/ship.py)"
VIEW, OTHER, PLAN = "view (app/views.py)", "batch (app/jobs.py)", "plan (app/ship.py)"


def orphan_scenario(seed: int) -> tuple[list[Candidate], DedupContext]:
    """``report`` really regresses by 1.0: 30% of its samples under ``view``, 70% under
    ``batch``. ``label`` rises by 0.5 as ``route`` falls by 0.5 (one commit moved the work; their
    only caller ``plan``, under ``view``, stays flat). ``view`` rises by 0.45 here: 0.3 of it is
    report's, and the rest noise brings it closer to label's 0.5, so SOMDedup groups it with
    label. Stacks: 1 view>report, 2 batch>report, 3 view>plan>label, 4 view>plan>route, 5 view."""
    rng = np.random.default_rng(seed)
    values = {
        LEAF: series(rng, 0.5, 1.0),
        SHIFTED: series(rng, 0.2, 0.5),
        SOURCE: series(rng, 1.0, -0.5),
        VIEW: series(rng, 5.0, 0.45),
    }
    stacks = {
        LEAF: StackShare(np.array([1, 2]), np.array([30.0, 70.0])),
        SHIFTED: StackShare(np.array([3]), np.array([50.0])),
        VIEW: StackShare(np.array([1, 3, 4, 5]), np.array([30.0, 50.0, 50.0, 100.0])),
    }
    context = DedupContext(
        series={f"gcpu:{s}": (TIMES_S, v) for s, v in values.items()},
        popularity={LEAF: 0.1, SHIFTED: 0.05, VIEW: 0.4},
        callers={LEAF: frozenset({VIEW, OTHER}), SHIFTED: frozenset({PLAN, VIEW})},
        stacks=stacks,
        commit_subroutines={"c0ffee": frozenset({SHIFTED, SOURCE})},
    )
    candidates = [candidate(f"gcpu:{s}", values[s]) for s in (LEAF, SHIFTED, VIEW)]
    return candidates, context


def test_an_orphan_joins_the_group_whose_leaf_now_explains_its_rise() -> None:
    for seed in SEEDS:
        candidates, context = orphan_scenario(seed)
        result = deduplicate(candidates, context, [], [], DedupSettings())
        label = verdicts_of(result, f"gcpu:{SHIFTED}")
        assert label["som_dedup"].numbers["members"] == [f"gcpu:{SHIFTED}", f"gcpu:{VIEW}"]
        assert not label["cost_shift"].passed  # the commit domain: route fell as label rose
        assert [c.series_id for c in result.representatives] == [f"gcpu:{LEAF}"]
        view = verdicts_of(result, f"gcpu:{VIEW}")
        assert view["cost_shift"].passed
        assert view["som_dedup"].numbers["representative"] == f"gcpu:{LEAF}"
        assert view["som_dedup"].numbers["former_representative"] == f"gcpu:{SHIFTED}"
        leaf_id = result.representatives[0].regression_id
        view_id = next(c.regression_id for c in result.removed if c.series_id == f"gcpu:{VIEW}")
        assert result.duplicates == {leaf_id: [view_id]}


def test_an_orphan_no_standing_group_explains_represents_itself() -> None:
    """The same, but ``report``'s samples are not under ``view``: nothing left explains view's
    rise, so it represents its former group."""
    for seed in SEEDS:
        candidates, context = orphan_scenario(seed)
        stacks = dict(context.stacks)
        stacks[LEAF] = StackShare(np.array([2]), np.array([70.0]))
        stacks[VIEW] = StackShare(np.array([3, 4, 5]), np.array([50.0, 50.0, 100.0]))
        context = DedupContext(
            series=context.series,
            popularity=context.popularity,
            callers=context.callers,
            stacks=stacks,
            commit_subroutines=context.commit_subroutines,
        )
        result = deduplicate(candidates, context, [], [], DedupSettings())
        assert sorted(c.series_id for c in result.representatives) == [
            f"gcpu:{LEAF}",
            f"gcpu:{VIEW}",
        ]
        view = verdicts_of(result, f"gcpu:{VIEW}")["som_dedup"]
        assert view.passed and view.numbers["former_representative"] == f"gcpu:{SHIFTED}"
