"""PairwiseDedup (FBDetect §5.5.2) on seeded synthetic candidates over a 5-minute axis, checked
against a slow loop-per-pair reference. The correlation feature is evidence of one cause (the
residual noise of two series, their own steps removed): series that share a cause are built
sharing noise (a caller's gCPU holds its callee's; a throughput series falls with its gCPU's
wiggles), and steps at one time with noise of their own never merge on it.

Index convention (``detection/model.py``): ``change_index`` is the first point after the change.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from factories import build_candidate
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from regbot.datasets.cascades import tree_stack_shares
from regbot.detection.dedup.pairwise_dedup import correlation_window, member_of, pairwise_dedup
from regbot.detection.dedup.shared_cause import delta_with_se, noise_of, pair_stats
from regbot.detection.dedup_context import DedupContext, Group, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import DedupSettings, MergeRule

STEP_S = 300.0
T0_S = 1_700_000_000.0
N, CHANGE = 288, 200  # historical [0, 192), analysis [192, 240), extended [240, 288)
TIMES = T0_S + np.arange(N) * STEP_S
WINDOWS = WindowBounds(T0_S, T0_S + 192 * STEP_S, T0_S + 240 * STEP_S, T0_S + N * STEP_S)
SETTINGS = DedupSettings(combine="any")  # correlation ≥ 0.8 or stack overlap ≥ 0.5, 6-hour gap
SEEDS = range(50)

LEAF = "Db.query (app/db.py)"
CALLER = "Feed.load (app/feed.py)"
OTHER = "Image.resize (media/image.py)"
TREE = {
    "main": ("Web.handle (app/web.py)", "Jobs.run (jobs/run.py)"),
    "Web.handle (app/web.py)": (CALLER, "Page.render (app/page.py)"),
    CALLER: (LEAF,),
    "Jobs.run (jobs/run.py)": (OTHER,),
}
SELF_SAMPLES = {
    "main": 5.0,
    "Web.handle (app/web.py)": 10.0,
    LEAF: 30.0,
    "Page.render (app/page.py)": 20.0,
    "Jobs.run (jobs/run.py)": 5.0,
    OTHER: 25.0,
}


STACKS, _ = tree_stack_shares(TREE, SELF_SAMPLES)
CONTEXT = DedupContext(stacks=STACKS)


def step_series(rng: np.random.Generator, base: float, step: float, noise: float, change=CHANGE):
    values = base + rng.normal(0.0, noise, N)
    values[change:] += step
    return values


def driven_by(
    rng: np.random.Generator, source: np.ndarray, gain: float, base: float, noise: float
) -> np.ndarray:
    """A series whose every wiggle and step is ``gain`` × ``source``'s (its deviation from
    ``source``'s first value), on ``base``, plus noise of its own."""
    return base + gain * (source - source[0]) + rng.normal(0.0, noise, len(source))


def candidate(
    series_id: str,
    raw: np.ndarray,
    *,
    kind: str = "gcpu",
    change: int = CHANGE,
    shift_s: float = 0.0,
) -> Candidate:
    """A candidate from raw values (higher-is-better kinds are negated), every time and window
    shifted by ``shift_s``."""
    sign = -1.0 if kind in ("throughput", "qps") else 1.0
    values = sign * np.asarray(raw, dtype=np.float64)
    times = TIMES + shift_s
    w = WINDOWS
    windows = WindowBounds(
        w.historical_start_s + shift_s,
        w.analysis_start_s + shift_s,
        w.extended_start_s + shift_s,
        w.end_s + shift_s,
    )
    return build_candidate(
        series_id,
        values,
        change,
        times=times,
        windows=windows,
        kind=kind,
        sign=sign,
        llr=50.0,
        p_value=1e-9,
    )


def gcpu(subroutine: str) -> str:
    return f"gcpu:{subroutine}"


def run(candidates, groups=(), settings=SETTINGS, context=CONTEXT, ids=None):
    ids = ids if ids is not None else [f"r{i}" for i in range(len(candidates))]
    return pairwise_dedup(list(candidates), list(groups), context, settings, regression_ids=ids)


def plain(numbers) -> dict:
    return json.loads(json.dumps(numbers, allow_nan=False))


# --- merges across metric kinds and along the call tree --------------------------------------


def test_leaf_throughput_and_caller_form_one_group() -> None:
    """The throughput series falls with every wiggle of the leaf's gCPU: it merges on the
    correlation of their noise. The caller (noise only, its own) merges on its stacks."""
    rng = np.random.default_rng(0)
    leaf_raw = step_series(rng, 0.02, 0.01, 0.001)
    leaf = candidate(gcpu(LEAF), leaf_raw)
    throughput = candidate(
        "throughput:feed", driven_by(rng, leaf_raw, -5000.0, 1000.0, 1.0), kind="throughput"
    )
    caller = candidate(gcpu(CALLER), step_series(rng, 0.03, 0.0, 0.001))  # noise only
    judged, groups = run([leaf, throughput, caller])
    assert [c.verdicts["pairwise_dedup"].passed for c in judged] == [True, False, False]
    assert [g.id for g in groups] == ["r0"]
    assert [m.regression_id for m in groups[0].members] == ["r0", "r1", "r2"]
    merged = plain(judged[1].verdicts["pairwise_dedup"].numbers)
    assert merged["group"] == "r0" and merged["representative"] == gcpu(LEAF)
    assert merged["correlation"] > 0.9 and merged["stack_overlap"] is None
    assert merged["correlation_member"] == gcpu(LEAF)
    assert merged["correlation_p"] <= merged["correlation_p_bound"]
    assert merged["delta"] == pytest.approx(-throughput.delta, rel=0.2) or merged["delta"] > 0
    assert merged["member_delta"] == pytest.approx(0.01, rel=0.2)
    assert judged[1].verdicts["pairwise_dedup"].reason == f"merged into group r0 ({gcpu(LEAF)})"
    by_stacks = plain(judged[2].verdicts["pairwise_dedup"].numbers)
    # no correlation evidence: the caller did not rise with the leaf (its rises disagree with
    # one cause, so the leaf is no anchor) — the stacks alone merge it
    assert by_stacks["stack_overlap"] == 1.0 and by_stacks["correlation"] is None
    # The members carry their window's points and, for gCPU, their stacks.
    start_s, end_s = correlation_window(leaf)
    member = groups[0].members[0]
    assert member.times_s[0] >= start_s and member.times_s[-1] <= end_s
    assert len(member.times_s) == N - 96 and member.stacks is STACKS[LEAF]
    assert groups[0].members[1].stacks is None


def test_stack_overlap_is_the_overlap_coefficient() -> None:
    """Against a group holding the leaf, the caller Web.handle shares the leaf's samples: 30 of
    its 60, and all of the leaf's 30 — the overlap coefficient (shared over the smaller) is 1."""
    rng = np.random.default_rng(1)
    leaf = candidate(gcpu(LEAF), step_series(rng, 0.02, 0.01, 0.001))
    web = candidate(gcpu("Web.handle (app/web.py)"), step_series(rng, 0.6, 0.0, 0.001))
    only_stacks = DedupSettings(rules=(MergeRule("stack_overlap", 0.5),))
    judged, groups = run([leaf, web], settings=only_stacks)
    numbers = judged[1].verdicts["pairwise_dedup"].numbers
    assert numbers["stack_overlap"] == pytest.approx(30.0 / min(60.0, 30.0))
    assert not judged[1].verdicts["pairwise_dedup"].passed and len(groups) == 1


def independent_pair(seed: int) -> list[Candidate]:
    """Two real regressions 2.5 hours apart, in unrelated subtrees with unrelated names."""
    rng = np.random.default_rng(seed)
    first = candidate(gcpu(LEAF), step_series(rng, 0.02, 0.005, 0.001))
    second = candidate(gcpu(OTHER), step_series(rng, 0.04, 0.005, 0.001, change=CHANGE + 30))
    return [first, second]


def test_independent_regressions_stay_apart() -> None:
    separate = 0
    for seed in SEEDS:
        judged, groups = run(independent_pair(seed))
        numbers = judged[1].verdicts["pairwise_dedup"].numbers
        assert numbers["stack_overlap"] == 0.0
        separate += len(groups) == 2 and judged[1].verdicts["pairwise_dedup"].passed
    assert separate >= 0.95 * len(SEEDS)


# --- across runs, and idempotence ------------------------------------------------------------


def test_same_regression_in_a_later_run_joins_the_old_group() -> None:
    rng = np.random.default_rng(2)
    raw = step_series(rng, 0.02, 0.01, 0.001)
    _, previous = run([candidate(gcpu(LEAF), raw)], ids=["run1-leaf"])
    # One hour later: the same series, its windows shifted by 12 points, the change seen again.
    shifted = np.r_[raw[12:], step_series(rng, 0.03, 0.0, 0.001)[:12]]
    again = candidate(gcpu(LEAF), shifted, change=CHANGE - 12, shift_s=12 * STEP_S)
    assert again.change_time_s == previous[0].members[0].change_time_s
    judged, groups = run([again], previous, ids=["run2-leaf"])
    verdict = judged[0].verdicts["pairwise_dedup"]
    assert not verdict.passed and verdict.numbers["group"] == "run1-leaf"
    assert verdict.numbers["correlation"] == pytest.approx(1.0, abs=1e-4)  # the same noise
    assert verdict.numbers["exact_match"] is False
    assert [g.id for g in groups] == ["run1-leaf"] and len(groups[0].members) == 2


def test_rerunning_the_same_candidates_changes_nothing() -> None:
    rng = np.random.default_rng(3)
    pair = independent_pair(3)
    driven = driven_by(rng, pair[0].values, -5000.0, 1000.0, 1.0)
    candidates = pair + [
        candidate("throughput:feed", driven, kind="throughput"),
        candidate(gcpu(CALLER), step_series(rng, 0.03, 0.0, 0.001)),
    ]
    judged, groups = run(candidates)
    assert len(groups) == 2
    again, regrouped = run(candidates, groups)
    assert len(regrouped) == len(groups)
    assert all(a is b for a, b in zip(regrouped, groups))  # untouched: the very same objects
    home = {m.regression_id: g.id for g in groups for m in g.members}
    for i, c in enumerate(again):
        verdict = c.verdicts["pairwise_dedup"]
        assert not verdict.passed and verdict.numbers["exact_match"] is True
        assert verdict.numbers["group"] == home[f"r{i}"]
        assert verdict.numbers["correlation"] == verdict.numbers["stack_overlap"] == 1.0


# --- rules -----------------------------------------------------------------------------------


def correlated_pair(seed: int = 4) -> list[Candidate]:
    """A leaf's gCPU and a throughput series driven by it."""
    rng = np.random.default_rng(seed)
    leaf = step_series(rng, 0.02, 0.01, 0.001)
    throughput = driven_by(rng, leaf, -5000.0, 1000.0, 1.0)
    return [
        candidate(gcpu(LEAF), leaf),
        candidate("throughput:feed", throughput, kind="throughput"),
    ]


@pytest.mark.parametrize("seed", range(10))
def test_a_throughput_step_at_the_same_time_with_its_own_noise_stays_apart(seed: int) -> None:
    """Same time, same shape, a large step: without shared noise it is not one cause."""
    rng = np.random.default_rng(seed)
    leaf = candidate(gcpu(LEAF), step_series(rng, 0.02, 0.01, 0.001))
    throughput = step_series(rng, 1000.0, -50.0, 5.0)
    judged, groups = run([leaf, candidate("throughput:feed", throughput, kind="throughput")])
    verdict = judged[1].verdicts["pairwise_dedup"]
    assert verdict.passed and len(groups) == 2
    numbers = verdict.numbers
    assert numbers["correlation"] < 0.1 or numbers["correlation_p"] > numbers["correlation_p_bound"]


@pytest.mark.parametrize("combine", ["any", "all"])
def test_a_rule_that_does_not_apply_is_skipped_by_all(combine: str) -> None:
    """Throughput has no stacks: its stack overlap is None. "any" merges on the correlation;
    "all" skips the rule that does not apply and merges on the correlation too."""
    settings = DedupSettings(combine=combine)
    judged, groups = run(correlated_pair(), settings=settings)
    verdict = judged[1].verdicts["pairwise_dedup"]
    assert not verdict.passed and len(groups) == 1
    assert verdict.numbers["stack_overlap"] is None and verdict.numbers["combine"] == combine
    assert verdict.numbers["group"] == "r0"


def test_all_fails_when_no_rule_applies() -> None:
    settings = DedupSettings(rules=(MergeRule("stack_overlap", 0.5),), combine="all")
    judged, groups = run(correlated_pair(), settings=settings)
    assert judged[1].verdicts["pairwise_dedup"].passed and len(groups) == 2


def test_all_keeps_simultaneous_steps_in_unrelated_code_apart() -> None:
    """Two gCPU steps at the same time correlate, but share no stacks: the default ("all")
    keeps them apart, "any" would merge them."""
    rng = np.random.default_rng(12)
    a = candidate(gcpu(LEAF), step_series(rng, 0.02, 0.01, 0.001))
    b = candidate(gcpu(OTHER), step_series(rng, 0.03, 0.01, 0.001))
    judged, groups = run([a, b], settings=DedupSettings())
    assert judged[1].verdicts["pairwise_dedup"].passed and len(groups) == 2


def test_all_merges_when_every_rule_holds() -> None:
    rng = np.random.default_rng(5)
    leaf_raw = step_series(rng, 0.02, 0.01, 0.001)
    leaf = candidate(gcpu(LEAF), leaf_raw)
    caller = candidate(gcpu(CALLER), driven_by(rng, leaf_raw, 1.0, 0.03, 0.001))  # holds the leaf
    judged, groups = run([leaf, caller], settings=DedupSettings(combine="all"))
    assert not judged[1].verdicts["pairwise_dedup"].passed and len(groups) == 1
    # Its own noise only: the stacks alone do not merge it under "all".
    alone = candidate(gcpu(CALLER), step_series(rng, 0.03, 0.01, 0.001))
    judged, groups = run([leaf, alone], settings=DedupSettings(combine="all"))
    assert judged[1].verdicts["pairwise_dedup"].passed and len(groups) == 2


def test_a_none_score_fails_even_a_zero_threshold() -> None:
    settings = DedupSettings(rules=(MergeRule("stack_overlap", 0.0),))
    judged, groups = run(correlated_pair(), settings=settings)
    assert judged[1].verdicts["pairwise_dedup"].passed and len(groups) == 2
    no_rules = DedupSettings(rules=(), combine="all")
    judged, groups = run(correlated_pair(), settings=no_rules)
    assert judged[1].verdicts["pairwise_dedup"].passed and len(groups) == 2


def test_text_rule_compares_metric_ids() -> None:
    rng = np.random.default_rng(6)
    a = candidate(gcpu(LEAF), step_series(rng, 0.02, 0.01, 0.001))
    b = candidate("latency:" + LEAF, step_series(rng, 50.0, 0.0, 1.0), kind="latency")
    c = candidate("gcpu:Zz.x (q/r.py)", step_series(rng, 50.0, 0.0, 1.0))
    settings = DedupSettings(rules=(MergeRule("text", 0.6),))
    judged, groups = run([a, b, c], settings=settings)
    expected = cosine_similarity(
        TfidfVectorizer(analyzer="char", ngram_range=(2, 3)).fit_transform(
            sorted({a.series_id, b.series_id, c.series_id})
        )
    )
    ids = sorted({a.series_id, b.series_id, c.series_id})
    sim = {(x, y): expected[i, j] for i, x in enumerate(ids) for j, y in enumerate(ids)}
    assert judged[1].verdicts["pairwise_dedup"].numbers["text"] == pytest.approx(
        sim[a.series_id, b.series_id]
    )
    assert [c.verdicts["pairwise_dedup"].passed for c in judged] == [True, False, True]
    assert len(groups) == 2


def test_max_gap_excludes_far_groups() -> None:
    rng = np.random.default_rng(7)
    raw = step_series(rng, 0.02, 0.01, 0.001)
    first = candidate(gcpu(LEAF), raw)
    late = candidate(gcpu(LEAF), raw, shift_s=10 * 3600.0)  # same shape, ten hours later
    judged, groups = run([first, late])
    verdict = judged[1].verdicts["pairwise_dedup"]
    assert verdict.passed and len(groups) == 2 and verdict.numbers["group"] is None
    assert verdict.numbers["groups_considered"] == 0 and "no group changed within" in verdict.reason
    wider = DedupSettings(pairwise_max_gap_s=12 * 3600.0, combine="any")
    judged, groups = run([first, late], settings=wider)
    verdict = judged[1].verdicts["pairwise_dedup"]
    assert not verdict.passed and len(groups) == 1
    assert verdict.numbers["stack_overlap"] == 1.0  # the 16-hour windows barely align, stacks do
    assert verdict.numbers["correlation"] < 0.8


def test_several_accepting_groups_the_highest_aggregate_wins() -> None:
    """The caller's noise holds both the other subroutine's and the leaf's (equally): both
    groups accept it on the correlation under "any", the leaf's also on the stacks, so its
    aggregate is the higher."""
    rng = np.random.default_rng(8)
    other_raw = step_series(rng, 0.02, 0.01, 0.001)
    leaf_raw = step_series(rng, 0.02, 0.01, 0.001)
    other = candidate(gcpu(OTHER), other_raw)
    leaf = candidate(gcpu(LEAF), leaf_raw)
    caller = candidate(gcpu(CALLER), driven_by(rng, other_raw + leaf_raw, 1.0, 0.05, 0.0005))
    _, groups = run([other, leaf])
    assert len(groups) == 2
    groups = [Group("g-other", groups[0].members), Group("g-leaf", groups[1].members)]
    both = DedupSettings(
        rules=(MergeRule("correlation", 0.5), MergeRule("stack_overlap", 0.5)), combine="any"
    )
    judged, _ = run([caller], groups, settings=both, ids=["c"])
    numbers = judged[0].verdicts["pairwise_dedup"].numbers
    assert numbers["group"] == "g-leaf" and numbers["stack_overlap"] == 1.0
    assert numbers["aggregate"] == pytest.approx(1.0 + numbers["correlation"])
    assert numbers["correlation"] > 0.5


def test_verdict_numbers_are_json_and_inputs_are_checked() -> None:
    judged, _ = run(correlated_pair() + independent_pair(9))
    for c in judged:
        numbers = plain(c.verdicts["pairwise_dedup"].numbers)
        assert set(numbers) >= {"group", "correlation", "stack_overlap", "thresholds", "combine"}
        if numbers["group"] is not None:  # compared with a group: the evidence is shown
            assert set(numbers) >= {"correlation_p", "correlation_p_bound", "delta", "delta_se"}
        assert numbers["rules"] == ["correlation", "stack_overlap"]
        assert numbers["thresholds"] == [0.1, 0.5]
    with pytest.raises(ValueError, match="regression_ids"):
        pairwise_dedup(correlated_pair(), [], CONTEXT, SETTINGS, regression_ids=["x"])
    with pytest.raises(ValueError, match="combine"):
        run(correlated_pair(), settings=DedupSettings(combine="most"))  # type: ignore[arg-type]


# --- the fast implementation against a slow reference ----------------------------------------


def reference_dedup(candidates, groups, context, settings, ids):
    """Loop per candidate, group and member, with one small ``noise_of``/``pair_stats`` call
    per pair (each row's residual depends on that row alone), sklearn's cosine and Python
    sets: ([(merged group id or None, scores, or True for an exact match)],
    [(group id, [regression ids])])."""
    new = [member_of(c, r, context) for c, r in zip(candidates, ids)]
    every = [m.series_id for g in groups for m in g.members] + [m.series_id for m in new]
    vocab = sorted(set(every))
    vectors = TfidfVectorizer(analyzer="char", ngram_range=(2, 3)).fit_transform(vocab)
    cos = cosine_similarity(vectors)
    text = {(x, y): cos[i, j] for i, x in enumerate(vocab) for j, y in enumerate(vocab)}
    # the rows the noise comes from: a past member's stored window, a candidate's whole series
    row_of = {id(m): (m.times_s, m.values, m.change_time_s) for g in groups for m in g.members}
    for c, m in zip(candidates, new):
        row_of[id(m)] = (c.times_s, c.values, c.change_time_s)

    def evidence(cand_member, m):
        a, b = row_of[id(cand_member)], row_of[id(m)]
        noise = noise_of(
            [a[0], b[0]], [a[1], b[1]], [a[2], b[2]], None, settings.pairwise.guard_points
        )
        stats = pair_stats(noise, [0], [1])
        sd = noise.raw_sd()
        r = float(stats.r[0, 0])
        return r, float(stats.z[0, 0]), float(stats.p[0, 0]), sd[0] > sd[1], agree(a, b, sd, r)

    def agree(a, b, sd, r):
        """One cause explains both rises (``_Evidence.rises_agree``), by hand."""
        if not (is_gcpu_row(a) and is_gcpu_row(b)):
            return True
        (da, sa), (db, sb) = (delta_with_se(x[1], int(np.searchsorted(x[0], x[2]))) for x in (a, b))
        a_upper = sd[0] >= sd[1]
        (du, su, sdu), (dl, sl, sdl) = (
            ((da, sa, sd[0]), (db, sb, sd[1])) if a_upper else ((db, sb, sd[1]), (da, sa, sd[0]))
        )
        share = min(max((r if np.isfinite(r) else 0.0) * sdu / max(sdl, 1e-300), 0.0), 1.0)
        limit = settings.pairwise.rise_z * np.sqrt(su**2 + (share * sl) ** 2)
        gap = du - share * dl
        return gap >= -limit if a_upper else abs(gap) <= limit

    def is_gcpu(series_id):
        return subroutine_of_series(series_id) is not None

    gcpu_rows = {id(m.values) for g in groups for m in g.members if is_gcpu(m.series_id)}
    gcpu_rows |= {id(c.values) for c in candidates if is_gcpu(c.series_id)}

    def is_gcpu_row(row):
        return id(row[1]) in gcpu_rows

    state = [(g.id, list(g.members)) for g in groups]
    features = list(dict.fromkeys(r.feature for r in settings.rules))
    out = []
    for cand, member in zip(candidates, new):
        home = [
            k
            for k, (_, ms) in enumerate(state)
            if any(m.regression_id == member.regression_id for m in ms)
        ]
        if home:
            out.append((state[home[0]][0], True))
            continue
        eligible = [
            k
            for k, (_, ms) in enumerate(state)
            if any(
                abs(m.change_time_s - cand.change_time_s) <= settings.pairwise_max_gap_s for m in ms
            )
        ]
        bound = settings.pairwise.evidence_alpha / max(
            1, len(candidates) * sum(len(state[k][1]) for k in eligible)
        )
        scored = []
        for k in eligible:
            ms = state[k][1]
            s = {}
            best = None  # (z, r, p, member)
            for n, m in enumerate(ms):
                r, z, p, contains, agrees = evidence(member, m)
                anchor = agrees and (
                    n == 0
                    or m.series_id == member.series_id
                    or not is_gcpu(member.series_id)
                    or (is_gcpu(m.series_id) and contains)
                )
                if anchor and np.isfinite(z) and (best is None or z > best[0]):
                    best = (z, r, p, m)
            s["correlation"] = best[1] if best is not None else None
            s["text"] = max(text[member.series_id, m.series_id] for m in ms)
            union: dict[int, float] = {}  # stack -> weight, the first member's
            for m in ms:
                if m.stacks is not None:
                    for i, w in zip(m.stacks.stack_ids.tolist(), m.stacks.weights.tolist()):
                        union.setdefault(int(i), w)
            sub = subroutine_of_series(cand.series_id)
            own = context.stacks.get(sub) if sub else None
            if own is None or not any(m.stacks is not None and len(m.stacks.stack_ids) for m in ms):
                s["stack_overlap"] = None
            else:
                inside = sum(w for i, w in zip(own.stack_ids, own.weights) if int(i) in union)
                smaller = min(own.weights.sum(), sum(union.values()))
                s["stack_overlap"] = inside / smaller if smaller > 0 else None

            def passes(rule, s=s, best=best, member=member, bound=bound):
                value = s[rule.feature]
                if rule.feature != "correlation":
                    return value >= rule.threshold
                both = is_gcpu(member.series_id) and is_gcpu(best[3].series_id)
                floor = (
                    rule.threshold
                    if both
                    else max(rule.threshold, settings.pairwise.cross_kind_correlation)
                )
                return value >= floor and best[2] <= bound

            applies = [r for r in settings.rules if s[r.feature] is not None]
            if settings.combine == "all":  # every rule that applies, and at least one applies
                accepted = bool(applies) and all(passes(r) for r in applies)
            else:
                accepted = any(passes(r) for r in applies)
            aggregate = sum(s[f] for f in features if s[f] is not None)
            scored.append((accepted, aggregate, k, s))
        winners = [t for t in scored if t[0]]
        if winners:
            _, _, k, s = max(winners, key=lambda t: (t[1], -t[2]))
            state[k][1].append(member)
            out.append((state[k][0], s))
        else:
            state.append((member.regression_id, [member]))
            out.append((None, None))
    return out, [(gid, [m.regression_id for m in ms]) for gid, ms in state]


def random_scene(seed: int, n: int = 60):
    """Candidates from a few families (a shared step time and shape), on three time axes (runs
    an hour and 1,000 minutes later: the last shares no point with the first), with stacks from
    the tree, against two past groups."""
    rng = np.random.default_rng(seed)
    names = [LEAF, CALLER, OTHER, "Web.handle (app/web.py)", "Page.render (app/page.py)"]
    families = [(int(rng.integers(150, 230)), rng.normal(0, 1, N)) for _ in range(4)]
    out = []
    for _ in range(n):
        change, shape = families[int(rng.integers(len(families)))]
        kind = ["gcpu", "gcpu", "throughput"][int(rng.integers(3))]
        name = names[int(rng.integers(len(names)))]
        sid = gcpu(name) if kind == "gcpu" else f"throughput:{name.split()[0]}"
        raw = 0.02 + 0.002 * (shape + rng.normal(0, rng.uniform(0.2, 3.0), N))
        raw[change:] += 0.01
        shift = [0.0, 12 * STEP_S, 200 * STEP_S][int(rng.choice(3, p=[0.6, 0.3, 0.1]))]
        out.append(candidate(sid, raw, kind=kind, change=change, shift_s=shift))
    past_rng = np.random.default_rng(seed + 1000)
    past_leaf = candidate(gcpu(LEAF), step_series(past_rng, 0.02, 0.01, 0.001))
    past_other = candidate(gcpu(OTHER), step_series(past_rng, 0.02, 0.01, 0.001, change=170))
    groups = [
        Group("past-leaf", (member_of(past_leaf, "past-leaf", CONTEXT),)),
        Group("past-other", (member_of(past_other, "past-other", CONTEXT),)),
    ]
    return out, groups


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("combine", ["any", "all"])
def test_fast_matches_reference(seed: int, combine: str, monkeypatch) -> None:
    monkeypatch.setattr("regbot.detection.dedup.pairwise_dedup.BLOCK_ROWS", 7)  # many blocks
    candidates, groups = random_scene(seed)
    settings = DedupSettings(
        rules=(
            MergeRule("correlation", 0.2),
            MergeRule("stack_overlap", 0.9),
            MergeRule("text", 0.9),
        ),
        combine=combine,
        pairwise_max_gap_s=24 * 3600.0,
    )
    ids = [f"r{i}" for i in range(len(candidates))]
    ids[-1] = ids[3]  # a duplicate id within the call: an exact match
    judged, got = pairwise_dedup(candidates, groups, CONTEXT, settings, regression_ids=ids)
    expected, want = reference_dedup(candidates, groups, CONTEXT, settings, ids)
    assert [(g.id, [m.regression_id for m in g.members]) for g in got] == want
    for c, (group_id, scores) in zip(judged, expected):
        numbers = c.verdicts["pairwise_dedup"].numbers
        if group_id is not None:
            assert numbers["group"] == group_id
        if scores is True:
            assert numbers["exact_match"] is True
        elif scores is not None:
            for feature, value in scores.items():
                assert numbers[feature] == (
                    None if value is None else pytest.approx(value, abs=1e-9)
                )


def test_two_thousand_candidates_against_300_groups() -> None:
    """2,000 candidates against 300 past groups (timing belongs to benchmarks/dedup.py): every
    candidate judged, the past groups kept."""
    candidates, groups = scale_scene(2000, 300, seed=11)
    ids = [f"n{i}" for i in range(len(candidates))]
    judged, out = pairwise_dedup(candidates, groups, CONTEXT, SETTINGS, regression_ids=ids)
    assert len(judged) == 2000 and len(out) >= 300
    assert {g.id for g in groups} <= {g.id for g in out}


def scale_scene(n: int, n_groups: int, seed: int):
    """``n`` candidates on one run's axis; a third repeat one of ``n_groups`` past regressions
    (same family shape), the rest are new; gCPU ones carry stacks of the tree."""
    rng = np.random.default_rng(seed)
    names = list(STACKS)
    shapes = rng.normal(0, 1, (n_groups, N))
    groups = []
    for g in range(n_groups):
        raw = 0.02 + 0.002 * shapes[g]
        raw[CHANGE:] += 0.01
        past = candidate(gcpu(f"Past{g}.run (past/{g}.py)"), raw)
        groups.append(Group(f"past{g}", (member_of(past, f"past{g}", CONTEXT),)))
    out = []
    for i in range(n):
        g = int(rng.integers(n_groups))
        shape = shapes[g] if rng.random() < 1 / 3 else rng.normal(0, 1, N)
        raw = 0.02 + 0.002 * (shape + rng.normal(0, 0.3, N))
        raw[CHANGE:] += 0.01
        name = names[i % len(names)]
        out.append(candidate(gcpu(name) if i % 5 else f"gcpu:Fn{i}.x (m/{i}.py)", raw))
    return out, groups
