"""What the detection benchmark's fleet mode counts per method over all fleets (``Tally``), and
the yardsticks it counts against: the ±6-bucket tolerance, the MDE multiples and their recall
targets, the decoy types of false positives, the maximum-likelihood limits."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

TOLERANCE_BUCKETS = 6
MULTIPLES = (1.0, 1.5, 2.0, 4.0, 10.0)
RECALL_TARGETS = {1.0: 0.30, 1.5: 0.75, 2.0: 0.85, 4.0: 0.97, 10.0: 0.97}
DECOYS = ("transient", "seasonal_peak", "cost_shift", "improvement", "quiet", "mistimed")
DECOY_NAMES = {"seasonal_peak": "season peak", "cost_shift": "cost shift"}


LIMITS = ("ML placement", "ML in window")


def decoy_type(kind: str) -> str:
    return "quiet" if kind == "none" else kind


def multiple_of(event) -> float:
    return min(MULTIPLES, key=lambda m: abs(m - event.size_in_mde))


@dataclass
class Tally:
    """Counts of one method over all fleets (sums, so fleets pool)."""

    found: Counter = field(default_factory=Counter)  # multiple -> true regressions found
    total: Counter = field(default_factory=Counter)  # multiple -> true regressions
    fp: Counter = field(default_factory=Counter)  # decoy type -> false positives (per fleet sum)
    series: int = 0  # series over all fleets (the denominator of FP per 1,000)
    errors: list = field(default_factory=list)  # (multiple, error in buckets) of nearest reports
    covered: list = field(default_factory=list)  # interval covers the truth, per nearest report
    creeps: Counter = field(default_factory=Counter)  # detector -> creeps reported
    n_creeps: int = 0
    quiet_non_normal: int = 0
    extra: int = 0  # duplicate representatives of found true regressions
    merged: int = 0  # merged members of reported groups
    merged_same: int = 0  # ... that belong to the representative's true group
    missed: Counter = field(default_factory=Counter)  # what removed a missed true step >= 1.5x
    filters: Counter = field(default_factory=Counter)
    funnel: Counter = field(default_factory=Counter)
    seconds: list = field(default_factory=list)
    unsampled: set = field(default_factory=set)  # decoy types a peer's subset did not hold

    def recall(self, m: float) -> float:
        return self.found[m] / self.total[m] if self.total[m] else float("nan")

    def fp_per_1000(self, kind: str | None = None) -> float:
        if kind in self.unsampled or (kind is None and self.unsampled):
            return float("nan")
        count = sum(self.fp.values()) if kind is None else self.fp[kind]
        return 1000 * count / max(self.series, 1)
