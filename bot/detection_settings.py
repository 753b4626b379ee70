"""The detection pipeline's settings from ``regbot.yml``: a workload plus the ``detection:``
section, laid over the stages' own defaults (which carry the paper's values)."""

from __future__ import annotations

from dataclasses import asdict, replace

from regbot.bot.config import Config
from regbot.detection.model import DetectionSettings


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
    )
