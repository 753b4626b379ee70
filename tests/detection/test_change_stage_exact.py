"""The change-point stage's fast paths give every row what the plain computation gives it, bit
for bit: prefix sums, split scans and autocorrelations in cache-sized row blocks (whatever the
block size, and on a subset of rows by index as on copied rows), the noise residuals of many
samples from one rolling-median pass, the batched change tests, numpy's moments without their
wrappers, the rank test's ranks from one sort, and scratch arrays lent and reused."""

from __future__ import annotations

import warnings
from dataclasses import fields

import numpy as np
import pytest
from scipy.stats import rankdata

from regbot.detection import changepoint, changepoint_split, scratch
from regbot.detection.change_test import change_test, change_tests
from regbot.detection.changepoint import detect_change_points, detect_window_changes
from regbot.detection.moments import mean, std, var
from regbot.detection.noise_shape import smooth_residual, smooth_residuals
from regbot.detection.rank_tests import pooled_and_own_ranks
from regbot.detection.scratch import LARGEST_BYTES, borrowed
from regbot.detection.season_adjust import adjust_for_season, autocorrelations
from regbot.detection.series_batch import ChangePoints, SeriesBatch, WindowBounds
from regbot.detection.stage_settings import ChangePointSettings
from regbot.profiles.model import Series

SETTINGS = ChangePointSettings()


def ragged(seed: int, rows: int = 40, width: int = 260) -> tuple[np.ndarray, np.ndarray]:
    """(values, lengths): noise with steps (older ones and late ones), rounded rows (ties), a
    constant row, and padding that must not leak (NaN)."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(rows, width))
    values[::3, 60:] += rng.uniform(2, 6, (len(values[::3]), 1))  # older changes
    values[1::3, 230:] += rng.uniform(0.5, 3, (len(values[1::3]), 1))  # late changes
    values[::4] = np.round(values[::4])
    values[5] = 2.5
    lengths = rng.integers(30, width + 1, rows)
    lengths[:6] = width
    values[np.arange(width)[None, :] >= lengths[:, None]] = np.nan
    return values, lengths


def unblocked_prefix_sums(values: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, ...]:
    """The prefix sums as one pass over the whole array computes them."""
    m, width = values.shape
    valid = np.arange(width)[None, :] < lengths[:, None]
    row_mean = np.where(valid, values, 0.0).sum(axis=1) / np.maximum(lengths, 1)
    centred = np.where(valid, values - row_mean[:, None], 0.0)
    p1 = np.zeros((m, width + 1))
    np.cumsum(centred, axis=1, out=p1[:, 1:])
    p2 = np.zeros((m, width + 1))
    np.cumsum(centred * centred, axis=1, out=p2[:, 1:])
    return row_mean, p1, p2


def same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


@pytest.mark.parametrize("cells", [1, 700, 1 << 30])
def test_prefix_sums_in_row_blocks_are_one_passes(monkeypatch: pytest.MonkeyPatch, cells: int):
    values, lengths = ragged(1)
    full = np.random.default_rng(2).normal(size=(30, 200))  # every point valid: no mask
    monkeypatch.setattr(changepoint_split, "BLOCK_CELLS", cells)
    for v, n in ((values, lengths), (full, np.full(30, 200))):
        assert same(changepoint._prefix_sums(v, n), unblocked_prefix_sums(v, n))
        with borrowed((2, len(n), v.shape[1] + 1)) as out:
            out[...] = np.inf  # whatever a last borrower left
            assert same(changepoint._prefix_sums(v, n, out), unblocked_prefix_sums(v, n))


@pytest.mark.parametrize("seed", range(3))
def test_split_scans_in_blocks_and_on_rows_by_index(monkeypatch: pytest.MonkeyPatch, seed: int):
    rng = np.random.default_rng(seed)
    values, lengths = ragged(seed)
    _, p1, p2 = unblocked_prefix_sums(values, lengths)
    m = len(lengths)
    seg_lo = rng.integers(0, 20, m)
    seg_hi = lengths.copy()
    start = seg_lo + rng.integers(0, 30, m)
    end = np.minimum(seg_hi, start + rng.integers(1, 200, m))
    end[3] = start[3]  # a row with nowhere to split
    rows = np.sort(rng.choice(m, m // 2, replace=False))
    cases = [("increase", True), ("decrease", True), ("both", True), ("both", False)]
    for direction, iterate in cases:
        args = (seg_lo, seg_hi, start, end, SETTINGS, direction, iterate)
        monkeypatch.setattr(changepoint_split, "BLOCK_CELLS", 1 << 30)
        whole = changepoint_split.split(p1, p2, *args)
        sub = tuple(a[rows] for a in (seg_lo, seg_hi, start, end))
        copied = changepoint_split.split(p1[rows], p2[rows], *sub, *args[4:])
        for cells in (1, 300, 1 << 30):
            monkeypatch.setattr(changepoint_split, "BLOCK_CELLS", cells)
            assert same(changepoint_split.split(p1, p2, *args), whole)
            indexed = changepoint_split.split(p1, p2, *sub, *args[4:], rows=rows)
            assert same(indexed, copied)


def columns(points: ChangePoints) -> tuple[np.ndarray, ...]:
    return tuple(getattr(points, f.name) for f in fields(ChangePoints))


@pytest.mark.parametrize("seed", range(2))
def test_window_changes_whatever_the_block_size(monkeypatch: pytest.MonkeyPatch, seed: int):
    values, lengths = ragged(seed + 10)
    starts = np.maximum(lengths - 40, 0)
    ends = np.maximum(lengths - 10, 0)
    results = []
    for cells in (1 << 30, 1, 500):
        monkeypatch.setattr(changepoint_split, "BLOCK_CELLS", cells)
        window = detect_window_changes(values, lengths, starts, ends, SETTINGS)
        whole = detect_change_points(values, lengths, direction="both")
        results.append(columns(window) + columns(whole))
    assert (results[0][0] >= 0).sum() > 5 and (results[0][7] > 0).sum() > 5  # found, cut
    assert same(results[1], results[0]) and same(results[2], results[0])


def test_autocorrelations_in_blocks_and_on_rows_by_index(monkeypatch: pytest.MonkeyPatch):
    rng = np.random.default_rng(4)
    rows, width = 35, 400
    t = np.arange(width)
    values = np.sin(2 * np.pi * t / 48) * rng.uniform(0, 2, (rows, 1)) + rng.normal(
        size=(rows, width)
    )
    values[::5] = np.round(values[::5])
    historical = t[None, :] < rng.integers(50, width, rows)[:, None]
    historical[7] = False  # no history
    lags = [0, 1, 48, 336, width]
    subset = np.array([2, 3, 9, 20, 34])
    monkeypatch.setattr(changepoint_split, "BLOCK_CELLS", 1 << 30)
    whole = autocorrelations(values, historical, lags)
    copied = autocorrelations(values[subset], historical[subset], lags)
    for cells in (1, 900):
        monkeypatch.setattr(changepoint_split, "BLOCK_CELLS", cells)
        assert same(autocorrelations(values, historical, lags), whole)
        assert same(autocorrelations(values, historical, lags, subset), copied)
    assert (whole[1][2] > 0.3).sum() > 5


def test_adjust_for_season_off_a_shared_axis_is_each_rows_own():
    rng = np.random.default_rng(5)
    series = []
    for i in range(24):
        n = int(rng.integers(500, 900))
        step = 600.0 if i % 3 else 1200.0  # two spacings
        times = 1.7e9 + step * np.arange(n) + (i % 2) * 300.0
        swing = (i % 2) * 2.0 * np.sin(2 * np.pi * times / 86400.0)
        series.append(Series(f"s{i}", "gcpu", times, 10 + swing + rng.normal(size=n)))
    batch = SeriesBatch.from_series(series)
    end = float(batch.times_s[np.isfinite(batch.times_s)].max())
    windows = WindowBounds(1.7e9, end - 30 * 3600, end - 6 * 3600, end)
    periods = (86400.0, 7 * 86400.0)
    together, chosen = adjust_for_season(batch, windows, periods, 0.01)
    with borrowed(batch.values.shape) as out:
        lent, lent_chosen = adjust_for_season(batch, windows, periods, 0.01, out=out)
        assert np.array_equal(lent, together) and np.array_equal(lent_chosen, chosen)
    assert 0 < chosen.sum() < len(series)
    for row in range(len(series)):
        alone, one = adjust_for_season(batch.rows(row, row + 1), windows, periods, 0.01)
        assert alone[0].tobytes() == together[row].tobytes() and one[0] == chosen[row]


def samples(seed: int, count: int) -> list[np.ndarray]:
    """Normal, tied, heavy-tailed and constant samples of 1..400 points; some with NaN, some
    with negative zeros among zeros."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(1, 400))
        v = rng.normal(size=n)
        if i % 4 == 1:
            v = np.round(v)  # ties, zeros among them
        elif i % 4 == 2:
            v = rng.standard_t(2, size=n)
        elif i % 4 == 3:
            v = np.full(n, 0.7)
        if i % 9 == 0 and n > 2:
            v[n // 2] = np.nan
        if i % 11 == 0:
            v = np.where(v == 0, -0.0, v) if i % 2 else np.where(v < 0.5, -0.0, v)
        out.append(v)
    return out


def test_smooth_residuals_end_to_end_are_each_samples_own():
    batch = samples(6, 300)
    got = smooth_residuals(batch)
    for v, r in zip(batch, got):
        assert r.tobytes() == smooth_residual(v).tobytes()
    clean = [v for v in batch if len(v) >= 25 and not np.isnan(v).any()][:20]
    assert [r.tobytes() for r in smooth_residuals(clean)] == [
        smooth_residual(v).tobytes() for v in clean
    ]


def same_test(a: object, b: object) -> bool:
    return repr(a) == repr(b)  # NaN numbers compare by their text


@pytest.mark.parametrize("seed", range(2))
def test_change_tests_are_each_rows_change_test(seed: int):
    rng = np.random.default_rng(seed)
    rows, starts, ks, ps = [], [], [], []
    for i, v in enumerate(samples(seed + 20, 160)):
        n = len(v) + 60
        x = np.concatenate([v, v[-1:] + rng.uniform(0, 4) + rng.normal(size=60)])
        if i % 5 == 0:
            x = np.round(x)  # ties on both sides: the rank path
        k = int(rng.integers(max(n - 60, 1), n - 2))
        rows.append(x)
        starts.append(int(rng.integers(0, max(k // 3, 1))))
        ks.append(k)
        ps.append(float(rng.uniform(0, 0.02)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = change_tests(rows, starts, ks, ps, 0.01)
        alone = [change_test(x, s, k, p, 0.01) for x, s, k, p in zip(rows, starts, ks, ps)]
    assert {t.test for t in alone} == {"likelihood_ratio", "rank"}
    assert all(same_test(a, b) for a, b in zip(together, alone))


def test_moments_are_numpys():
    rng = np.random.default_rng(7)
    for v in samples(8, 400) + [np.zeros(0), np.array([3.0]), rng.normal(size=5000) * 1e9]:
        for ddof in (0, 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = (float(v.mean()), float(v.var(ddof=ddof)), float(v.std(ddof=ddof)))
                got = (mean(v), var(v, ddof), std(v, ddof))
            assert repr(got) == repr(want)


def test_ranks_from_one_sort_are_scipys():
    rng = np.random.default_rng(9)
    for i in range(300):
        x = rng.normal(size=int(rng.integers(1, 40)))
        y = rng.normal(size=int(rng.integers(1, 200)))
        if i % 2:
            x, y = np.round(x), np.round(y)
        if i % 5 == 0:
            x[0], y[-1] = -0.0, 0.0  # equal values of two signs
        if i % 7 == 0:
            y[0] = np.inf
        got = pooled_and_own_ranks(x, y)
        want = (rankdata(np.concatenate((x, y))), rankdata(x), rankdata(y))
        assert same(got, want)


def test_scratch_arrays_are_lent_to_one_borrower_at_a_time():
    with borrowed((3, 50)) as a, borrowed((3, 50)) as b:
        assert a.shape == b.shape == (3, 50) and not np.shares_memory(a, b)
        a[...] = 1.0
        b[...] = 2.0
        assert (a == 1.0).all()
        first = a.__array_interface__["data"][0]
    with borrowed((2, 40)) as c:  # an idle array large enough is lent again
        assert c.flags.c_contiguous and c.__array_interface__["data"][0] in (
            first,
            b.__array_interface__["data"][0],
        )
    big = LARGEST_BYTES // 8 + 1
    with borrowed((big,)) as d:
        d[:1] = 0.0
    assert all(a.size < big for a in scratch._idle)  # an oversized array is not kept
