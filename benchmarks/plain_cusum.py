"""A plain two-sided tabular CUSUM (Page 1954; Montgomery, *Statistical Quality Control*, §9.1),
without any of regbot's filters, as a baseline for the benchmark scripts.

On a z-scored series (σ = 1) with reference value ``k`` and decision interval ``h`` (in σ):

    C⁺ₜ = max(0, C⁺ₜ₋₁ + (xₜ − μ₀) − k)        C⁻ₜ = max(0, C⁻ₜ₋₁ − (xₜ − μ₀) − k)

and an alarm when either exceeds ``h``. The change point reported for an alarm is the first
point of the run of non-zero sums that triggered it (Montgomery's "t − N⁺"), i.e. the first
point of the new segment.

The in-control mean μ₀ is not known, so it is self-starting (after Hawkins 1987, with σ kept at
1): μ₀ at time t is the mean of the current segment's points before t, and the sums start once
the segment has ``warmup`` points. The first segment starts at 0. Restart rule: after an alarm
both sums go back to 0 and a new segment starts at the reported change point, so μ₀ becomes the
mean of the points from there (the run that triggered, then every later point). Re-estimating
μ₀ from the triggering run alone, or keeping μ₀ = 0, cascades into repeated alarms after one
shift; with this rule white noise gives about 3 alarms per 1,000 points (the known-μ₀ rate for
k = 0.5, h = 5 is about 2). O(n) time, one pass.
"""

from __future__ import annotations

import numpy as np

K_SIGMA = 0.5
H_SIGMA = 5.0
WARMUP = 10


def plain_cusum(
    values: np.ndarray, k: float = K_SIGMA, h: float = H_SIGMA, warmup: int = WARMUP
) -> list[int]:
    """Change points (first index of each new segment) of a z-scored 1-D series, ascending."""
    x = np.asarray(values, dtype=np.float64).tolist()
    found: list[int] = []
    segment_start, segment_sum = 0, 0.0  # segment_sum = sum of x[segment_start:t]
    upper = lower = 0.0
    upper_start = lower_start = 0
    for t, value in enumerate(x):
        count = t - segment_start
        if count >= warmup:
            if upper == 0.0:
                upper_start = t
            if lower == 0.0:
                lower_start = t
            deviation = value - segment_sum / count
            upper = max(0.0, upper + deviation - k)
            lower = max(0.0, lower - deviation - k)
            if upper > h or lower > h:
                start = upper_start if upper >= lower else lower_start
                found.append(start)
                segment_start, segment_sum = start, sum(x[start:t])
                upper = lower = 0.0
        segment_sum += value
    return found
