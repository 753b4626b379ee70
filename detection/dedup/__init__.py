"""Deduplication after detection (FBDetect §5.4–5.5, KDD'18 §2.3): share inflation →
same-regression merge → SOMDedup → cost shift → PairwiseDedup, run by ``flow.deduplicate``.

The entry points are resolved on first use (PEP 562): importing one stage module does not
import every stage (PairwiseDedup's text similarity imports scikit-learn)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from regbot.lazy_exports import resolver

if TYPE_CHECKING:
    from regbot.detection.dedup.flow import DedupResult, deduplicate
    from regbot.detection.stage_settings import DedupSettings

_HOME = {"DedupResult": "flow", "deduplicate": "flow"}


def __getattr__(name: str) -> object:
    if name == "DedupSettings":
        from regbot.detection.stage_settings import DedupSettings

        return DedupSettings
    return resolver(__name__, _HOME)(name)


__all__ = ["DedupResult", "DedupSettings", "deduplicate"]
