"""Settings of the detection and dedup stages (FBDetect §5.2–5.5), one frozen dataclass per
stage, with the paper's values as defaults.

They are also what ``regbot.yml`` says: ``detection:`` is a ``DetectionSettings``, ``dedup:`` a
``DedupSettings`` and ``cost_shift:`` a ``CostShiftSettings``, read straight into these classes
(``regbot.bot.config_reader``). Each field's key is its name without ``_s`` (seconds, written as
a duration); its type and its ``regbot.settings_fields`` marker say what the file may write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from regbot.detection.presets import DEFAULT_WORKLOAD, WorkloadSettings
from regbot.settings_fields import (
    NOT_IN_CONFIG,
    Band,
    Correlation,
    NonNegative,
    Percentile,
    Positive,
    PositiveCount,
    Probability,
    Regex,
    Share,
)

__all__ = [
    "BlockWeights",
    "ChangePointSettings",
    "CostShiftDomain",
    "CostShiftSettings",
    "DedupSettings",
    "DetectionSettings",
    "FleetLoadSettings",
    "ImportanceWeights",
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

    alpha: Probability = 0.01
    max_iterations: int = 10
    min_points_each_side: int = 3
    max_segment_cuts: int = 8
    search_margin: NonNegative = 1.0
    min_window_share: Share = 0.05
    interval_mass: Probability = 0.95
    multiple_testing: Literal["fdr", "none"] = "fdr"


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
    sax_valid_share: Share = 0.03
    new_pattern_share: Share = 0.5
    trend_alpha: Probability = 0.01
    mad_coefficient: Positive = 1.5
    historical_percentile: Percentile = 95.0
    previous_day_percentile: Percentile = 90.0
    gone_away_points: int = 5
    gone_away_z: Positive = 2.326
    drop_alpha: Probability = 0.01
    normal_tail_ratio: Band = (0.8, 1.25)
    day_s: float = 86400.0
    periods_s: tuple[float, ...] = (86400.0, 604800.0)
    acf_alpha: Probability = 0.01


@dataclass(frozen=True, slots=True)
class SeasonalitySettings:
    """§5.2.3: ACF significance level, the candidate periods tried (in seconds: a day and a
    week by default), and the z-score threshold below which a change is seasonal (the level
    shift over its standard error: a change within 3 standard errors of the deseasonalised
    history is seasonal)."""

    acf_alpha: Probability = 0.01
    periods_s: tuple[float, ...] = (86400.0, 604800.0)
    z_threshold: Positive = 3.0


@dataclass(frozen=True, slots=True)
class LongTermSettings:
    """§5.3: on or off; the share of a window whose mean counts as its "start"/"end", the RMSE threshold on
    the normalised trend below which a change is gradual (change point at the trend's start),
    and ``z``: the rise must also exceed z standard errors of the edge means compared (one-sided
    1%), so that noise on a sparsely sampled series is not a long-term regression;
    ``analysis_s``: the long-term detector's own analysis window (2 days; never shorter than
    the workload's), see ``long_term.long_term_windows``."""

    enabled: bool = True
    analysis_s: float = 2 * 86400.0
    edge_share: Share = 0.2
    rmse_threshold: Positive = 0.1
    z: NonNegative = 2.326


@dataclass(frozen=True, slots=True)
class FleetLoadSettings:
    """The fleet-wide load removed before the change-point test (``fleet_load.py``): needs
    ``min_series`` rows on one time axis with ``min_history`` points of history; the factor is
    estimated from at most ``max_rows`` of them in ``iterations`` rounds with Huber weights at
    ``huber_k``; a row is adjusted when its loading (fitted on first differences of its
    history) has a t statistic of at least ``min_t`` in size."""

    enabled: bool = True
    min_series: PositiveCount = 30
    min_history: PositiveCount = 48
    max_rows: PositiveCount = 4000
    iterations: int = 3
    huber_k: Positive = 2.5
    min_t: NonNegative = 5.0


@dataclass(frozen=True, slots=True)
class DetectionSettings:
    """Everything the detection pipeline needs, for one workload (``regbot.yml``'s
    ``detection:``). ``engine``: ``fbdetect`` (KDD'18's detector is not offered yet). Not keys of
    the file: the ``workload`` (``workloads:``, picked by ``--workload``), ``higher_is_better``
    (the file's top-level key) and ``workers``, which the caller fills
    (``Config.detection_for``). ``partition_series``: the run's series are detected in
    partitions of at most this many (balanced, in input order); each partition estimates the
    fleet load from its own rows (a few thousand rows estimate it as well as all of them), so
    memory is bounded by a partition, not the fleet, and the result is the same whichever
    executor runs the partitions (``execution:``)."""

    workload: Annotated[WorkloadSettings, NOT_IN_CONFIG] = DEFAULT_WORKLOAD
    engine: Literal["fbdetect"] = "fbdetect"
    change_point: ChangePointSettings = ChangePointSettings()
    went_away: WentAwaySettings = WentAwaySettings()
    seasonality: SeasonalitySettings = SeasonalitySettings()
    long_term: LongTermSettings = LongTermSettings()
    fleet_load: FleetLoadSettings = FleetLoadSettings()
    partition_series: PositiveCount = 10_000
    higher_is_better: Annotated[frozenset[str], NOT_IN_CONFIG] = frozenset({"throughput", "qps"})
    workers: Annotated[int, NOT_IN_CONFIG] = 0  # processes for the filters; 0 = one per core


@dataclass(frozen=True, slots=True)
class ImportanceWeights:
    """SOMDedup's ImportanceScore weights (§5.5.1): relative change, absolute change,
    popularity (less widely invoked preferred), root cause found."""

    relative_change: NonNegative = 0.2
    absolute_change: NonNegative = 0.6
    popularity: NonNegative = 0.1
    root_cause: NonNegative = 0.1


@dataclass(frozen=True, slots=True)
class BlockWeights:
    """SOMDedup's feature-block weights: the shape's Fourier magnitudes, the variance ratio, the
    change position, the root-cause bits and the metric id."""

    shape: NonNegative = 1.0
    variance: NonNegative = 0.5
    position: NonNegative = 3.0
    root_cause: NonNegative = 0.2
    metric: NonNegative = 0.2


@dataclass(frozen=True, slots=True)
class SomSettings:
    """§5.5.1: ImportanceScore weights (``weights``), training epochs, the number of Fourier
    magnitudes per series (the seed is ``DedupSettings.seed``).

    What a cell may merge without stack samples (``regbot.detection.dedup.cause_groups``): a pair's
    load-free residual noise must correlate with one-sided p ≤ ``evidence_alpha`` / (pairs
    tested in the kind's cells), and r ≥ ``min_noise_correlation`` between gCPU series (a callee with
    1% of its caller's samples gives r ≈ 0.1) or ≥ ``min_cross_correlation`` between latency or
    throughput series; an ancestor joins a leaf only when its rise exceeds what the candidates
    below it explain by at most ``rise_z`` standard errors. ``guard_points``: differences
    masked either side of a change; ``load_min_series``: the fewest series on one time axis
    from which the fleet's load factor is estimated (fewer: none is removed).

    The map (``regbot.detection.dedup.som_map``, ``stack_links``): ``merge_distance``: tight
    units (every item this close to the centroid) whose centroids are this close, by complete
    linkage, are one cell;
    ``cascade_buckets``: change points this many buckets apart are one moment of a cascade (the
    change-point location jitter of a noisy caller); ``relative_cap``: the ImportanceScore's
    relative change is capped here (a new cost, with nothing before, counts as the cap);
    ``block_weights``: the feature blocks' weights (shape, variance, position, root causes,
    metric ID)."""

    weights: ImportanceWeights = ImportanceWeights()
    block_weights: BlockWeights = BlockWeights()
    epochs: PositiveCount = 30
    fourier_terms: int = 8
    evidence_alpha: Probability = 0.05
    min_noise_correlation: Correlation = 0.1
    min_cross_correlation: Correlation = 0.3
    rise_z: NonNegative = 3.0
    guard_points: int = 3
    load_min_series: PositiveCount = 20
    merge_distance: NonNegative = 0.5
    cascade_buckets: int = 8
    relative_cap: Positive = 10.0


@dataclass(frozen=True, slots=True)
class CostShiftDomain:
    """Subroutines whose names match ``regex`` (``re.search``) form one cost domain; with a
    capture group, one domain per captured value."""

    name: str
    regex: Regex


@dataclass(frozen=True, slots=True)
class CostShiftSettings:
    """§5.4 as a statistical decision (``regbot.detection.cost_shift``), run when ``enabled``
    (``regbot.yml``'s ``cost_shift:``): a domain whose cost
    before the change exceeds ``domain_cost_ratio`` × the regression's change is skipped (its
    own noise and season would hide the shift; the paper's check, kept beside the noise-based
    one); a regression is a cost shift in a domain when the domain's change is smaller than the
    regression's by more than z standard errors of their difference (one-sided at ``alpha``)
    and within ``negligible_share`` × the regression's change up to z of its own standard error.
    ``fallen_alpha``: the family-wise level at which members of a summed domain count as having
    fallen as the regression rose (Bonferroni over the domain's other members); the regression
    and those members are then judged as a sub-domain. ``domains``: custom domains by regex
    (``CostShiftDomain``), beside the domains found in the stacks and names. ``new_share``: a
    level (the regression's or the domain's before the change) within ``new_share`` × |the
    regression's change| of zero did not exist before the change, so the domain is new and no
    shift (§5.4's first check). ``same_time_mass``: a shift also needs the moved cost to have
    left when the regression arrived — the mass of the credible span of the moved part's own
    change that must meet the regression's change-time interval
    (``regbot.detection.shift_timing``).

    ``share_inflation``: first recognise gCPU rises that are the deploy's share inflation (every
    share scaled up by a speed-up elsewhere, ``regbot.detection.share_inflation``), tested at
    ``inflation_alpha``; it runs whether or not the cost-shift check itself is ``enabled``."""

    enabled: bool = True
    domains: tuple[CostShiftDomain, ...] = ()
    domain_cost_ratio: NonNegative = 50.0
    negligible_share: NonNegative = 0.2
    alpha: Probability = 0.001
    fallen_alpha: Probability = 0.01
    new_share: NonNegative = 0.01
    same_time_mass: Probability = 0.99
    share_inflation: bool = True
    inflation_alpha: Probability = 0.01


@dataclass(frozen=True, slots=True)
class MergeRule:
    """One PairwiseDedup feature and the score it must reach."""

    feature: Literal["correlation", "text", "stack_overlap"]
    threshold: Share


@dataclass(frozen=True, slots=True)
class PairwiseSettings:
    """§5.5.2: PairwiseDedup's evidence (its merge rules, how they combine and the gap between
    groups compared are ``DedupSettings.rules``, ``combine`` and ``pairwise_max_gap_s``).

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

    evidence_alpha: Probability = 0.01
    cross_kind_correlation: Correlation = 0.1
    rise_z: NonNegative = 3.0
    guard_points: int = 3
    load_min_series: PositiveCount = 20
    cascade_containment: NonNegative = 0.8


DEFAULT_RULES = (MergeRule("correlation", 0.1), MergeRule("stack_overlap", 0.5))


@dataclass(frozen=True, slots=True)
class DedupSettings:
    """The dedup stages (``regbot.yml``'s ``dedup:``): ``method``: "fbdetect" (SOMDedup + cost
    shift + PairwiseDedup) or "kdd18" (cost shift, then the KDD'18 stack-trace deduplication).

    The same-regression merge (``regbot.detection.dedup.same_regression``): ``merge_gap_s``: change
    points of one series this close are one regression (the same regression seen from
    overlapping analysis windows); on a series with an earlier known regression, a candidate is
    new only when its level is above the level since the known change by a one-sided
    Mann–Whitney test at ``merge_alpha``, with ``merge_min_points`` points at least on each side.

    SOMDedup: ``seed`` (its grid side is ⌈n^(1/4)⌉, FBDetect's rule) and ``som``. PairwiseDedup:
    ``rules`` and ``combine`` (``all`` or ``any``; the default: correlation ≥ 0.1 and stack
    overlap ≥ 0.5 where each applies; an empty list in the file keeps it),
    ``pairwise_max_gap_s`` (groups whose members changed further apart are not compared) and its
    evidence, ``pairwise``.

    The KDD'18 method (``regbot.detection.dedup.stack_dedup``): ``kdd18_bucket_s``: change points
    this close that share a stack are one bucket; ``kdd18_tolerance``: the greedy removal stops
    when the remaining stacks weigh less than this share of the bucket;
    ``kdd18_explained_share``: a node whose revised magnitude falls to this share of its own is
    explained; ``kdd18_stack_weight``: a regression set scores its explained share minus this ×
    its stack share; ``kdd18_relative_cap``: the cap on a change point's relative magnitude (a
    subroutine absent before its change counts as this)."""

    method: Literal["fbdetect", "kdd18"] = "fbdetect"
    merge_gap_s: float = 6 * 3600.0
    merge_alpha: Probability = 0.01
    merge_min_points: PositiveCount = 3
    seed: int = 0
    pairwise_max_gap_s: float = 6 * 3600.0
    rules: tuple[MergeRule, ...] = DEFAULT_RULES
    combine: Literal["all", "any"] = "all"
    kdd18_bucket_s: float = 600.0
    kdd18_tolerance: Share = 0.05
    kdd18_explained_share: Share = 0.1
    kdd18_stack_weight: NonNegative = 0.5
    kdd18_relative_cap: Positive = 100.0
    som: SomSettings = SomSettings()
    pairwise: PairwiseSettings = PairwiseSettings()
