"""Stack-trace deduplication (KDD'18 §2.3) on a small call tree whose stacks carry the leaf's
samples into its callers; magnitudes are gCPU shares (``delta`` = mean after - mean before)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from factories import build_candidate

from regbot.datasets.cascades import tree_stack_shares
from regbot.detection.dedup import DedupSettings
from regbot.detection.dedup.stack_dedup import _Attempt, _Problem, bucket_change_points, stack_dedup
from regbot.detection.dedup_context import DedupContext
from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds

T_S = 1_700_000_000.0
MINUTE_S = 60.0
WINDOWS = WindowBounds(T_S - 86400.0, T_S - 3600.0, T_S + 3600.0, T_S + 7200.0)

LEAF = "Db.query (app/db.py)"
CALLER = "Feed.load (app/feed.py)"
WEB = "Web.handle (app/web.py)"
IMAGE = "Image.resize (media/image.py)"
TREE = {
    "main": (WEB, "Jobs.run (jobs/run.py)"),
    WEB: (CALLER, "Page.render (app/page.py)"),
    CALLER: (LEAF,),
    "Jobs.run (jobs/run.py)": (IMAGE,),
}
SELF_SAMPLES = {
    "main": 5.0,
    WEB: 10.0,
    CALLER: 10.0,
    LEAF: 30.0,
    "Page.render (app/page.py)": 20.0,
    "Jobs.run (jobs/run.py)": 5.0,
    IMAGE: 25.0,
}
TOTAL = sum(SELF_SAMPLES.values())


STACKS, CALLERS = tree_stack_shares(TREE, SELF_SAMPLES)
CONTEXT = DedupContext(stacks=STACKS, callers=CALLERS)


def gcpu_before(subroutine: str, stacks=STACKS) -> float:
    return float(stacks[subroutine].weights.sum()) / TOTAL


def candidate(subroutine: str, delta: float, minutes: float = 0.0, *, before=None) -> Candidate:
    """A gCPU candidate for ``subroutine`` changing by ``delta`` at ``T_S + minutes``."""
    at_s = T_S + minutes * MINUTE_S
    base = gcpu_before(subroutine) if before is None else before
    times = np.array([at_s - 600.0, at_s, at_s + 600.0])
    values = np.array([base, base + delta, base + delta])
    return build_candidate(
        f"gcpu:{subroutine}", values, 1, times=times, windows=WINDOWS, llr=20.0, p_value=1e-6
    )


def judged(candidates, context=CONTEXT, **settings):
    """The verdicts with ``DedupSettings(**settings)`` (its ``kdd18_*`` fields)."""
    verdicts = stack_dedup(candidates, context, DedupSettings(**settings))
    return [c.verdicts["stack_dedup"] for c in verdicts]


def test_a_caller_is_explained_by_its_leaf() -> None:
    leaf, caller = judged([candidate(CALLER, 0.01, 3.0), candidate(LEAF, 0.01)])[::-1]
    assert leaf.passed and not caller.passed
    assert caller.numbers["explained_by"] == f"gcpu:{LEAF}"
    assert caller.numbers["bucket"] == leaf.numbers["bucket"] == 0
    assert caller.numbers["revised_magnitude"] == pytest.approx(0.0, abs=1e-12)
    assert leaf.numbers["revised_magnitude"] == pytest.approx(0.01)
    assert leaf.numbers["regression_set"] == [f"gcpu:{LEAF}"]
    # The graph's labels: the leaf holds 30 of the bucket's 40 samples, none of them alone.
    assert leaf.numbers["stack_share"] == pytest.approx(30 / 40)
    assert leaf.numbers["exclusive_share"] == 0.0
    assert caller.numbers["exclusive_share"] == pytest.approx(10 / 40)
    # Set from the leaf: everything explained, 75% of the stacks: 1 - 0.5 × 0.75.
    assert leaf.numbers["set_score"] == pytest.approx(0.625)
    assert caller.reason.startswith(f"explained by gcpu:{LEAF} (bucket 0)")


def test_a_high_level_caller_is_explained_too() -> None:
    """Web.handle's share is large, so its relative change is small: the leaf explains it."""
    web, leaf = judged([candidate(WEB, 0.01, 1.0), candidate(LEAF, 0.01)])
    assert leaf.passed and not web.passed and web.numbers["explained_by"] == f"gcpu:{LEAF}"


def test_a_caller_with_its_own_regression_is_kept_with_a_revised_magnitude() -> None:
    leaf, caller = judged([candidate(LEAF, 0.01), candidate(CALLER, 0.03, 2.0)])
    assert leaf.passed and caller.passed
    assert caller.numbers["revised_magnitude"] == pytest.approx(0.02)
    assert caller.numbers["magnitude"] == pytest.approx(0.03)
    assert leaf.numbers["regression_set"] == [f"gcpu:{LEAF}", f"gcpu:{CALLER}"]


def test_identical_stacks_go_to_the_deeper_subroutine() -> None:
    """Feed.load without self samples: the same stacks as the leaf, the same scores; the callers
    map breaks the tie towards the leaf, whatever the input order."""
    samples = {**SELF_SAMPLES, CALLER: 0.0}
    stacks, callers = tree_stack_shares(TREE, samples)
    context = DedupContext(stacks=stacks, callers=callers)
    for order in (1, -1):
        pair = [candidate(CALLER, 0.01, before=0.3), candidate(LEAF, 0.01, before=0.3)][::order]
        verdicts = {v.numbers["regression_set"][0] for v in judged(pair, context)}
        assert verdicts == {f"gcpu:{LEAF}"}


def test_disjoint_stacks_are_both_kept() -> None:
    leaf, image = judged([candidate(LEAF, 0.01), candidate(IMAGE, 0.01, 1.0)])
    assert leaf.passed and image.passed
    assert (leaf.numbers["bucket"], image.numbers["bucket"]) == (0, 1)
    assert leaf.numbers["bucket_size"] == 1 and leaf.numbers["explained_by"] is None
    assert "shares a stack" in leaf.reason


@pytest.mark.parametrize(("minutes", "together"), [(9.0, True), (10.0, True), (20.0, False)])
def test_change_points_bucket_within_ten_minutes(minutes: float, together: bool) -> None:
    leaf, caller = judged([candidate(LEAF, 0.01), candidate(CALLER, 0.01, minutes)])
    assert (leaf.numbers["bucket"] == caller.numbers["bucket"]) is together
    assert caller.passed is not together


def test_the_kdd18_constants_come_from_the_dedup_settings() -> None:
    """``DedupSettings.kdd18_*`` reach the stage: the bucket, the explained share, the stack
    term's weight and the relative cap (their defaults are the tests above)."""
    near = [candidate(LEAF, 0.01), candidate(CALLER, 0.01, 9.0)]
    leaf, caller = judged(near, kdd18_bucket_s=300.0)
    assert leaf.numbers["bucket"] != caller.numbers["bucket"] and caller.passed
    own = [candidate(LEAF, 0.01), candidate(CALLER, 0.03, 2.0)]
    leaf, caller = judged(own, kdd18_explained_share=0.7)  # 0.02 of 0.03 left: explained
    assert not leaf.passed and caller.numbers["regression_set"] == [f"gcpu:{CALLER}"]
    leaf, _ = judged(own, kdd18_stack_weight=0.0)
    assert leaf.numbers["set_score"] == pytest.approx(1.0)
    (new,) = judged([candidate(LEAF, 0.01, before=0.0)], kdd18_relative_cap=7.0)
    assert new.numbers["relative_change"] == 7.0
    (new,) = judged([candidate(LEAF, 0.01, before=0.0)])
    assert new.numbers["relative_change"] == DedupSettings().kdd18_relative_cap == 100.0


def test_buckets_link_in_a_chain_and_need_a_shared_stack() -> None:
    shared, other = np.array([1, 7]), np.array([3])
    minutes = np.array([0.0, 8.0, 16.0, 40.0, 41.0]) * MINUTE_S
    stacks = [shared, np.array([7]), shared, shared, other]
    assert bucket_change_points(minutes, stacks, 600.0) == [[0, 1, 2], [3], [4]]
    assert bucket_change_points([], [], 600.0) == []


def test_candidates_without_stacks_pass_untouched() -> None:
    throughput = candidate(LEAF, 0.01)
    throughput = Candidate(
        "throughput:feed", "throughput", *[getattr(throughput, f) for f in FIELDS]
    )
    unknown = candidate(LEAF, 0.01)
    unknown = Candidate("gcpu:Gone.away (x.py)", "gcpu", *[getattr(unknown, f) for f in FIELDS])
    for verdict in judged([throughput, unknown, candidate(LEAF, 0.01)])[:2]:
        assert verdict.passed and verdict.numbers == {"bucket": None}


FIELDS = (
    "times_s",
    "values",
    "sign",
    "change_index",
    "change_time_s",
    "mean_before",
    "mean_after",
    "llr",
    "p_value",
    "windows",
)


def random_bucket(seed: int) -> list[Candidate]:
    rng = np.random.default_rng(seed)
    names = [n for n in STACKS if n != "main"]
    chosen = rng.choice(len(names), size=int(rng.integers(2, len(names) + 1)), replace=False)
    return [
        candidate(names[k], float(rng.uniform(0.001, 0.02)), float(rng.uniform(0, 8)))
        for k in chosen
    ]


@pytest.mark.parametrize("seed", range(20))
def test_every_bucket_keeps_a_regression_and_numbers_are_json(seed: int) -> None:
    candidates = random_bucket(seed)
    verdicts = judged(candidates)
    assert judged(candidates) == verdicts  # pure and deterministic
    by_bucket: dict[int, list[bool]] = {}
    for v in verdicts:
        numbers = json.loads(json.dumps(v.numbers, allow_nan=False))
        assert set(numbers) >= {"bucket", "exclusive_share", "revised_magnitude", "explained_by"}
        by_bucket.setdefault(numbers["bucket"], []).append(v.passed)
        assert 0.0 <= numbers["revised_magnitude"] <= numbers["magnitude"] + 1e-12
        if not v.passed:
            assert (
                numbers["explained_by"] is None
                or numbers["explained_by"] in numbers["regression_set"]
            )
    assert all(any(kept) for kept in by_bucket.values())


# --- the incremental greedy against a slow reference ------------------------------------------


def naive_attempt(self: _Problem, start: int):
    """Greedy removal from ``start`` recomputing every count from the incidence at each step."""
    k = len(self.magnitude)
    alive = np.ones(k, dtype=bool)
    remaining = np.ones(len(self.weight), dtype=bool)
    m = self.magnitude.copy()
    revised, explained_by, cut_most = np.zeros(k), np.full(k, -1), np.zeros(k)
    selected, current = [], start
    while True:
        selected.append(current)
        alive[current] = False
        revised[current] = max(m[current], 0.0)
        removed = remaining & (self.incidence[current] > 0)
        removed_weight = self.weight[removed].sum()
        if removed_weight > 0 and revised[current] > 0:
            cut = revised[current] * (self.incidence[:, removed] @ self.weight[removed])
            cut = np.where(alive, cut / removed_weight, 0.0)
            m -= cut
            larger = cut > cut_most
            explained_by[larger], cut_most[larger] = current, cut[larger]
        remaining &= ~removed
        left = self.incidence[:, remaining].sum(axis=1)
        alive &= ~((m <= self.explained_share * self.magnitude) | (left <= 0))
        if not alive.any():
            break
        active = self.incidence[alive][:, remaining].any(axis=0)
        if self.weight[remaining][active].sum() < self.tolerance * self.total:
            break
        on = self.incidence[:, remaining]
        alone = on[alive].sum(axis=0) == 1
        exclusive = on[:, alone] @ self.weight[remaining][alone]
        best = max(np.flatnonzero(alive), key=lambda j: (exclusive[j], m[j], -j))
        current = int(best)
    chosen = np.zeros(k, dtype=bool)
    chosen[selected] = True
    residual = np.clip(m, 0.0, self.magnitude)
    part = [
        1.0
        if chosen[j]
        else (1 - residual[j] / self.magnitude[j] if self.magnitude[j] > 0 else 1.0)
        for j in range(k)
    ]
    explained = float(self.relative @ np.array(part)) / self.relative.sum()
    return _Attempt(
        start,
        tuple(selected),
        np.where(chosen, revised, residual),
        np.where(chosen, -1, explained_by),
        explained,
        float(self.weight[self.incidence[chosen].any(axis=0)].sum()) / self.total,
        int(self.depth[chosen].sum()),
    )


def random_tree_scene(seed: int) -> tuple[list[Candidate], DedupContext]:
    """A random 40-node call tree and 15 of its subroutines changing within 5 minutes."""
    rng = np.random.default_rng(seed)
    edges: dict[str, list[str]] = {}
    for i in range(1, 40):
        edges.setdefault(f"f{int(rng.integers(0, i))}", []).append(f"f{i}")
    samples = {f"f{i}": float(rng.integers(0, 30)) for i in range(40)}
    stacks, callers = tree_stack_shares({p: tuple(c) for p, c in edges.items()}, samples, root="f0")
    total = sum(samples.values())
    names = [n for n in stacks if n != "f0"]
    chosen = rng.choice(len(names), size=min(15, len(names)), replace=False)
    candidates = [
        candidate(
            names[j],
            float(rng.uniform(0.001, 0.02)),
            float(rng.uniform(0, 5)),
            before=float(stacks[names[j]].weights.sum()) / total,
        )
        for j in chosen
    ]
    return candidates, DedupContext(stacks=stacks, callers=callers)


@pytest.mark.parametrize("seed", range(15))
def test_incremental_greedy_matches_reference(seed: int, monkeypatch) -> None:
    candidates, context = random_tree_scene(seed)
    fast = judged(candidates, context)
    monkeypatch.setattr(_Problem, "attempt", naive_attempt)
    slow = judged(candidates, context)
    assert [v.passed for v in fast] == [v.passed for v in slow]
    for f, s in zip(fast, slow):
        assert f.numbers["regression_set"] == s.numbers["regression_set"]
        assert f.numbers["explained_by"] == s.numbers["explained_by"]
        assert f.numbers["revised_magnitude"] == pytest.approx(
            s.numbers["revised_magnitude"], abs=1e-12
        )
        assert f.numbers["set_score"] == pytest.approx(s.numbers["set_score"], abs=1e-12)
