"""The ``detection:`` section of regbot.yml: every constant of the pipeline, the paper's values as
defaults, refused with the key's path when wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from regbot.bot.config import parse_config
from regbot.bot.detection_settings import detection_settings
from regbot.detection.model import DetectionSettings
from regbot.errors import InputError


def settings(data: object) -> DetectionSettings:
    return detection_settings(parse_config(data, source="regbot.yml", base_dir=Path(".")))


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
