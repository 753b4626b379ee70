"""The per-candidate change test (``change_test.py``): persistence judged on the whole history."""

from __future__ import annotations

import numpy as np

from regbot.detection.change_test import change_test
from regbot.detection.noise_shape import rolling_levels

N, AFTER = 1500, 61
K = N - AFTER


def flipping(seed: int, gap: float = 6.0) -> np.ndarray:
    """Three levels ``gap`` noise sd apart, a Markov chain switching at 10% of the points, white
    noise of sd 1: a benchmark on shared hardware, multi-modal (the rank path)."""
    rng = np.random.default_rng(seed)
    state = np.zeros(N)
    for i in range(1, N):
        state[i] = rng.integers(0, 3) if rng.random() < 0.1 else state[i - 1]
    return gap * state + rng.standard_normal(N)


def test_a_stay_as_high_as_the_history_has_been_is_not_a_change() -> None:
    """After the change point, a stretch as high as the history's stretches at their 90th
    percentile (a copy of one): the points rank above the segment's (the rank test alone would
    report it), but the whole history's stretch levels have been there before."""
    for seed in range(10):
        values = flipping(seed)
        levels = rolling_levels(values[:K], AFTER, "mean")
        at = int(np.argsort(levels)[int(0.9 * len(levels))])
        values[K:] = values[at : at + AFTER]
        result = change_test(values, K - 400, K, 1e-12, 0.01)
        assert result.test == "rank"
        assert result.numbers["history_stretches"] == K - AFTER + 1  # the whole history
        assert result.numbers["p_rank_alone"] < 0.01  # ranks alone would report it
        assert result.numbers["p_persistence"] > 0.01
        assert not result.passed and result.p_value >= result.numbers["p_persistence"]


def test_a_real_step_on_a_flipping_series_stands_out_of_its_stretches() -> None:
    for seed in range(10):
        values = flipping(seed)
        values[K:] += 12.0  # two gaps
        result = change_test(values, K - 400, K, 1e-12, 0.01)
        assert result.test == "rank"
        assert result.passed and result.numbers["p_persistence"] < 1e-3
