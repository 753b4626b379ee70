"""The fleet simulator: determinism, the MDE formula, sampling noise, and the planted truth."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from regbot.datasets.fleet import (
    FleetScenario,
    PlantedEvent,
    _draw_shares,
    _generation_multipliers,
    minimum_detectable_effect,
    simulate_fleet,
)
from regbot.detection.presets import Windows
from regbot.detection.series_batch import WindowBounds
from regbot.errors import InputError
from regbot.profiles.model import Series

Fleet = tuple[list[Series], list[PlantedEvent], WindowBounds]

# No load swing and one server generation: every series' share is constant between events, so
# its per-bucket noise is exactly binomial.
CLEAN = FleetScenario(n_series=3000, n_points=1000, generations=1, diurnal_amplitude=0.0)


@pytest.fixture(scope="module")
def default_fleet() -> Fleet:
    return simulate_fleet(FleetScenario(), seed=7)


@pytest.fixture(scope="module")
def clean_fleet() -> Fleet:
    return simulate_fleet(CLEAN, seed=11)


def values_of(series: list[Series]) -> np.ndarray:
    return np.stack([s.values for s in series])


def index_of(series: Series, time_s: float) -> int:
    return int(np.searchsorted(series.timestamps_s, time_s))


def plain(fleet: Fleet, *kinds: str) -> list[tuple[Series, PlantedEvent]]:
    """(series, event) pairs of the given kinds without a daily pattern."""
    series, events, _ = fleet
    return [(s, e) for s, e in zip(series, events) if e.kind in kinds and e.daily_amplitude == 0]


def of_kind(fleet: Fleet, kind: str) -> list[tuple[Series, PlantedEvent]]:
    """(series, event) pairs of one kind, daily pattern or not."""
    series, events, _ = fleet
    return [(s, e) for s, e in zip(series, events) if e.kind == kind]


def z_score(a: np.ndarray, b: np.ndarray, base: float, shift: float) -> float:
    """(mean(b) − mean(a) − shift) in standard errors of that difference, from the binomial
    variances of a clean fleet's known levels: ``base`` during ``a``, ``base + shift`` during ``b``."""
    var_a, var_b = (p * (1 - p) / CLEAN.samples_per_bucket for p in (base, base + shift))
    se = np.sqrt(var_a / len(a) + var_b / len(b))
    return float((b.mean() - a.mean() - shift) / se)


def assert_centred(z: list[float]) -> None:
    """Standardised errors of many series: centred on 0 and rarely beyond 3."""
    scores = np.asarray(z)
    assert len(scores) >= 30
    assert abs(scores.mean()) < 3 / np.sqrt(len(scores))
    assert np.mean(np.abs(scores) < 3) >= 0.97


def test_same_seed_same_fleet_and_other_seeds_differ() -> None:
    scenario = FleetScenario(n_series=200, n_points=400)
    first, again, other = (simulate_fleet(scenario, seed) for seed in (3, 3, 4))
    np.testing.assert_array_equal(values_of(first[0]), values_of(again[0]))
    assert [s.id for s in first[0]] == [s.id for s in again[0]]
    assert first[1] == again[1]
    assert first[2] == again[2]
    assert not np.array_equal(values_of(first[0]), values_of(other[0]))
    assert first[1] != other[1]


def test_mde_by_hand() -> None:
    # Appendix A.2: Δ = T_critical · sqrt(s² / n₂), s² = p(1 − p) / N, T_critical = t(0.995, 39).
    p, n, n_after, t_critical = 0.001, 200_000, 40, 2.707913
    by_hand = t_critical * np.sqrt(p * (1 - p) / n / n_after)
    assert by_hand == pytest.approx(3.02602e-5, rel=1e-5)
    assert minimum_detectable_effect(p, n, n_after, alpha=0.01) == pytest.approx(by_hand, rel=1e-6)
    # Four times the points halve it, up to the smaller critical value.
    assert minimum_detectable_effect(p, n, 160) < minimum_detectable_effect(p, n, 40) / 2


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ((0.0, 1000, 10), "base_share"),
        ((0.01, 0, 10), "samples_per_bucket"),
        ((0.01, 10, 1), "n_after"),
    ],
)
def test_mde_rejects_bad_arguments(args: tuple[float, int, int], where: str) -> None:
    with pytest.raises(InputError, match=where):
        minimum_detectable_effect(*args)


@pytest.mark.parametrize(
    ("settings", "where"),
    [
        ({"n_series": 0}, "FleetScenario.n_series"),
        ({"n_points": 60}, "FleetScenario.n_points"),
        ({"step_share": 0.6, "transient_share": 0.5}, "FleetScenario.seasonal_peak_share"),
        ({"diurnal_amplitude": 1.0}, "FleetScenario.diurnal_amplitude"),
    ],
)
def test_scenario_validation_names_the_setting(settings: dict[str, float], where: str) -> None:
    with pytest.raises(InputError, match=where):
        simulate_fleet(FleetScenario(**settings), seed=0)


def test_series_are_gcpu_shares_on_one_time_grid(default_fleet: Fleet) -> None:
    series, events, _ = default_fleet
    values = values_of(series)
    assert values.shape == (1000, 1500)
    assert np.all((values >= 0) & (values <= 1))
    # One multinomial draw per bucket: the subroutines' samples never exceed the bucket's total.
    assert np.all(values.sum(axis=0) <= 1)
    assert len({s.id for s in series}) == len(series)
    assert all(s.id.startswith("gcpu:") and s.id.endswith(".py)") for s in series)
    assert all(s.kind == "gcpu" and s.unit == "share" for s in series)
    assert [e.series_id for e in events] == [s.id for s in series]
    times = series[0].timestamps_s
    np.testing.assert_array_equal(np.diff(times), 600.0)


def test_windows_are_the_last_analysis_and_extended_points(default_fleet: Fleet) -> None:
    series, _, bounds = default_fleet
    times = series[0].timestamps_s
    analysis = (times >= bounds.analysis_start_s) & (times < bounds.extended_start_s)
    extended = (times >= bounds.extended_start_s) & (times <= bounds.end_s)
    assert analysis.sum() == 24 and extended.sum() == 36
    assert np.all(analysis[-60:-36]) and np.all(extended[-36:])
    windows = Windows(1440 * 600.0, 24 * 600.0, 36 * 600.0)
    assert WindowBounds.ending_at(bounds.end_s, windows) == bounds


def test_base_shares_are_log_uniform_and_sum_below_one(default_fleet: Fleet) -> None:
    base = np.array([e.base_share for e in default_fleet[1]])
    scenario = FleetScenario()
    assert base.min() >= scenario.min_share and base.max() <= scenario.max_share
    assert base.sum() == pytest.approx(scenario.total_share)
    # Log-uniform: the log shares are spread evenly between the floor and the (lowered) top.
    logs = np.log(base)
    assert np.median(logs) == pytest.approx((logs.min() + logs.max()) / 2, abs=0.3)
    # A fleet too large to fit above the floor lowers the floor and still fits.
    huge = _draw_shares(np.random.default_rng(0), 200_000, scenario)
    assert huge.sum() <= scenario.total_share
    assert huge.min() >= scenario.total_share / 400_000 * (1 - 1e-9)


def test_mean_of_a_quiet_series_is_its_base_share(default_fleet: Fleet) -> None:
    quiet = plain(default_fleet, "none")
    assert len(quiet) > 500
    for s, e in quiet:
        se = s.values.std(ddof=1) / np.sqrt(len(s.values))
        assert abs(s.values.mean() - e.base_share) <= 5 * se, s.id


def test_noise_is_binomial(clean_fleet: Fleet) -> None:
    quiet = plain(clean_fleet, "none")
    assert len(quiet) > 2000
    ratios = np.array(
        [
            s.values.std(ddof=1) / np.sqrt(e.base_share * (1 - e.base_share) / 200_000)
            for s, e in quiet
        ]
    )
    assert np.all((ratios > 0.8) & (ratios < 1.2))
    assert ratios.mean() == pytest.approx(1.0, abs=0.01)


def test_generation_mix_follows_the_load() -> None:
    times = 600.0 * np.arange(1500)
    load = 1 + 0.3 * np.sin(2 * np.pi * times / 86400)
    rng = np.random.default_rng(0)
    mixed = _generation_multipliers(rng, 50, load, FleetScenario())
    np.testing.assert_allclose(mixed.mean(axis=1), 1.0)
    assert np.all(np.abs(mixed - 1) < 0.25)
    # The newest generation takes the peak, so each subroutine's cost moves with 1 / load.
    corr = [np.corrcoef(row, 1 / load)[0, 1] for row in mixed]
    np.testing.assert_allclose(np.abs(corr), 1.0)
    one = _generation_multipliers(rng, 50, load, FleetScenario(generations=1))
    flat = _generation_multipliers(rng, 50, np.ones(1500), FleetScenario(diurnal_amplitude=0.0))
    np.testing.assert_allclose(one, 1.0)
    np.testing.assert_allclose(flat, flat[:, :1] * np.ones(1500))


def test_steps_shift_the_mean_by_their_size(clean_fleet: Fleet) -> None:
    steps = plain(clean_fleet, "step")
    z = []
    for s, e in steps:
        k = index_of(s, e.start_s)
        z.append(z_score(s.values[:k], s.values[k:], e.base_share, e.size))
        n_after = len(s.values) - k
        mde = minimum_detectable_effect(e.base_share, 200_000, n_after)
        assert e.size == pytest.approx(e.size_in_mde * mde)
        assert e.is_regression and e.end_s is None
    assert_centred(z)
    assert Counter(e.size_in_mde for _, e in steps).keys() == {1.0, 1.5, 2.0, 3.0, 5.0}


def test_transients_recover_after_their_end(clean_fleet: Fleet) -> None:
    transients = plain(clean_fleet, "transient_spike", "transient_dip")
    during, after = [], []
    for s, e in transients:
        assert e.end_s is not None and not e.is_regression
        assert 2 * 600 <= e.end_s - e.start_s <= 12 * 600
        assert (e.size > 0) == (e.kind == "transient_spike")
        k, end = index_of(s, e.start_s), index_of(s, e.end_s)
        before = s.values[:k]
        during.append(z_score(before, s.values[k:end], e.base_share, e.size))
        after.append(z_score(before, s.values[end:], e.base_share, 0.0))
    assert_centred(during)
    assert_centred(after)


def test_creeps_ramp_over_the_analysis_window(clean_fleet: Fleet) -> None:
    _, _, bounds = clean_fleet
    z = []
    for s, e in plain(clean_fleet, "creep"):
        assert (e.start_s, e.end_s) == (bounds.analysis_start_s, bounds.extended_start_s)
        assert 3 <= e.size_in_mde <= 5 and e.is_regression
        before = s.values[: index_of(s, e.start_s)]
        z.append(z_score(before, s.values[-36:], e.base_share, e.size))
    assert_centred(z)


def test_seasonal_peaks_lift_the_analysis_window(clean_fleet: Fleet) -> None:
    _, _, bounds = clean_fleet
    lifts = []
    for s, e in of_kind(clean_fleet, "seasonal_peak"):
        assert e.size == e.daily_amplitude > 0 and not e.is_regression
        k, stop = index_of(s, bounds.analysis_start_s), index_of(s, bounds.extended_start_s)
        lifts.append((s.values[k:stop].mean() - s.values[:k].mean()) / e.size)
    # The analysis window spans 4 h around the peak: cos stays above 0.5 there.
    assert np.mean(lifts) > 0.6


def test_every_event_starts_in_the_analysis_window(default_fleet: Fleet) -> None:
    _, events, bounds = default_fleet
    for e in events:
        assert bounds.analysis_start_s <= e.start_s < bounds.extended_start_s
        assert e.is_regression == (e.kind in ("step", "creep"))
        if e.kind == "none":
            assert e.size == 0 and e.end_s is None


def test_event_kinds_follow_the_scenario_shares(default_fleet: Fleet) -> None:
    _, events, _ = default_fleet
    counts = Counter(e.kind for e in events)
    assert counts["step"] == 100 and counts["creep"] == 20 and counts["seasonal_peak"] == 50
    assert counts["transient_spike"] + counts["transient_dip"] == 50
    assert abs(counts["transient_spike"] - 25) <= 4 * np.sqrt(50 * 0.25)
    seasonal = sum(1 for e in events if e.daily_amplitude > 0 and e.kind != "seasonal_peak")
    assert seasonal == 100
