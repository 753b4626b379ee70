"""The ``detection:`` section of regbot.yml: every constant of the pipeline, the paper's values as
defaults, refused with the key's path when wrong."""

from __future__ import annotations

import io
from dataclasses import fields
from pathlib import Path

import pytest
from rich.console import Console

from regbot.bot.cli import main
from regbot.bot.config import Config, parse_config
from regbot.detection.dedup import DedupSettings
from regbot.detection.stage_settings import (
    BlockWeights,
    ChangePointSettings,
    CostShiftSettings,
    DetectionSettings,
    FleetLoadSettings,
    ImportanceWeights,
)
from regbot.errors import InputError


def config(data: object) -> Config:
    return parse_config(data, source="regbot.yml", base_dir=Path("."))


def settings(data: object) -> DetectionSettings:
    return config(data).detection_for()


def test_an_empty_file_gives_the_stages_own_defaults():
    given = settings(None)
    stages = DetectionSettings(workload=given.workload)
    assert given.change_point == stages.change_point
    assert given.went_away == stages.went_away
    assert given.seasonality == stages.seasonality
    assert given.long_term == stages.long_term
    assert given.went_away.sax_buckets == 20 and given.went_away.sax_valid_share == 0.03
    assert given.went_away.mad_coefficient == 1.5 and given.change_point.alpha == 0.01


def test_every_section_is_read_with_numbers_in_any_float_form():
    given = settings(
        {
            "detection": {
                "change_point": {"alpha": "5e-3", "min_points_each_side": 4},
                "went_away": {"sax_buckets": 30, "sax_valid_share": 0.05, "mad_coefficient": 2},
                "seasonality": {"z_threshold": "2.5", "acf_alpha": 0.05},
                "long_term": {"analysis": "3d", "enabled": False},
            }
        }
    )
    assert given.change_point.alpha == 0.005 and given.change_point.min_points_each_side == 4
    assert given.went_away.sax_buckets == 30 and given.went_away.mad_coefficient == 2.0
    assert given.seasonality.z_threshold == 2.5 and given.seasonality.acf_alpha == 0.05
    assert given.long_term.analysis_s == 3 * 86400.0 and not given.long_term.enabled


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"detection": {"went_away": {"sax_bucket": 3}}}, "detection.went_away.sax_bucket"),
        ({"detection": {"change_point": {"alpha": 1.5}}}, "detection.change_point.alpha"),
        ({"detection": {"seasonality": {"z_threshold": -1}}}, "detection.seasonality.z_threshold"),
        ({"detection": {"engine": "prophet"}}, "detection.engine"),
    ],
)
def test_bad_values_name_the_key(data, where):
    with pytest.raises(InputError) as error:
        settings(data)
    assert where in str(error.value)


# --- every constant of the stages, defaults from their dataclasses ---------------------------


def dedup(data: object) -> DedupSettings:
    return config(data).dedup


def test_the_defaults_are_the_dataclasses_defaults_field_by_field():
    given = settings(None)
    stages = DetectionSettings(workload=given.workload)
    for section in ("change_point", "went_away", "seasonality", "long_term", "fleet_load"):
        written, default = getattr(given, section), getattr(stages, section)
        for f in fields(default):
            assert getattr(written, f.name) == getattr(default, f.name), f"{section}.{f.name}"
    assert given == stages
    assert given.change_point.multiple_testing == "fdr" and given.fleet_load.min_t == 5.0


def test_the_dedup_defaults_are_the_stages_defaults():
    given = config(None)
    assert given.dedup == DedupSettings() and given.cost_shift == CostShiftSettings()


def test_every_change_point_and_fleet_load_key_reaches_the_settings():
    given = settings(
        {
            "detection": {
                "change_point": {
                    "multiple_testing": "none",
                    "max_iterations": 20,
                    "max_segment_cuts": 2,
                    "search_margin": 0.5,
                    "min_window_share": 0.1,
                    "interval_mass": "0.9",
                },
                "fleet_load": {
                    "min_t": 7,
                    "enabled": False,
                    "min_series": 10,
                    "min_history": 24,
                    "max_rows": 100,
                    "iterations": 0,
                    "huber_k": 1.5,
                },
            }
        }
    )
    point, load = given.change_point, given.fleet_load
    assert point.multiple_testing == "none" and point.max_iterations == 20
    assert (point.max_segment_cuts, point.search_margin) == (2, 0.5)
    assert (point.min_window_share, point.interval_mass) == (0.1, 0.9)
    assert point.alpha == ChangePointSettings().alpha  # not written: the default
    assert load == FleetLoadSettings(False, 10, 24, 100, 0, 1.5, 7.0)


def test_went_away_and_seasonality_lists_are_read():
    given = settings(
        {
            "detection": {
                "went_away": {"normal_tail_ratio": [0.7, 1.4], "day": "12h", "periods": "1d"},
                "seasonality": {"periods": ["12h", "7d"]},
            }
        }
    )
    assert given.went_away.normal_tail_ratio == (0.7, 1.4)
    assert given.went_away.day_s == 12 * 3600.0 and given.went_away.periods_s == (86400.0,)
    assert given.seasonality.periods_s == (12 * 3600.0, 7 * 86400.0)


def test_the_dedup_and_cost_shift_evidence_keys_reach_the_stages():
    read = config(
        {
            "dedup": {
                "seed": 4,
                "kdd18_bucket": "5m",
                "som": {
                    "evidence_alpha": 0.01,
                    "min_noise_correlation": 0.2,
                    "min_cross_correlation": 0.4,
                    "rise_z": 2,
                    "guard_points": 1,
                    "load_min_series": 5,
                    "epochs": 10,
                    "fourier_terms": 4,
                    "weights": {"relative_change": 0.5, "root_cause": 0.3},
                },
                "pairwise": {
                    "evidence_alpha": 0.02,
                    "cross_kind_correlation": 0.5,
                    "rise_z": 2.5,
                    "guard_points": 2,
                    "load_min_series": 8,
                },
            },
            "cost_shift": {"alpha": 0.005, "fallen_alpha": 0.05},
        }
    )
    given = read.dedup
    som, pairwise, cost = given.som, given.pairwise, read.cost_shift
    assert (given.seed, som.epochs, som.fourier_terms) == (4, 10, 4)
    assert som.weights == ImportanceWeights(0.5, 0.6, 0.1, 0.3)
    assert (som.evidence_alpha, som.min_noise_correlation, som.min_cross_correlation) == (
        0.01,
        0.2,
        0.4,
    )
    assert (som.rise_z, som.guard_points, som.load_min_series) == (2.0, 1, 5)
    assert (pairwise.evidence_alpha, pairwise.cross_kind_correlation) == (0.02, 0.5)
    assert pairwise.rise_z == 2.5 and som.rise_z == 2.0
    assert (pairwise.guard_points, pairwise.load_min_series) == (2, 8)
    assert given.rules == DedupSettings().rules
    assert cost.enabled and (cost.alpha, cost.fallen_alpha) == (0.005, 0.05)
    assert given.kdd18_bucket_s == 300.0


def test_the_constants_moved_out_of_the_dedup_modules_reach_the_stages():
    """What used to be module constants of same_regression, stack_dedup, som_dedup and
    cost_shift: read from regbot.yml, defaults from the dataclasses (the paper's values)."""
    defaults, default_cost = dedup(None), config(None).cost_shift
    assert (defaults.merge_alpha, defaults.merge_min_points) == (0.01, 3)
    assert (defaults.kdd18_tolerance, defaults.kdd18_explained_share) == (0.05, 0.1)
    assert (defaults.kdd18_stack_weight, defaults.kdd18_relative_cap) == (0.5, 100.0)
    assert (defaults.som.merge_distance, defaults.som.cascade_buckets) == (0.5, 8)
    assert defaults.som.relative_cap == 10.0
    assert defaults.som.block_weights == BlockWeights(1.0, 0.5, 3.0, 0.2, 0.2)
    assert default_cost.new_share == 0.01
    read = config(
        {
            "dedup": {
                "merge_alpha": "1e-3",
                "merge_min_points": 5,
                "kdd18_tolerance": 0.1,
                "kdd18_explained_share": 0.2,
                "kdd18_stack_weight": 0.25,
                "kdd18_relative_cap": 50,
                "som": {
                    "merge_distance": 0.75,
                    "cascade_buckets": 4,
                    "relative_cap": 20,
                    "block_weights": {"position": 2, "metric": 0},
                },
            },
            "cost_shift": {"new_share": 0.05},
        }
    )
    given = read.dedup
    assert (given.merge_alpha, given.merge_min_points) == (0.001, 5)
    assert (given.kdd18_tolerance, given.kdd18_explained_share) == (0.1, 0.2)
    assert (given.kdd18_stack_weight, given.kdd18_relative_cap) == (0.25, 50.0)
    assert (given.som.merge_distance, given.som.cascade_buckets) == (0.75, 4)
    assert given.som.relative_cap == 20.0
    assert given.som.block_weights == BlockWeights(1.0, 0.5, 2.0, 0.2, 0.0)
    assert read.cost_shift.new_share == 0.05
    assert given.merge_gap_s == defaults.merge_gap_s and given.som.rise_z == defaults.som.rise_z


def nested(where: str, value: object) -> dict:
    """``{"a": {"b": value}}`` from ``"a.b"``."""
    data: object = value
    for key in reversed(where.split(".")):
        data = {key: data}
    return data  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("detection.change_point.multiple_testing", "bonferroni"),
        ("detection.change_point.interval_mass", 1.5),
        ("detection.change_point.max_iterations", 2.5),
        ("detection.fleet_load.min_series", -1),
        ("detection.fleet_load.huber_k", 0),
        ("detection.fleet_load.min_z", 3),
        ("detection.went_away.normal_tail_ratio", [2, 1]),
        ("detection.seasonality.periods", []),
        ("dedup.som.min_noise_correlation", 2),
        ("dedup.som.weights.popularity", -0.1),
        ("dedup.pairwise.evidence_alpha", 0),
        ("dedup.pairwise.rise_z", -1),
        ("dedup.pairwise.rules", []),
        ("cost_shift.fallen_alpha", 1),
        ("cost_shift.new_share", -0.01),
        ("dedup.merge_alpha", 0),
        ("dedup.merge_min_points", 0),
        ("dedup.kdd18_tolerance", 1.5),
        ("dedup.kdd18_explained_share", -0.1),
        ("dedup.kdd18_stack_weight", "heavy"),
        ("dedup.kdd18_relative_cap", 0),
        ("dedup.som.merge_distance", -0.5),
        ("dedup.som.cascade_buckets", 2.5),
        ("dedup.som.relative_cap", 0),
        ("dedup.som.block_weights.position", -3),
        ("dedup.som.block_weights.time", 1),
    ],
)
def test_bad_new_values_name_the_key(where, value):
    with pytest.raises(InputError) as error:
        settings(nested(where, value))
    assert where in str(error.value)


def test_a_bad_value_in_regbot_yml_is_exit_2_naming_the_key(tmp_path: Path):
    config = tmp_path / "regbot.yml"
    config.write_text("detection:\n  change_point:\n    multiple_testing: bonferroni\n")
    err = io.StringIO()
    code = main(
        ["detect", str(tmp_path), "-c", str(config)],
        out=Console(file=io.StringIO(), width=200),
        err=Console(file=err, width=200),
    )
    assert code == 2
    assert "regbot.yml:3: detection.change_point.multiple_testing" in err.getvalue()
    assert "fdr, none" in err.getvalue()
