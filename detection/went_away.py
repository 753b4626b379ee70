"""Went-away detector (FBDetect §5.2.2): keep a candidate only if its regression is real and stays.

The candidate is kept (``Verdict.passed``) when

    NewPattern OR [SignificantRegression AND LastingTrend AND NOT RegressionGoneAway]

with every term's numbers in the verdict. Values are oriented (higher is worse) and
``change_index`` is the first point after the change (see ``detection/model.py``). Complexity
O(n log n) per candidate: SAX and percentiles are linear, Mann–Kendall is scipy's O(n log n)
Kendall's tau, and Theil–Sen (O(m²) in its input) sees at most ``THEIL_SEN_MAX_POINTS`` points.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from regbot.detection.model import Candidate, Verdict, WentAwaySettings
from regbot.detection.seasonality import choose_period

__all__ = ["mann_kendall", "sax_letters", "valid_letters", "went_away_verdict"]

STAGE = "went_away"
MAD_NORMAL = 1.4826  # MAD of a normal sample × 1.4826 estimates its standard deviation
MIN_POINTS_EACH_SIDE = 3
THEIL_SEN_MAX_POINTS = 500
MAD_FLOOR_SHARE = 1e-9  # MAD floor = 1e-9 × the largest |value| (constant pre-change series)


def sax_letters(values: np.ndarray, lo: float, hi: float, n_buckets: int) -> np.ndarray:
    """SAX letter (0..n_buckets-1) of each value: equal-width buckets over ``[lo, hi]``.

    Bucket ``k`` is ``[lo + k·w, lo + (k+1)·w)`` with ``w = (hi - lo) / n_buckets``; the last
    bucket also holds ``hi``, and values outside ``[lo, hi]`` are clipped into the first or last
    bucket. A degenerate range (``hi <= lo``, e.g. a constant series) gives all letters 0.
    Shape of ``values`` is kept; int64 result. O(n).
    """
    v = np.asarray(values, dtype=np.float64)
    if not hi > lo:
        return np.zeros(v.shape, dtype=np.int64)
    width = (hi - lo) / n_buckets
    return np.clip(np.floor((v - lo) / width), 0, n_buckets - 1).astype(np.int64)


def valid_letters(letters: np.ndarray, n_buckets: int, share: float) -> np.ndarray:
    """(n_buckets,) bool: letter ``k`` is valid when it holds at least ``share`` of ``letters``
    (and at least one point). No letters → nothing is valid. O(n + n_buckets)."""
    ls = np.asarray(letters, dtype=np.int64).ravel()
    if ls.size == 0:
        return np.zeros(n_buckets, dtype=bool)
    counts = np.bincount(ls, minlength=n_buckets)[:n_buckets]
    # The relative slack keeps "exactly X%" valid despite rounding in share × size.
    return (counts > 0) & (counts >= share * ls.size * (1.0 - 1e-12))


@dataclass(frozen=True, slots=True)
class MannKendall:
    """Mann–Kendall trend test of values against time order: ``s`` is MK's S (concordant minus
    discordant pairs), ``tau`` Kendall's tau-b, ``p_value`` two-sided; ``direction`` is the sign
    of ``tau`` when ``p_value < alpha``, else "none"."""

    s: int
    tau: float
    p_value: float
    direction: Literal["up", "down", "none"]


def mann_kendall(values: np.ndarray, alpha: float) -> MannKendall:
    """Mann–Kendall as Kendall's tau of ``values`` against their index (scipy, O(n log n)).

    scipy's test uses the exact null distribution for small tie-free samples and otherwise the
    normal approximation with MK's tie-corrected variance of S (no continuity correction).
    S is recovered from tau-b: ``S = tau · sqrt(n0 · (n0 - n_ties))``, time having no ties.
    Fewer than 3 points or a constant series: no trend (S = 0, tau = 0, p = 1).
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n < 3 or np.ptp(v) == 0:
        return MannKendall(0, 0.0, 1.0, "none")
    res = stats.kendalltau(np.arange(n), v)
    tau, p = float(res.statistic), float(res.pvalue)
    _, tie_counts = np.unique(v, return_counts=True)
    n0 = n * (n - 1) / 2
    n_ties = float(np.sum(tie_counts * (tie_counts - 1)) / 2)
    s = int(round(tau * np.sqrt(n0 * (n0 - n_ties))))
    direction: Literal["up", "down", "none"] = "none"
    if p < alpha:
        direction = "up" if tau > 0 else "down"
    return MannKendall(s, tau, p, direction)


@dataclass(frozen=True, slots=True)
class _WindowLine:
    """A window's level line: Theil–Sen when Mann–Kendall finds a trend, else flat at its median."""

    name: str
    trend: MannKendall
    slope_per_s: float
    intercept: float  # level at the window's first point
    end_level: float  # the line at the window's last point
    points: int
    theil_sen_points: int


def _window_line(name: str, times_s: np.ndarray, values: np.ndarray, alpha: float) -> _WindowLine:
    trend = mann_kendall(values, alpha)
    x = times_s - times_s[0]
    used = 0
    if trend.direction == "none":
        slope, intercept = 0.0, float(np.median(values))
    else:
        xs, ys = x, values
        if x.size > THEIL_SEN_MAX_POINTS:  # evenly strided subsample keeps Theil–Sen O(1) here
            idx = np.unique(
                np.linspace(0, x.size - 1, THEIL_SEN_MAX_POINTS).round().astype(np.int64)
            )
            xs, ys = x[idx], values[idx]
        res = stats.theilslopes(ys, xs)
        slope, intercept, used = float(res.slope), float(res.intercept), int(xs.size)
    return _WindowLine(
        name, trend, slope, intercept, intercept + slope * float(x[-1]), x.size, used
    )


def _plain(x: object) -> object:
    """numpy scalars → JSON values; NaN/inf → None."""
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        return float(x) if np.isfinite(x) else None
    if isinstance(x, list | tuple | np.ndarray):
        return [_plain(i) for i in x]
    return x


def _pre_points(mask: np.ndarray, pre: np.ndarray) -> np.ndarray:
    """The pre-change points (of the values being judged) under ``mask``, or all of them."""
    kept = pre[mask[: pre.size]]
    return kept if kept.size else pre


def level_noise(pre: np.ndarray, m: int, floor: float = 0.0) -> float:
    """Robust standard deviation of the mean of ``m`` consecutive pre-change points: 1.4826 ×
    MAD of the means of consecutive m-point blocks (the most recent blocks first, at least 8 of
    them), or 1.4826 × MAD(points) / √m when there are fewer blocks; never below ``floor``."""
    m = max(1, int(m))
    blocks = len(pre) // m
    if blocks >= 8:
        means = pre[len(pre) - blocks * m :].reshape(blocks, m).mean(axis=1)
        spread = MAD_NORMAL * float(np.median(np.abs(means - np.median(means))))
    else:
        spread = MAD_NORMAL * float(np.median(np.abs(pre - np.median(pre)))) / np.sqrt(m)
    return float(max(spread, floor))


def deseasonalise(
    times_s: np.ndarray, values: np.ndarray, change_index: int, settings: WentAwaySettings
) -> tuple[np.ndarray, dict[str, object]]:
    """``values`` minus the daily (or weekly) profile of the pre-change history, when that history
    is significantly seasonal (``choose_period``: ACF at the period, as the seasonality stage
    tests it); otherwise ``values`` unchanged. The profile is the mean of the pre-change points in
    each of ``min(period_points, 48)`` phase buckets, centred on zero; a bucket with fewer than 2
    points leaves the series as it is.

    Why: FBDetect runs went-away before the seasonality stage, and on a seasonal series the
    "normal range" of the history spans the whole daily swing, so a step smaller than the swing
    would always look gone away. Judging the deseasonalised series keeps the went-away
    predicate's meaning (does the change last?) on such series; the seasonality stage still
    decides afterwards whether the change itself is seasonal.
    """
    period, period_numbers = choose_period(
        times_s[:change_index], values[:change_index], settings.periods_s, settings.acf_alpha
    )
    if period is None or period_numbers["period_s"] is None:
        return values, {"deseasonalised": False}
    period_s = float(period_numbers["period_s"])
    buckets = int(min(period, 48))
    phase = np.mod(times_s - times_s[0], period_s) / period_s
    bucket = np.minimum((phase * buckets).astype(np.int64), buckets - 1)
    counts = np.bincount(bucket[:change_index], minlength=buckets)
    if (counts < 2).any():
        return values, {"deseasonalised": False}
    profile = np.bincount(bucket[:change_index], weights=values[:change_index], minlength=buckets)
    profile = profile / counts
    profile -= profile.mean()
    return values - profile[bucket], {"deseasonalised": True, "season_period_s": period_s}


def went_away_verdict(candidate: Candidate, settings: WentAwaySettings) -> Verdict:
    """FBDetect's went-away predicate on one candidate (stage "went_away"; passed = kept).

    Pre = ``values[:change_index]``, post = ``values[change_index:]``. Choices where §5.2.2
    leaves details open:

    * **SAX**: ``sax_buckets`` equal-width buckets over [min, max] of all the candidate's points
      (all windows); validity is judged on the pre-change letters (``sax_valid_share``).
    * **NewPattern**: more than ``new_pattern_share`` of post-change points carry letters not
      valid pre-change, unless the post-change mean is below the lower edge of the lowest valid
      pre-change bucket (a new pattern that costs less).
    * **SignificantRegression**: the largest letter among the post-change points (the
      "post-regression analysis window" read as every point after the change, extended window
      included: a change late in the analysis window has only a point or two there, whose
      largest letter is low by chance) ≥ the largest valid pre-change letter, AND p90(post) >
      p95(historical window, pre-change points) AND p90(post) > p90(pre-change points in
      [change_time − day_s, change_time)). An empty
      historical or previous-day set falls back to all pre-change points.
    * **LastingTrend**: two windows, post-change and the whole analysis window (analysis start
      to the end of data, extended window included). In each, Mann–Kendall (two-sided, at
      ``trend_alpha``) decides whether there is a trend; with one, the window's line is Theil–Sen
      (slope, intercept), without one it is flat at the window's median ("if a trend is found,
      FBDetect uses Theil–Sen"). The line with the lower slope is chosen (ties: post-change);
      the regression lasts when that line at the window's end is at least
      ``mad_coefficient × level_noise(pre, m)`` above the pre-change median, m being the
      chosen window's number of points.
      *Which MAD.* §5.2.2 sets the threshold to coefficient × 1.4826 × MAD without saying of
      what. regbot takes the MAD of the quantity being compared: the line's level is an
      estimate from m points, so its noise is the spread of m-point means in the history —
      ``level_noise`` = 1.4826 × MAD of the means of consecutive m-point blocks of the
      pre-change points (autocorrelation and slow wander included), or 1.4826 × MAD/√m when
      the history holds fewer than 8 such blocks. Per-point MAD would make every step smaller
      than 1.5σ per point "not lasting", whatever the number of samples behind it.
      Deviation from the brief's reading: a significant *downward* trend is reported
      (``*_trend``) but does not veto by itself. §5.2.2 says a decreasing trend "is
      insufficient, since the value needs to recover to the normal level", and a standalone
      veto drops true steps whenever noise makes a chance downward trend (~2.5% per window at
      α = 0.05). A decaying spike still fails: its falling line ends near the baseline.
    * **RegressionGoneAway**: the "last points" are the last two thirds of the post-change
      points (at least ``gone_away_points``): a transient that recovers is over within the first
      third of a post-change period as long as the analysis plus extended windows, and the more
      points judge the end level, the fewer small real steps look gone by chance. The regression
      has gone away when their mean is below the pre-change median plus
      ``gone_away_z × level_noise(pre, m)``: not significantly above the baseline (one-sided, at
      the change-point test's 1% by default).
    * **MAD floor**: MAD(pre) is at least 1e-9 × max |value| (then the smallest positive float),
      so a constant history gives a tiny, non-zero threshold; ``mad_floored`` says so.
    * **Theil–Sen cap**: a window of more than 500 points is subsampled at 500 evenly strided
      points for Theil–Sen only (Mann–Kendall and medians use every point).
    * **Too few points**: fewer than 3 points before or after the change → kept, reason "too
      few points to judge" (the change-point stage already demanded evidence).

    Pure; O(n log n). ``numbers`` holds plain JSON values (NaN → None).
    """
    values = np.asarray(candidate.values, dtype=np.float64)
    times = np.asarray(candidate.times_s, dtype=np.float64)
    c = int(candidate.change_index)
    n_pre, n_post = c, values.size - c
    numbers: dict[str, object] = {"n_points": values.size, "n_pre": n_pre, "n_post": n_post}
    if n_pre < MIN_POINTS_EACH_SIDE or n_post < MIN_POINTS_EACH_SIDE:
        numbers.update(too_few_points=True, min_points_each_side=MIN_POINTS_EACH_SIDE)
        return Verdict(STAGE, True, "too few points to judge", _plain_dict(numbers))
    values, season_numbers = deseasonalise(times, values, c, settings)
    numbers.update(season_numbers)
    pre, post = values[:c], values[c:]
    w = candidate.windows
    n_buckets = settings.sax_buckets

    # SAX over every point of the candidate.
    lo, hi = float(values.min()), float(values.max())
    width = (hi - lo) / n_buckets
    letters = sax_letters(values, lo, hi, n_buckets)
    pre_valid = valid_letters(letters[:c], n_buckets, settings.sax_valid_share)
    post_letters = letters[c:]
    valid_idx = np.flatnonzero(pre_valid)

    # NewPattern.
    invalid_share = float(np.mean(~pre_valid[post_letters]))
    post_mean = float(post.mean())
    lowest_valid_edge = lo + int(valid_idx[0]) * width if valid_idx.size else lo
    below_history = post_mean < lowest_valid_edge
    new_pattern = invalid_share > settings.new_pattern_share and not below_history

    # SignificantRegression.
    post_analysis_letters = post_letters
    max_post_letter = int(post_analysis_letters.max())
    max_valid_pre_letter = int(valid_idx[-1]) if valid_idx.size else -1
    letters_ok = max_post_letter >= max_valid_pre_letter
    historical = _pre_points((times >= w.historical_start_s) & (times < w.analysis_start_s), pre)
    day = _pre_points(
        (times >= candidate.change_time_s - settings.day_s) & (times < candidate.change_time_s),
        pre,
    )
    p90_post = float(np.percentile(post, 90))
    p95_hist = float(np.percentile(historical, 95))
    p90_day = float(np.percentile(day, 90))
    significant = letters_ok and p90_post > p95_hist and p90_post > p90_day

    # LastingTrend.
    pre_median = float(np.median(pre))
    mad = float(np.median(np.abs(pre - pre_median)))
    mad_floor = max(MAD_FLOOR_SHARE * float(np.max(np.abs(values))), float(np.finfo(float).tiny))
    mad_floored = mad < mad_floor
    mad_used = max(mad, mad_floor)
    threshold = settings.mad_coefficient * MAD_NORMAL * mad_used  # per point, for reference
    lines = [_window_line("post", times[c:], post, settings.trend_alpha)]
    a0 = int(np.searchsorted(times, w.analysis_start_s, side="left"))
    if values.size - a0 >= MIN_POINTS_EACH_SIDE:
        lines.append(_window_line("analysis", times[a0:], values[a0:], settings.trend_alpha))
    chosen = min(lines, key=lambda line: line.slope_per_s)  # stable: post wins ties
    lift = chosen.end_level - pre_median
    lasting_threshold = settings.mad_coefficient * level_noise(pre, chosen.points, mad_floor)
    lasting = lift >= lasting_threshold

    # RegressionGoneAway.
    k = max(1, min(n_post, max(settings.gone_away_points, n_post - n_post // 3)))
    last_mean = float(np.mean(values[-k:]))
    gone_threshold = settings.gone_away_z * level_noise(pre, k, mad_floor)
    gone_limit = pre_median + gone_threshold
    gone_away = last_mean < gone_limit

    passed = new_pattern or (significant and lasting and not gone_away)
    numbers.update(
        too_few_points=False,
        change_index=c,
        sax_buckets=n_buckets,
        sax_valid_share=settings.sax_valid_share,
        sax_lo=lo,
        sax_hi=hi,
        sax_bucket_width=width,
        pre_valid_letters=valid_idx.tolist(),
        post_letter_counts=np.bincount(post_letters, minlength=n_buckets).tolist(),
        post_invalid_share=invalid_share,
        new_pattern_share=settings.new_pattern_share,
        post_mean=post_mean,
        lowest_valid_pre_edge=lowest_valid_edge,
        post_below_history=below_history,
        new_pattern=new_pattern,
        max_post_analysis_letter=max_post_letter,
        max_valid_pre_letter=max_valid_pre_letter,
        letters_significant=letters_ok,
        p90_post=p90_post,
        p95_historical=p95_hist,
        p90_previous_day=p90_day,
        n_historical=historical.size,
        n_previous_day=day.size,
        significant_regression=significant,
        pre_median=pre_median,
        mad_pre=mad,
        mad_floored=mad_floored,
        mad_coefficient=settings.mad_coefficient,
        threshold_per_point=threshold,
        trend_alpha=settings.trend_alpha,
    )
    for line in lines:
        numbers.update(
            {
                f"mk_{line.name}_s": line.trend.s,
                f"mk_{line.name}_tau": line.trend.tau,
                f"mk_{line.name}_p": line.trend.p_value,
                f"{line.name}_trend": line.trend.direction,
                f"{line.name}_slope_per_s": line.slope_per_s,
                f"{line.name}_intercept": line.intercept,
                f"{line.name}_end_level": line.end_level,
                f"{line.name}_points": line.points,
                f"{line.name}_theil_sen_points": line.theil_sen_points,
            }
        )
    numbers.update(
        chosen_window=chosen.name,
        lift=lift,
        lasting_threshold=lasting_threshold,
        lasting_trend=lasting,
        gone_away_points=k,
        last_mean=last_mean,
        gone_away_limit=gone_limit,
        regression_gone_away=gone_away,
    )
    return Verdict(STAGE, passed, _reason(numbers), _plain_dict(numbers))


def _plain_dict(numbers: dict[str, object]) -> dict[str, object]:
    return {key: _plain(value) for key, value in numbers.items()}


def _reason(n: dict[str, object]) -> str:
    """One line naming the deciding term(s) and their numbers."""
    if n["new_pattern"]:
        return (
            f"kept: new pattern, {n['post_invalid_share']:.0%} of post-change points in letters "
            f"not valid before the change (> {n['new_pattern_share']:.0%})"
        )
    significant = (
        f"p90 post {n['p90_post']:.4g} vs p95 historical {n['p95_historical']:.4g}, "
        f"p90 previous day {n['p90_previous_day']:.4g}, letters {n['max_post_analysis_letter']} "
        f"vs {n['max_valid_pre_letter']}"
    )
    lasting = f"lift {n['lift']:.4g} vs threshold {n['lasting_threshold']:.4g} ({n['chosen_window']} window)"
    gone = f"last-{n['gone_away_points']} mean {n['last_mean']:.4g} vs {n['gone_away_limit']:.4g}"
    if n["significant_regression"] and n["lasting_trend"] and not n["regression_gone_away"]:
        return f"kept: significant ({significant}), lasting ({lasting}), still present ({gone})"
    failed = []
    if not n["significant_regression"]:
        failed.append(f"not significant ({significant})")
    if not n["lasting_trend"]:
        failed.append(f"not lasting ({lasting})")
    if n["regression_gone_away"]:
        failed.append(f"gone away ({gone})")
    return "filtered: " + "; ".join(failed)
