"""The fast routines against the library calls they stand in for: the same floats, bit for bit
(Mann–Kendall and Theil–Sen against scipy, tail probabilities against scipy.stats, the ACF and
its band against statsmodels, medians against numpy), on seeded random inputs with ties, short
samples and NaN where the reference allows it."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from scipy import stats
from statsmodels.compat.scipy import _next_regular
from statsmodels.tsa.stattools import acf

from regbot.detection.acf import acf_band, next_regular
from regbot.detection.dist import chi2_sf, norm_ppf, norm_sf, t_sf
from regbot.detection.kendall import PAIRWISE_MAX, mann_kendall_counts
from regbot.detection.noise_shape import rolling_levels
from regbot.detection.order_stats import mad, median, percentile
from regbot.detection.went_away_trend import MannKendall, mann_kendall, theil_sen


def scipy_mann_kendall(values: np.ndarray, alpha: float) -> MannKendall:
    """The reference: S, tau and p from ``scipy.stats.kendalltau`` against time order."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n < 3 or np.ptp(v) == 0:
        return MannKendall(0, 0.0, 1.0, "none")
    res = stats.kendalltau(np.arange(n), v)
    tau, p = float(res.statistic), float(res.pvalue)
    _, counts = np.unique(v, return_counts=True)
    n0 = n * (n - 1) / 2
    ties = float(np.sum(counts * (counts - 1)) / 2)
    s = int(round(tau * np.sqrt(n0 * (n0 - ties))))
    direction = "none" if p >= alpha else ("up" if tau > 0 else "down")
    return MannKendall(s, tau, p, direction)  # type: ignore[arg-type]


def samples(seed: int, count: int, max_n: int) -> list[np.ndarray]:
    """Seeded samples: normal, heavily tied, trending, rounded with a trend; lengths 1..max_n."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(1, max_n + 1))
        kind = i % 4
        if kind == 0:
            v = rng.normal(size=n)
        elif kind == 1:
            v = rng.integers(0, 3, size=n).astype(float)
        elif kind == 2:
            v = np.cumsum(rng.normal(size=n)) + 0.3 * np.arange(n)
        else:
            v = np.round(rng.normal(size=n) * 3) / 3 + 0.05 * np.arange(n)
        out.append(v)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_mann_kendall_equals_scipys_numbers(seed):
    for v in samples(seed, 1500, 90):  # n <= 33 tie-free: scipy's exact p; else the normal one
        for alpha in (0.05, 0.5):
            assert mann_kendall(v, alpha) == scipy_mann_kendall(v, alpha)


def test_mann_kendall_on_constant_short_and_non_finite_windows():
    for v in (np.ones(5), np.array([1.0, 2.0]), np.array([]), np.array([3.0, 1.0, 2.0])):
        assert mann_kendall(v, 0.05) == scipy_mann_kendall(v, 0.05)
    with_inf = np.array([1.0, np.inf, 2.0, 3.0, -np.inf, 0.5])
    assert mann_kendall(with_inf, 0.05) == scipy_mann_kendall(with_inf, 0.05)
    with_nan = np.array([1.0, np.nan, 2.0, 3.0])
    with pytest.raises(ValueError):  # scipy's NaN tau has no S, before and after
        scipy_mann_kendall(with_nan, 0.05)
    with pytest.raises(ValueError):
        mann_kendall(with_nan, 0.05)


def test_mann_kendall_counts_are_the_pairs_signs_and_ties():
    rng = np.random.default_rng(11)
    for _ in range(300):
        v = np.round(rng.normal(size=int(rng.integers(2, 40))) * 2)
        n = v.size
        signs = [np.sign(v[j] - v[i]) for i in range(n) for j in range(i + 1, n)]
        _, counts = np.unique(v, return_counts=True)
        ties = int(sum(t * (t - 1) // 2 for t in counts))
        tie_variance = int(sum(t * (t - 1) * (2 * t + 5) for t in counts))
        assert mann_kendall_counts(v) == (int(sum(signs)), ties, tie_variance)


def test_mann_kendall_past_the_pairwise_limit_is_scipys():
    v = np.random.default_rng(7).normal(size=PAIRWISE_MAX + 5)
    assert mann_kendall(v, 0.05) == scipy_mann_kendall(v, 0.05)


@pytest.mark.parametrize("seed", range(3))
def test_theil_sen_equals_scipys_slope_and_intercept(seed):
    rng = np.random.default_rng(seed)
    for i in range(100):
        m = int(rng.integers(2, 120))
        x = np.sort(rng.uniform(0, 1e4, m))
        if i % 5 == 0:
            x[1::3] = x[::3][: len(x[1::3])]  # repeated times: their pairs have no slope
            x.sort()
        y = rng.normal(size=m)
        if i % 3 == 0:
            y = np.round(y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all times equal: no slope, NaN
            ref = stats.theilslopes(y, x)
            got = theil_sen(y, x)
        np.testing.assert_array_equal(got, (float(ref.slope), float(ref.intercept)))


def test_tail_probabilities_equal_scipy_stats():
    xs = [-np.inf, -40.0, -3.2, -1e-300, 0.0, 1e-300, 0.7, 2.0, 13.5, 800.0, np.inf, np.nan]
    for x in xs:
        for df in (1.0, 2.0, 3.7, 250.0):
            assert same(chi2_sf(x, df), stats.chi2.sf(x, df))
            assert same(t_sf(x, df), stats.t.sf(x, df))
        assert same(norm_sf(x), stats.norm.sf(x))
    for df in (0.0, -1.0, np.nan):
        assert same(chi2_sf(1.0, df), stats.chi2.sf(1.0, df))
        assert same(t_sf(1.0, df), stats.t.sf(1.0, df))
    for q in (-0.1, 0.0, 1e-12, 0.025, 0.5, 0.995, 1.0, 1.5, np.nan):
        assert same(norm_ppf(q), stats.norm.ppf(q))


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == float(b)


def test_next_regular_is_statsmodels():
    assert [next_regular(t) for t in range(1, 5000)] == [_next_regular(t) for t in range(1, 5000)]


@pytest.mark.parametrize("seed", range(3))
def test_acf_band_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    for i in range(60):
        n = int(rng.integers(3, 2500))
        x = rng.normal(size=n) + np.sin(np.arange(n) / rng.uniform(2, 50))
        if i % 4 == 0:
            x = np.round(x)
        nlags = int(rng.integers(1, n))
        alpha = (0.01, 0.05, 0.2)[i % 3]
        coefficients, band, _, _ = acf(x, nlags=nlags, alpha=alpha, fft=True, qstat=True)
        got, half_width = acf_band(x, nlags, alpha)
        assert np.array_equal(got, coefficients)
        # the seasonality stage reads acf − lower edge
        assert np.array_equal(got - (got - half_width), coefficients - band[:, 0])


@pytest.mark.parametrize("seed", range(3))
def test_median_and_mad_equal_numpy(seed):
    rng = np.random.default_rng(seed)
    for i in range(3000):
        n = int(rng.integers(0, 50))
        v = rng.normal(size=n) * 10 ** rng.uniform(-6, 6)
        if i % 3 == 0:
            v = np.round(v)
        if n and i % 7 == 0:
            v[rng.integers(0, n)] = np.nan
        if n and i % 11 == 0:
            v[rng.integers(0, n)] = np.inf
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy on empty samples
            assert same(median(v), np.median(v))
            assert same(mad(v), np.median(np.abs(v - np.median(v))))


@pytest.mark.parametrize("seed", range(3))
def test_percentile_equals_numpy(seed):
    rng = np.random.default_rng(seed)
    for i in range(3000):
        n = int(rng.integers(1, 80))
        v = rng.normal(size=n) * 10 ** rng.uniform(-6, 6)
        if i % 3 == 0:
            v = np.round(v)
        if i % 13 == 0:
            v[rng.integers(0, n)] = np.nan
        if i % 17 == 0:
            v[rng.integers(0, n)] = np.inf
        q = (0.0, 100.0, 50.0, 90.0, 95.0, float(rng.uniform(0, 100)))[i % 6]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's inf − inf
            assert same(percentile(v, q), np.percentile(v, q))


@pytest.mark.parametrize("seed", range(3))
def test_rolling_medians_equal_numpys_median_of_each_window(seed):
    rng = np.random.default_rng(seed)
    for i in range(1500):
        n, m = int(rng.integers(1, 300)), int(rng.integers(1, 80))
        v = rng.standard_t(2, n) * 10 ** rng.uniform(-3, 3)
        if i % 3 == 0:
            v = np.round(v)  # ties
        if i % 11 == 0:
            v[rng.integers(0, n)] = np.inf
        if i % 17 == 0:
            v[rng.integers(0, n)] = np.nan  # numpy's NaN windows
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # inf − inf
            ref = np.median(sliding_window_view(v, max(1, min(m, n))), axis=1)
            got = rolling_levels(v, m, "median")
        np.testing.assert_array_equal(got, ref)
