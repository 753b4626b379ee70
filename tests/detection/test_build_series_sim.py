"""The per-build series generator of the sparse benchmark: seeded, labelled, SPEC §2 CSV with
repeated rows that the series reader turns back into one point per build."""

from __future__ import annotations

import numpy as np
from build_series_sim import BuildScenario, simulate_builds, write_builds_csv

from regbot.profiles.series_files import read_series_files

SMALL = BuildScenario(n_series=16, n_builds=900, min_builds=500)


def test_same_seed_same_scenario_other_seed_other() -> None:
    a_series, a_labels = simulate_builds(SMALL, seed=3)
    b_series, b_labels = simulate_builds(SMALL, seed=3)
    assert a_labels == b_labels
    assert all(np.array_equal(x.build_means, y.build_means) for x, y in zip(a_series, b_series))
    _, other = simulate_builds(SMALL, seed=4)
    assert other != a_labels


def test_series_are_per_build_with_repeats_and_irregular_times() -> None:
    series, _ = simulate_builds(SMALL, seed=1)
    for s in series:
        assert SMALL.min_builds <= len(s.build_times_s) <= SMALL.n_builds
        assert np.all(np.diff(s.build_times_s) > 0)
        assert {len(r) for r in s.repeats} <= {1, 2, 3, 4, 5}
    gaps = np.diff(series[0].build_times_s)
    assert gaps.max() > 20 * gaps.min() and gaps.max() > 48 * 3600  # irregular, with long gaps
    assert {s.noise for s in series} == {"normal", "heavy", "bimodal"}


def test_labels_are_lasting_increases_where_the_series_says_so() -> None:
    series, labels = simulate_builds(SMALL, seed=2)
    by_id = {s.id: s for s in series}
    steps = [lab for lab in labels if lab.kind == "step"]
    assert steps and all(0.01 <= lab.relative_delta <= 0.25 for lab in steps)
    for lab in steps:
        s = by_id[lab.series_id]
        assert s.build_times_s[lab.index] == lab.time_s
        if s.noise == "normal" and lab.relative_delta >= 0.05:
            means = s.build_means
            before = np.median(means[lab.index - 20 : lab.index])
            after = np.median(means[lab.index : lab.index + 20])
            assert after / before - 1 > 0.5 * lab.relative_delta
    for s in series:  # changes of one series are apart, each with 150 builds of history
        own = sorted(lab.index for lab in labels if lab.series_id == s.id)
        assert all(i >= 150 for i in own) and all(b - a >= 150 for a, b in zip(own, own[1:]))


def test_one_series_ends_with_an_unlabelled_spike_and_decoys_are_where_they_say() -> None:
    series, labels = simulate_builds(SMALL, seed=5)
    (end,) = [s for s in series if ("end_spike", len(s.build_times_s) - 2) in s.decoys]
    means = end.build_means
    assert np.median(means[-2:]) > 1.12 * np.median(means[-40:-2])
    assert all(lab.end_index < len(means) - 20 for lab in labels if lab.series_id == end.id)
    kinds = {kind for s in series for kind, _ in s.decoys}
    assert kinds == {"improvement", "spike", "end_spike"}
    for s in series:
        for kind, k in s.decoys:
            if kind == "improvement" and s.noise == "normal":
                assert np.median(s.build_means[k : k + 20]) < np.median(s.build_means[k - 20 : k])


def test_csv_round_trip_averages_repeats_into_one_point_per_build(tmp_path) -> None:
    series, _ = simulate_builds(BuildScenario(n_series=3, n_builds=300, min_builds=200), seed=6)
    path = tmp_path / "builds.csv"
    rows = write_builds_csv(series, path)
    assert (
        rows
        == sum(len(r) for s in series for r in s.repeats)
        > sum(len(s.build_times_s) for s in series)
    )
    read = {s.id: s for s in read_series_files([path])}
    for s in series:
        assert np.array_equal(read[s.id].timestamps_s, s.build_times_s)
        assert np.allclose(read[s.id].values, s.build_means, rtol=1e-5)
        assert read[s.id].kind == "latency"
