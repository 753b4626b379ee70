"""The cost-shift check as a statistical decision, on classes of noisy gCPU series that share a
fleet-wide load term (no stacks: the ``class`` domain of series files).

The model, per case (seeded): 1,500 ten-minute buckets, the change at a random bucket of the
4-hour analysis window starting at bucket 1,440 (36-60 points after it), placed by the
"detector" up to 3 buckets off. A load term shared by every method of the class, ``L(t)`` =
``load`` × AR(1) (ρ = 0.9) + ``load`` × a daily sine with a random phase; method ``j`` with
base share ``p_j`` (log-uniform) and load gain ``g_j`` in [0.5, 1.5] reads
``p_j (1 + g_j L(t))`` plus binomial sampling noise of 200,000 samples per bucket. Its minimum
detectable effect is FBDetect App. A.2's ``t(0.995, n_a - 1) × sd`` with ``sd`` the exact
standard deviation of its after-mean minus before-mean under that noise (sampling, AR load and
the daily term over its random phase), so a k x MDE step is k x MDE whatever the method's size.

Two regimes alternate by seed: ``wide`` (shares from 0.01% to 2%, load 2%) and ``small``
(shares 0.01%-0.1%, load 5%: a noisy class total that is still within ``domain_cost_ratio`` of
a small regression — the case where the point-estimate rule called genuine steps shifts).
"""

from __future__ import annotations

import json
import math
from functools import cache
from statistics import NormalDist

import numpy as np
import pytest
from factories import build_candidate
from scipy.signal import lfilter
from scipy.stats import t as student_t

from regbot.detection.cost_shift import cost_shift_verdict
from regbot.detection.cost_shift_stats import change_with_se
from regbot.detection.dedup_context import DedupContext
from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import CostShiftSettings

N_POINTS, ANALYSIS_AT, BUCKET_S, SAMPLES = 1500, 1440, 600.0, 200_000
T0_S = 1_700_000_000.0
TIMES_S = T0_S + BUCKET_S * np.arange(N_POINTS)
WINDOWS = WindowBounds(T0_S, TIMES_S[ANALYSIS_AT], TIMES_S[ANALYSIS_AT + 24], TIMES_S[-1])
DAY_S, RHO = 86400.0, 0.9
REGIMES = {"wide": (1e-4, 2e-2, 0.02), "small": (1e-4, 1e-3, 0.05)}  # share range, load
SETTINGS = CostShiftSettings()


@cache
def _load_variance(n_after: int) -> tuple[float, float]:
    """Exact variance of (after mean - before mean) of a unit AR(1) and of a unit daily sine
    with a uniform random phase, for a split leaving ``n_after`` points."""
    split = N_POINTS - n_after
    w = np.where(np.arange(N_POINTS) < split, -1.0 / split, 1.0 / n_after)
    forward = lfilter([1.0], [1.0, -RHO], w)  # sum over j <= i of RHO^(i-j) w_j
    backward = lfilter([1.0], [1.0, -RHO], w[::-1])[::-1]
    ar = float(w @ (forward + backward - w))  # w' S w with S_ij = RHO^|i-j|
    phase = np.exp(2j * np.pi * TIMES_S / DAY_S)
    return ar, float(abs(w @ phase) ** 2 / 2)


def class_case(
    seed: int, methods: int, size_mde: float, shift: bool
) -> tuple[list[Candidate], DedupContext, list[float]]:
    """One class; method 0 steps up by ``size_mde`` x its MDE, or, with ``shift``, by D while
    method 1 falls by D, D = ``size_mde`` x the larger of the two MDEs. Returns the candidates
    of methods 0 and 1 (oriented, as the detector would hand them over: the drop's delta is
    negative), the context and the MDEs."""
    rng = np.random.default_rng(seed)
    low, high, load = REGIMES["wide" if seed % 2 == 0 else "small"]
    change = int(ANALYSIS_AT + rng.integers(0, 25))
    n_after = N_POINTS - change
    noise = rng.normal(0.0, 1.0, N_POINTS) * math.sqrt(1 - RHO**2)
    ar = lfilter([1.0], [1.0, -RHO], noise)
    ar[0] = rng.normal()  # close enough to stationary after a few buckets
    daily = np.sin(2 * np.pi * TIMES_S / DAY_S + rng.uniform(0, 2 * np.pi))
    level = load * (ar + daily)
    shares = np.exp(rng.uniform(math.log(low), math.log(high), methods))
    if shift:  # the pair must be big enough to give up D
        shares[:2] = np.exp(rng.uniform(math.log(max(low, 1e-3)), math.log(max(high, 2e-3)), 2))
    gains = rng.uniform(0.5, 1.5, methods)
    values = shares[:, None] * (1 + gains[:, None] * level[None, :])
    sampling = shares * (1 - shares) / SAMPLES
    values += rng.normal(0.0, 1.0, values.shape) * np.sqrt(sampling)[:, None]
    v_ar, v_daily = _load_variance(n_after)
    var = sampling * (1 / change + 1 / n_after) + (shares * gains * load) ** 2 * (v_ar + v_daily)
    mde = student_t.ppf(0.995, n_after - 1) * np.sqrt(var)
    if shift:
        step = size_mde * max(mde[0], mde[1])
        values[0, change:] += step
        values[1, change:] -= step
    else:
        values[0, change:] += size_mde * mde[0]
    ids = [f"gcpu:Svc{seed}.m{j} (svc/s{seed}.py)" for j in range(methods)]
    at = int(change + rng.integers(-3, 4))
    cands = [
        build_candidate(
            ids[j], values[j], at, times=TIMES_S, windows=WINDOWS, llr=100.0, p_value=1e-9
        )
        for j in (0, 1)
    ]
    context = DedupContext(series={i: (TIMES_S, v) for i, v in zip(ids, values)})
    return cands, context, mde.tolist()


def genuine_sweep(n: int = 200) -> list[tuple[int, float, int]]:
    """(seed, size in MDE, methods) of the genuine-step sweep."""
    return [(s, (1.5, 2.0, 4.0, 10.0)[s % 4], 3 + (s // 4) % 8) for s in range(n)]


def shift_sweep(methods: int, n: int = 150) -> list[tuple[int, float, int]]:
    return [(10_000 + s, (2.0, 3.0, 4.0, 6.0, 10.0)[s % 5], methods) for s in range(n)]


# --- the standard error -------------------------------------------------------------------


def test_change_with_se_by_hand() -> None:
    """before [0, 2, 0, 2], after [5, 5]: residuals [-1, 1, -1, 1, 0, 0]; MAD scale 1.4826
    (the upper median of |residual| is 1) beats the RMS 0.816; lag-1 autocorrelation -3/4 is
    clamped to 0; no blocks in 6 points: SE = 1.4826 x sqrt(1/4 + 1/2)."""
    before, after, se = change_with_se(np.array([[0.0, 2.0, 0.0, 2.0, 5.0, 5.0]]), 4)
    assert (before[0], after[0]) == (1.0, 5.0)
    assert se[0] == pytest.approx(1.4826 * math.sqrt(0.75))
    # A noise-free step has no error; a constant row neither.
    _, _, se = change_with_se(np.array([[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0]]), 2)
    assert se.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("noise", ["white", "ar", "white+ar+daily", "load-dominated"])
def test_change_with_se_is_calibrated_without_a_change(noise: str) -> None:
    """No change at all: z = change / SE behaves like a standard normal at the split the
    cost-shift check sees (after the history), including a slow load term and a daily cycle
    that a lag-1 correction alone would miss."""
    rng = np.random.default_rng(3)
    reps = 2000
    white = rng.normal(0.0, 1.0, (reps, N_POINTS))
    ar = lfilter([1.0], [1.0, -0.95], rng.normal(0.0, math.sqrt(1 - 0.95**2), (reps, N_POINTS)))
    daily = np.sin(2 * np.pi * TIMES_S / DAY_S + rng.uniform(0, 2 * np.pi, (reps, 1)))
    rows = {
        "white": white,
        "ar": ar,
        "white+ar+daily": white + ar + daily,
        "load-dominated": 0.3 * white + 2.0 * ar + 2.0 * daily,
    }[noise]
    for split in (1440, 1464):
        before, after, se = change_with_se(rows, split)
        z = (after - before) / se
        assert 0.75 < z.std() < 1.1
        assert np.mean(z > 3.09) <= 0.004  # nominal 0.001
        assert np.mean(np.abs(z) > 2.326) <= 0.035  # nominal 0.02


# --- genuine steps in noisy classes -------------------------------------------------------


@pytest.mark.parametrize("ratio", [SETTINGS.domain_cost_ratio, math.inf])
def test_genuine_steps_in_noisy_classes_are_never_cost_shifts(ratio: float) -> None:
    """1.5-10x MDE steps in classes of 3-10 methods sharing the load: at most 1% removed, also
    when no domain is skipped for its size (``domain_cost_ratio`` = inf: the noise alone
    decides)."""
    settings = CostShiftSettings(domain_cost_ratio=ratio)
    removed = []
    for seed, size, methods in genuine_sweep():
        (cand, _), context, _ = class_case(seed, methods, size, shift=False)
        verdict = cost_shift_verdict(cand, context, settings)
        assert verdict.numbers["domain_kinds"][0] == "class"
        assert verdict.numbers["domain_members"][0] == methods
        if not verdict.passed:
            removed.append((seed, size, methods))
    assert len(removed) <= 2, removed


def test_a_class_total_that_barely_moved_by_chance_is_not_a_shift() -> None:
    """The issue's case: a genuine step whose noisy class total barely moved (|domain change|
    <= negligible_share x the step, so the point-estimate rule called it a shift) is kept,
    and the verdict shows why: the domain's change has a standard error as large as the step."""
    found = 0
    for seed, size, methods in genuine_sweep(800):
        if seed % 2 == 0 or size not in (2.0, 10.0):
            continue  # the ``small`` regime, where the sweep holds such cases
        (cand, _), context, _ = class_case(seed, methods, size, shift=False)
        verdict = cost_shift_verdict(cand, context, SETTINGS)
        n = verdict.numbers
        delta, domain_delta = n["domain_candidate_delta"][0], n["domain_delta"][0]
        if abs(domain_delta) > SETTINGS.negligible_share * delta or n["domain_checks"][0] in (
            "too large",
            "new domain",
        ):
            continue
        found += 1
        assert verdict.passed
        assert n["domain_checks"][0] in ("too noisy", "real increase")
        assert n["domain_delta_se"][0] > delta / 3.1  # the total's noise hides the step
    assert found >= 5  # the sweep holds such cases


# --- planted shifts -----------------------------------------------------------------------


@pytest.mark.parametrize("methods", [2, 10])
def test_planted_class_shifts_are_removed(methods: int) -> None:
    """+D on one method, -D on another, 2-10x MDE: the rising member is removed as a cost
    shift in >= 95% of cases, and so is the falling one when it is judged (its candidate is a
    drop: the pipeline never hands it over as a regression, but the decision is symmetric).
    With ten methods the class total is too noisy and the fallen member's sub-domain decides."""
    rising, falling, by_fallen = 0, 0, 0
    cases = shift_sweep(methods)
    for seed, size, m in cases:
        (up, down), context, _ = class_case(seed, m, size, shift=True)
        assert down.delta < 0 < up.delta
        verdict = cost_shift_verdict(up, context, SETTINGS)
        rising += not verdict.passed
        falling += not cost_shift_verdict(down, context, SETTINGS).passed
        if not verdict.passed and "fallen" in verdict.numbers["shift_domain"]:
            by_fallen += 1
            row = verdict.numbers["domain_checks"].index("shift")
            assert down.series_id in verdict.numbers["domain_fallen"][row].split(", ")
    assert rising / len(cases) >= 0.95
    assert falling / len(cases) >= 0.95
    if methods == 10:
        assert by_fallen >= len(cases) // 2


@pytest.mark.parametrize("methods", [2, 4])
def test_a_siblings_improvement_at_another_time_is_no_shift(methods: int) -> None:
    """The deploy's other changes: a genuine 4-10x MDE step on one method while a sibling
    improves by as much 12 buckets earlier or later in the same window. Across the step the
    class total (or the step plus its fallen sibling) barely moves, as for a shift; the timing
    tells them apart: >= 90% are kept, most with the check ``other time`` and both change
    spans in the verdict. With spans holding all of each posterior (``same_time_mass`` 1) over
    half of them are removed, which is the failure this guards against."""
    kept, other_time, removed_without, cases = 0, 0, 0, 0
    for seed in range(60):
        size = (4.0, 6.0, 10.0)[seed % 3]
        (cand, _), context, _ = class_case(20_000 + seed, methods, size, shift=False)
        ids = list(context.series)
        step = cand.mean_after - cand.mean_before
        change = int(np.searchsorted(TIMES_S, cand.change_time_s))
        other = change + (12 if seed % 2 else -12)
        giver = context.series[ids[1]][1].copy()
        giver[other:] -= step
        context = DedupContext(series={**context.series, ids[1]: (TIMES_S, giver)})
        cases += 1
        verdict = cost_shift_verdict(cand, context, SETTINGS)
        kept += verdict.passed
        if verdict.passed and "other time" in verdict.numbers["domain_checks"]:
            other_time += 1
            row = verdict.numbers["domain_checks"].index("other time")
            mine, theirs = verdict.numbers["domain_change_spans"][row]
            assert theirs[1] < mine[0] or mine[1] < theirs[0]
        blind = cost_shift_verdict(cand, context, CostShiftSettings(same_time_mass=1.0))
        removed_without += not blind.passed
    assert kept / cases >= 0.9
    assert other_time / cases >= 0.75
    assert removed_without / cases >= 0.5


def test_a_shift_inside_a_quiet_class_is_caught_by_its_total() -> None:
    """Three quiet methods (sampling noise only, no load): the total decides, no fallen row
    is needed beside it."""
    rng = np.random.default_rng(11)
    base = np.array([0.004, 0.006, 0.005])
    values = base[:, None] + rng.normal(0.0, 2e-5, (3, N_POINTS))
    values[0, 1450:] += 5e-4
    values[1, 1450:] -= 4.8e-4
    ids = ["gcpu:Q.a (q.py)", "gcpu:Q.b (q.py)", "gcpu:Q.c (q.py)"]
    x = values[0]
    cand = Candidate(
        ids[0], "gcpu", TIMES_S, x, 1.0, 1450, float(TIMES_S[1450]), float(x[:1450].mean()),
        float(x[1450:].mean()), 100.0, 1e-9, WINDOWS,
    )  # fmt: skip
    context = DedupContext(series={i: (TIMES_S, v) for i, v in zip(ids, values)})
    verdict = cost_shift_verdict(cand, context, SETTINGS)
    n = verdict.numbers
    assert not verdict.passed and n["shift_domain"] == "class Q (q.py)"
    assert n["domain_scopes"][0] == "total" and n["domain_checks"][0] == "shift"


# --- the verdict's numbers ----------------------------------------------------------------


def test_the_verdict_shows_both_changes_their_errors_and_the_decision() -> None:
    """Every row: the candidate's and the domain's change with standard errors, the
    difference's error and z, the negligible z, and a check that follows from them."""
    z = NormalDist().inv_cdf(1 - SETTINGS.alpha)
    rows_seen, shifts = 0, 0
    for seed, size, methods in shift_sweep(10, 30) + genuine_sweep(30):
        (cand, _), context, _ = class_case(seed, methods, size, shift=seed >= 10_000)
        verdict = cost_shift_verdict(cand, context, SETTINGS)
        n = json.loads(json.dumps(verdict.numbers, allow_nan=False))
        assert n["z"] == pytest.approx(z)
        keys = [k for k in n if k.startswith("domain_") and isinstance(n[k], list)]
        assert len({len(n[k]) for k in keys}) == 1  # parallel lists
        for i, check in enumerate(n["domain_checks"]):
            rows_seen += 1
            a, se_a = n["domain_candidate_delta"][i], n["domain_candidate_delta_se"][i]
            d, se_d = n["domain_delta"][i], n["domain_delta_se"][i]
            se_diff, z_diff = n["domain_difference_se"][i], n["domain_difference_z"][i]
            z_neg = n["domain_negligible_z"][i]
            assert min(se_a, se_d, se_diff) > 0
            assert a == pytest.approx(cand.delta, rel=1e-9)  # the same split, the same points
            assert d == pytest.approx(n["domain_after"][i] - n["domain_before"][i])
            e = n["domain_expected_change"][i]  # a shrunk by the share's normalisation
            b, c = n["candidate_before"], n["domain_before"][i]
            assert e == pytest.approx(a * (1 - c) / (1 - b))
            assert z_diff == pytest.approx((e - d) / se_diff)
            assert z_neg == pytest.approx((abs(d) - SETTINGS.negligible_share * a) / se_d)
            if check in ("shift", "real increase", "other time"):
                assert e > se_d
                assert (check != "real increase") == (z_diff > z and z_neg <= z and d < e / 2)
            elif check == "too noisy":
                assert a / 2 <= e <= se_d
            if n["domain_scopes"][i] == "fallen":
                assert n["domain_members"][i] == 1 + len(n["domain_fallen"][i].split(", "))
            else:
                assert n["domain_fallen"][i] == "" and n["domain_members"][i] == methods
        shifts += not verdict.passed
        if not verdict.passed:
            first = n["domain_checks"].index("shift")
            assert n["shift_domain"].startswith(f"class {n['domain_names'][first]}")
            assert "difference z" in verdict.reason and "±" in verdict.reason
    assert rows_seen > 60 and shifts >= 25
