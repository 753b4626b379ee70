"""The realistic fleet simulator (tests/support/fleet_sim.py): determinism, the call tree's
physics (cascades, cost shifts), the shared load term, MDE sizing, windows and the CSV writer."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fleet_sim import FleetSpec, FleetTruth, mde, simulate_realistic_fleet, write_fleet_csv
from scipy.stats import t as student_t

from regbot.detection.cost_domains import class_qualifier
from regbot.errors import InputError
from regbot.profiles.model import Series
from regbot.profiles.series_files import read_series_files

SMALL = FleetSpec(
    n_series=600,
    n_points=400,
    n_regressions=15,
    n_latency_steps=1,
    n_throughput_steps=1,
    n_linked_latency=1,
    n_linked_throughput=1,
    n_creeps=3,
    n_transients=6,
    n_seasonal_peaks=3,
    n_cost_shifts=3,
    n_improvements=4,
)
# No load, no flips or bursts, no daily patterns: the only noise left is the stack sampling, so
# z-tests of a planted change are exact.
CLEAN = replace(
    SMALL,
    load_loading=(0.0, 0.0),
    diurnal_load=0.0,
    bimodal_share=0.0,
    heavy_tail_share=0.0,
    background_seasonal_share=0.0,
)

Fleet = tuple[list[Series], FleetTruth]


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return simulate_realistic_fleet(SMALL, seed=3)


@pytest.fixture(scope="module")
def clean() -> Fleet:
    return simulate_realistic_fleet(CLEAN, seed=5)


def by_id(series: list[Series]) -> dict[str, np.ndarray]:
    return {s.id: np.asarray(s.values) for s in series}


def split_at(truth: FleetTruth, series: Series, time_s: float) -> int:
    return int(np.searchsorted(series.timestamps_s, time_s))


def shift_z(values: np.ndarray, at: int, expected: float, sd: float) -> float:
    """(mean after − mean before − expected) in standard errors of a two-sample difference."""
    before, after = values[:at], values[at:]
    se = sd * np.sqrt(1 / len(before) + 1 / len(after))
    return float((after.mean() - before.mean() - expected) / se)


def test_same_seed_same_fleet_other_seed_other_fleet(fleet: Fleet) -> None:
    again = simulate_realistic_fleet(SMALL, seed=3)
    other = simulate_realistic_fleet(SMALL, seed=4)
    assert [s.id for s in again[0]] == [s.id for s in fleet[0]]
    assert all(np.array_equal(a.values, b.values) for a, b in zip(again[0], fleet[0]))
    assert again[1].events == fleet[1].events
    assert not all(np.array_equal(a.values, b.values) for a, b in zip(other[0], fleet[0]))
    assert other[1].events != fleet[1].events


def test_fleet_makeup_ids_and_one_event_per_series(fleet: Fleet) -> None:
    series, truth = fleet
    kinds = Counter(s.kind for s in series)
    assert len(series) == SMALL.n_series
    assert kinds["gcpu"] == round(SMALL.gcpu_share * SMALL.n_series)
    assert kinds["latency"] + kinds["throughput"] == SMALL.n_series - kinds["gcpu"]
    assert all(s.timestamps_s is series[0].timestamps_s for s in series)  # one time axis
    members = [sid for e in truth.events for sid in e.series_ids]
    assert sorted(members) == sorted(s.id for s in series)  # each series in exactly one event
    classes = Counter(
        class_qualifier(s.id.removeprefix("gcpu:")) for s in series if s.kind == "gcpu"
    )
    assert None not in classes and min(classes.values()) >= 1
    assert np.mean([n >= 2 for n in classes.values()]) > 0.9  # several methods per class
    for s in series:
        prefix = {"gcpu": "gcpu:", "latency": "latency:/api/", "throughput": "throughput:/api/"}
        assert s.id.startswith(prefix[s.kind])
        if s.kind == "gcpu":
            assert np.all((s.values >= 0) & (s.values <= 1))
    counts = Counter(e.kind for e in truth.events)
    assert counts["step"] + counts["cascade"] == SMALL.n_regressions
    assert counts["creep"] == SMALL.n_creeps and counts["cost_shift"] == SMALL.n_cost_shifts
    assert counts["transient"] == SMALL.n_transients
    assert counts["seasonal_peak"] == SMALL.n_seasonal_peaks
    assert counts["improvement"] == SMALL.n_improvements


def test_windows_are_those_detect_derives_and_events_fall_in_them(fleet: Fleet) -> None:
    series, truth = fleet
    times = series[0].timestamps_s
    assert truth.end_s == times[-1]
    assert truth.extended_start_s == truth.end_s - SMALL.extended_points * SMALL.bucket_s
    assert truth.analysis_start_s == truth.extended_start_s - SMALL.analysis_points * SMALL.bucket_s
    assert truth.analysis_start_s <= truth.deploy_time_s < truth.extended_start_s
    in_window = lambda t: truth.analysis_start_s <= t < truth.extended_start_s  # noqa: E731
    for e in truth.events:
        if e.kind in ("step", "cascade", "cost_shift", "improvement", "seasonal_peak"):
            assert in_window(e.change_time_s), e
        if e.kind == "transient":  # back to baseline inside the analysis window
            assert in_window(e.change_time_s) and e.end_time_s <= truth.extended_start_s
        if e.kind == "creep":  # a ramp over hours to days ending in or after the window
            assert e.end_time_s >= truth.analysis_start_s
            assert 8 * 3600 <= e.end_time_s - e.change_time_s <= 72 * 3600
    steps = [e for e in truth.events if e.kind in ("step", "cascade")]
    at_deploy = np.mean([e.change_time_s == truth.deploy_time_s for e in steps])
    assert 0.2 < at_deploy < 0.9  # partly at one deploy, partly spread across the window


def test_steps_are_sized_in_mde_of_their_real_noise(fleet: Fleet) -> None:
    series, truth = fleet
    values = by_id(series)
    # App. A.2 by hand: T_critical(α/2, n₂ − 1) · s / √n₂
    n2, sd = 48, 0.003
    assert mde(sd, n2, 0.01) == pytest.approx(student_t.ppf(0.995, n2 - 1) * sd / np.sqrt(n2))
    sizes = Counter()
    for e in truth.events:
        if e.kind not in ("step", "cascade"):
            continue
        origin = e.series_ids[0]
        # n₂ = the analysis window's points, wherever in the window the step is
        unit = mde(truth.noise_sd[origin], SMALL.analysis_points, SMALL.alpha)
        assert abs(e.size) == pytest.approx(e.size_in_mde * unit)
        assert min(abs(e.size_in_mde - m) for m in SMALL.step_sizes_mde) < 1e-9
        sizes[round(e.size_in_mde, 6)] += 1
        if origin.startswith("gcpu:"):
            assert unit >= SMALL.min_regression_gcpu  # reportable under the default threshold
        if origin.startswith("throughput:"):
            assert e.size < 0  # higher is better: its regression is a drop
    assert (
        set(sizes) == set(SMALL.step_sizes_mde) and max(sizes.values()) - min(sizes.values()) <= 1
    )
    # the noise sd is the series' real one: quiet series' historical sd matches it
    ratios = [
        values[e.series_ids[0]][: split_at(truth, series[0], truth.analysis_start_s)].std()
        / truth.noise_sd[e.series_ids[0]]
        for e in truth.events
        if e.kind == "none" and e.series_ids[0].startswith("gcpu:")
    ]
    assert 0.95 < np.median(ratios) < 1.05


def test_a_cascade_rises_by_the_same_absolute_gcpu_in_leaf_and_callers(clean: Fleet) -> None:
    series, truth = clean
    values = by_id(series)
    cascades = [e for e in truth.events if e.kind == "cascade"]
    assert cascades
    for e in cascades:
        leaf, callers = e.series_ids[0], e.series_ids[1:]
        assert 1 <= len(callers) <= CLEAN.max_depth
        assert set(e.sizes) == {e.size}  # the truth says the same absolute rise
        chain = [leaf, *callers]
        for below, above in zip(chain, chain[1:]):
            assert truth.caller[below] == above  # the callers are the leaf's call path
        at = split_at(truth, series[0], e.change_time_s)
        sd = truth.noise_sd[leaf]
        assert abs(shift_z(values[leaf], at, e.size, sd)) < 4.5
        for caller in callers:
            # the caller's samples contain the leaf's: caller − leaf holds the rest of its
            # samples, which did not move, and its residuals correlate with the leaf's
            rest = values[caller] - values[leaf]
            rest_sd = np.sqrt(max(truth.noise_sd[caller] ** 2 - sd**2, 1e-18))
            assert abs(shift_z(rest, at, 0.0, rest_sd)) < 4.5
            assert np.corrcoef(values[leaf][:at], values[caller][:at])[0, 1] > 0.05


def test_a_cost_shift_leaves_the_class_total_unchanged(clean: Fleet) -> None:
    series, truth = clean
    values = by_id(series)
    shifts = [e for e in truth.events if e.kind == "cost_shift"]
    assert len(shifts) == CLEAN.n_cost_shifts
    for e in shifts:
        up, down = e.series_ids
        assert e.sizes == (e.size, -e.size) and e.size > 0
        klass = class_qualifier(up.removeprefix("gcpu:"))
        assert klass == class_qualifier(down.removeprefix("gcpu:"))
        assert truth.caller[up] == truth.caller[down]
        at = split_at(truth, series[0], e.change_time_s)
        assert shift_z(values[up], at, 0.0, truth.noise_sd[up]) > 3  # the member rose
        # its sibling fell by as much (the sibling had the room: no drop clipped at zero)
        assert abs(shift_z(values[down], at, -e.size, truth.noise_sd[down])) < 4.5
        members = [s.id for s in series if class_qualifier(s.id.removeprefix("gcpu:")) == klass]
        total = sum(values[m] for m in members)
        total_sd = np.std(np.diff(total[:at])) / np.sqrt(2)
        assert abs(shift_z(total, at, 0.0, total_sd)) < 4.5  # ... the class did not


def test_quiet_series_share_the_load_term() -> None:
    """Independent quiet series correlate through the fleet-wide load; without it they do not."""

    def mean_correlation(spec: FleetSpec) -> float:
        series, truth = simulate_realistic_fleet(spec, seed=9)
        events = truth.event_of()
        quiet = [s for s in series if s.kind == "gcpu" and events[s.id].kind == "none"]
        largest = sorted(quiet, key=lambda s: -float(np.mean(s.values)))[:60]
        x = np.stack([s.values for s in largest])
        c = np.corrcoef(x - x.mean(axis=1, keepdims=True))
        return float(c[np.triu_indices(len(x), 1)].mean())

    loaded = replace(
        SMALL,
        load_loading=(0.05, 0.02),
        bimodal_share=0.0,
        heavy_tail_share=0.0,
        background_seasonal_share=0.0,
    )
    unloaded = replace(loaded, load_loading=(0.0, 0.0), diurnal_load=0.0)
    with_load, without = mean_correlation(loaded), mean_correlation(unloaded)
    assert with_load > 0.05
    assert abs(without) < 0.02
    # the default fleet's loading too: positive on average, though smaller
    assert mean_correlation(SMALL) > 0.01


def test_linked_latency_moves_with_its_gcpu_regression(fleet: Fleet) -> None:
    series, truth = fleet
    linked = [
        e
        for e in truth.events
        if e.kind in ("step", "cascade") and len({sid.split(":")[0] for sid in e.series_ids}) > 1
    ]
    assert len(linked) == SMALL.n_linked_latency + SMALL.n_linked_throughput
    for e in linked:
        assert e.series_ids[0].startswith("gcpu:")
        for sid, size in zip(e.series_ids[1:], e.sizes[1:]):
            if sid.startswith("throughput:"):
                assert size < 0
            elif sid.startswith("latency:"):
                assert size > 0
        # one cause, one noise: the pair's point-to-point changes correlate (the method's own
        # cost fluctuation), positively for latency, negatively for throughput
        values = by_id(series)
        r = np.corrcoef(np.diff(values[e.series_ids[0]]), np.diff(values[e.series_ids[-1]]))[0, 1]
        assert (r if e.series_ids[-1].startswith("latency:") else -r) > 0.1


def test_writer_gives_the_spec_long_csv(fleet: Fleet, tmp_path: Path) -> None:
    series, _ = fleet
    some = series[:3] + series[-3:]
    path = tmp_path / "series.csv"
    write_fleet_csv(some, path)
    assert path.read_text().splitlines()[0] == "timestamp,series,value,kind,unit"
    back = read_series_files([path])
    assert [(s.id, s.kind, s.unit) for s in back] == [(s.id, s.kind, s.unit) for s in some]
    assert all(np.array_equal(a.values, b.values) for a, b in zip(back, some))


def test_a_fleet_too_small_for_its_events_is_an_input_error() -> None:
    with pytest.raises(InputError, match="FleetSpec"):
        simulate_realistic_fleet(replace(SMALL, n_regressions=400), seed=1)
    with pytest.raises(InputError, match="n_points"):
        FleetSpec(n_points=100).validate()
