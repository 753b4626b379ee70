"""The detection and dedup stages' settings from ``regbot.yml``: a workload plus the
``detection:``, ``dedup:`` and ``cost_shift:`` sections, laid over the stages' own defaults
(which carry the paper's values, and which the config's defaults are read from)."""

from __future__ import annotations

from dataclasses import asdict, replace

from regbot.bot.config import Config
from regbot.detection.dedup import DedupSettings
from regbot.detection.stage_settings import (
    CostShiftSettings,
    DetectionSettings,
    MergeRule,
    PairwiseSettings,
    SomSettings,
)
from regbot.detection.share_inflation import ShareInflationSettings


def detection_settings(config: Config, workload: str | None = None) -> DetectionSettings:
    """``DetectionSettings`` for the named workload (``default`` when None)."""
    written = config.detection
    defaults = DetectionSettings(workload=config.workload(workload or "default"))
    return replace(
        defaults,
        higher_is_better=config.higher_is_better,
        change_point=replace(defaults.change_point, **asdict(written.change_point)),
        went_away=replace(defaults.went_away, **asdict(written.went_away)),
        seasonality=replace(defaults.seasonality, **asdict(written.seasonality)),
        long_term=replace(defaults.long_term, **asdict(written.long_term)),
        fleet_load=replace(defaults.fleet_load, **asdict(written.fleet_load)),
    )


def dedup_settings(config: Config) -> DedupSettings:
    """The dedup stages' settings (same-regression merge, SOMDedup, cost shift, PairwiseDedup,
    or KDD'18) from ``regbot.yml``; cost shift is None when ``cost_shift.enabled`` is false."""
    written = config.dedup
    som = written.som
    weights, blocks = som.weights, som.block_weights
    pairwise = replace(
        PairwiseSettings(),
        max_gap_s=written.pairwise_max_gap_s,
        combine=written.combine,  # type: ignore[arg-type]
        **asdict(written.pairwise),
    )
    rules = tuple(MergeRule(r.feature, r.threshold) for r in written.rules)  # type: ignore[arg-type]
    if rules:
        pairwise = replace(pairwise, rules=rules)
    cost = config.cost_shift
    return DedupSettings(
        method=written.method,  # type: ignore[arg-type]
        merge_gap_s=written.merge_gap_s,
        som=replace(
            SomSettings(),
            weights=(
                weights.relative_change,
                weights.absolute_change,
                weights.popularity,
                weights.root_cause,
            ),
            epochs=som.epochs,
            fourier_terms=som.fourier_terms,
            seed=written.seed,
            evidence_alpha=som.evidence_alpha,
            min_noise_correlation=som.min_noise_correlation,
            min_cross_correlation=som.min_cross_correlation,
            rise_z=som.rise_z,
            guard_points=som.guard_points,
            load_min_series=som.load_min_series,
            merge_distance=som.merge_distance,
            cascade_buckets=som.cascade_buckets,
            relative_cap=som.relative_cap,
            block_weights=(
                blocks.shape,
                blocks.variance,
                blocks.position,
                blocks.root_cause,
                blocks.metric,
            ),
        ),
        cost_shift=CostShiftSettings(
            domain_cost_ratio=cost.domain_cost_ratio,
            negligible_share=cost.negligible_share,
            custom_domains=tuple((d.name, d.regex) for d in cost.domains),
            alpha=cost.alpha,
            fallen_alpha=cost.fallen_alpha,
            same_time_mass=cost.same_time_mass,
            new_share=cost.new_share,
        )
        if cost.enabled
        else None,
        share_inflation=ShareInflationSettings(alpha=cost.inflation_alpha)
        if cost.share_inflation
        else None,
        pairwise=pairwise,
        kdd18_bucket_s=written.kdd18_bucket_s,
        merge_alpha=written.merge_alpha,
        merge_min_points=written.merge_min_points,
        kdd18_tolerance=written.kdd18_tolerance,
        kdd18_explained_share=written.kdd18_explained_share,
        kdd18_stack_weight=written.kdd18_stack_weight,
        kdd18_relative_cap=written.kdd18_relative_cap,
    )
