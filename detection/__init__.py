"""regbot.detection: the FBDetect pipeline (§5.2–5.5) over batches of series — change points,
went-away, seasonality, thresholds, long-term detection, then deduplication (``dedup``) — and the
SPEC §4 report it builds.

The entry points other packages use are re-exported here, resolved on first use (PEP 562), so
importing one stage module does not import the whole pipeline; importing them from their
defining modules works as well.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regbot.lazy_exports import resolver

if TYPE_CHECKING:
    from regbot.detection.dedup import DedupResult, deduplicate
    from regbot.detection.model import Candidate, Verdict
    from regbot.detection.pipeline import DetectionResult, detect_in_windows, run_detection
    from regbot.detection.report import build_report
    from regbot.detection.series_batch import WindowBounds
    from regbot.detection.stage_settings import (
        ChangePointSettings,
        CostShiftSettings,
        DedupSettings,
        DetectionSettings,
        PairwiseSettings,
        SomSettings,
    )
    from regbot.detection.stages import FUNNEL_KEYS, Stage

_HOME = {
    "Candidate": "model",
    "ChangePointSettings": "stage_settings",
    "CostShiftSettings": "stage_settings",
    "DedupResult": "dedup",
    "DedupSettings": "stage_settings",
    "DetectionResult": "pipeline",
    "DetectionSettings": "stage_settings",
    "FUNNEL_KEYS": "stages",
    "PairwiseSettings": "stage_settings",
    "SomSettings": "stage_settings",
    "Stage": "stages",
    "Verdict": "model",
    "WindowBounds": "series_batch",
    "build_report": "report",
    "deduplicate": "dedup",
    "detect_in_windows": "pipeline",
    "run_detection": "pipeline",
}

__all__ = [
    "Candidate",
    "ChangePointSettings",
    "CostShiftSettings",
    "DedupResult",
    "DedupSettings",
    "DetectionResult",
    "DetectionSettings",
    "FUNNEL_KEYS",
    "PairwiseSettings",
    "SomSettings",
    "Stage",
    "Verdict",
    "WindowBounds",
    "build_report",
    "deduplicate",
    "detect_in_windows",
    "run_detection",
]


__getattr__ = resolver(__name__, _HOME)
