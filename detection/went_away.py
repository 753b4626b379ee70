"""Went-away detector (FBDetect §5.2.2): keep a candidate only if its regression is real and stays.

The candidate is kept (``Verdict.passed``) when

    NewPattern OR [SignificantRegression AND LastingTrend AND NOT RegressionGoneAway]

with every term's numbers in the verdict. Values are oriented (higher is worse) and
``change_index`` is the first point after the change (see ``detection/model.py``). Complexity
O(n log m) per candidate (m the post-change points): SAX and percentiles are linear, rolling
medians O(n log m), Mann–Kendall O(m²) on the post-change and analysis windows (scipy's
numbers, ``kendall``), and Theil–Sen (O(m²) in its input) sees at most
``THEIL_SEN_MAX_POINTS`` points (``went_away_trend``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regbot.detection.model import Candidate, Verdict
from regbot.detection.noise_shape import NoiseShape, level_of, noise_shape
from regbot.detection.order_stats import mad as median_absolute_deviation
from regbot.detection.order_stats import percentile
from regbot.detection.seasonality import PeriodMemo
from regbot.detection.stage_settings import WentAwaySettings
from regbot.detection.stages import Stage
from regbot.detection.went_away_levels import (
    MAD_NORMAL,
    Drop,
    PreLevels,
    deseasonalise,
    find_drop,
    level_noise,
    pre_points,
)
from regbot.detection.went_away_trend import (
    WindowLine,
    sax_letters,
    valid_letters,
    window_line,
)

__all__ = ["WentAwayTerms", "verdict_of_terms", "went_away_verdict"]

STAGE = Stage.WENT_AWAY
MIN_POINTS_EACH_SIDE = 3
MAD_FLOOR_SHARE = 1e-9  # MAD floor = 1e-9 × the largest |value| (constant pre-change series)


def went_away_verdict(
    candidate: Candidate, settings: WentAwaySettings, *, memo: PeriodMemo | None = None
) -> Verdict:
    """FBDetect's went-away predicate on one candidate (stage "went_away"; passed = kept).

    Pre = ``values[:change_index]``, post = ``values[change_index:]``. Choices where §5.2.2
    leaves details open:

    * **SAX**: ``sax_buckets`` equal-width buckets over [min, max] of all the candidate's points
      (all windows); validity is judged on the pre-change letters (``sax_valid_share``).
    * **NewPattern**: more than ``new_pattern_share`` of post-change points carry letters not
      valid pre-change, unless the post-change mean is below the lower edge of the lowest valid
      pre-change bucket (a new pattern that costs less).
    * **Noise shape** (``noise_shape``): the pre-change points decide whether levels are means
      (normal noise) or medians (heavy tails, two or three levels: rank-based, so a short burst
      in an upper mode or a few outliers do not move them). The verdict says which
      (``noise``, ``noise_tail_ratio``, ``level_statistic``).
    * **SignificantRegression**: the largest letter among the post-change points (every point
      after the change, extended window included: a change late in the analysis window has
      only a point or two there, whose largest letter is low by chance) ≥ the largest valid
      pre-change letter, AND the post-change level > the 95th percentile of the levels of every
      same-length window of the historical window, AND > the 90th percentile of those of the
      previous day ([change_time − day_s, change_time)). An empty historical or previous-day
      set falls back to all pre-change points.
      *Why levels, not points.* §5.2.2 compares "the 90th percentile of values after the change"
      with the history's 95th percentile. Read on single points, a lasting step smaller than
      about half a standard deviation per point fails whatever the number of points behind it,
      and a few outliers in a noisy history push its 95th percentile over a real +2.5% level.
      Read on levels of the post-change length, the percentiles keep the paper's meaning (is
      the new level outside the history's normal range?) at the resolution the post-change
      points allow, and the history's own wander and autocorrelation set that range.
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
    * **RegressionGoneAway**: the regression has gone away when the post-change points hold a
      significant *drop* — the maximum-likelihood downward mean shift inside them (``find_drop``,
      at least ``gone_away_points`` points after it), with p < ``drop_alpha`` by the change-point
      stage's own χ² test — and the level after the drop is below the pre-change level plus
      ``gone_away_z × level_noise(pre, k)``, k the points after the drop. Both are needed: a
      transient rises, falls and is back at the baseline; a true step shows no significant fall
      (a chance one at the drop test's 1%, and then its later level is still high), and a dip
      after a true step is followed by its recovery, so the level after the best single drop
      stays high. The previous reading (the mean of the last two thirds not significantly above
      the baseline) removed about one true 1.5×-MDE step in six: a step of that size is only
      ~1.2 level-noise units above the one-sided limit.
    * **MAD floor**: MAD(pre) is at least 1e-9 × max |value| (then the smallest positive float),
      so a constant history gives a tiny, non-zero threshold; ``mad_floored`` says so.
    * **Theil–Sen cap**: a window of more than 500 points is subsampled at 500 evenly strided
      points for Theil–Sen only (Mann–Kendall and medians use every point).
    * **Too few points**: fewer than 3 points before or after the change → kept, reason "too
      few points to judge" (the change-point stage already demanded evidence).

    Pure; O(n log n). ``numbers`` holds plain JSON values (NaN → None; ``Verdict`` makes them
    so). ``memo``: the candidate's pre-change period choices already made
    (``seasonality.remembered_period``).
    """
    values = np.asarray(candidate.values, dtype=np.float64)
    times = np.asarray(candidate.times_s, dtype=np.float64)
    c = int(candidate.change_index)
    n_pre, n_post = c, values.size - c
    numbers: dict[str, object] = {"n_points": values.size, "n_pre": n_pre, "n_post": n_post}
    if n_pre < MIN_POINTS_EACH_SIDE or n_post < MIN_POINTS_EACH_SIDE:
        numbers.update(too_few_points=True, min_points_each_side=MIN_POINTS_EACH_SIDE)
        return Verdict(STAGE, True, "too few points to judge", numbers)
    values, season_numbers = deseasonalise(times, values, c, settings, memo)
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

    # SignificantRegression, on levels (see the docstring): the post-change level against the
    # normal range of same-length levels in the history and in the previous day.
    shape = noise_shape(pre, low=settings.normal_tail_ratio[0], high=settings.normal_tail_ratio[1])
    statistic = shape.statistic
    max_post_letter = int(post_letters.max())
    max_valid_pre_letter = int(valid_idx[-1]) if valid_idx.size else -1
    letters_ok = max_post_letter >= max_valid_pre_letter
    historical = pre_points((times >= w.historical_start_s) & (times < w.analysis_start_s), pre)
    day = pre_points(
        (times >= candidate.change_time_s - settings.day_s) & (times < candidate.change_time_s),
        pre,
    )
    m = n_post
    post_level = level_of(post, statistic)
    pre_levels = PreLevels(pre, statistic)  # rolling levels of pre, each window length once
    hist_levels = pre_levels.of_points(historical, m)
    day_levels = pre_levels.of_points(day, m)
    p_hist_level = percentile(hist_levels, settings.historical_percentile)
    p_day_level = percentile(day_levels, settings.previous_day_percentile)
    significant = letters_ok and post_level > p_hist_level and post_level > p_day_level

    # LastingTrend.
    pre_level = level_of(pre, statistic)
    mad = median_absolute_deviation(pre)
    mad_floor = max(MAD_FLOOR_SHARE * float(np.max(np.abs(values))), float(np.finfo(float).tiny))
    mad_floored = mad < mad_floor
    mad_used = max(mad, mad_floor)
    threshold = settings.mad_coefficient * MAD_NORMAL * mad_used  # per point, for reference
    lines = [window_line("post", times[c:], post, settings.trend_alpha, statistic)]
    a0 = int(np.searchsorted(times, w.analysis_start_s, side="left"))
    if values.size - a0 >= MIN_POINTS_EACH_SIDE:
        lines.append(
            window_line("analysis", times[a0:], values[a0:], settings.trend_alpha, statistic)
        )
    chosen = min(lines, key=lambda line: line.slope_per_s)  # stable: post wins ties
    lift = chosen.end_level - pre_level
    lasting_threshold = settings.mad_coefficient * level_noise(
        pre, chosen.points, mad_floor, statistic, pre_levels
    )
    lasting = lift >= lasting_threshold

    # RegressionGoneAway: a significant drop inside the post-change points, after which the
    # level is back within the noise of the baseline.
    # A drop needs a third of the post-change points after it (at least gone_away_points): a
    # few low points at the very end are chance, and a transient is over well before that.
    drop = find_drop(post, max(1, min(n_post // 2, max(settings.gone_away_points, n_post // 3))))
    after_drop = post[drop.index :] if drop.index > 0 else post
    k = after_drop.size
    last_level = level_of(after_drop, statistic)
    gone_threshold = settings.gone_away_z * level_noise(pre, k, mad_floor, statistic, pre_levels)
    gone_limit = pre_level + gone_threshold
    dropped = drop.index > 0 and drop.p_value < settings.drop_alpha
    gone_away = dropped and last_level < gone_limit

    passed = new_pattern or (significant and lasting and not gone_away)
    return verdict_of_terms(
        WentAwayTerms(
            n_points=values.size,
            change_index=c,
            season_numbers=season_numbers,
            sax_lo=lo,
            sax_hi=hi,
            sax_bucket_width=width,
            pre_valid_letters=valid_idx.tolist(),
            post_letter_counts=np.bincount(post_letters, minlength=n_buckets).tolist(),
            post_invalid_share=invalid_share,
            post_mean=post_mean,
            lowest_valid_pre_edge=lowest_valid_edge,
            post_below_history=below_history,
            new_pattern=new_pattern,
            max_post_letter=max_post_letter,
            max_valid_pre_letter=max_valid_pre_letter,
            letters_significant=letters_ok,
            shape=shape,
            post_level=post_level,
            historical_level_percentile=p_hist_level,
            previous_day_level_percentile=p_day_level,
            n_historical=historical.size,
            n_previous_day=day.size,
            significant_regression=significant,
            pre_level=pre_level,
            mad_pre=mad,
            mad_floored=mad_floored,
            threshold_per_point=threshold,
            lines=lines,
            chosen=chosen,
            lift=lift,
            lasting_threshold=lasting_threshold,
            lasting_trend=lasting,
            drop=drop,
            drop_time_s=float(times[c + drop.index]) if drop.index > 0 else None,
            gone_away_points=k,
            last_level=last_level,
            gone_away_limit=gone_limit,
            drop_significant=dropped,
            regression_gone_away=gone_away,
            passed=passed,
        ),
        settings,
    )


@dataclass(frozen=True, slots=True)
class WentAwayTerms:
    """Every number ``went_away_verdict`` reports for one candidate judged on its points (see
    its docstring for what each term means), however they were computed: one candidate at a
    time, or a batch at once (``went_away_batch``)."""

    n_points: int
    change_index: int
    season_numbers: dict[str, object]
    sax_lo: float
    sax_hi: float
    sax_bucket_width: float
    pre_valid_letters: list[int]
    post_letter_counts: list[int]
    post_invalid_share: float
    post_mean: float
    lowest_valid_pre_edge: float
    post_below_history: bool
    new_pattern: bool
    max_post_letter: int
    max_valid_pre_letter: int
    letters_significant: bool
    shape: NoiseShape
    post_level: float
    historical_level_percentile: float
    previous_day_level_percentile: float
    n_historical: int
    n_previous_day: int
    significant_regression: bool
    pre_level: float
    mad_pre: float
    mad_floored: bool
    threshold_per_point: float
    lines: list[WindowLine]
    chosen: WindowLine
    lift: float
    lasting_threshold: float
    lasting_trend: bool
    drop: Drop
    drop_time_s: float | None
    gone_away_points: int
    last_level: float
    gone_away_limit: float
    drop_significant: bool
    regression_gone_away: bool
    passed: bool


def verdict_of_terms(t: WentAwayTerms, settings: WentAwaySettings) -> Verdict:
    """The went-away verdict holding the terms ``t`` (a candidate with enough points on each
    side), its numbers in the order the report shows them."""
    c = t.change_index
    numbers: dict[str, object] = {"n_points": t.n_points, "n_pre": c, "n_post": t.n_points - c}
    numbers.update(t.season_numbers)
    numbers.update(
        too_few_points=False,
        change_index=c,
        sax_buckets=settings.sax_buckets,
        sax_valid_share=settings.sax_valid_share,
        sax_lo=t.sax_lo,
        sax_hi=t.sax_hi,
        sax_bucket_width=t.sax_bucket_width,
        pre_valid_letters=t.pre_valid_letters,
        post_letter_counts=t.post_letter_counts,
        post_invalid_share=t.post_invalid_share,
        new_pattern_share=settings.new_pattern_share,
        post_mean=t.post_mean,
        lowest_valid_pre_edge=t.lowest_valid_pre_edge,
        post_below_history=t.post_below_history,
        new_pattern=t.new_pattern,
        max_post_analysis_letter=t.max_post_letter,
        max_valid_pre_letter=t.max_valid_pre_letter,
        letters_significant=t.letters_significant,
        **t.shape.numbers(),
        level_window_points=t.n_points - c,
        post_level=t.post_level,
        historical_percentile=settings.historical_percentile,
        historical_level_percentile=t.historical_level_percentile,
        previous_day_percentile=settings.previous_day_percentile,
        previous_day_level_percentile=t.previous_day_level_percentile,
        n_historical=t.n_historical,
        n_previous_day=t.n_previous_day,
        significant_regression=t.significant_regression,
        pre_level=t.pre_level,
        mad_pre=t.mad_pre,
        mad_floored=t.mad_floored,
        mad_coefficient=settings.mad_coefficient,
        threshold_per_point=t.threshold_per_point,
        trend_alpha=settings.trend_alpha,
    )
    for line in t.lines:
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
    drop = t.drop
    numbers.update(
        chosen_window=t.chosen.name,
        lift=t.lift,
        lasting_threshold=t.lasting_threshold,
        lasting_trend=t.lasting_trend,
        drop_index=drop.index if drop.index > 0 else None,
        drop_time_s=t.drop_time_s,
        drop_llr=drop.llr,
        drop_p_value=drop.p_value,
        drop_alpha=settings.drop_alpha,
        drop_significant=t.drop_significant,
        gone_away_points=t.gone_away_points,
        last_level=t.last_level,
        gone_away_limit=t.gone_away_limit,
        regression_gone_away=t.regression_gone_away,
    )
    return Verdict(STAGE, t.passed, _reason(numbers), numbers)


def _reason(n: dict[str, object]) -> str:
    """One line naming the deciding term(s) and their numbers."""
    if n["new_pattern"]:
        return (
            f"kept: new pattern, {n['post_invalid_share']:.0%} of post-change points in letters "
            f"not valid before the change (> {n['new_pattern_share']:.0%})"
        )
    stat = n["level_statistic"]
    significant = (
        f"post {stat} {n['post_level']:.4g} vs p{n['historical_percentile']:g} of "
        f"{n['level_window_points']}-point {stat}s in the history "
        f"{n['historical_level_percentile']:.4g} and p{n['previous_day_percentile']:g} in the "
        f"previous day {n['previous_day_level_percentile']:.4g}, letters "
        f"{n['max_post_analysis_letter']} vs {n['max_valid_pre_letter']}; noise {n['noise']}"
    )
    lasting = f"lift {n['lift']:.4g} vs threshold {n['lasting_threshold']:.4g} ({n['chosen_window']} window)"
    if n["drop_significant"]:
        gone = (
            f"drop after point {n['drop_index']} (p {n['drop_p_value']:.2g}), then {stat} "
            f"{n['last_level']:.4g} vs {n['gone_away_limit']:.4g}"
        )
    else:
        gone = f"no significant drop after the change (p {n['drop_p_value']:.2g})"
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
