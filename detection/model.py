"""Data types of the detection pipeline: series batches, windows, change points, candidates, verdicts.

Conventions, used by every stage:

* **Orientation.** Stages see *oriented* values where higher is worse: a series whose kind is
  higher-is-better (throughput, qps by default) is negated once, when the batch is built
  (``SeriesBatch.sign`` is -1 for it), and reports convert back with ``sign``.
* **Indices.** A change point's ``index`` is the first point of the new segment (TCPDBench's
  convention): ``values[:index]`` is before, ``values[index:]`` after.
* **Times** are epoch seconds (float). A window ``[start_s, end_s)`` is half-open.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from regbot.detection.presets import Threshold, Windows, WorkloadSettings
from regbot.profiles.model import Series

__all__ = [
    "Candidate",
    "ChangePointSettings",
    "ChangePoints",
    "DetectionSettings",
    "LongTermSettings",
    "SeasonalitySettings",
    "SeriesBatch",
    "Threshold",
    "Verdict",
    "WentAwaySettings",
    "WindowBounds",
    "Windows",
    "WorkloadSettings",
]

Number = float | int | bool | str | None


@dataclass(frozen=True, slots=True)
class Verdict:
    """One stage's decision on one candidate, with the numbers it compared.

    ``numbers`` holds plain JSON values (floats, ints, bools, strings, None, or lists of them),
    shown as they are by the report and by ``regbot explain``.
    """

    stage: str
    passed: bool
    reason: str
    numbers: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WindowBounds:
    """Absolute window edges for one run: historical ``[historical_start_s, analysis_start_s)``,
    analysis ``[analysis_start_s, extended_start_s)``, extended ``[extended_start_s, end_s]``."""

    historical_start_s: float
    analysis_start_s: float
    extended_start_s: float
    end_s: float

    @staticmethod
    def ending_at(end_s: float, windows: Windows) -> WindowBounds:
        """`regbot detect`'s windows: the extended window ends at ``end_s`` (``--now``)."""
        extended_start = end_s - windows.extended_s
        analysis_start = extended_start - windows.analysis_s
        return WindowBounds(
            analysis_start - windows.historical_s, analysis_start, extended_start, end_s
        )

    @staticmethod
    def starting_at(deploy_s: float, windows: Windows) -> WindowBounds:
        """`regbot run`'s windows: the analysis window starts at the deploy time."""
        extended_start = deploy_s + windows.analysis_s
        return WindowBounds(
            deploy_s - windows.historical_s,
            deploy_s,
            extended_start,
            extended_start + windows.extended_s,
        )

    def for_series(self, times_s: np.ndarray, windows: Windows) -> WindowBounds:
        """These bounds for one series, each window reaching further back until it holds
        ``windows.min_points`` of the series' points; the run's bounds when they already do.

        ``times_s``: the series' distinct timestamps, ascending (series readers average repeated
        timestamps into one point, ``profiles.series_files.normalise_points``, so a point is a
        distinct time: one build, however many times it was measured). Points after ``end_s``
        do not count. Worked from ``end_s`` backwards: the extended window ``[e, end_s]``
        starts at the earlier of its own start and its ``extended``-th last point (only when
        the workload has an extended window); the analysis window keeps its duration, ending at
        ``e``, and starts earlier still if it holds fewer than ``analysis`` points; the same for
        the historical window. A series with fewer points than asked for reaches back to its
        first point. Edges only ever move earlier, so a dense series gets the run's bounds
        unchanged (``self``). O(log n)."""
        need = windows.min_points
        times = np.asarray(times_s, np.float64)
        n_end = int(np.searchsorted(times, self.end_s, "right"))
        e = self.extended_start_s
        if self.end_s > self.extended_start_s:
            e = _reach_back(times, e, n_end, need.extended)
        a = self.analysis_start_s
        if e != self.extended_start_s:
            a = e - (self.extended_start_s - self.analysis_start_s)
        a = _reach_back(times, a, int(np.searchsorted(times, e, "left")), need.analysis)
        h = self.historical_start_s
        if a != self.analysis_start_s:
            h = a - (self.analysis_start_s - self.historical_start_s)
        h = _reach_back(times, h, int(np.searchsorted(times, a, "left")), need.historical)
        if (h, a, e) == (self.historical_start_s, self.analysis_start_s, self.extended_start_s):
            return self
        return WindowBounds(h, a, e, self.end_s)


def _reach_back(times: np.ndarray, start_s: float, stop: int, need: int) -> float:
    """The start of a window ending before index ``stop`` that holds at least ``need`` points:
    ``start_s`` when ``[start_s, times[stop])`` already does, else the time of the ``need``-th
    point before ``stop`` (or the first point when there are fewer)."""
    held = stop - int(np.searchsorted(times, start_s, "left"))
    if held >= need or stop == 0:
        return start_s
    return min(start_s, float(times[max(stop - need, 0)]))


@dataclass(frozen=True, slots=True)
class SeriesBatch:
    """Many series as padded 2-D arrays for vectorised stages.

    Row ``i`` holds ``lengths[i]`` valid points, left-aligned and in ascending time order;
    the rest of the row is padding (``times_s`` = +inf, ``values`` = 0.0, never read when masks
    are respected). When every series has the same timestamps, ``times_s`` is a read-only
    broadcast of one row (a fleet of 100,000 series costs one time axis, not 100,000).
    ``values`` are oriented (higher is worse, see the module docstring).
    """

    ids: list[str]
    kinds: list[str]
    times_s: np.ndarray  # (n, T) float64
    values: np.ndarray  # (n, T) float64, oriented
    lengths: np.ndarray  # (n,) int64
    sign: np.ndarray  # (n,) float64: +1, or -1 for higher-is-better kinds

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def valid(self) -> np.ndarray:
        """(n, T) bool: the points that exist."""
        return np.arange(self.values.shape[1])[None, :] < self.lengths[:, None]

    def rows(self, start: int, stop: int) -> SeriesBatch:
        """Rows ``start:stop`` as a batch of views (no copy)."""
        return SeriesBatch(
            self.ids[start:stop],
            self.kinds[start:stop],
            self.times_s[start:stop],
            self.values[start:stop],
            self.lengths[start:stop],
            self.sign[start:stop],
        )

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Times and oriented values of series ``i``, without padding."""
        n = int(self.lengths[i])
        return self.times_s[i, :n], self.values[i, :n]

    @staticmethod
    def from_series(
        series: Sequence[Series],
        higher_is_better: frozenset[str] = frozenset({"throughput", "qps"}),
        *,
        start_s: float = -np.inf,
        end_s: float = np.inf,
    ) -> SeriesBatch:
        """Pack series (already normalised: sorted, finite, unique times) keeping the points in
        ``[start_s, end_s]``; data after ``end_s`` (``--now``) is ignored as if not yet arrived."""
        ids, kinds = [s.id for s in series], [s.kind for s in series]
        sign = np.array([-1.0 if s.kind in higher_is_better else 1.0 for s in series])
        shared = _shared_timestamps(series)
        if shared is not None:
            # One time axis for every series (a fleet's buckets): a broadcast view, no copy.
            keep = (shared >= start_s) & (shared <= end_s)
            row_times = shared[keep]
            lengths = np.full(len(series), len(row_times), dtype=np.int64)
            times = np.broadcast_to(row_times, (len(series), len(row_times)))
            values = np.empty((len(series), len(row_times)))
            for i, s in enumerate(series):
                np.multiply(np.asarray(s.values, np.float64)[keep], sign[i], out=values[i])
            return SeriesBatch(ids, kinds, times, values, lengths, sign)
        kept = []
        for s in series:
            keep = (s.timestamps_s >= start_s) & (s.timestamps_s <= end_s)
            kept.append(
                (
                    np.asarray(s.timestamps_s, np.float64)[keep],
                    np.asarray(s.values, np.float64)[keep],
                )
            )
        lengths = np.array([len(t) for t, _ in kept], dtype=np.int64)
        width = int(lengths.max()) if len(lengths) else 0
        times = np.full((len(series), width), np.inf)
        values = np.zeros((len(series), width))
        for i, (t, v) in enumerate(kept):
            times[i, : len(t)] = t
            values[i, : len(v)] = v * sign[i]
        return SeriesBatch(
            [s.id for s in series], [s.kind for s in series], times, values, lengths, sign
        )


def _shared_timestamps(series: Sequence[Series]) -> np.ndarray | None:
    """The one timestamp array all series have, or None when they differ."""
    if not series:
        return None
    first = np.asarray(series[0].timestamps_s, np.float64)
    for s in series[1:]:
        same = s.timestamps_s is series[0].timestamps_s
        if not same and not np.array_equal(s.timestamps_s, first):
            return None
    return first


@dataclass(frozen=True, slots=True)
class ChangePoints:
    """The most likely single change point of every series in a batch (FBDetect §5.2.1).

    Per row: ``index`` (first point after the change; -1 when the series could not be tested),
    ``mean_before``/``mean_after`` (oriented), ``llr`` (likelihood-ratio statistic),
    ``p_value`` (chi-squared, 2 degrees of freedom), ``iterations`` and ``stable`` (the
    CUSUM/EM iteration converged before its budget), the segment ``[segment_start,
    segment_end)`` the single-change model was fitted to (the whole row unless older changes were
    cut off), and ``interval_start``/``interval_end``: the first and last index of the change
    position's highest-posterior-density set (``change_time.py``; -1 when ``index`` is -1).
    """

    index: np.ndarray
    mean_before: np.ndarray
    mean_after: np.ndarray
    llr: np.ndarray
    p_value: np.ndarray
    iterations: np.ndarray
    stable: np.ndarray
    segment_start: np.ndarray
    segment_end: np.ndarray
    window_share: np.ndarray
    interval_start: np.ndarray
    interval_end: np.ndarray


@dataclass(frozen=True, slots=True)
class Candidate:
    """A series with a change point, on its way through the filters.

    ``times_s``/``values`` are the series' points within the run's windows (oriented values);
    ``sign`` converts back to the series' own direction. ``verdicts`` maps a stage name to its
    verdict, in pipeline order.
    """

    series_id: str
    kind: str
    times_s: np.ndarray
    values: np.ndarray
    sign: float
    change_index: int
    change_time_s: float
    mean_before: float
    mean_after: float
    llr: float
    p_value: float
    windows: WindowBounds
    detector: Literal["short-term", "long-term"] = "short-term"
    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    regression_id: str = ""  # set by the same-regression merge: stable across runs
    # the change time's posterior interval [first, last] in epoch seconds (change_time.py): the
    # deploy lies after the point before ``first`` and at or before ``last``; None when the
    # detector gives no interval (long-term)
    change_interval_s: tuple[float, float] | None = None

    @property
    def delta(self) -> float:
        """Oriented change (positive = worse)."""
        return self.mean_after - self.mean_before

    def with_verdict(self, verdict: Verdict) -> Candidate:
        return replace(self, verdicts={**self.verdicts, verdict.stage: verdict})

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts.values())


@dataclass(frozen=True, slots=True)
class ChangePointSettings:
    """§5.2.1: significance level of the likelihood-ratio test, the CUSUM/EM iteration budget,
    and the fewest points each side of a change (a change needs evidence on both sides).
    ``max_segment_cuts``: how many significant older (or later) changes the search for a change
    in the analysis window may cut off before giving up (``changepoint.py``);
    ``interval_mass``: the posterior mass of the change-time interval (``change_time.py``);
    ``multiple_testing``: ``fdr`` keeps alpha as the run's false discovery rate
    (``discoveries.py``), ``none`` tests each series at alpha alone."""

    alpha: float = 0.01
    max_iterations: int = 10
    min_points_each_side: int = 3
    max_segment_cuts: int = 8
    search_margin: float = 1.0
    min_window_share: float = 0.05
    interval_mass: float = 0.95
    multiple_testing: str = "fdr"


@dataclass(frozen=True, slots=True)
class WentAwaySettings:
    """§5.2.2: SAX with ``sax_buckets`` (N = 20) letters, a letter valid when it holds at least
    ``sax_valid_share`` (X = 3%) of the points; a post-change string is a new pattern when more
    than ``new_pattern_share`` of its letters are invalid; Mann–Kendall at ``trend_alpha``; the
    MAD coefficient 1.5 (threshold = coefficient × MAD × 1.4826); SignificantRegression compares
    the post-change level with the ``historical_percentile`` (95) of same-length levels in the
    historical window and the ``previous_day_percentile`` (90) in the previous day
    (``day_s``); RegressionGoneAway needs a downward shift inside the post-change points
    significant at ``drop_alpha`` (with a third of the post-change points, at least
    ``gone_away_points``, after it), after
    which the level is within ``gone_away_z`` level-noise units of the baseline (one-sided 1%);
    ``normal_tail_ratio``: the band of std / (1.4826·MAD) in which noise counts as normal
    (means), outside it levels are medians; a history significantly seasonal at one of
    ``periods_s`` (ACF at ``acf_alpha``) is deseasonalised before judging."""

    sax_buckets: int = 20
    sax_valid_share: float = 0.03
    new_pattern_share: float = 0.5
    trend_alpha: float = 0.01
    mad_coefficient: float = 1.5
    historical_percentile: float = 95.0
    previous_day_percentile: float = 90.0
    gone_away_points: int = 5
    gone_away_z: float = 2.326
    drop_alpha: float = 0.01
    normal_tail_ratio: tuple[float, float] = (0.8, 1.25)
    day_s: float = 86400.0
    periods_s: tuple[float, ...] = (86400.0, 604800.0)
    acf_alpha: float = 0.01


@dataclass(frozen=True, slots=True)
class SeasonalitySettings:
    """§5.2.3: ACF significance level, the candidate periods tried (in seconds: a day and a
    week by default), and the z-score threshold below which a change is seasonal (the level
    shift over its standard error: a change within 3 standard errors of the deseasonalised
    history is seasonal)."""

    acf_alpha: float = 0.01
    periods_s: tuple[float, ...] = (86400.0, 604800.0)
    z_threshold: float = 3.0


@dataclass(frozen=True, slots=True)
class LongTermSettings:
    """§5.3: the share of a window whose mean counts as its "start"/"end", the RMSE threshold on
    the normalised trend below which a change is gradual (change point at the trend's start),
    and ``z``: the rise must also exceed z standard errors of the edge means compared (one-sided
    1%), so that noise on a sparsely sampled series is not a long-term regression;
    ``analysis_s``: the long-term detector's own analysis window (2 days; never shorter than
    the workload's), see ``long_term.long_term_windows``."""

    edge_share: float = 0.2
    rmse_threshold: float = 0.1
    z: float = 2.326
    analysis_s: float = 2 * 86400.0
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class FleetLoadSettings:
    """The fleet-wide load removed before the change-point test (``fleet_load.py``): needs
    ``min_series`` rows on one time axis with ``min_history`` points of history; the factor is
    estimated from at most ``max_rows`` of them in ``iterations`` rounds with Huber weights at
    ``huber_k``; a row is adjusted when its loading (fitted on first differences of its
    history) has a t statistic of at least ``min_t`` in size."""

    enabled: bool = True
    min_series: int = 30
    min_history: int = 48
    max_rows: int = 4000
    iterations: int = 3
    huber_k: float = 2.5
    min_t: float = 5.0


@dataclass(frozen=True, slots=True)
class DetectionSettings:
    """Everything the detection pipeline needs, for one workload."""

    workload: WorkloadSettings
    higher_is_better: frozenset[str] = frozenset({"throughput", "qps"})
    change_point: ChangePointSettings = ChangePointSettings()
    went_away: WentAwaySettings = WentAwaySettings()
    seasonality: SeasonalitySettings = SeasonalitySettings()
    long_term: LongTermSettings = LongTermSettings()
    fleet_load: FleetLoadSettings = FleetLoadSettings()
    workers: int = 0  # processes for the per-candidate filters; 0 = one per core


# --- deduplication and cost shift (FBDetect §5.4–5.5) --------------------------------------


def subroutine_of_series(series_id: str) -> str | None:
    """The subroutine a gCPU series measures (``gcpu:handle (app/views.py)`` → ``handle
    (app/views.py)``), or None for other series (throughput, latency...)."""
    return series_id[5:] if series_id.startswith("gcpu:") else None


@dataclass(frozen=True, slots=True)
class StackShare:
    """The stack samples behind one subroutine's gCPU in the analysis window: sorted stack ids
    and their sample weights (from the sample store); ``rises``, when known, each stack's change
    of share across the run's deploy (its share of the samples after the analysis start minus
    its share before it), aligned with ``stack_ids``."""

    stack_ids: np.ndarray
    weights: np.ndarray
    rises: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class DedupContext:
    """What the dedup and cost-shift stages know beyond the candidates, as plain data the bot
    builds from the sample store, the series and attribution.

    ``series``: every series of the run, id → (times, oriented values), for domain costs and
    correlations. ``popularity``: subroutine → share of samples whose stack contains it
    (FBDetect's PopularityScore). ``callers``: subroutine → every subroutine seen above it on
    its stacks (its upstream-caller cost domain). ``stacks``: subroutine → its ``StackShare``
    (the candidates' and the callers present on all of a candidate's stacks). ``commit_subroutines``: commit →
    subroutines it modifies (the root-cause bitmap and the commit cost domain; `regbot run`
    supplies it from the deploy's commits, `regbot detect` has none). ``metadata``: series id → the
    metadata annotation of its frame, if any. ``memo``: what the run's stages work out once
    from this context and share (the fleet's load factor, ``shared_cause.load_over_windows``).
    """

    series: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    popularity: Mapping[str, float] = field(default_factory=dict)
    callers: Mapping[str, frozenset[str]] = field(default_factory=dict)
    stacks: Mapping[str, StackShare] = field(default_factory=dict)
    commit_subroutines: Mapping[str, frozenset[str]] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    memo: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One regression in a dedup group, with what PairwiseDedup compares: its series around the
    change (oriented values) and its stack share."""

    regression_id: str
    series_id: str
    kind: str
    change_time_s: float
    times_s: np.ndarray
    values: np.ndarray
    stacks: StackShare | None = None


@dataclass(frozen=True, slots=True)
class Group:
    """A dedup group: the first member is its representative; ``id`` is stable across runs."""

    id: str
    members: tuple[GroupMember, ...]


@dataclass(frozen=True, slots=True)
class SomSettings:
    """§5.5.1: ImportanceScore weights (relative change, absolute change, popularity, root cause
    found), training epochs, the number of Fourier magnitudes per series, and the seed.

    What a cell may merge without stack samples (``regbot.detection.dedup.cause_groups``): a pair's
    load-free residual noise must correlate with one-sided p ≤ ``evidence_alpha`` / (pairs
    tested in the kind's cells), and r ≥ ``min_noise_correlation`` between gCPU series (a callee with
    1% of its caller's samples gives r ≈ 0.1) or ≥ ``min_cross_correlation`` between latency or
    throughput series; an ancestor joins a leaf only when its rise exceeds what the candidates
    below it explain by at most ``rise_z`` standard errors. ``guard_points``: differences
    masked either side of a change; ``load_min_series``: the fewest series on one time axis
    from which the fleet's load factor is estimated (fewer: none is removed).

    The map (``regbot.detection.dedup.som_dedup``): ``merge_distance``: tight units (every item this
    close to the centroid) whose centroids are this close, by complete linkage, are one cell;
    ``cascade_buckets``: change points this many buckets apart are one moment of a cascade (the
    change-point location jitter of a noisy caller); ``relative_cap``: the ImportanceScore's
    relative change is capped here (a new cost, with nothing before, counts as the cap);
    ``block_weights``: the feature blocks' weights (shape, variance, position, root causes,
    metric ID)."""

    weights: tuple[float, float, float, float] = (0.2, 0.6, 0.1, 0.1)
    epochs: int = 30
    fourier_terms: int = 8
    seed: int = 0
    evidence_alpha: float = 0.05
    min_noise_correlation: float = 0.1
    min_cross_correlation: float = 0.3
    rise_z: float = 3.0
    guard_points: int = 3
    load_min_series: int = 20
    merge_distance: float = 0.5
    cascade_buckets: int = 8
    relative_cap: float = 10.0
    block_weights: tuple[float, float, float, float, float] = (1.0, 0.5, 3.0, 0.2, 0.2)


@dataclass(frozen=True, slots=True)
class CostShiftSettings:
    """§5.4 as a statistical decision (``regbot.detection.cost_shift``): a domain whose cost
    before the change exceeds ``domain_cost_ratio`` × the regression's change is skipped (its
    own noise and season would hide the shift; the paper's check, kept beside the noise-based
    one); a regression is a cost shift in a domain when the domain's change is smaller than the
    regression's by more than z standard errors of their difference (one-sided at ``alpha``)
    and within ``negligible_share`` × the regression's change up to z of its own standard error.
    ``fallen_alpha``: the family-wise level at which members of a summed domain count as having
    fallen as the regression rose (Bonferroni over the domain's other members); the regression
    and those members are then judged as a sub-domain. ``custom_domains``: (name, regex) pairs —
    subroutines matching the regex (``re.search``) form a domain, or, with a capture group, one
    domain per captured value. ``new_share``: a level (the regression's or the domain's before
    the change) within ``new_share`` × |the regression's change| of zero did not exist before
    the change, so the domain is new and no shift (§5.4's first check). ``same_time_mass``: a
    shift also needs the moved cost to have left when the regression arrived — the mass of the
    credible span of the moved part's own change that must meet the regression's change-time
    interval (``regbot.detection.shift_timing``)."""

    domain_cost_ratio: float = 50.0
    negligible_share: float = 0.2
    custom_domains: tuple[tuple[str, str], ...] = ()
    alpha: float = 0.001
    fallen_alpha: float = 0.01
    new_share: float = 0.01
    same_time_mass: float = 0.99


@dataclass(frozen=True, slots=True)
class MergeRule:
    """One PairwiseDedup feature and the score it must reach."""

    feature: Literal["correlation", "text", "stack_overlap"]
    threshold: float


@dataclass(frozen=True, slots=True)
class PairwiseSettings:
    """§5.5.2: the merge rules and how they combine (``all`` or ``any``); ``max_gap_s``: groups
    whose members changed further apart than this are not candidates for a merge.

    The ``correlation`` feature is evidence of one cause, not of one shape: the correlation of
    the two series' residual noise, each one's own step and the fleet's load removed
    (``regbot.detection.dedup.shared_cause``). Its rule passes when r reaches the rule's threshold
    (``cross_kind_correlation`` at least, when one side is not a gCPU series) *and* its one-sided
    p-value is at most ``evidence_alpha`` / (candidates × members compared: a family-wise rate
    over the call). Default: correlation ≥ 0.1
    *and* stack overlap ≥ 0.5, each where it applies. Between two gCPU series the rises must
    also agree with one cause: the caller's rise within ``rise_z`` standard errors of the share
    of the callee's rise it holds (``pairwise_dedup._Evidence.rises_agree``). ``guard_points``
    and ``load_min_series``: as in ``SomSettings``. ``cascade_containment``: a gCPU candidate
    joins a group, whatever the rules, when at least this share of a caller's rise lies on the
    stacks of its callee, one of them the candidate and the other a member (a cascade: one
    slowed function, its callers' reports; ``pairwise_dedup`` "Cascades")."""

    rules: tuple[MergeRule, ...] = (
        MergeRule("correlation", 0.1),
        MergeRule("stack_overlap", 0.5),
    )
    combine: Literal["all", "any"] = "all"
    max_gap_s: float = 6 * 3600.0
    evidence_alpha: float = 0.01
    cross_kind_correlation: float = 0.1
    rise_z: float = 3.0
    guard_points: int = 3
    load_min_series: int = 20
    cascade_containment: float = 0.8
