"""Threshold filter (FBDetect Table 1): a regression must be at least the workload's threshold."""

from __future__ import annotations

from regbot.detection.model import Candidate, Verdict
from regbot.detection.presets import Threshold
from regbot.detection.ratios import relative_change
from regbot.detection.stages import Stage


def threshold_verdict(candidate: Candidate, threshold: Threshold) -> Verdict:
    """Compare the oriented change (positive = worse, so a throughput drop counts) with the
    threshold: ``absolute`` in the series' unit (a gCPU share: 0.0001 is 0.01 percentage points),
    ``relative`` as a share of the level before the change (|before|; a zero level, or one near
    zero by ``ratios.relative_change``, makes any increase infinitely large, so it passes)."""
    delta = candidate.delta
    before = abs(candidate.mean_before)
    ratio = relative_change(before, delta)
    relative = ratio if ratio is not None else (float("inf") if delta > 0 else 0.0)
    measured = delta if threshold.mode == "absolute" else relative
    passed = measured >= threshold.value
    return Verdict(
        Stage.THRESHOLD,
        passed,
        f"{threshold.mode} change {measured:.6g} {'>=' if passed else '<'} threshold {threshold.value:.6g}",
        {
            "mode": threshold.mode,
            "threshold": float(threshold.value),
            "delta": float(delta),
            "relative_delta": float(relative) if relative != float("inf") else None,
            "measured": float(measured) if measured != float("inf") else None,
        },
    )
