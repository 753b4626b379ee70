"""Cascades across callers are one report: a slowed function's callers on different paths share
no stack with each other and no noise strong enough for the correlation rule, but each one's rise
lies on the slowed function's stacks. An independent regression under the same ``main`` stays
apart, and the cascade rule does not put ``main``, whose rise two causes share, with either."""

from __future__ import annotations

import numpy as np
from factories import build_candidate

from regbot.detection.dedup.pairwise_dedup import pairwise_dedup
from regbot.detection.dedup_context import DedupContext, StackShare
from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import DedupSettings, PairwiseSettings

BUCKET_S = 600.0
T0_S = 1_700_000_000.0
POINTS, AT = 120, 100
TIMES = T0_S + BUCKET_S * np.arange(POINTS)
WINDOWS = WindowBounds(T0_S, TIMES[AT], TIMES[AT + 8], TIMES[-1])

# stack id -> frames below main; weights after the deploy and rises across it
STACKS = {
    0: ("A1", "F"),
    1: ("A2", "F"),
    2: ("A3", "F"),
    3: ("A4", "F"),
    4: ("A1", "G"),
    5: ("A2", "K"),
    6: ("H",),
    7: ("other",),
}
RISES = {0: 0.01, 1: 0.012, 2: 0.008, 3: 0.01, 4: 0.0005, 5: -0.0004, 6: 0.02, 7: -0.06}
WEIGHTS = {0: 40, 1: 50, 2: 30, 3: 40, 4: 200, 5: 150, 6: 80, 7: 400}


def share_of(name: str) -> StackShare:
    ids = np.array(
        sorted(k for k, frames in STACKS.items() if name == "main" or name in frames), np.int64
    )
    return StackShare(
        ids,
        np.array([WEIGHTS[k] for k in ids], np.float64),
        np.array([RISES[k] for k in ids], np.float64),
    )


def candidate(name: str, rng: np.random.Generator) -> Candidate:
    rise = float(share_of(name).rises.sum())
    values = rng.normal(0.0, 0.001, POINTS) + rise * (np.arange(POINTS) >= AT)
    return build_candidate(
        f"gcpu:{name}", values, AT, times=TIMES, windows=WINDOWS, llr=50.0, p_value=1e-9
    )


def test_callers_of_one_slowed_function_join_its_group_and_an_independent_one_stays_apart() -> None:
    rng = np.random.default_rng(0)
    names = ["A1", "A2", "A3", "A4", "F", "H", "main"]
    candidates = [candidate(n, rng) for n in names]  # independent noise: no correlation
    callers = {n: frozenset({"main"}) for n in ("A1", "A2", "A3", "A4", "H", "G", "K")}
    callers["F"] = frozenset({"main", "A1", "A2", "A3", "A4"})
    callers["main"] = frozenset()
    context = DedupContext(
        series={c.series_id: (TIMES, c.values) for c in candidates},
        callers=callers,
        stacks={n: share_of(n) for n in names},
    )
    ids = [f"r-{n}" for n in names]
    judged, groups = pairwise_dedup(candidates, [], context, DedupSettings(), regression_ids=ids)
    members = {g.id: {m.series_id.removeprefix("gcpu:") for m in g.members} for g in groups}
    home = next(m for m in members.values() if "F" in m)
    assert {"A1", "A2", "A3", "A4", "F"} <= home and "H" not in home
    assert {"H"} in members.values()
    verdicts = {c.series_id.removeprefix("gcpu:"): c.verdicts["pairwise_dedup"] for c in judged}
    # A1 holds G's stack too, but 95% of its rise lies on F's
    assert verdicts["F"].passed  # placed first: the slowed function starts the group
    assert verdicts["A1"].numbers["cascade_containment"] > 0.9
    assert verdicts["A2"].numbers["cascade_containment"] >= 0.8
    # main's rise is F's and H's: the cascade rule alone does not put it in F's group
    assert verdicts["main"].numbers["cascade_containment"] < 0.8
    assert verdicts["H"].passed


def test_without_the_cascade_rule_the_callers_are_separate_reports() -> None:
    rng = np.random.default_rng(0)
    names = ["A1", "A2", "A3", "A4", "F"]
    candidates = [candidate(n, rng) for n in names]
    callers = {n: frozenset({"main"}) for n in ("A1", "A2", "A3", "A4")}
    callers["F"] = frozenset({"main", "A1", "A2", "A3", "A4"})
    context = DedupContext(
        series={c.series_id: (TIMES, c.values) for c in candidates},
        callers=callers,
        stacks={n: share_of(n) for n in names},
    )
    off = DedupSettings(pairwise=PairwiseSettings(cascade_containment=2.0))
    _, groups = pairwise_dedup(candidates, [], context, off, regression_ids=names)
    assert len(groups) >= 3
