"""The long-term screen's edge sums for rows on one time axis (``phase_edges.edge_sums``) are the
sums of ``subtract_phase_profile``'s adjusted values over each edge, bit for bit — seasonal and
flat rows, regular, jittered and gappy axes, padding, histories too short to cover every phase
bucket — and the screen of a batch is the screen of each row alone."""

from __future__ import annotations

import numpy as np
import pytest

from regbot.detection import long_term
from regbot.detection.long_term import _edge_mask, screen_long_term
from regbot.detection.phase_edges import edge_sums
from regbot.detection.presets import Threshold
from regbot.detection.season_adjust import subtract_phase_profile
from regbot.detection.series_batch import WindowBounds

STEP_S = 600.0
T0_S = 1_700_000_000.0
DAY_S = 86400.0


def one_axis(seed: int, rows: int, width: int, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, times (width,)): rows on one axis, half of them with a daily swing, some creeping."""
    rng = np.random.default_rng(seed)
    times = T0_S + STEP_S * np.arange(width, dtype=np.float64)
    if shape == "jitter":
        times += rng.uniform(-90.0, 90.0, width)
    elif shape == "gaps":
        times += STEP_S * 5 * np.cumsum(rng.random(width) < 0.03)
    times = np.sort(times)
    swing = rng.uniform(0, 4, (rows, 1)) * (rng.random((rows, 1)) < 0.5)
    values = 20 + swing * np.sin(2 * np.pi * times / DAY_S) + rng.normal(0, 1, (rows, width))
    values[::4] += np.linspace(0.0, rng.uniform(0.5, 3.0), width)
    return values, times


@pytest.mark.parametrize("shape", ["regular", "jitter", "gaps"])
@pytest.mark.parametrize("history", [30, 140, 700])
def test_edge_sums_are_the_adjusted_values_summed_over_each_edge(shape: str, history: int):
    width = history + 100
    values, times = one_axis(history, 9, width, shape)
    valid = np.ones(width, dtype=bool)
    valid[-7:] = False  # padding, the same in every row
    historical = valid & (times < times[history])
    analysis = valid & ~historical & (times < times[history + 40])
    extended = valid & ~historical & ~analysis
    edges = [
        _edge_mask(mask[None, :], 0.1, end)[0]
        for mask, end in (
            (historical, False),
            (analysis, False),
            (analysis, True),
            (extended, True),
        )
    ]
    for buckets in (24, 48):
        adjusted = subtract_phase_profile(
            values,
            np.broadcast_to(times, values.shape),
            np.broadcast_to(valid, values.shape),
            np.broadcast_to(historical, values.shape),
            T0_S,
            DAY_S,
            buckets,
        )
        expected = [np.where(edge, adjusted, 0.0).sum(axis=1) for edge in edges]
        indices: dict[tuple[int, int, bytes], np.ndarray] = {}
        for _ in range(2):  # the second call reads the kept index
            got = edge_sums(values, times, valid, historical, edges, T0_S, DAY_S, buckets, indices)
            assert all(np.array_equal(g, e) for g, e in zip(got, expected))


@pytest.mark.parametrize("shape", ["regular", "jitter", "gaps"])
def test_the_screen_of_a_batch_is_the_screen_of_each_row(shape: str, monkeypatch):
    values, times = one_axis(3, 40, 800, shape)
    lengths = np.full(len(values), 800)
    windows = WindowBounds(float(times[0]), float(times[650]), float(times[700]), float(times[-1]))
    batch_times = np.broadcast_to(times, values.shape).copy()
    monkeypatch.setattr(long_term, "SCREEN_ROWS", 16)
    for threshold in (Threshold("absolute", 0.4), Threshold("relative", 0.02)):
        whole = screen_long_term(values, batch_times, lengths, windows, threshold, 0.1)
        assert 0 < whole.sum() < len(values)
        broadcast = np.broadcast_to(times, values.shape)  # a fleet's batch holds one row
        assert np.array_equal(
            screen_long_term(values, broadcast, lengths, windows, threshold, 0.1), whole
        )
        for row in range(len(values)):  # alone: the row's own masks and profile
            one = slice(row, row + 1)
            alone = screen_long_term(
                values[one], batch_times[one], lengths[one], windows, threshold, 0.1
            )
            assert alone[0] == whole[row]
