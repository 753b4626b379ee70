"""Settings of the detection and dedup stages (FBDetect §5.2–5.5), one frozen dataclass per
stage, with the paper's values as defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from regbot.detection.presets import WorkloadSettings

__all__ = [
    "ChangePointSettings",
    "CostShiftSettings",
    "DetectionSettings",
    "FleetLoadSettings",
    "LongTermSettings",
    "MergeRule",
    "PairwiseSettings",
    "SeasonalitySettings",
    "SomSettings",
    "WentAwaySettings",
]


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

    The map (``regbot.detection.dedup.som_map``, ``stack_links``): ``merge_distance``: tight units (every item this
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
    of the callee's rise it holds (``pairwise_evidence.CorrelationEvidence.rises_agree``). ``guard_points``
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
