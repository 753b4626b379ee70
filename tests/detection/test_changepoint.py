"""The vectorised CUSUM/EM change-point core and the window search against slow one-series
references, and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from regbot.detection.binseg import binary_segmentation
from regbot.detection.changepoint import detect_change_points, detect_window_changes
from regbot.detection.stage_settings import ChangePointSettings

SETTINGS = ChangePointSettings()


def kats_llr(x: np.ndarray, k: int) -> float:
    """Kats' likelihood-ratio statistic as a sum over the points (not the closed form)."""
    n = len(x)
    mu0, mu1 = x[:k].mean(), x[k:].mean()
    scale = np.sqrt((((x[:k] - mu0) ** 2).sum() + ((x[k:] - mu1) ** 2).sum()) / (n - 2))
    mt, st = x.mean(), x.std()
    if st == 0:
        return 0.0
    llr = -2 * sum(
        np.sum(np.log(scale / st) + 0.5 * (((seg - mu) / scale) ** 2 - ((seg - mt) / st) ** 2))
        for seg, mu in ((x[:k], mu0), (x[k:], mu1))
    )
    return max(float(llr), 0.0)  # the closed form can dip just below 0; regbot clamps it


def rss(x: np.ndarray, k: int) -> float:
    return float(((x[:k] - x[:k].mean()) ** 2).sum() + ((x[k:] - x[k:].mean()) ** 2).sum())


def reference(
    x: np.ndarray,
    lo: int,
    hi: int,
    settings: ChangePointSettings = SETTINGS,
    direction: str = "increase",
) -> tuple[int, float]:
    """One series, plain loops: Kats' iteration restricted to k in [lo, hi), then the exact
    maximum-likelihood split over the same positions (brute force), and Kats' LLR sum."""
    n, side = len(x), settings.min_points_each_side
    ks = [k for k in range(max(lo, side), min(hi, n - side + 1))]
    if not ks:
        return -1, 0.0
    if direction == "both":
        up = reference(x, lo, hi, settings, "increase")
        down = reference(x, lo, hi, settings, "decrease")
        return down if down[1] > up[1] else up
    y = x if direction == "increase" else -x

    def lowest(level: float) -> int:
        cusum = {k: float(np.sum(y[:k] - level)) for k in ks}
        return min(ks, key=lambda k: (cusum[k], k))

    k = lowest(float(y.mean()))
    for _ in range(settings.max_iterations):
        new = lowest((y[:k].mean() + y[k:].mean()) / 2)
        if new == k:
            break
        k = new
    rising = [j for j in ks if y[j:].mean() > y[:j].mean()]
    if rising:
        best = min(rising, key=lambda j: (rss(y, j), j))
        if k not in rising or rss(y, best) < rss(y, k) * (1 - 1e-9):
            k = best
    return k, kats_llr(x, k)


def test_matches_reference_on_ragged_batches_with_search_windows() -> None:
    rng = np.random.default_rng(11)
    rows, width = 60, 120
    lengths = rng.integers(8, width + 1, rows)
    values = np.zeros((rows, width))
    starts, ends = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    for i, n in enumerate(lengths):
        step_at = int(rng.integers(1, n))
        values[i, :n] = rng.normal(0, 1, n) + np.where(
            np.arange(n) >= step_at, rng.uniform(0, 3), 0
        )
        starts[i] = int(rng.integers(0, n // 2))
        ends[i] = int(rng.integers(starts[i] + 1, n + 1))
    values[:, :] += np.where(np.arange(width) < lengths[:, None], 0, 99.0)  # padding must not leak
    points = detect_change_points(values, lengths, search_start=starts, search_end=ends)
    for i, n in enumerate(lengths):
        k, llr = reference(values[i, :n], int(starts[i]), int(ends[i]))
        assert points.index[i] == k
        assert points.llr[i] == pytest.approx(llr, rel=1e-7, abs=1e-9)
        if k > 0:
            assert points.p_value[i] == pytest.approx(chi2.sf(llr, 2), rel=1e-6, abs=1e-300)
            assert points.mean_before[i] == pytest.approx(values[i, :k].mean())
            assert points.mean_after[i] == pytest.approx(values[i, k:n].mean())


def reference_window(
    x: np.ndarray, a: int, e: int, settings: ChangePointSettings = SETTINGS
) -> tuple[int, int, float, float, tuple[int, int]] | None:
    """``detect_window_changes`` for one series with plain loops: (index, segment start, llr,
    window share — pooled noise scale —, interval — a scale per side) or None when no split
    fits the window."""
    n, side = len(x), settings.min_points_each_side

    def fits(lo: int) -> bool:
        return max(a, lo + side) < min(e, n - side + 1)

    lo = 0
    for _ in range(settings.max_segment_cuts if fits(0) else 0):
        history = x[lo:a]
        ks = range(side, len(history) - side + 1)
        if not len(ks):
            break
        k = min(ks, key=lambda j: (rss(history, j), j))
        if chi2.sf(kats_llr(history, k), 2) * len(ks) >= settings.alpha:
            break
        lo += k
        if not fits(lo):
            break
    if not fits(lo):
        return None
    segment = x[lo:]
    k, llr = reference(segment, a - lo, e - lo, settings)
    k += lo
    margin = int(np.ceil(settings.search_margin * (e - a)))
    ss0 = float(((segment - segment.mean()) ** 2).sum())
    positions = [
        j for j in range(max(a - margin, lo + side), min(e + margin, n + 1)) if j <= n - side
    ]
    log_post = np.array(
        [
            -0.5 * np.log((j - lo) * (n - j))
            - 0.5 * (n - lo - 2) * np.log(max(rss(segment, j - lo), 1e-4 * ss0))
            for j in positions
        ]
    )
    post = np.exp(log_post - log_post.max())
    post /= post.sum()
    share = float(sum(p for j, p in zip(positions, post) if a <= j < e))

    def side_term(part: np.ndarray) -> float:  # own mean and scale integrated out
        m, floor = len(part), 1e-4 * ss0 * len(part) / len(segment)
        spread = max(float(((part - part.mean()) ** 2).sum()), floor)
        return -0.5 * np.log(m) + math.lgamma((m - 1) / 2) - (m - 1) / 2 * np.log(spread / 2)

    log_sep = np.array(
        [side_term(segment[: j - lo]) + side_term(segment[j - lo :]) for j in positions]
    )
    post = np.exp(log_sep - log_sep.max())
    post /= post.sum()
    taken, held = [], 0.0
    for i in np.argsort(-post, kind="stable"):
        taken.append(positions[i])
        held += post[i]
        if held >= settings.interval_mass:
            break
    interval = (min(*taken, k), max(*taken, k))
    if share < settings.min_window_share:
        return -1, lo, llr, share, (-1, -1)
    return k, lo, llr, share, interval


def test_window_changes_match_reference() -> None:
    """Ragged rows, some with an older step in the history, some with a step in the window,
    some with a step just before it."""
    rng = np.random.default_rng(21)
    rows, width = 80, 160
    lengths = rng.integers(50, width + 1, rows)
    values = np.full((rows, width), 99.0)  # padding must not leak
    starts, ends = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    for i, n in enumerate(lengths):
        ends[i] = n - int(rng.integers(0, 15))
        starts[i] = ends[i] - int(rng.integers(4, 20))
        x = rng.normal(0, 1, n)
        if i % 3 == 0:
            x[int(rng.integers(5, starts[i] - 5)) :] += rng.choice([-3.0, 3.0])
        if i % 2 == 0:
            x[int(rng.integers(starts[i] - 3, ends[i])) :] += rng.uniform(0.5, 3)
        values[i, :n] = x
    points = detect_window_changes(values, lengths, starts, ends)
    checked = 0
    for i, n in enumerate(lengths):
        expected = reference_window(values[i, :n], int(starts[i]), int(ends[i]))
        if expected is None:
            assert points.index[i] == -1
            continue
        k, lo, llr, share, interval = expected
        assert points.segment_start[i] == lo
        assert points.window_share[i] == pytest.approx(share, abs=1e-9)
        assert points.index[i] == k
        assert (points.interval_start[i], points.interval_end[i]) == interval
        assert points.llr[i] == pytest.approx(llr, rel=1e-7, abs=1e-9)
        checked += k >= 0
    assert checked > rows // 2
    assert (points.segment_start > 0).sum() >= rows // 6  # older steps were cut off


def test_planted_step_is_found_and_noise_is_not_significant() -> None:
    rng = np.random.default_rng(5)
    noise = rng.normal(0, 1, (2000, 300))
    stepped = noise.copy()
    stepped[:, 200:] += 1.0
    lengths = np.full(2000, 300)
    found = detect_change_points(stepped, lengths)
    assert (found.p_value < 0.01).mean() > 0.99
    assert np.median(np.abs(found.index - 200)) <= 2
    quiet = detect_change_points(noise, lengths)
    # the maximum over k inflates the nominal 1% (the later filters exist for this), but stays small
    assert (quiet.p_value < 0.01).mean() < 0.25


def test_finishes_at_the_maximum_likelihood_split_even_when_the_iteration_stops_early() -> None:
    """Two steps: CUSUM/EM from the overall mean stops where it starts with a budget of one
    iteration; the reported split is still the exact maximum-likelihood one."""
    rng = np.random.default_rng(8)
    rows, n = 200, 90
    x = rng.normal(0, 1, (rows, n))
    x[:, 30:] += rng.uniform(0.5, 2.0, (rows, 1))
    x[:, 60:] += rng.uniform(0.5, 2.0, (rows, 1))
    lengths = np.full(rows, n)
    for budget in (1, 10):
        points = detect_change_points(x, lengths, ChangePointSettings(max_iterations=budget))
        for i in range(rows):
            rising = [k for k in range(3, n - 2) if x[i, k:].mean() > x[i, :k].mean()]
            assert points.index[i] == min(rising, key=lambda k: rss(x[i], k))


def test_constant_short_and_perfect_series() -> None:
    values = np.zeros((4, 10))
    values[1, 5:] = 1.0  # a perfect step: decisively significant, finite
    values[2, :] = 7.0  # constant: nothing to test
    lengths = np.array([10, 10, 10, 4])  # the last is too short for 3 points on each side
    points = detect_change_points(values, lengths)
    assert points.index[1] == 5 and points.p_value[1] < 1e-6 and np.isfinite(points.llr[1])
    assert points.p_value[0] == 1.0 and points.p_value[2] == 1.0
    assert points.index[3] == -1 and points.p_value[3] == 1.0


def test_directions() -> None:
    rng = np.random.default_rng(2)
    down = np.concatenate([rng.normal(5, 0.1, 50), rng.normal(4, 0.1, 50)])[None, :]
    lengths = np.array([100])
    assert detect_change_points(down, lengths, direction="decrease").index[0] == 50
    both = detect_change_points(down, lengths, direction="both")
    assert both.index[0] == 50 and both.mean_after[0] < both.mean_before[0]
    up = detect_change_points(down, lengths, direction="increase")
    assert up.llr[0] < both.llr[0]


def test_iteration_budget_reports_unstable() -> None:
    rng = np.random.default_rng(9)
    x = rng.normal(0, 1, (200, 80))
    points = detect_change_points(x, np.full(200, 80), ChangePointSettings(max_iterations=1))
    assert (~points.stable).any()
    assert (points.iterations <= 1).all()


def test_binary_segmentation_finds_planted_segments() -> None:
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(0, 1, 80), rng.normal(4, 1, 60), rng.normal(-2, 1, 90)])
    found = binary_segmentation(x)
    assert len(found) == 2
    assert abs(found[0] - 80) <= 2 and abs(found[1] - 140) <= 2
    assert binary_segmentation(np.full(50, 3.0)) == []
    assert binary_segmentation(rng.normal(0, 1, 5)) == []
