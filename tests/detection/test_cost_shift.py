"""Cost-shift detector (FBDetect §5.4) on seeded synthetic series sharing an hourly axis.

Index convention (``detection/model.py``): ``change_index`` is the first point after the change,
so ``values[:CHANGE]`` is before and ``values[CHANGE:]`` after.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from factories import build_candidate

from regbot.detection.cost_domains import CostDomain, class_qualifier, cost_domains
from regbot.detection.cost_shift import cost_shift_verdict, cost_shift_verdicts
from regbot.detection.dedup_context import DedupContext, StackShare
from regbot.detection.model import Candidate, Verdict
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import CostShiftDomain, CostShiftSettings

HOUR_S = 3600.0
N, CHANGE = 240, 168  # a week before the change, three days after
TIMES = np.arange(N) * HOUR_S
WINDOWS = WindowBounds(0.0, CHANGE * HOUR_S, (N - 24) * HOUR_S, N * HOUR_S)
D = 0.005  # the regression: 0.5% gCPU
NOISE = 0.0005
SETTINGS = CostShiftSettings()
SEEDS = range(50)

X, Y = "gcpu:Cart.add (shop/cart.py)", "gcpu:Cart.total (shop/cart.py)"


def level(rng: np.random.Generator, base: float, step: float = 0.0, noise: float = NOISE):
    """``base`` + noise, plus ``step`` from ``CHANGE`` on."""
    values = base + rng.normal(0.0, noise, N)
    values[CHANGE:] += step
    return values


def candidate(series_id: str, values: np.ndarray, kind: str = "gcpu", times=TIMES) -> Candidate:
    c = CHANGE if len(values) == N else len(values) // 2
    return build_candidate(
        series_id, values, c, times=times, windows=WINDOWS, kind=kind, llr=100.0, p_value=1e-9
    )


def context(series: dict[str, np.ndarray], **kwargs) -> DedupContext:
    return DedupContext(series={k: (TIMES, v) for k, v in series.items()}, **kwargs)


def judge(series: dict[str, np.ndarray], target: str, settings=SETTINGS, **kwargs) -> Verdict:
    return cost_shift_verdict(
        candidate(target, series[target]), context(series, **kwargs), settings
    )


def plain(verdict: Verdict) -> dict:
    return json.loads(json.dumps(verdict.numbers, allow_nan=False))


def class_scenario(seed: int, y_step: float) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        X: level(rng, 0.02, D),
        Y: level(rng, 0.03, y_step),
        "gcpu:Cart.clear (shop/legacy/cart.py)": level(rng, 0.01),  # same class name, other file
        "gcpu:Order.place (shop/order.py)": level(rng, 0.04, -D),  # another class
    }


# --- exact, hand-computed -------------------------------------------------------------------


def test_exact_numbers_on_a_tiny_class() -> None:
    times = np.arange(6) * HOUR_S
    x = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])
    y = np.array([3.0, 3.0, 3.0, 2.0, 2.0, 2.0])
    ctx = DedupContext(series={X: (times, x), Y: (times, y)})
    verdict = cost_shift_verdict(candidate(X, x, times=times), ctx, SETTINGS)
    assert verdict.stage == "cost_shift" and not verdict.passed
    numbers = plain(verdict)
    assert numbers["candidate_delta"] == 1.0
    assert numbers["domain_kinds"] == ["class"]
    assert numbers["domain_names"] == ["Cart (shop/cart.py)"]
    assert numbers["domain_members"] == [2]
    assert (numbers["domain_before"], numbers["domain_after"]) == ([4.0], [4.0])
    assert numbers["domain_delta"] == [0.0]
    assert numbers["domain_checks"] == ["shift"]
    assert numbers["shift_domain"] == "class Cart (shop/cart.py)"
    assert "class domain 'Cart (shop/cart.py)'" in verdict.reason
    # Noise-free: every standard error is 0, so the test is the point rule itself (the
    # difference 1 > 0, the domain's change 0 <= 0.2); infinite z is shown as None.
    assert numbers["domain_candidate_delta"] == [1.0]
    assert numbers["domain_candidate_delta_se"] == numbers["domain_delta_se"] == [0.0]
    assert numbers["domain_difference_se"] == [0.0]
    assert numbers["domain_difference_z"] == [None] and numbers["domain_negligible_z"] == [None]
    # The candidate's own series need not be in the context: it is still a member.
    alone = DedupContext(series={Y: (times, y)})
    assert cost_shift_verdict(candidate(X, x, times=times), alone, SETTINGS) == verdict


@pytest.mark.parametrize(
    ("y_step", "check"),
    [(-1.0, "shift"), (-0.8, "shift"), (-0.79, "real increase"), (0.0, "real increase")],
)
def test_negligible_share_boundary(y_step: float, check: str) -> None:
    times = np.arange(4) * HOUR_S
    x, y = np.array([1.0, 1.0, 2.0, 2.0]), np.array([3.0, 3.0, 3.0 + y_step, 3.0 + y_step])
    ctx = DedupContext(series={X: (times, x), Y: (times, y)})
    verdict = cost_shift_verdict(candidate(X, x, times=times), ctx, SETTINGS)
    assert plain(verdict)["domain_checks"] == [check]
    assert verdict.passed == (check != "shift")


@pytest.mark.parametrize(
    ("function", "qualifier"),
    [
        ("Svc.serve", "Svc"),
        (
            "ns::Class<std::map<int, int>>::method(std::vector<int> const&) const",
            "ns::Class<std::map<int, int>>",
        ),
        ("ns::Class::method(int)", "ns::Class"),
        ("pkg.Class.method(java.lang.String)", "pkg.Class"),
        ("net/http.(*conn).serve", "net/http.(*conn)"),
        ("github.com/a/b.T.M", "github.com/a/b.T"),
        ("net/http.Serve", None),
        ("handle", None),
        ("<module>", None),
    ],
)
def test_class_qualifier(function: str, qualifier: str | None) -> None:
    assert class_qualifier(function) == qualifier


# --- planted scenarios ----------------------------------------------------------------------


def test_class_cost_shift_is_filtered() -> None:
    verdicts = [judge(class_scenario(seed, -D), X) for seed in SEEDS]
    filtered = [v for v in verdicts if not v.passed]
    assert len(filtered) / len(verdicts) >= 0.95
    assert {plain(v)["shift_domain"] for v in filtered} == {"class Cart (shop/cart.py)"}
    assert all(plain(v)["domain_members"] == [2] for v in verdicts)


def test_true_regression_in_a_small_class_is_kept() -> None:
    verdicts = [judge(class_scenario(seed, 0.0), X) for seed in SEEDS]
    assert sum(v.passed for v in verdicts) / len(verdicts) >= 0.95
    assert all(plain(v)["domain_checks"] == ["real increase"] for v in verdicts if v.passed)
    assert verdicts[0].reason == "kept: no domain shows a cost shift (1 real increase)"


def caller_scenario(seed: int, caller_self_step: float, root_self_step: float = 0.0):
    """``render`` called by ``handle`` called by ``main``; inclusive series: handle = its own
    code + render, main = its own code + handle."""
    rng = np.random.default_rng(seed)
    render = level(rng, 0.01, D)
    handle = level(rng, 0.02, caller_self_step) + render
    main = level(rng, 0.1, root_self_step) + handle
    series = {
        "gcpu:render (app/views.py)": render,
        "gcpu:handle (app/views.py)": handle,
        "gcpu:main (app/main.py)": main,
    }
    callers = {
        "render (app/views.py)": frozenset({"handle (app/views.py)", "main (app/main.py)"}),
        "handle (app/views.py)": frozenset({"main (app/main.py)"}),
    }
    return series, callers


def test_code_moved_from_the_caller_into_its_callee_is_filtered() -> None:
    verdicts = []
    for seed in SEEDS:
        series, callers = caller_scenario(seed, -D)
        verdicts.append(judge(series, "gcpu:render (app/views.py)", callers=callers))
    filtered = [v for v in verdicts if not v.passed]
    assert len(filtered) / len(verdicts) >= 0.95
    assert {plain(v)["shift_domain"] for v in filtered} == {"callers handle (app/views.py)"}


def test_callee_regression_is_kept_and_the_tightest_caller_is_chosen() -> None:
    series, callers = caller_scenario(0, 0.0)
    target = "gcpu:render (app/views.py)"
    cand = candidate(target, series[target])
    domains = cost_domains(cand, context(series, callers=callers), SETTINGS)
    assert domains == [
        CostDomain(
            "callers",
            "handle (app/views.py)",
            ("gcpu:handle (app/views.py)", target),
            ("gcpu:handle (app/views.py)",),
        )
    ]
    assert judge(series, target, callers=callers).passed
    # Cost moved from main's own code: handle (the tightest caller) rises too — documented miss.
    series, callers = caller_scenario(0, 0.0, -D)
    assert judge(series, target, callers=callers).passed


def test_true_regression_in_a_big_domain_is_not_filtered() -> None:
    """The class costs 100x the regression; a sibling's drop that cancels it is not trusted."""
    kept = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        series = {X: level(rng, 0.02, D), Y: level(rng, 100 * D - 0.02, -D, noise=0.01 * 100 * D)}
        verdict = judge(series, X)
        numbers = plain(verdict)
        assert numbers["domain_checks"] == ["too large"]
        assert numbers["domain_before"][0] > SETTINGS.domain_cost_ratio * numbers["candidate_delta"]
        kept.append(verdict.passed)
    assert all(kept)


def test_new_subroutine_is_not_a_cost_shift() -> None:
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        x = np.clip(level(rng, 0.0, D, noise=1e-6), 0.0, None)
        series = {X: x, Y: level(rng, 0.03, -D)}
        verdict = judge(series, X)
        assert verdict.passed
        assert plain(verdict)["domain_checks"] == ["new domain"]


def test_the_new_share_comes_from_the_settings() -> None:
    """``CostShiftSettings.new_share`` (1%) decides what counts as a new domain."""
    series = class_scenario(0, -D)
    numbers = plain(judge(series, X))
    assert numbers["domain_checks"] == ["shift"] and numbers["new_share"] == 0.01
    wide = replace(SETTINGS, new_share=5.0)  # Cart.add's 0.02 before is within 5 × 0.005 of 0
    verdict = judge(series, X, wide)
    assert verdict.passed and plain(verdict)["domain_checks"] == ["new domain"]
    assert plain(verdict)["new_share"] == 5.0


def test_commit_domain() -> None:
    encode, decode = "gcpu:encode (codec/a.py)", "gcpu:decode (codec/b.py)"
    commits = {
        "abc123": frozenset({"encode (codec/a.py)", "decode (codec/b.py)", "gone (x.py)"}),
        "def456": frozenset({"other (y.py)"}),
    }
    filtered = 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        series = {encode: level(rng, 0.02, D), decode: level(rng, 0.02, -D)}
        verdict = judge(series, encode, commit_subroutines=commits)
        filtered += not verdict.passed
        assert plain(verdict)["domain_names"] == ["abc123"]
        assert plain(verdict)["domain_members"] == [2]  # "gone" has no series
    assert filtered / len(SEEDS) >= 0.95
    assert judge(series, encode).reason == "no cost domains for this subroutine"


def test_custom_domain_with_a_capture_group() -> None:
    settings = CostShiftSettings(domains=(CostShiftDomain("serde", r"^(json|proto)\."),))
    dumps, loads = "gcpu:json.dumps (lib/json_enc.py)", "gcpu:json.loads (lib/json_dec.py)"
    encode = "gcpu:proto.encode (lib/proto_enc.py)"
    rng = np.random.default_rng(7)
    series = {
        dumps: level(rng, 0.02, D),
        loads: level(rng, 0.02, -D),
        encode: level(rng, 0.02, D),
        "gcpu:proto.decode (lib/proto_dec.py)": level(rng, 0.02),
    }
    shifted = judge(series, dumps, settings)
    assert not shifted.passed
    assert plain(shifted)["shift_domain"] == "custom serde[json]"
    assert plain(shifted)["domain_members"] == [2]
    real = judge(series, encode, settings)  # proto's domain did not lose anything
    assert real.passed and plain(real)["domain_names"] == ["serde[proto]"]
    # Without the group, one domain of four: its total rose by D (encode), so the total is a
    # real increase, but dumps' rise was loads' fall: the fallen members' sub-domain says so.
    plain_regex = CostShiftSettings(domains=(CostShiftDomain("serde", r"^(?:json|proto)\."),))
    numbers = plain(judge(series, dumps, plain_regex))
    assert numbers["domain_members"] == [4, 2]
    assert numbers["domain_scopes"] == ["total", "fallen"]
    assert numbers["domain_fallen"] == ["", loads]
    assert numbers["domain_checks"] == ["real increase", "shift"]
    assert numbers["shift_domain"] == f"custom serde (fallen: {loads})"


def test_endpoint_prefix_domain() -> None:
    feed, stories = "endpoint:/api/v1/feed", "endpoint:/api/v1/stories"
    rng = np.random.default_rng(3)
    series = {
        feed: level(rng, 0.02, D),
        stories: level(rng, 0.03, -D),
        "endpoint:/api/v2/feed": level(rng, 0.03, -D),
        "gcpu:feed (app/feed.py)": level(rng, 0.01),
    }
    ctx = context(series)
    verdict = cost_shift_verdict(candidate(feed, series[feed], kind="endpoint"), ctx, SETTINGS)
    assert not verdict.passed
    assert plain(verdict)["shift_domain"] == "endpoint /api/v1/"
    assert plain(verdict)["domain_members"] == [2]


def test_metadata_prefix_domain() -> None:
    a, b, c = "gcpu:rank (feed/a.py)", "gcpu:score (feed/b.py)", "gcpu:ads (ads/c.py)"
    rng = np.random.default_rng(5)
    series = {a: level(rng, 0.02, D), b: level(rng, 0.02, -D), c: level(rng, 0.02)}
    metadata = {a: "feed/ranking:rank", b: "feed/ranking:score", c: "feed/ads:x"}
    verdict = judge(series, a, metadata=metadata)
    assert not verdict.passed
    assert plain(verdict)["shift_domain"] == "metadata feed/ranking:"


def test_throughput_has_no_cost_domains() -> None:
    rng = np.random.default_rng(1)
    qps = -level(rng, 1000.0, -10.0, noise=1.0)  # oriented: higher-is-better negated
    series = {"throughput:svc": qps, X: level(rng, 0.02)}
    verdict = cost_shift_verdict(
        candidate("throughput:svc", qps, kind="throughput"), context(series), SETTINGS
    )
    assert verdict.passed
    assert verdict.reason == "no cost domains for this metric kind"


def test_members_on_other_time_axes_are_aligned_by_intersection() -> None:
    times = np.arange(8) * HOUR_S
    x = np.array([1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    y_times = np.array([-1.0, 0.0, 2.0, 3.0, 5.0, 7.0, 9.0]) * HOUR_S  # gaps and extra points
    y = np.array([9.0, 3.0, 3.0, 3.0, 2.0, 2.0, 9.0])
    ctx = DedupContext(series={X: (times, x), Y: (y_times, y)})
    cand = Candidate(X, "gcpu", times, x, 1.0, 4, 4 * HOUR_S, 1.0, 2.0, 1.0, 0.0, WINDOWS)
    numbers = plain(cost_shift_verdict(cand, ctx, SETTINGS))
    assert (numbers["domain_before"], numbers["domain_after"]) == ([4.0], [4.0])
    # A candidate window inside longer series: the fast path reads the matching slice.
    window = slice(1, 7)
    cand = candidate(X, x[window], times=times[window])  # change at its index 3, time 4 h
    ctx = DedupContext(series={X: (times, x), Y: (times, 5.0 - x)})
    numbers = plain(cost_shift_verdict(cand, ctx, SETTINGS))
    assert numbers["domain_before"] == [5.0] and numbers["domain_checks"] == ["shift"]


# --- batch ----------------------------------------------------------------------------------


def fleet(n_classes: int, methods: int = 5, seed: int = 0):
    """``n_classes`` classes of ``methods`` methods; in every class method 0 rises by D and, in
    even classes, method 1 falls by D (a shift). Each method's caller is a ``Svc{k}.run``."""
    rng = np.random.default_rng(seed)
    values = 0.002 + rng.normal(0.0, NOISE / 10, (n_classes * methods, N))
    series, callers, commits = {}, {}, {}
    for k in range(n_classes):
        for m in range(methods):
            row = values[k * methods + m]
            if m == 0:
                row[CHANGE:] += D
            if m == 1 and k % 2 == 0:
                row[CHANGE:] -= D
            sub = f"C{k}.m{m} (pkg/c{k}.py)"
            series[f"gcpu:{sub}"] = row
            callers[sub] = frozenset({f"Svc{k % 10}.run (svc.py)"})
        commits[f"commit{k}"] = frozenset({f"C{k}.m0 (pkg/c{k}.py)", f"C{k}.m2 (pkg/c{k}.py)"})
    for j in range(10):
        series[f"gcpu:Svc{j}.run (svc.py)"] = np.full(N, 1.0)
    ctx = context(series, callers=callers, commit_subroutines=commits)
    return series, ctx


def test_batch_equals_one_by_one_and_is_json() -> None:
    series, ctx = fleet(40)
    settings = CostShiftSettings(domains=(CostShiftDomain("by-method", r"\.(m\d)"),))
    cands = [candidate(sid, v) for sid, v in series.items()]
    batch = cost_shift_verdicts(cands, ctx, settings)
    assert batch == [cost_shift_verdict(c, ctx, settings) for c in cands]
    for verdict in batch:
        json.dumps(verdict.numbers, allow_nan=False)
    shifted = {c.series_id for c, v in zip(cands, batch) if not v.passed}
    assert {f"gcpu:C{k}.m0 (pkg/c{k}.py)" for k in range(0, 40, 2)} <= shifted
    assert not any(f"gcpu:C{k}.m0 (pkg/c{k}.py)" in shifted for k in range(1, 40, 2))


def test_ten_thousand_candidates_share_domain_totals() -> None:
    """Timing belongs to benchmarks/dedup.py; here: a fleet-sized call gives one verdict each,
    and the class shifts among them are found."""
    series, ctx = fleet(2000)
    cands = [candidate(sid, v) for sid, v in series.items() if not sid.startswith("gcpu:Svc")]
    assert len(cands) == 10_000
    verdicts = cost_shift_verdicts(cands, ctx, SETTINGS)
    assert len(verdicts) == 10_000
    assert any(not v.passed for v in verdicts)


# --- the callers domain: only an enclosing caller -------------------------------------------

HELPER, LEFT, RIGHT = "fmt (app/util.py)", "render (app/views.py)", "export (app/views.py)"
HANDLE, MAIN = "handle (app/server.py)", "main (app/main.py)"


def helper_scenario(seed: int) -> tuple[dict[str, np.ndarray], dict, dict[str, StackShare]]:
    """``fmt`` regresses by D; 15% of its samples are under ``render``, 85% under ``export``;
    both under ``handle``, under the program's root ``main``. Inclusive series: render = its own
    code + 15% of fmt, export = its own + 85% of fmt, handle = its own + render + export.
    Stacks: 1 main>handle>render>fmt, 2 main>handle>export>fmt, 3 render's own, 4 export's own,
    5 handle's own, 6 main's own (idle)."""
    rng = np.random.default_rng(seed)
    fmt = level(rng, 0.02, D)
    render = level(rng, 0.03) + 0.15 * fmt  # the smallest caller above fmt's level
    export = level(rng, 0.05) + 0.85 * fmt
    handle = level(rng, 0.1) + render + export
    series = {
        f"gcpu:{HELPER}": fmt,
        f"gcpu:{LEFT}": render,
        f"gcpu:{RIGHT}": export,
        f"gcpu:{HANDLE}": handle,
        f"gcpu:{MAIN}": np.ones(N),
    }
    callers = {HELPER: frozenset({LEFT, RIGHT, HANDLE, MAIN})}
    stacks = {
        HELPER: share([1, 2]),
        LEFT: share([1, 3]),
        RIGHT: share([2, 4]),
        HANDLE: share([1, 2, 3, 4, 5]),
        MAIN: share([1, 2, 3, 4, 5, 6]),
    }
    return series, callers, stacks


def share(ids: list[int]) -> StackShare:
    return StackShare(np.array(ids, dtype=np.int64), np.full(len(ids), 10.0))


def test_a_helper_with_two_callers_that_regresses_is_not_a_cost_shift() -> None:
    """Neither caller is on all of fmt's stacks: the tightest enclosing caller is handle (main,
    on every sample, stays excluded), whose inclusive cost rises with fmt."""
    target = f"gcpu:{HELPER}"
    for seed in SEEDS:
        series, callers, stacks = helper_scenario(seed)
        verdict = judge(series, target, callers=callers, stacks=stacks)
        numbers = plain(verdict)
        assert verdict.passed
        assert numbers["domain_kinds"] == ["callers"]
        assert numbers["domain_names"] == [HANDLE]
        assert numbers["domain_checks"] == ["real increase"]
    # Without stack evidence the callers set stands as given (no sample store): the smallest
    # caller above fmt's level, render, holds 15% of the rise and calls it a shift.
    series, callers, _ = helper_scenario(0)
    blind = plain(judge(series, target, callers=callers))
    assert blind["domain_names"] == [LEFT] and blind["domain_checks"] == ["shift"]


def test_a_caller_without_stack_samples_is_not_shown_to_enclose() -> None:
    series, callers, stacks = helper_scenario(0)
    del stacks[HANDLE]
    verdict = judge(series, f"gcpu:{HELPER}", callers=callers, stacks=stacks)
    assert verdict.passed and plain(verdict)["domain_kinds"] == []


def sibling_scenario(seed: int, shifted: bool) -> tuple[dict[str, np.ndarray], dict, dict]:
    """``encode`` and ``pack`` are ``serialize``'s leaves (stacks 1, 2; serialize's own: 3),
    under ``handle`` (its own: 4). ``encode`` rises by D; with ``shifted``, ``pack`` falls by D
    (work moved between the siblings: serialize stays flat)."""
    rng = np.random.default_rng(seed)
    encode = level(rng, 0.02, D)
    pack = level(rng, 0.03, -D if shifted else 0.0)
    serialize = level(rng, 0.01) + encode + pack
    handle = level(rng, 0.1) + serialize
    enc, pk, ser = "encode (app/codec.py)", "pack (app/codec.py)", "serialize (app/codec.py)"
    series = {
        f"gcpu:{enc}": encode,
        f"gcpu:{pk}": pack,
        f"gcpu:{ser}": serialize,
        f"gcpu:{HANDLE}": handle,
    }
    callers = {enc: frozenset({ser, HANDLE}), pk: frozenset({ser, HANDLE})}
    stacks = {
        enc: share([1]),
        pk: share([2]),
        ser: share([1, 2, 3]),
        HANDLE: share([1, 2, 3, 4]),
    }
    return series, callers, stacks


def test_a_shift_between_siblings_inside_one_enclosing_caller_is_still_a_cost_shift() -> None:
    target = "gcpu:encode (app/codec.py)"
    filtered = 0
    for seed in SEEDS:
        series, callers, stacks = sibling_scenario(seed, shifted=True)
        verdict = judge(series, target, callers=callers, stacks=stacks)
        filtered += not verdict.passed
        assert plain(verdict)["domain_names"][0] == "serialize (app/codec.py)"
    assert filtered / len(SEEDS) >= 0.95
    series, callers, stacks = sibling_scenario(0, shifted=False)  # a real rise of encode
    kept = judge(series, target, callers=callers, stacks=stacks)
    assert kept.passed and plain(kept)["domain_checks"][0] == "real increase"


# --- a domain on almost every sample --------------------------------------------------------


def whole_program(seed: int, extra: float, moved: float, noise: float = NOISE):
    """Work in CPU seconds per second: ``main``'s own code 0.768, ``tokenize`` (called only by
    ``main``) 0.2, other threads 0.032, so ``main`` holds 96.8% of the samples. From the change,
    ``tokenize`` does ``extra`` more work, of which ``moved`` left ``main``'s own code. Series
    are shares of all samples (normalised, as profiles are) plus sampling noise."""
    rng = np.random.default_rng(seed)
    after = np.arange(N) >= CHANGE
    own, callee, other = 0.768 - moved * after, 0.2 + extra * after, np.full(N, 0.032)
    total = own + callee + other
    series = {
        "gcpu:tokenize (lib/text.py)": callee / total + rng.normal(0, noise, N),
        "gcpu:main (lib/cli.py)": (own + callee) / total + rng.normal(0, noise, N),
    }
    callers = {"tokenize (lib/text.py)": frozenset({"main (lib/cli.py)"})}
    return series, callers


def test_a_caller_on_almost_every_sample_cannot_show_a_shift() -> None:
    """A real rise of ``tokenize`` (+36% of its work) moves ``main``'s share only from 0.968 to
    0.971: ``main`` cannot rise by the callee's +0.054. The check expects the domain to rise by
    ``a(1 − c)/(1 − b)`` and finds it did — a real increase, kept. Code moved from ``main``
    into ``tokenize`` (the same rise, ``main``'s total work unchanged) is still a shift; with
    noise that hides the 0.003 the caller could have moved, the domain is no evidence
    (``cannot move``) and the rise is kept."""
    target = "gcpu:tokenize (lib/text.py)"
    series, callers = whole_program(1, 0.072, 0.0)
    verdict = judge(series, target, callers=callers)
    n = plain(verdict)
    assert verdict.passed and n["domain_checks"] == ["real increase"]
    assert n["domain_before"][0] == pytest.approx(0.968, abs=1e-3)
    assert n["domain_candidate_delta"][0] == pytest.approx(0.054, abs=2e-3)
    assert n["domain_expected_change"][0] == pytest.approx(n["domain_delta"][0], abs=5e-4)
    series, callers = whole_program(1, 0.072, 0.072)
    shifted = judge(series, target, callers=callers)
    assert not shifted.passed and plain(shifted)["domain_checks"] == ["shift"]
    series, callers = whole_program(1, 0.072, 0.0, noise=0.02)
    noisy = judge(series, target, callers=callers)
    assert noisy.passed and plain(noisy)["domain_checks"] == ["cannot move"]
