"""Shared-cause evidence without stacks: planted cascades from a real call tree (every bucket one
multinomial draw of stack samples, so a caller's gCPU holds its callee's samples) merge, while
fifty independent steps of one deploy under a fleet-wide load term do not; a throughput step
joins a gCPU regression only when its noise is driven by it. Statistics checked against slow
references and on null data.

Index convention (``detection/model.py``): ``change_index`` is the first point after the change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
from factories import build_candidate

from regbot.detection.dedup import DedupSettings, deduplicate
from regbot.detection.dedup.shared_cause import (
    estimate_load,
    noise_of,
    pair_stats,
)
from regbot.detection.dedup.som_dedup import som_dedup
from regbot.detection.dedup_context import DedupContext
from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import CostShiftSettings, SomSettings

BUCKET_S = 600.0
T0_S = 1_700_000_000.0
POINTS, AT = 600, 560  # historical [0, 552), analysis [552, 576), extended [576, 600)
TIMES = T0_S + BUCKET_S * np.arange(POINTS)
WINDOWS = WindowBounds(T0_S, TIMES[552], TIMES[576], TIMES[-1])
SAMPLES = 2_000_000  # stack samples per bucket


@dataclass(frozen=True)
class Fleet:
    series: dict[str, np.ndarray]  # gCPU of every subroutine (share of the bucket's samples)
    candidates: list[Candidate]
    owner: dict[str, str]  # candidate series -> planted change (a cascade's leaf, or itself)
    load: np.ndarray  # the planted load term


def fleet(
    seed: int, *, independent: int = 50, cascades: int = 3, depth: int = 4, load_sd: float = 0.03
) -> Fleet:
    """One deploy at bucket ``AT``: ``independent`` unrelated subroutines step up, and
    ``cascades`` chains root → … → leaf (``depth`` frames) whose leaf steps up, so every caller
    rises by the leaf's absolute gCPU. Eighty flat subroutines fill the fleet. Every stack's
    probability is scaled by 1 + g·L_t, L_t a fleet-wide load term (sd ``load_sd``, g in
    [0.5, 1.5] per stack), and each bucket is one multinomial draw of ``SAMPLES`` samples."""
    rng = np.random.default_rng(seed)
    stacks: list[tuple[str, ...]] = []
    base: list[float] = []
    lift: list[float] = []
    owner_of_stack: list[str] = []
    for k in range(independent):
        stacks.append(("main", f"Svc{k}.handle", f"Mod{k}.work"))
        share = float(np.exp(rng.uniform(np.log(3e-4), np.log(6e-3))))
        base.append(share)
        lift.append(rng.uniform(3.0, 10.0) * 2.0 * np.sqrt(share / SAMPLES) / np.sqrt(40) / share)
        owner_of_stack.append(f"Mod{k}.work")
    for c in range(cascades):
        chain = tuple(f"Chain{c}.f{d}" for d in range(depth))
        leaf_share = float(rng.uniform(2e-3, 5e-3))
        for d in range(1, depth + 1):  # the leaf's stack, then each caller's own code
            stacks.append(("main", *chain[:d]) if d < depth else ("main", *chain))
            own = leaf_share if d == depth else float(rng.uniform(0.5, 2.0)) * leaf_share
            base.append(own)
            lift.append(rng.uniform(0.08, 0.15) if d == depth else 0.0)
            owner_of_stack.append(chain[-1])
    for k in range(80):
        stacks.append(("main", f"Flat{k}.run"))
        base.append(float(np.exp(rng.uniform(np.log(3e-4), np.log(6e-3)))))
        lift.append(0.0)
        owner_of_stack.append("")
    base_a, lift_a = np.array(base), np.array(lift)
    load = load_sd * rng.normal(size=POINTS)
    gain = rng.uniform(0.5, 1.5, base_a.size)
    step = (np.arange(POINTS) >= AT)[:, None]
    probs = base_a[None, :] * (1.0 + gain[None, :] * load[:, None]) * (1.0 + step * lift_a)
    probs = np.column_stack([probs, 1.0 - probs.sum(axis=1)])  # "other code"
    counts = rng.multinomial(SAMPLES, probs)[:, :-1] / SAMPLES
    frames = sorted({f for s in stacks for f in s if f != "main"})
    holds = np.array([[f in s for s in stacks] for f in frames], dtype=np.float64)
    gcpu = holds @ counts.T  # (frames, points): inclusive gCPU
    series = {f"gcpu:{f}": gcpu[i] for i, f in enumerate(frames)}
    changed: dict[str, str] = {}
    for s, who, up in zip(stacks, owner_of_stack, lift_a):
        if up > 0:
            for f in s[1:]:
                if f.startswith("Svc"):
                    continue  # an independent step's service entry carries it: not a candidate
                changed[f"gcpu:{f}"] = f"gcpu:{who}"
    candidates = [
        candidate(sid, series[sid], AT + int(rng.integers(-1, 2))) for sid in sorted(changed)
    ]
    return Fleet(series, candidates, changed, load)


def candidate(series_id: str, values: np.ndarray, at: int, kind: str = "gcpu") -> Candidate:
    return build_candidate(
        series_id, values, at, times=TIMES, windows=WINDOWS, kind=kind, llr=100.0, p_value=1e-12
    )


def context_of(series: dict[str, np.ndarray]) -> DedupContext:
    return DedupContext(series={sid: (TIMES, v) for sid, v in series.items()})


def groups_of(result) -> dict[str, set[str]]:
    """Group id -> the series of its members: PairwiseDedup's groups, and each SOMDedup
    duplicate in the group of its representative."""
    series_of = {c.regression_id: c.series_id for c in result.representatives + result.removed}
    group_of = dict(result.group_of)
    for representative, duplicates in result.duplicates.items():
        for rid in duplicates:
            group_of.setdefault(rid, group_of.get(representative, representative))
    out: dict[str, set[str]] = {}
    for rid, gid in group_of.items():
        out.setdefault(gid, set()).add(series_of[rid])
    return out


NO_COST_SHIFT = CostShiftSettings(enabled=False)


# --- planted fleets through the whole dedup -------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_cascades_merge_and_independent_steps_stay_apart(seed: int) -> None:
    f = fleet(seed)
    result = deduplicate(f.candidates, context_of(f.series), [], [], DedupSettings(), NO_COST_SHIFT)
    groups = groups_of(result)
    for members in groups.values():
        assert len({f.owner[m] for m in members}) == 1, members  # pure: one planted change each
    leaves = {owner for owner in f.owner.values() if owner.startswith("gcpu:Chain")}
    for leaf in leaves:
        cascade = {s for s, o in f.owner.items() if o == leaf}
        (home,) = [g for g in groups.values() if leaf in g]
        assert home == cascade  # the leaf and all of its callers, in one group
    independent = [s for s, o in f.owner.items() if o == s and not s.startswith("gcpu:Chain")]
    assert len(independent) == 50
    alone = [s for s in independent if next(g for g in groups.values() if s in g) == {s}]
    assert alone == independent  # none merged


def test_without_the_load_term_removed_independent_steps_would_merge() -> None:
    """The same fleet with the load factor left in (too few series required): independent
    large series correlate through the load and some merge. This is what the load removal
    prevents."""
    f = fleet(0, load_sd=0.05)
    keep_load = SomSettings(load_min_series=10**6)
    judged = som_dedup(f.candidates, context_of(f.series), keep_load)
    removed = [c for c in judged if not c.verdicts["som_dedup"].passed]
    wrong = [
        c
        for c in removed
        if f.owner[c.series_id] != f.owner[str(c.verdicts["som_dedup"].numbers["representative"])]
    ]
    assert wrong  # merged across independent changes through the shared load
    judged = som_dedup(f.candidates, context_of(f.series), SomSettings())
    for c in judged:
        verdict = c.verdicts["som_dedup"]
        if not verdict.passed:
            assert f.owner[c.series_id] == f.owner[str(verdict.numbers["representative"])]


def test_merges_and_non_merges_keep_their_numbers() -> None:
    f = fleet(1)
    judged = som_dedup(f.candidates, context_of(f.series), SomSettings())
    merged = [c for c in judged if not c.verdicts["som_dedup"].passed]
    assert merged and all(c.series_id.startswith("gcpu:Chain") for c in merged)
    numbers = merged[0].verdicts["som_dedup"].numbers
    assert numbers["evidence"] == "noise"
    for key in (
        "noise_correlation",
        "noise_z",
        "noise_p",
        "noise_p_bound",
        "delta",
        "delta_se",
        "other_delta",
        "other_delta_se",
        "share",
        "explained_rise",
    ):
        assert numbers[f"evidence_{key}"] is not None, key
    assert numbers["evidence_noise_p"] <= numbers["evidence_noise_p_bound"]
    assert numbers["evidence_share"] == pytest.approx(1.0, abs=0.25)  # holds all the leaf's
    alone = next(c for c in judged if c.series_id == "gcpu:Mod0.work")
    numbers = alone.verdicts["som_dedup"].numbers
    assert alone.verdicts["som_dedup"].passed and numbers["evidence"] == "none"
    assert numbers["evidence_apart"]
    json.dumps([c.verdicts["som_dedup"].numbers for c in judged])


# --- latency and throughput ----------------------------------------------------------------


def throughput_scene(seed: int, driven: bool) -> tuple[list[Candidate], DedupContext, str]:
    """A fleet, and a throughput series stepping down at the deploy: its noise is its own and
    the load's, or (``driven``) it falls with every wiggle of ``Mod3.work``'s gCPU."""
    f = fleet(seed)
    rng = np.random.default_rng(seed + 100)
    gcpu = f.series["gcpu:Mod3.work"]
    own = rng.normal(0.0, 2.0, POINTS) + 300.0 * f.load
    wiggle = (gcpu - gcpu[:AT].mean()) / gcpu[:AT].std() * 6.0 if driven else 0.0
    qps = 1000.0 + own - wiggle - 15.0 * (np.arange(POINTS) >= AT)
    series = dict(f.series)
    series["qps:svc"] = -qps  # oriented: higher is worse
    tp = candidate("qps:svc", -qps, AT, kind="throughput")
    return [*f.candidates, tp], context_of(series), "gcpu:Mod3.work"


@pytest.mark.parametrize("seed", range(3))
def test_a_throughput_step_joins_a_gcpu_group_only_when_its_noise_is_driven_by_it(
    seed: int,
) -> None:
    for driven in (False, True):
        candidates, context, driver = throughput_scene(seed, driven)
        result = deduplicate(candidates, context, [], [], DedupSettings(), NO_COST_SHIFT)
        home = next(g for g in groups_of(result).values() if "qps:svc" in g)
        if driven:
            assert home == {"qps:svc", driver}
        else:
            assert home == {"qps:svc"}
        verdict = next(
            c for c in result.representatives + result.removed if c.series_id == "qps:svc"
        ).verdicts["pairwise_dedup"]
        assert verdict.numbers["correlation"] is not None
        assert verdict.numbers["correlation_p"] is not None


# --- the statistics -------------------------------------------------------------------------


def test_pair_stats_match_a_slow_reference() -> None:
    """Residuals by hand (differences, guard, median/MAD, clip, load regressed out, centred)
    and np.corrcoef per pair, on two time axes (the second an hour later)."""
    rng = np.random.default_rng(3)
    f = fleet(2)
    load = estimate_load({s: (TIMES, v) for s, v in f.series.items()}, TIMES[0], TIMES[-1], 20)
    assert load is not None
    picks = [c for c in f.candidates[:6]]
    times = [TIMES, TIMES, TIMES + 6 * BUCKET_S, TIMES, TIMES + 6 * BUCKET_S, TIMES]
    values = [c.values + (rng.normal(0, 1e-5, POINTS) if k % 2 else 0) for k, c in enumerate(picks)]
    change = [float(t[AT]) for t in times]
    noise = noise_of(times, values, change, load, 3)
    got = pair_stats(noise, range(6), range(6))

    def residual(t: np.ndarray, v: np.ndarray, at_s: float) -> tuple[np.ndarray, np.ndarray]:
        d, td = np.diff(v), t[1:]
        keep = np.abs(np.arange(d.size) - np.searchsorted(td, at_s)) > 3
        centre = np.median(d[keep])
        z = np.clip((d - centre) / (1.4826 * np.median(np.abs(d[keep] - centre))), -4, 4)
        f_at = np.full(td.size, np.nan)
        common, ia, ib = np.intersect1d(td, load.times_s, return_indices=True)
        f_at[ia] = load.values[ib]
        known = keep & np.isfinite(f_at)
        b = np.sum(z[known] * f_at[known]) / np.sum(f_at[known] ** 2)
        z = np.where(np.isfinite(f_at), z - b * np.nan_to_num(f_at), z)
        z = z - z[keep].mean()
        return td[keep], z[keep]

    rows = [residual(t, v, c) for t, v, c in zip(times, values, change)]
    for i in range(6):
        for j in range(6):
            common, ia, ib = np.intersect1d(rows[i][0], rows[j][0], return_indices=True)
            x, y = rows[i][1][ia], rows[j][1][ib]
            expected = float(np.sum(x * y) / np.sqrt(np.sum(x * x) * np.sum(y * y)))
            assert got.r[i, j] == pytest.approx(expected, abs=1e-9)
            assert got.points[i, j] == len(common)


def test_p_values_are_calibrated_on_independent_noise() -> None:
    """Independent AR(1) noise (φ = 0.5) with independent steps: the share of pairs with
    one-sided p ≤ 0.05 is about 5% (Bartlett's effective points account for the
    autocorrelation); without the correction it would be well above."""
    rng = np.random.default_rng(8)
    k, t = 60, 800
    e = rng.normal(size=(k, t))
    x = np.zeros_like(e)
    for n in range(1, t):
        x[:, n] = 0.5 * x[:, n - 1] + e[:, n]
    x[:, 500:] += 3.0
    times = T0_S + BUCKET_S * np.arange(t)
    noise = noise_of([times] * k, list(x), [float(times[500])] * k, None, 3)
    stats = pair_stats(noise, range(k), range(k))
    upper = stats.p[np.triu_indices(k, 1)]
    assert 0.025 <= float(np.mean(upper <= 0.05)) <= 0.08


def test_the_load_factor_is_recovered() -> None:
    f = fleet(5, load_sd=0.05)
    load = estimate_load({s: (TIMES, v) for s, v in f.series.items()}, TIMES[0], TIMES[-1], 20)
    assert load is not None and load.series == len(f.series)
    truth = np.diff(f.load)
    assert np.corrcoef(load.values, truth)[0, 1] > 0.9
    few = {s: (TIMES, v) for s, v in list(f.series.items())[:5]}
    assert estimate_load(few, TIMES[0], TIMES[-1], 20) is None


def test_pair_statistics_by_validity_pattern_match_the_masked_products() -> None:
    """Energies and common points through the rows' distinct validity patterns equal the
    products against every row (points exactly)."""
    from regbot.detection.dedup.shared_cause import validity_patterns

    rng = np.random.default_rng(7)
    shapes = rng.random((4, 40)) > 0.2
    va = shapes[rng.integers(0, 4, 30)].astype(np.float64)
    vb = shapes[rng.integers(0, 4, 50)].astype(np.float64)
    vb[7] = 1.0
    za = rng.normal(size=va.shape) * va
    pattern_a, of_a = validity_patterns(va)
    pattern_b, of_b = validity_patterns(vb)
    assert len(pattern_a) <= 4 and len(pattern_b) <= 5
    np.testing.assert_array_equal(pattern_a[of_a], va)
    np.testing.assert_array_equal(pattern_b[of_b], vb)
    energy_a = ((za * za) @ pattern_b.T)[:, of_b]
    np.testing.assert_allclose(energy_a, (za * za) @ vb.T, rtol=1e-13)
    points = (pattern_a @ pattern_b.T)[np.ix_(of_a, of_b)]
    np.testing.assert_array_equal(points, va @ vb.T)
