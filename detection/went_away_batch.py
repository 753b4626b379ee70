"""The went-away detector (FBDetect §5.2.2) over a batch of candidates: ``went_away_verdict``
of each, with the array work of candidates on one time axis done for all of them at once.

Candidates with the same timestamps, change point and windows (a fleet scraped together) form a
group; the group's values are one (rows, n) array and every term of ``went_away_verdict`` is
computed along its rows — the period choice's ACF, the seasonal profile, SAX letters, the noise
shape, rolling means and their MADs and percentiles, Mann–Kendall and Theil–Sen, the drop
search. Each of those is the same operation on each row as on the candidate alone (reductions
along a row, order statistics by the same partition, sequential sums in the same order;
``tests/detection/test_went_away_batch.py`` checks the verdicts equal), so a candidate's
verdict does not depend on the others. Rows judged on medians (heavy-tailed noise) take the
one-candidate level functions row by row; a candidate with a value that is not finite, or too
few points on a side, is judged alone.

Complexity: that of ``went_away_verdict`` per candidate, in O(groups × terms) numpy calls
instead of O(candidates × terms).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from regbot.detection.model import Candidate, Verdict
from regbot.detection.noise_shape import Statistic, rolling_levels
from regbot.detection.noise_shape_rows import noise_shapes
from regbot.detection.order_stats import mad as median_absolute_deviation
from regbot.detection.order_stats import percentile
from regbot.detection.periods import PeriodChoice, PeriodMemo, choose_periods, period_key
from regbot.detection.row_stats import row_mads, row_medians, row_percentiles
from regbot.detection.stage_settings import WentAwaySettings
from regbot.detection.went_away import (
    MAD_FLOOR_SHARE,
    MIN_POINTS_EACH_SIDE,
    WentAwayTerms,
    verdict_of_terms,
    went_away_verdict,
)
from regbot.detection.went_away_levels import (
    MAD_NORMAL,
    deseasonalise_rows,
    find_drops,
    rolling_mean_sums,
    rolling_means,
)
from regbot.detection.went_away_trend import (
    WindowLine,
    sax_letters_rows,
    valid_letters_rows,
    window_lines,
)

__all__ = ["AxisKey", "axis_key", "went_away_verdicts"]

AxisKey = tuple[int, int, float, object, bytes]
# Candidates judged at once: their arrays (the ACF's spectra the largest) stay small.
GROUP_ROWS = 512


def axis_key(candidate: Candidate) -> AxisKey:
    """What candidates judged together share: change point, number of points, change time,
    windows and timestamps."""
    times = np.asarray(candidate.times_s, dtype=np.float64)
    return (
        int(candidate.change_index),
        times.size,
        candidate.change_time_s,
        candidate.windows,
        times.tobytes(),
    )


def went_away_verdicts(
    candidates: Sequence[Candidate],
    settings: WentAwaySettings,
    memos: Sequence[PeriodMemo] | None = None,
) -> list[Verdict]:
    """``went_away_verdict(candidate, settings, memo=memo)`` of each candidate, in order;
    ``memos``: each candidate's period choices (read, and filled with the choices made here)."""
    memo_of = list(memos) if memos is not None else [{} for _ in candidates]
    out: list[Verdict | None] = [None] * len(candidates)
    groups: dict[AxisKey, list[int]] = {}
    for i, candidate in enumerate(candidates):
        values = np.asarray(candidate.values, dtype=np.float64)
        c = int(candidate.change_index)
        if (
            values.ndim != 1
            or len(candidate.times_s) != values.size
            or min(c, values.size - c) < MIN_POINTS_EACH_SIDE
            or not np.isfinite(values).all()
        ):
            out[i] = went_away_verdict(candidate, settings, memo=memo_of[i])
            continue
        groups.setdefault(axis_key(candidate), []).append(i)
    for group in groups.values():
        for lo in range(0, len(group), GROUP_ROWS):
            members = group[lo : lo + GROUP_ROWS]
            found = _group_verdicts(
                [candidates[i] for i in members], settings, [memo_of[i] for i in members]
            )
            for i, verdict in zip(members, found):
                out[i] = verdict
    return [verdict for verdict in out if verdict is not None]


def _period_choices(
    times: np.ndarray, pre: np.ndarray, settings: WentAwaySettings, memos: list[PeriodMemo]
) -> list[PeriodChoice]:
    """Each row's pre-change period choice: from its memo, or chosen here for all the rows
    without one at once (and remembered)."""
    key = period_key(settings.periods_s, settings.acf_alpha)
    missing = [row for row, memo in enumerate(memos) if key not in memo]
    if missing:
        chosen = choose_periods(times, pre[missing], settings.periods_s, settings.acf_alpha)
        for row, choice in zip(missing, chosen):
            memos[row][key] = choice
    return [memo[key] for memo in memos]


def _window(times: np.ndarray, start_s: float, end_s: float, c: int) -> np.ndarray:
    """``pre_points``' columns: the pre-change points in ``[start_s, end_s)``, or all of them."""
    kept = np.flatnonzero((times[:c] >= start_s) & (times[:c] < end_s))
    return kept if kept.size else np.arange(c)


def _percentiles(
    pre: np.ndarray,
    columns: np.ndarray,
    m: int,
    q: float,
    statistics: list[Statistic],
) -> np.ndarray:
    """Each row's ``percentile(rolling_levels(pre_points, m, statistic), q)``: the mean rows'
    rolling means at once, the median rows one by one."""
    out = np.empty(len(pre))
    points = pre[:, columns]
    means = [row for row, s in enumerate(statistics) if s == "mean"]
    if means:
        out[means] = row_percentiles(rolling_means(rolling_mean_sums(points[means]), m), q)
    for row, statistic in enumerate(statistics):
        if statistic == "median":
            out[row] = percentile(rolling_levels(points[row], m, "median"), q)
    return out


def _level_noises(
    pre: np.ndarray,
    sums: np.ndarray,
    mads: np.ndarray,
    windows: list[int],
    floors: np.ndarray,
    statistics: list[Statistic],
) -> np.ndarray:
    """Each row's ``level_noise(pre, windows[row], floors[row], statistic)``: rows of one window
    length together (their rolling means from ``sums``, the rows' ``rolling_mean_sums``)."""
    c = pre.shape[1]
    spread = np.empty(len(pre))
    by_window: dict[int, list[int]] = {}
    for row, m in enumerate(windows):
        by_window.setdefault(max(1, int(m)), []).append(row)
    for m, rows in by_window.items():
        if c < 8 * m:
            spread[rows] = MAD_NORMAL * mads[rows] / np.sqrt(m)
            continue
        means = [row for row in rows if statistics[row] == "mean"]
        if means:
            spread[means] = MAD_NORMAL * row_mads(rolling_means(sums[means], m))
        for row in rows:
            if statistics[row] == "median":
                found = rolling_levels(pre[row], m, "median")
                spread[row] = MAD_NORMAL * median_absolute_deviation(found)
    return np.where(floors > spread, floors, spread)  # max(spread, floor), as Python's max


def _levels(values: np.ndarray, means: np.ndarray, statistics: list[Statistic]) -> np.ndarray:
    """Each row's ``level_of(row, statistic)``, given the rows' means."""
    medians = [row for row, s in enumerate(statistics) if s == "median"]
    if not medians:
        return means
    out = means.copy()
    out[medians] = row_medians(values[medians])
    return out


def _group_verdicts(
    candidates: list[Candidate], settings: WentAwaySettings, memos: list[PeriodMemo]
) -> list[Verdict]:
    """``went_away_verdict`` of candidates with one time axis, change point and windows (each
    with enough points on both sides and finite values), term by term over all of them."""
    first = candidates[0]
    times = np.asarray(first.times_s, dtype=np.float64)
    raw = np.stack([np.asarray(c.values, dtype=np.float64) for c in candidates])
    rows, n = raw.shape
    c = int(first.change_index)
    n_post = n - c
    w = first.windows
    n_buckets = settings.sax_buckets
    choices = _period_choices(times[:c], raw[:, :c], settings, memos)
    values, season_numbers = deseasonalise_rows(times, raw, c, choices)
    pre, post = values[:, :c], values[:, c:]

    # SAX over every point of each candidate; NewPattern.
    lo, hi = values.min(axis=1), values.max(axis=1)
    width = (hi - lo) / n_buckets
    letters = sax_letters_rows(values, lo, hi, n_buckets)
    pre_valid = valid_letters_rows(letters[:, :c], n_buckets, settings.sax_valid_share)
    post_letters = letters[:, c:]
    invalid = np.count_nonzero(~np.take_along_axis(pre_valid, post_letters, axis=1), axis=1)
    invalid_share = invalid / n_post
    post_mean = post.mean(axis=1)
    letter_counts = (post_letters + n_buckets * np.arange(rows)[:, None]).ravel()
    post_letter_counts = np.bincount(letter_counts, minlength=rows * n_buckets)
    post_letter_counts = post_letter_counts.reshape(rows, n_buckets)
    max_post_letter = post_letters.max(axis=1)

    # SignificantRegression on levels of the post-change length.
    low, high = settings.normal_tail_ratio
    shapes = noise_shapes(pre, low=low, high=high)
    statistics: list[Statistic] = [shape.statistic for shape in shapes]
    historical = _window(times, w.historical_start_s, w.analysis_start_s, c)
    day = _window(times, first.change_time_s - settings.day_s, first.change_time_s, c)
    post_level = _levels(post, post_mean, statistics)
    p_hist = _percentiles(pre, historical, n_post, settings.historical_percentile, statistics)
    p_day = _percentiles(pre, day, n_post, settings.previous_day_percentile, statistics)

    # LastingTrend.
    pre_level = _levels(pre, pre.mean(axis=1), statistics)
    mads = row_mads(pre)
    tiny = float(np.finfo(float).tiny)
    largest = np.abs(values).max(axis=1)
    lines: list[list[WindowLine]] = [
        [line]
        for line in window_lines(
            "post", times[c:], post, settings.trend_alpha, statistics, post_mean
        )
    ]
    a0 = int(np.searchsorted(times, w.analysis_start_s, side="left"))
    if n - a0 >= MIN_POINTS_EACH_SIDE:
        analysis = window_lines(
            "analysis", times[a0:], values[:, a0:], settings.trend_alpha, statistics
        )
        for found, line in zip(lines, analysis):
            found.append(line)
    chosen = [min(found, key=lambda line: line.slope_per_s) for found in lines]
    floors = np.array([max(MAD_FLOOR_SHARE * float(x), tiny) for x in largest.tolist()])
    sums = rolling_mean_sums(pre)
    lasting_noise = _level_noises(
        pre, sums, mads, [line.points for line in chosen], floors, statistics
    )

    # RegressionGoneAway.
    min_after = max(1, min(n_post // 2, max(settings.gone_away_points, n_post // 3)))
    drops = find_drops(post, min_after)
    after = [n_post - drop.index if drop.index > 0 else n_post for drop in drops]
    last_level = np.empty(rows)
    by_length: dict[int, list[int]] = {}
    for row, k in enumerate(after):
        by_length.setdefault(k, []).append(row)
    for k, members in by_length.items():
        tail = values[members, n - k :]
        last_level[members] = _levels(tail, tail.mean(axis=1), [statistics[r] for r in members])
    gone_noise = _level_noises(pre, sums, mads, after, floors, statistics)

    verdicts = []
    for row in range(rows):
        valid_idx = np.flatnonzero(pre_valid[row])
        lo_r, width_r = float(lo[row]), float(width[row])
        lowest_valid_edge = lo_r + int(valid_idx[0]) * width_r if valid_idx.size else lo_r
        mean_r = float(post_mean[row])
        below_history = mean_r < lowest_valid_edge
        share = float(invalid_share[row])
        new_pattern = share > settings.new_pattern_share and not below_history
        max_valid_pre_letter = int(valid_idx[-1]) if valid_idx.size else -1
        top_letter = int(max_post_letter[row])
        letters_ok = top_letter >= max_valid_pre_letter
        level_r = float(post_level[row])
        p_hist_r, p_day_r = float(p_hist[row]), float(p_day[row])
        significant = letters_ok and level_r > p_hist_r and level_r > p_day_r
        pre_level_r = float(pre_level[row])
        mad = float(mads[row])
        mad_floor = float(floors[row])
        mad_used = max(mad, mad_floor)
        line = chosen[row]
        lift = line.end_level - pre_level_r
        lasting_threshold = settings.mad_coefficient * float(lasting_noise[row])
        lasting = lift >= lasting_threshold
        drop = drops[row]
        last_r = float(last_level[row])
        gone_limit = pre_level_r + settings.gone_away_z * float(gone_noise[row])
        dropped = drop.index > 0 and drop.p_value < settings.drop_alpha
        gone_away = dropped and last_r < gone_limit
        terms = WentAwayTerms(
            n_points=n,
            change_index=c,
            season_numbers=season_numbers[row],
            sax_lo=lo_r,
            sax_hi=float(hi[row]),
            sax_bucket_width=width_r,
            pre_valid_letters=valid_idx.tolist(),
            post_letter_counts=post_letter_counts[row].tolist(),
            post_invalid_share=share,
            post_mean=mean_r,
            lowest_valid_pre_edge=lowest_valid_edge,
            post_below_history=below_history,
            new_pattern=new_pattern,
            max_post_letter=top_letter,
            max_valid_pre_letter=max_valid_pre_letter,
            letters_significant=letters_ok,
            shape=shapes[row],
            post_level=level_r,
            historical_level_percentile=p_hist_r,
            previous_day_level_percentile=p_day_r,
            n_historical=historical.size,
            n_previous_day=day.size,
            significant_regression=significant,
            pre_level=pre_level_r,
            mad_pre=mad,
            mad_floored=mad < mad_floor,
            threshold_per_point=settings.mad_coefficient * MAD_NORMAL * mad_used,
            lines=lines[row],
            chosen=line,
            lift=lift,
            lasting_threshold=lasting_threshold,
            lasting_trend=lasting,
            drop=drop,
            drop_time_s=float(times[c + drop.index]) if drop.index > 0 else None,
            gone_away_points=after[row],
            last_level=last_r,
            gone_away_limit=gone_limit,
            drop_significant=dropped,
            regression_gone_away=gone_away,
            passed=new_pattern or (significant and lasting and not gone_away),
        )
        verdicts.append(verdict_of_terms(terms, settings))
    return verdicts
