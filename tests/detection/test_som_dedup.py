"""SOMDedup (FBDetect §5.5.1): the batch SOM against a slow reference and on separated blobs,
planted cascades over seeds (callers hold the leaf's noise: one group, the leaf represents it;
independent cascades apart, even at one hour), the ImportanceScore by hand, and the verdicts'
contract."""

from __future__ import annotations

import json
import math
from dataclasses import astuple, replace

import numpy as np
import pytest
from factories import build_candidate, grid_windows

from regbot.detection.dedup import som_map
from regbot.detection.dedup.som_dedup import som_dedup
from regbot.detection.dedup.som_election import elect, importance_scores
from regbot.detection.dedup.som_features import root_cause_bitmap, som_features
from regbot.detection.dedup.som_map import grid_side, train_som
from regbot.detection.dedup.stack_links import stack_links
from regbot.detection.dedup_context import DedupContext, StackShare
from regbot.detection.model import Candidate, Verdict
from regbot.detection.stage_settings import BlockWeights, ImportanceWeights, SomSettings
from regbot.errors import InputError

HOUR_S = 3600.0
T0_S = 1_700_000_000.0
N_HIST, N_ANALYSIS, N_EXTENDED = 240, 24, 24  # hourly points
N_POINTS = N_HIST + N_ANALYSIS + N_EXTENDED
TIMES_S = T0_S + HOUR_S * np.arange(N_POINTS)
WINDOWS = grid_windows(T0_S, HOUR_S, N_HIST, N_ANALYSIS, T0_S + (N_POINTS - 1) * HOUR_S)
SETTINGS = SomSettings()
SEEDS = range(30)
LEAF = "gcpu:leaf (a.py)"


def make_candidate(
    series_id: str, values: np.ndarray, change_index: int, kind: str = "gcpu"
) -> Candidate:
    """A candidate over the hourly windows, its means taken from ``values`` either side of the
    change (``values[change_index:]`` is after)."""
    return build_candidate(
        series_id, values, change_index, times=TIMES_S, windows=WINDOWS, kind=kind
    )


def profile(shape: str, at: int) -> np.ndarray:
    """A unit change starting at index ``at``: a step, a ramp over 8 hours, or a step that
    overshoots for 3 hours."""
    p = np.zeros(N_POINTS)
    if shape == "step":
        p[at:] = 1.0
    elif shape == "ramp":
        p[at:] = np.minimum(np.arange(N_POINTS - at) / 8.0, 1.0)
    else:
        p[at:] = 1.0
        p[at : at + 3] = 2.5
    return p


def cascade(
    rng: np.random.Generator,
    leaf: str,
    caller: str,
    at: int,
    shape: str,
    callers: int,
    delta: float = 0.5,
    noise: float = 0.05,
) -> tuple[list[Candidate], dict[str, float]]:
    """A leaf regression of ``delta`` at hour ``at`` and ``callers`` callers whose inclusive
    series carry it on a higher base level (2–10) with their own noise (1–2× the leaf's); the
    callers' change points are a point off at random. Returns the candidates (leaf first) and
    the popularity of their subroutines (leaf 0.02, callers 0.1–0.6)."""
    base = 1.0 + delta * profile(shape, at) + rng.normal(0.0, noise, N_POINTS)
    candidates = [make_candidate(f"gcpu:{leaf}", base, at)]
    popularity = {leaf: 0.02}
    for k in range(callers):
        name = caller.format(k=k)
        own = rng.uniform(2.0, 10.0) + rng.normal(0.0, noise * rng.uniform(1.0, 2.0), N_POINTS)
        candidates.append(make_candidate(f"gcpu:{name}", base + own, at + int(rng.integers(-1, 2))))
        popularity[name] = float(rng.uniform(0.1, 0.6))
    return candidates, popularity


def groups_of(candidates: list[Candidate]) -> list[str]:
    """Each candidate's group, named by its representative's series."""
    return [
        c.series_id
        if c.verdicts["som_dedup"].passed
        else str(c.verdicts["som_dedup"].numbers["representative"])
        for c in candidates
    ]


def cells_of(candidates: list[Candidate]) -> list[tuple[int, int]]:
    return [tuple(c.verdicts["som_dedup"].numbers["cell"]) for c in candidates]  # type: ignore[misc]


# --- the map --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "side"), [(1, 1), (2, 2), (16, 2), (17, 3), (81, 3), (82, 4), (10_000, 10)]
)
def test_grid_side_is_the_ceiling_of_the_fourth_root(n: int, side: int) -> None:
    assert grid_side(n) == side


def reference_som(features: np.ndarray, side: int, epochs: int, seed: int) -> np.ndarray:
    """The batch SOM item by item and unit by unit, from the same initial units."""
    weights = som_map._initial_weights(features, side, seed)
    units = side * side

    def bmu_of(x: np.ndarray) -> int:
        return min(range(units), key=lambda u: (float(((x - weights[u]) ** 2).sum()), u))

    for radius in np.linspace(side / 2.0, som_map.FINAL_RADIUS, epochs):
        bmus = [bmu_of(x) for x in features]
        new = weights.copy()
        for u in range(units):
            num, mass = np.zeros(features.shape[1]), 0.0
            for x, b in zip(features, bmus):
                grid_d2 = (u // side - b // side) ** 2 + (u % side - b % side) ** 2
                h = math.exp(-grid_d2 / (2 * radius * radius))
                num += h * x
                mass += h
            new[u] = num / mass
        weights = new
    return weights


def test_train_som_matches_the_slow_reference() -> None:
    rng = np.random.default_rng(7)
    features = rng.normal(size=(40, 5))
    weights, bmu = train_som(features, 3, 12, seed=0)
    expected = reference_som(features, 3, 12, seed=0)
    np.testing.assert_allclose(weights, expected, rtol=1e-9, atol=1e-12)
    d2 = ((features[:, None, :] - weights[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(bmu, d2.argmin(axis=1))


@pytest.mark.parametrize("side", [2, 3, 4])
def test_train_som_puts_each_separated_blob_in_its_own_unit(side: int) -> None:
    """side² tight blobs on a lattice (spacing 10, in a random plane of 6-D space, lattice
    order shuffled): each blob lands in one unit, and no two share one."""
    rng = np.random.default_rng(side)
    blobs = side * side
    plane, _ = np.linalg.qr(rng.normal(size=(6, 2)))
    lattice = 10.0 * np.array([[i, j] for i in range(side) for j in range(side)], dtype=float)
    centres = rng.permutation(lattice) @ plane.T
    labels = np.repeat(np.arange(blobs), 15)
    features = centres[labels] + rng.normal(0.0, 0.3, size=(labels.size, 6))
    weights, bmu = train_som(features, side, 30, seed=0)
    assert weights.shape == (blobs, 6)
    units_of = [set(bmu[labels == b].tolist()) for b in range(blobs)]
    assert all(len(units) == 1 for units in units_of)
    assert len(set.union(*units_of)) == blobs


def test_train_som_is_deterministic_for_a_seed() -> None:
    features = np.random.default_rng(3).normal(size=(200, 8))
    w1, b1 = train_som(features, 4, 20, seed=5)
    w2, b2 = train_som(features, 4, 20, seed=5)
    np.testing.assert_array_equal(w1, w2)
    np.testing.assert_array_equal(b1, b2)
    assert b1.dtype == np.int64 and b1.min() >= 0 and b1.max() < 16


def test_train_som_with_one_and_two_items() -> None:
    weights, bmu = train_som(np.array([[1.0, 2.0]]), 1, 30, seed=0)
    np.testing.assert_allclose(weights, [[1.0, 2.0]])
    assert bmu.tolist() == [0]
    weights, bmu = train_som(np.array([[0.0, 0.0], [5.0, 5.0]]), 2, 30, seed=0)
    assert weights.shape == (4, 2) and bmu[0] != bmu[1]
    same, bmu = train_som(np.ones((3, 2)), 2, 30, seed=0)  # no variance at all
    np.testing.assert_allclose(same, np.ones((4, 2)))
    assert len(set(bmu.tolist())) == 1


# --- planted cascades -----------------------------------------------------------------------


def test_a_cascade_is_one_cell_represented_by_its_leaf() -> None:
    one_cell = leaf_wins = 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        at = N_HIST + int(rng.integers(2, N_ANALYSIS - 2))
        candidates, popularity = cascade(
            rng, "leaf (a.py)", "caller_{k} (b.py)", at, "step", callers=1 + seed % 20
        )
        context = DedupContext(
            popularity=popularity,
            commit_subroutines={"c1": frozenset({"leaf (a.py)"}), "c2": frozenset({"x (z.py)"})},
        )
        out = som_dedup(candidates, context, SETTINGS)
        one_cell += len(set(cells_of(out))) == 1
        leaf_wins += out[0].verdicts["som_dedup"].passed  # out[0] is the leaf (input order)
    assert one_cell >= 0.95 * len(SEEDS)  # measured: 30 of 30
    assert leaf_wins >= 0.95 * len(SEEDS)  # measured: 30 of 30


def test_the_leaf_wins_without_a_root_cause_too() -> None:
    rng = np.random.default_rng(11)
    candidates, popularity = cascade(
        rng, "leaf (a.py)", "caller_{k} (b.py)", N_HIST + 8, "step", 12
    )
    out = som_dedup(candidates, DedupContext(popularity=popularity), SETTINGS)
    assert [c.verdicts["som_dedup"].passed for c in out] == [True] + [False] * 12
    assert all(c.verdicts["som_dedup"].reason == f"duplicate of {LEAF}" for c in out[1:])


@pytest.mark.parametrize(
    ("gap", "shapes"), [(12, ("step", "ramp")), (8, ("step", "step")), (0, ("step", "step"))]
)
def test_independent_cascades_never_share_a_group(gap: int, shapes: tuple[str, str]) -> None:
    """Two cascades with noise of their own, ``gap`` hours apart: at gap 0 (one deploy) they
    share shape and time, and stay two groups all the same."""
    pure = whole = 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        at = N_HIST + 2 + int(rng.integers(0, N_ANALYSIS - gap - 4))
        first, pop_first = cascade(
            rng, "parse (a.py)", "caller_{k} (b.py)", at, shapes[0], 1 + seed % 20
        )
        second, pop_second = cascade(
            rng, "encode (c.py)", "handler_{k} (d.py)", at + gap, shapes[1], 1 + (7 * seed) % 20
        )
        context = DedupContext(popularity={**pop_first, **pop_second})
        out = som_dedup(first + second, context, SETTINGS)
        groups_first, groups_second = (
            set(groups_of(out[: len(first)])),
            set(groups_of(out[len(first) :])),
        )
        pure += not groups_first & groups_second
        whole += len(groups_first) == 1 and len(groups_second) == 1
    assert pure >= 0.95 * len(SEEDS)  # measured: 30 of 30
    assert whole >= 0.9 * len(SEEDS)  # measured: 30 of 30


def test_kinds_get_their_own_maps() -> None:
    rng = np.random.default_rng(2)
    candidates, popularity = cascade(rng, "leaf (a.py)", "caller_{k} (b.py)", N_HIST + 6, "step", 4)
    qps = make_candidate("svc/qps", candidates[0].values.copy(), N_HIST + 6, kind="throughput")
    out = som_dedup([*candidates, qps], DedupContext(popularity=popularity), SETTINGS)
    assert out[-1].verdicts["som_dedup"].passed
    assert out[-1].verdicts["som_dedup"].numbers["members"] == ["svc/qps"]
    assert out[0].verdicts["som_dedup"].passed


# --- ImportanceScore ------------------------------------------------------------------------


def twin(series_id: str, seed: int = 4) -> Candidate:
    values = 1.0 + 0.5 * profile("step", N_HIST + 6)
    values = values + np.random.default_rng(seed).normal(0.0, 0.05, N_POINTS)
    return make_candidate(series_id, values, N_HIST + 6)


def test_the_root_cause_bitmap_tips_the_representative_when_deltas_tie() -> None:
    """The election within one group (``elect``): equal deltas, so the root-cause bit decides.
    Twins of one seed have the same noise, so SOMDedup also makes them one group (identical
    noise is the strongest evidence of one cause) and the bit picks its representative."""
    a, b = twin("gcpu:alpha (x.py)"), twin("gcpu:beta (y.py)")
    assert a.delta == b.delta
    popularity = {"alpha (x.py)": 0.1, "beta (y.py)": 0.1}
    plain = elect([a, b], DedupContext(popularity=popularity), SETTINGS)
    assert plain.best == 0  # by series id
    context = DedupContext(
        popularity=popularity, commit_subroutines={"deadbeef": frozenset({"beta (y.py)"})}
    )
    tipped = elect([a, b], context, SETTINGS)
    assert tipped.best == 1 and tipped.found.tolist() == [False, True]
    assert tipped.scores[1] == pytest.approx(0.2 + 0.6 + 0.1 * 0.9 + 0.1)
    assert tipped.scores[0] == pytest.approx(0.2 + 0.6 + 0.09)
    out = som_dedup([a, b], context, SETTINGS)
    assert [c.verdicts["som_dedup"].passed for c in out] == [False, True]
    numbers = out[1].verdicts["som_dedup"].numbers
    assert numbers["root_cause_found"] is True and numbers["members"] == [a.series_id, b.series_id]


def test_a_long_term_detection_never_represents_a_short_term_one() -> None:
    """The issue's case: a long-term rise on a small function (a large relative change) grouped
    with the culprit's own short-term step: the short-term step represents the group, though
    the long-term member's ImportanceScore is higher."""
    step = twin("gcpu:alpha (x.py)")
    rise = replace(twin("gcpu:beta (y.py)"), detector="long-term", mean_before=0.2)
    context = DedupContext(popularity={"alpha (x.py)": 0.1, "beta (y.py)": 0.1})
    election = elect([rise, step], context, SETTINGS)
    assert election.scores[0] > election.scores[1]
    assert election.best == 1
    assert elect([rise], context, SETTINGS).best == 0  # alone, it represents itself


def test_ties_go_to_the_less_popular_subroutine() -> None:
    a, b = twin("gcpu:alpha (x.py)"), twin("gcpu:beta (y.py)")
    context = DedupContext(popularity={"alpha (x.py)": 0.5, "beta (y.py)": 0.2})
    no_popularity = SomSettings(weights=ImportanceWeights(popularity=0.0))
    assert elect([a, b], context, no_popularity).best == 1


def test_twins_with_noise_of_their_own_are_two_groups() -> None:
    """Same step, same hour, same level, different noise: one SOM cell, two groups, and each
    representative's verdict says why (the strongest pair it was tested with, not significant)."""
    a, b = twin("gcpu:alpha (x.py)", seed=4), twin("gcpu:beta (y.py)", seed=5)
    out = som_dedup([a, b], DedupContext(), SETTINGS)
    assert [c.verdicts["som_dedup"].passed for c in out] == [True, True]
    numbers = out[0].verdicts["som_dedup"].numbers
    assert numbers["evidence"] == "none" and numbers["evidence_with"] == b.series_id
    assert numbers["evidence_noise_p"] > numbers["evidence_noise_p_bound"]


def test_importance_scores_by_hand() -> None:
    def at_levels(before: float, after: float) -> Candidate:
        values = np.r_[np.full(N_HIST, before), np.full(N_POINTS - N_HIST, after)]
        return make_candidate("gcpu:f (a.py)", values, N_HIST)

    group = [at_levels(1.0, 1.5), at_levels(4.0, 5.0), at_levels(0.0, 0.25), at_levels(2.0, 1.0)]
    scores, terms = importance_scores(
        group,
        np.array([0.1, 0.4, 0.0, 0.0]),
        np.array([False, True, False, False]),
        ImportanceWeights(),
        relative_cap=SETTINGS.relative_cap,
    )
    # relative: 0.5, 0.25, cap 10 (a new cost), 0 (an improvement) over the largest, 10;
    # absolute: 0.5, 1.0, 0.25, 0 over the largest |delta|, 1.0
    np.testing.assert_allclose(terms[:, 0], [0.05, 0.025, 1.0, 0.0])
    np.testing.assert_allclose(terms[:, 1], [0.5, 1.0, 0.25, 0.0])
    np.testing.assert_allclose(terms[:, 2], [0.9, 0.6, 1.0, 1.0])
    np.testing.assert_allclose(terms[:, 3], [0, 1, 0, 0])
    np.testing.assert_allclose(scores, terms @ [0.2, 0.6, 0.1, 0.1])


def test_root_cause_bitmap_has_one_column_per_commit() -> None:
    candidates = [twin("gcpu:a (x.py)"), twin("gcpu:b (x.py)"), twin("svc/qps")]
    context = DedupContext(
        commit_subroutines={
            "c1": frozenset({"a (x.py)"}),
            "c2": frozenset({"a (x.py)", "b (x.py)"}),
        }
    )
    assert root_cause_bitmap(candidates, context).tolist() == [
        [True, True],
        [False, True],
        [False, False],
    ]
    assert root_cause_bitmap(candidates, DedupContext()).shape == (3, 0)


# --- the verdicts' contract -----------------------------------------------------------------


def test_every_candidate_gets_a_serialisable_verdict_in_input_order() -> None:
    rng = np.random.default_rng(9)
    first, pop_first = cascade(rng, "parse (a.py)", "caller_{k} (b.py)", N_HIST + 3, "step", 6)
    second, pop_second = cascade(
        rng, "encode (c.py)", "handler_{k} (d.py)", N_HIST + 18, "spike", 5
    )
    candidates = first + second
    out = som_dedup(candidates, DedupContext(popularity={**pop_first, **pop_second}), SETTINGS)
    assert [c.series_id for c in out] == [c.series_id for c in candidates]
    by_id = {c.series_id: c.verdicts["som_dedup"] for c in out}
    for c in out:
        verdict = c.verdicts["som_dedup"]
        assert verdict.stage == "som_dedup"
        json.dumps(verdict.numbers)
        if not verdict.passed:
            representative = by_id[str(verdict.numbers["representative"])]
            assert representative.passed
            assert representative.numbers["cell"] == verdict.numbers["cell"]
            assert c.series_id in representative.numbers["members"]  # type: ignore[operator]
            assert verdict.numbers["importance"] <= verdict.numbers["representative_importance"]
    representatives = [v for v in by_id.values() if v.passed]
    assert sum(len(v.numbers["members"]) for v in representatives) == len(candidates)  # type: ignore[arg-type]
    assert {tuple(v.numbers["cell"]) for v in representatives} == set(cells_of(out))  # type: ignore[arg-type]
    assert all(v.numbers["side"] == grid_side(len(candidates)) for v in representatives)


def test_one_and_two_candidates_and_none() -> None:
    assert som_dedup([], DedupContext(), SETTINGS) == []
    (alone,) = som_dedup([twin("gcpu:a (x.py)")], DedupContext(), SETTINGS)
    verdict = alone.verdicts["som_dedup"]
    assert verdict.passed and verdict.numbers["cell"] == [0, 0] and verdict.numbers["side"] == 1
    far = make_candidate("gcpu:b (y.py)", 1.0 + 0.5 * profile("ramp", N_HIST + 20), N_HIST + 20)
    pair = som_dedup([twin("gcpu:a (x.py)"), far], DedupContext(), SETTINGS)
    assert [c.verdicts["som_dedup"].passed for c in pair] == [True, True]


def test_som_dedup_is_deterministic_and_keeps_other_verdicts() -> None:
    rng = np.random.default_rng(5)
    candidates, popularity = cascade(rng, "leaf (a.py)", "caller_{k} (b.py)", N_HIST + 9, "ramp", 9)
    earlier = Verdict("threshold", True, "above the threshold")
    candidates = [c.with_verdict(earlier) for c in candidates]
    context = DedupContext(popularity=popularity)
    first, again = (
        som_dedup(candidates, context, SETTINGS),
        som_dedup(candidates, context, SETTINGS),
    )
    assert [c.verdicts for c in first] == [c.verdicts for c in again]
    assert all(list(c.verdicts) == ["threshold", "som_dedup"] for c in first)
    assert all(c.verdicts["threshold"] is earlier for c in first)


def test_settings_are_validated() -> None:
    with pytest.raises(InputError, match="SomSettings.epochs"):
        som_dedup([twin("gcpu:a (x.py)")], DedupContext(), SomSettings(epochs=0))
    with pytest.raises(InputError, match="SomSettings.weights"):
        infinite = SomSettings(weights=ImportanceWeights(popularity=math.inf))
        som_dedup([twin("gcpu:a (x.py)")], DedupContext(), infinite)
    for field, value in (
        ("merge_distance", -0.1),
        ("cascade_buckets", -1),
        ("relative_cap", 0.0),
        ("block_weights", BlockWeights(shape=math.nan)),
        ("block_weights", BlockWeights(position=-3.0)),
    ):
        with pytest.raises(InputError, match=f"SomSettings.{field}"):
            som_dedup([twin("gcpu:a (x.py)")], DedupContext(), replace(SETTINGS, **{field: value}))


def test_the_map_constants_come_from_the_settings() -> None:
    """``merge_distance``, ``block_weights`` and ``relative_cap`` reach the stage (their
    defaults, 0.5, (1, 0.5, 3, 0.2, 0.2) and 10, are what the other tests run with)."""
    rng = np.random.default_rng(11)
    candidates, popularity = cascade(
        rng, "leaf (a.py)", "caller_{k} (b.py)", N_HIST + 8, "step", 12
    )
    context = DedupContext(popularity=popularity)
    assert len(set(cells_of(som_dedup(candidates, context, SETTINGS)))) == 1
    apart = som_dedup(candidates, context, replace(SETTINGS, merge_distance=0.0))
    assert len(set(cells_of(apart))) > 1  # no unit merges: the map's own split stays
    features, _ = som_features(candidates, context, SETTINGS)
    doubled = replace(
        SETTINGS, block_weights=BlockWeights(*(2 * w for w in astuple(SETTINGS.block_weights)))
    )
    np.testing.assert_allclose(som_features(candidates, context, doubled)[0], 2 * features)
    new_cost = make_candidate("gcpu:new (n.py)", np.r_[np.zeros(N_HIST), np.ones(48)], N_HIST)
    grown = make_candidate("gcpu:old (o.py)", np.r_[np.ones(N_HIST), np.full(48, 1.5)], N_HIST)
    for cap in (SETTINGS.relative_cap, 1.0):
        election = elect([new_cost, grown], DedupContext(), replace(SETTINGS, relative_cap=cap))
        np.testing.assert_allclose(election.terms[:, 0], [1.0, 0.5 / cap])


# --- stack groups: leaf-to-ancestor links ---------------------------------------------------

LEFT, RIGHT, CALLER = "parse (a.py)", "encode (c.py)", "handle_request (server.py)"


def two_leaves_under_one_caller(
    seed: int, left: float, right: float, callers: bool = True
) -> tuple[list[Candidate], DedupContext]:
    """Two unrelated leaves regress at the same hour by ``left`` and ``right``; their common
    caller's inclusive gCPU rises by the sum. Stacks: 1-2 caller>parse, 3-4 caller>encode, 5
    the caller's own code; every stack carries 10 samples in the windows."""
    rng = np.random.default_rng(seed)
    at = N_HIST + 6
    step = profile("step", at)
    parse = 1.0 + left * step + rng.normal(0.0, 0.05, N_POINTS)
    encode = 1.0 + right * step + rng.normal(0.0, 0.05, N_POINTS)
    caller = parse + encode + 5.0 + rng.normal(0.0, 0.05, N_POINTS)
    candidates = [
        make_candidate(f"gcpu:{LEFT}", parse, at),
        make_candidate(f"gcpu:{RIGHT}", encode, at),
        make_candidate(f"gcpu:{CALLER}", caller, at + int(rng.integers(-1, 2))),
    ]
    stacks = {
        LEFT: StackShare(np.array([1, 2]), np.full(2, 10.0)),
        RIGHT: StackShare(np.array([3, 4]), np.full(2, 10.0)),
        CALLER: StackShare(np.arange(1, 6), np.full(5, 10.0)),
    }
    context = DedupContext(
        popularity={LEFT: 0.02, RIGHT: 0.02, CALLER: 0.9},
        callers={LEFT: frozenset({CALLER}), RIGHT: frozenset({CALLER})} if callers else {},
        stacks=stacks,
    )
    return candidates, context


@pytest.mark.parametrize("callers", [True, False])
def test_a_caller_of_two_unrelated_leaves_does_not_join_them(callers: bool) -> None:
    """Two groups; the caller, whose rise is the sum, joins the larger leaf's group and is
    credited with that leaf's part only, so each leaf represents its own group. Without callers
    the caller is told from its leaves by its larger sample weight."""
    for seed in SEEDS:
        left, right = (0.5, 0.3) if seed % 2 else (0.3, 0.5)
        candidates, context = two_leaves_under_one_caller(seed, left, right, callers)
        parse, encode, caller = (
            c.verdicts["som_dedup"] for c in som_dedup(candidates, context, SETTINGS)
        )
        assert parse.passed and encode.passed and not caller.passed
        larger = LEFT if left > right else RIGHT
        assert caller.numbers["representative"] == f"gcpu:{larger}"
        assert parse.numbers["members"] == [f"gcpu:{LEFT}"] + (
            [f"gcpu:{CALLER}"] if larger == LEFT else []
        )
        credited = caller.numbers["credited_change"]
        assert credited == pytest.approx(max(left, right), abs=0.05)
        assert credited < candidates[2].delta - 0.2  # not the sum it measured


def test_stack_links_by_hand() -> None:
    candidates, context = two_leaves_under_one_caller(0, 0.5, 0.3)
    links = stack_links(candidates, context, SETTINGS)
    assert links.head.tolist() == [0, 1, 0]
    delta = [c.delta for c in candidates]
    assert links.credited[:2].tolist() == delta[:2]
    # parse's samples all lie under it; encode's rise there belongs to encode's group, and the
    # caller's own code did not rise: it counts parse's rise
    assert links.credited[2] == pytest.approx(delta[0])
    # Half of parse's samples under the caller: it explains half of parse's rise.
    half = DedupContext(
        callers=context.callers,
        stacks={**context.stacks, CALLER: StackShare(np.array([1, 3, 4, 5]), np.full(4, 10.0))},
    )
    links = stack_links(candidates, half, SETTINGS)
    assert links.head.tolist() == [0, 1, 1]  # now encode's whole rise comes closer
    assert links.credited[2] == pytest.approx(delta[1])
    # A candidate without stacks has no head and keeps its delta.
    qps = make_candidate("qps:svc", candidates[0].values, N_HIST + 6, kind="throughput")
    links = stack_links([*candidates, qps], context, SETTINGS)
    assert links.head[3] == -1 and links.credited[3] == qps.delta


def test_a_caller_whose_own_code_rose_represents_its_slightly_busier_callee() -> None:
    """The caller's self time rose far more than the one leaf below it (a slower loop above a
    callee called a little more): the caller is credited with its own rise and represents the
    group, never the leaf with the small rise."""
    for seed in SEEDS:
        candidates, context = two_leaves_under_one_caller(seed, 0.1, 0.0)
        rng = np.random.default_rng(seed + 100)
        # the caller's own code (stack 5) rises by 3.0 at the same hour
        values = candidates[2].values + 3.0 * profile("step", N_HIST + 6)
        values = values + rng.normal(0.0, 0.01, N_POINTS)
        candidates = [candidates[0], make_candidate(candidates[2].series_id, values, N_HIST + 6)]
        links = stack_links(candidates, context, SETTINGS)
        assert links.head.tolist() == [0, 0]
        assert links.credited[1] == pytest.approx(candidates[1].delta)
        parse, caller = (c.verdicts["som_dedup"] for c in som_dedup(candidates, context, SETTINGS))
        assert caller.passed and not parse.passed
        assert parse.numbers["representative"] == candidates[1].series_id


def test_a_caller_whose_rise_is_its_leafs_plus_noise_does_not_represent_it() -> None:
    """The caller on every stack rose by its leaf's rise and a little of its own noise: the
    leaf represents the group (the caller's own part is smaller than the leaf's)."""
    for seed in SEEDS:
        candidates, context = two_leaves_under_one_caller(seed, 0.5, 0.0)
        values = candidates[2].values + 0.05 * profile("step", N_HIST + 6)
        candidates = [candidates[0], make_candidate(candidates[2].series_id, values, N_HIST + 6)]
        parse, caller = (c.verdicts["som_dedup"] for c in som_dedup(candidates, context, SETTINGS))
        assert parse.passed and not caller.passed


def test_stack_rises_say_which_part_of_a_callers_rise_is_another_groups() -> None:
    """With the stacks' own rises, the caller's credit is its delta less the rise of the stacks
    holding the other group's leaf (encode): its own code's rise (stack 5) stays with it, so it
    represents parse's group when that rise is the larger, and not otherwise."""
    for own, caller_represents in ((0.0, False), (2.0, True)):
        candidates, context = two_leaves_under_one_caller(3, 0.5, 0.3)
        values = candidates[2].values + own * profile("step", N_HIST + 6)
        candidates[2] = make_candidate(candidates[2].series_id, values, N_HIST + 6)
        rises = np.array([0.25, 0.25, 0.15, 0.15, own])  # parse, parse, encode, encode, own
        stacks = {**context.stacks, CALLER: replace(context.stacks[CALLER], rises=rises)}
        context = replace(context, stacks=stacks)
        links = stack_links(candidates, context, SETTINGS)
        assert links.head.tolist() == [0, 1, 0]
        mine = candidates[2].delta - 0.3  # less encode's group's stacks
        own_code = mine - candidates[0].delta
        expected = mine if own_code > candidates[0].delta else candidates[0].delta
        assert links.credited[2] == pytest.approx(expected)
        assert (own_code > candidates[0].delta) is caller_represents
        parse, _, caller = (
            c.verdicts["som_dedup"] for c in som_dedup(candidates, context, SETTINGS)
        )
        assert caller.passed is caller_represents and parse.passed is not caller_represents


def test_an_ancestor_changing_at_another_moment_is_its_own_group() -> None:
    candidates, context = two_leaves_under_one_caller(3, 0.5, 0.3)
    late = N_HIST + 6 + SETTINGS.cascade_buckets + 4
    values = candidates[2].values.copy()
    candidates[2] = make_candidate(candidates[2].series_id, values, late)
    links = stack_links(candidates, context, SETTINGS)
    assert links.head.tolist() == [0, 1, 2]
    wider = replace(SETTINGS, cascade_buckets=SETTINGS.cascade_buckets + 8)
    assert stack_links(candidates, context, wider).head.tolist() == [0, 1, 0]  # one moment again
    out = som_dedup(candidates, context, SETTINGS)
    assert all(c.verdicts["som_dedup"].passed for c in out)
