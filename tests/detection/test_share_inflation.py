"""Share inflation: a real speed-up elsewhere raises every other gCPU share by one ratio, and the
rises it alone explains are removed with their cause, while a real slowdown in the same deploy,
many simultaneous independent regressions, a deflating regression and a wandering fleet load
remove nothing they should not. Every bucket is one multinomial draw of stack samples."""

from __future__ import annotations

import numpy as np
import pytest
from factories import build_candidate

from regbot.detection.dedup import DedupSettings, deduplicate
from regbot.detection.dedup_context import DedupContext
from regbot.detection.model import Candidate, Verdict
from regbot.detection.series_batch import WindowBounds
from regbot.detection.share_inflation import common_ratio

BUCKET_S = 600.0
T0_S = 1_700_000_000.0
POINTS, AT = 492, 432  # 3 days of history, then 10 hours
TIMES = T0_S + BUCKET_S * np.arange(POINTS)
WINDOWS = WindowBounds(T0_S, TIMES[AT], TIMES[AT + 24], TIMES[-1])
SAMPLES = 3_000


def shares(
    seed: int,
    flats: int = 120,
    lifts: dict[int, float] | None = None,
    speed_up: float = 0.0,
    load: np.ndarray | None = None,
    hot: float = 0.12,
    scale: float = 1.0,
) -> dict[str, np.ndarray]:
    """``flats`` functions ``f<k>`` of 0.2–1.5% each (× ``scale``), a hot function ``hot``
    holding ``hot`` of the samples that loses ``speed_up`` of the service's work at the deploy (a
    real speed-up), the rest idle-free "other" code. ``lifts``: function k's cost × (1 + lift)
    from the deploy on.
    ``load``: a per-bucket multiplicative term on the flats' cost (a fleet-wide load)."""
    rng = np.random.default_rng(seed)
    base = scale * np.exp(rng.uniform(np.log(0.002), np.log(0.015), flats))
    cost = np.tile(np.append(base, hot), (POINTS, 1))
    for k, lift in (lifts or {}).items():
        cost[AT:, k] *= 1.0 + lift
    cost[AT:, -1] -= speed_up
    if load is not None:
        cost[:, :-1] *= (1.0 + load)[:, None]
    other = np.maximum(1.0 - base.sum() - hot, 0.05)
    probs = np.column_stack([cost, np.full(POINTS, other)])
    probs /= probs.sum(axis=1, keepdims=True)
    counts = np.vstack([rng.multinomial(SAMPLES, p) for p in probs]) / SAMPLES
    out = {f"gcpu:f{k} (app/m.py)": counts[:, k] for k in range(flats)}
    out["gcpu:hot (app/hot.py)"] = counts[:, flats]
    return out


def candidate(series_id: str, values: np.ndarray) -> Candidate:
    threshold = Verdict("threshold", True, "", {"mode": "absolute", "threshold": 0.0001})
    return build_candidate(
        series_id,
        values,
        AT,
        times=TIMES,
        windows=WINDOWS,
        llr=50.0,
        p_value=1e-9,
        verdicts={"threshold": threshold},
    )


def judged(series: dict[str, np.ndarray], ids: list[str]) -> dict[str, Verdict]:
    context = DedupContext(series={s: (TIMES, v) for s, v in series.items()})
    result = deduplicate([candidate(s, series[s]) for s in ids], context, [], [], DedupSettings())
    return {
        c.series_id: c.verdicts["share_inflation"] for c in result.representatives + result.removed
    }


def name(k: int) -> str:
    return f"gcpu:f{k} (app/m.py)"


@pytest.mark.parametrize("seed", range(3))
def test_a_speed_up_inflates_every_share_and_only_a_real_slowdown_stays(seed: int) -> None:
    """The hot function gives up 8 of the service's ~100 cost units: every other share × ~1.09.
    Six flat functions look like regressions (their own cost unchanged) and go, naming the hot
    function's fall; function 0, 40% slower in the same deploy, stays."""
    series = shares(seed, lifts={0: 0.4}, speed_up=0.08)
    flats = [name(k) for k in range(1, 7)]
    verdicts = judged(series, [name(0), *flats])
    assert verdicts[name(0)].passed
    assert verdicts[name(0)].numbers["corrected_delta"] > 0
    for sid in flats:
        v = verdicts[sid]
        assert not v.passed, (sid, v.reason)
        assert v.numbers["ratio"] == pytest.approx(1 / 0.92, rel=0.02)
        assert v.numbers["falls"][0]["series"] == "gcpu:hot (app/hot.py)"
        assert "share inflation" in v.reason


@pytest.mark.parametrize("seed", range(3))
def test_the_ratio_holds_when_most_series_moved_at_once(seed: int) -> None:
    """Seventy of 120 functions regress independently (+10% to +60%) in the deploy with a
    speed-up that frees 30% of the service: neither the median nor the mean of the log ratios is
    the common ratio, the level the unmoved series share is."""
    rng = np.random.default_rng(100 + seed)
    moved = {k: float(rng.uniform(0.1, 0.6)) for k in range(70)}
    series = shares(seed, lifts=moved, speed_up=0.3, hot=0.4, scale=0.5)
    context = DedupContext(series={s: (TIMES, v) for s, v in series.items()})
    found = common_ratio(context, WINDOWS.historical_start_s, float(TIMES[AT]), WINDOWS.end_s)
    assert found is not None and found.inflating
    unmoved = [k for k in range(120) if k not in moved]
    truth = np.mean([series[name(k)][AT:].mean() / series[name(k)][:AT].mean() for k in unmoved])
    assert found.ratio == pytest.approx(truth, rel=0.02)
    ratios = [v[AT:].mean() / v[:AT].mean() for v in series.values()]
    assert abs(np.log(np.median(ratios) / truth)) > 0.1  # the median is far off
    verdicts = judged(series, [name(k) for k in range(70)] + [name(k) for k in unmoved[:5]])
    assert sum(verdicts[name(k)].passed for k in range(70)) >= 60  # the real ones stay ...
    assert all(verdicts[name(k)].passed for k, lift in moved.items() if lift >= 0.3)  # all large
    assert not any(verdicts[name(k)].passed for k in unmoved[:5])


def test_a_regression_elsewhere_deflates_and_removes_nothing() -> None:
    series = shares(0, lifts={0: 3.0, 1: 0.3})
    verdicts = judged(series, [name(0), name(1)])
    assert all(v.passed for v in verdicts.values())
    assert verdicts[name(1)].numbers["ratio"] < 1


@pytest.mark.parametrize("seed", range(3))
def test_a_wandering_load_is_no_inflation(seed: int) -> None:
    """A fleet-wide load wanders for hours (AR(1), 5% sd, ~6-hour memory) and lifts the flats'
    cost together: over the 10 hours after the deploy their common level may sit above its
    history, but the history shows that level wandering as far, so small real steps stay."""
    rng = np.random.default_rng(200 + seed)
    load = np.zeros(POINTS)
    phi = np.exp(-1 / 36)
    for t in range(1, POINTS):
        load[t] = phi * load[t - 1] + rng.normal(0, 0.05 * np.sqrt(1 - phi * phi))
    load[AT:] += 0.05  # the load happens to sit a standard deviation high after the deploy
    series = shares(seed, lifts={k: 0.15 for k in range(5)}, load=load)
    verdicts = judged(series, [name(k) for k in range(5)])
    for v in verdicts.values():
        assert v.passed, v.reason
        assert not common_ratio(
            DedupContext(series={s: (TIMES, x) for s, x in series.items()}),
            WINDOWS.historical_start_s,
            float(TIMES[AT]),
            WINDOWS.end_s,
        ).inflating
