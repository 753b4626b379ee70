"""Which test decides a change: the likelihood ratio on normal noise, ranks and persistence else.

Complexity per
candidate: one sort of its segment (ranks) and one pass of prefix sums (levels).
Design: docs/design/change_test.md
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special
from scipy.ndimage import median_filter
from scipy.stats import mannwhitneyu

from regbot.detection.dist import norm_sf, t_sf
from regbot.detection.moments import mean, std, var
from regbot.detection.noise_shape import (
    MAD_NORMAL,
    SMOOTH_POINTS,
    noise_shape,
    rolling_levels,
    smooth_residual,
    smooth_residuals,
)
from regbot.detection.order_stats import mad
from regbot.detection.rank_tests import brunner_munzel_greater

__all__ = ["ChangeTest", "MAX_SKEW", "change_test", "change_tests"]

MAX_SKEW = 0.5  # |skewness| of the residuals beyond which noise counts as skewed
MIN_STRETCHES = 20


@dataclass(frozen=True, slots=True)
class ChangeTest:
    """The test chosen for one candidate: ``test`` ("likelihood_ratio" or "rank"), the p-value
    that decides (``p_value``), whether the change holds (``passed``: p below alpha and, for
    the rank test, persistent), and the numbers behind it."""

    test: str
    p_value: float
    passed: bool
    numbers: dict[str, object]


def change_test(
    values: np.ndarray, segment_start: int, k: int, p_likelihood: float, alpha: float
) -> ChangeTest:
    """The test for a change at index ``k`` (first point after it) of ``values`` (oriented), the
    model's segment starting at ``segment_start`` (docs/design/change_test.md). ``p_likelihood``: the
    likelihood-ratio test's p-value for it."""
    v = np.asarray(values, np.float64)
    before = v[segment_start:k]
    residual = smooth_residual(before) if len(before) >= SMOOTH_POINTS else None
    return _test(v, segment_start, k, p_likelihood, alpha, residual)


def change_tests(
    samples: Sequence[np.ndarray],
    segment_start: Sequence[int],
    k: Sequence[int],
    p_likelihood: Sequence[float],
    alpha: float,
) -> list[ChangeTest]:
    """``change_test`` of each sample (its segment start, change index and likelihood-ratio
    p-value), the same tests: the noise residuals of all the samples' points before their
    changes come from one rolling-median pass (``smooth_residuals``)."""
    arrays = [np.asarray(v, np.float64) for v in samples]
    befores = [v[s:j] for v, s, j in zip(arrays, segment_start, k)]
    residuals = smooth_residuals([b for b in befores if len(b) >= SMOOTH_POINTS])
    found = iter(residuals)
    return [
        _test(v, s, j, p, alpha, next(found) if len(b) >= SMOOTH_POINTS else None)
        for v, s, j, p, b in zip(arrays, segment_start, k, p_likelihood, befores)
    ]


def _test(
    v: np.ndarray,
    segment_start: int,
    k: int,
    p_likelihood: float,
    alpha: float,
    residual: np.ndarray | None,
) -> ChangeTest:
    """``change_test`` given the residual of the points before the change (None for fewer than
    ``SMOOTH_POINTS`` of them)."""
    before, after = v[segment_start:k], v[k:]
    shape = noise_shape(before, residual=residual)
    skew = _residual_skewness(before, residual)
    numbers: dict[str, object] = {
        **shape.numbers(),
        "noise_skewness": skew,
        "p_likelihood_ratio": p_likelihood,
    }
    welch_p = _welch_p(before, after, v[:k])
    numbers["p_welch"] = welch_p
    if shape.normal and (skew is None or abs(skew) <= MAX_SKEW):
        p = max(p_likelihood, welch_p)
        return ChangeTest("likelihood_ratio", p, p < alpha, numbers)
    rank_p = _rank_p(before, after)
    numbers["p_rank_alone"] = rank_p
    if shape.normal and skew is not None:
        # skewed but not heavy-tailed or multi-modal (a sparsely sampled share): ranks of
        # shares drift with the stack samples a bucket had, so the mean must shift too, judged
        # with the skew of a mean of that many points allowed for
        skewed_p = _skew_adjusted_p(welch_p, skew, len(after))
        numbers["p_welch_skew_adjusted"] = skewed_p
        rank_p = max(rank_p, skewed_p)
    level = mean(after)
    history = v[:k]
    stretches = rolling_levels(history, len(after), "mean") if k > len(after) else None
    numbers.update(p_rank=rank_p, level_after=level)
    p = rank_p
    if stretches is not None and len(stretches) >= MIN_STRETCHES:
        centre, spread = mean(stretches), std(stretches, ddof=1)
        persistence_p = (
            norm_sf((level - centre) / spread) if spread > 0 else (0.0 if level > centre else 1.0)
        )
        p = max(p, persistence_p)
        numbers.update(
            history_stretches=len(stretches),
            history_level_mean=centre,
            history_level_sd=spread,
            history_share_as_high=float((stretches >= level).mean()),
            p_persistence=persistence_p,
        )
    numbers["persistent"] = p < alpha
    return ChangeTest("rank", p, bool(p < alpha), numbers)


def _skew_adjusted_p(p: float, skew: float, n_after: int) -> float:
    """Welch's one-sided p-value with the mean's skewness allowed for (Cornish–Fisher): the
    upper ``q`` quantile of a standardised mean of ``n`` points of skewness γ is about
    ``z_q + γ/(6√n)·(z_q² − 1)``, so the observed statistic is mapped back by solving that
    for ``z_q``. Positive skew (counts) makes the upper tail heavier and the p-value larger."""
    if not 0 < p < 1 or n_after < 2:
        return p
    z = -float(special.ndtri(p))  # norm.isf(p), 0 < p < 1
    c = skew / (6 * np.sqrt(n_after))
    if c == 0:
        return p
    # solve c·q² + q − (z + c) = 0 for the root near z
    disc = 1 + 4 * c * (z + c)
    if disc < 0:
        return p
    q = (-1 + np.sqrt(disc)) / (2 * c)
    return norm_sf(q)


def _rank_p(before: np.ndarray, after: np.ndarray) -> float:
    """One-sided p-value that the points after tend to exceed those before: Brunner–Munzel's
    test (ranks, each side its own spread; t distribution), or Mann–Whitney's U with the tie
    correction where Brunner–Munzel is undefined (a side without rank spread)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = brunner_munzel_greater(after, before)
    if np.isfinite(p):
        return p
    return float(mannwhitneyu(after, before, alternative="greater", method="asymptotic").pvalue)


def _welch_p(before: np.ndarray, after: np.ndarray, history: np.ndarray) -> float:
    """One-sided p-value of Welch's t test (after larger), Welch–Satterthwaite degrees of
    freedom; 1.0 when a side has too few points or no spread. The mean before is that of
    ``before`` (the model's segment); its noise variance comes from all of ``history`` (every
    point before the change) as half the squared robust scale of its first differences (an
    older step moves one difference, not the scale), so that a segment cut a few points before
    the change still has a well-estimated variance; the variance after is the after points'
    own."""
    n1, n2 = len(before), len(after)
    if n1 < 1 or n2 < 2:
        return 1.0
    diffs = history[1:] - history[:-1]  # np.diff
    scale = MAD_NORMAL * mad(diffs) if len(diffs) else 0.0
    var_before = scale * scale / 2 if scale > 0 else (var(before, ddof=1) if n1 > 1 else 0.0)
    v1, v2 = var_before / n1, var(after, ddof=1) / n2
    if v1 + v2 <= 0:
        return 1.0
    t = (mean(after) - mean(before)) / np.sqrt(v1 + v2)
    df1 = max(len(history) - 1, 1)
    df = (v1 + v2) ** 2 / (v1 * v1 / df1 + v2 * v2 / (n2 - 1))
    return t_sf(t, df)


def _residual_skewness(values: np.ndarray, residual: np.ndarray | None = None) -> float | None:
    """Skewness of the values minus their rolling median (``noise_shape``'s residuals, given as
    ``residual`` when already computed); None with too few points or no spread."""
    if len(values) < 2 * SMOOTH_POINTS:
        return None
    if residual is None:
        residual = values - median_filter(values, size=SMOOTH_POINTS, mode="nearest")
    residual = residual - mean(residual)
    sd = std(residual)
    if sd <= 0:
        return None
    return mean(np.power(residual, 3, out=residual)) / sd**3
