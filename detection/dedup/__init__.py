"""Deduplication after detection (FBDetect §5.4–5.5, KDD'18 §2.3): share inflation →
same-regression merge → SOMDedup → cost shift → PairwiseDedup, run by ``flow.deduplicate``."""

from regbot.detection.dedup.flow import DedupResult, deduplicate
from regbot.detection.stage_settings import DedupSettings

__all__ = ["DedupResult", "DedupSettings", "deduplicate"]
