"""What `regbot explain` shows about one regression, as plain data: its findings (where each
detection ended, with every verdict), its dedup group and the member series."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

# Every stage a report entry's verdicts may hold, in the order the pipeline runs them: the
# short-term filters (or the long-term detector), then the dedup stages (``stack_dedup`` is the
# KDD'18 alternative to SOMDedup + PairwiseDedup), then the group the entry ended in.
PIPELINE_STAGES = (
    "enough_data",
    "change_point",
    "went_away",
    "seasonality",
    "threshold",
    "long_term",
    "same_regression",
    "som_dedup",
    "cost_shift",
    "stack_dedup",
    "pairwise_dedup",
    "group",
)


StatusKind = Literal["reported", "filtered", "duplicate"]
SHORT_TERM_STAGES = ("went_away", "seasonality", "threshold")


DEDUP_STAGES = ("same_regression", "som_dedup", "cost_shift", "pairwise_dedup")


SUGGESTIONS = 5


@dataclass(frozen=True, slots=True)
class Status:
    """Where a regression ended: reported, removed by ``stage`` (with the stage's reason), or
    merged as a duplicate of ``representative`` (a regression id) by ``stage``."""

    kind: StatusKind
    stage: str | None = None
    reason: str | None = None
    representative: str | None = None

    def describe(self) -> str:
        if self.kind == "reported":
            return "reported"
        if self.kind == "filtered":
            return f"filtered by {self.stage}"
        merged = f" (merged by {self.stage})" if self.stage else ""
        return f"duplicate of {self.representative}{merged}"


@dataclass(frozen=True, slots=True)
class Finding:
    """One regression as the newest stored report holding it shows it: its SPEC §4 entry, its
    status, and that report's window, deploy and funnel (None when no stored report holds it and
    the entry comes from the regressions table). ``run`` is the report's position among the
    stored runs (1 = oldest) out of ``runs``."""

    entry: Mapping[str, object]
    status: Status
    window: Mapping[str, object] | None = None
    deploy: Mapping[str, object] | None = None
    funnel: Mapping[str, object] | None = None
    run: int | None = None
    runs: int = 0
    first_seen_s: float | None = None
    last_seen_s: float | None = None

    @property
    def id(self) -> str:
        return str(self.entry.get("id", ""))


@dataclass(frozen=True, slots=True)
class MemberSeries:
    """A dedup group member as stored, with its values in the series' own direction (a
    throughput drop goes down) and how many stacks its stack share holds."""

    regression_id: str
    series_id: str
    kind: str
    change_time_s: float
    times_s: np.ndarray
    values: np.ndarray
    stack_count: int
    representative: bool


@dataclass(frozen=True, slots=True)
class MergedDuplicate:
    """A duplicate merged into the subject in its run but not kept as a stored group member
    (SOMDedup's duplicates are not): what the report says of it."""

    regression_id: str
    series_id: str | None
    change_time_s: float | None
    stage: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class GroupView:
    """The subject's dedup group: its stored members (representative first) and the duplicates
    merged into the subject that are not stored members."""

    id: str
    members: tuple[MemberSeries, ...]
    merged: tuple[MergedDuplicate, ...]


@dataclass(frozen=True, slots=True)
class Explanation:
    """What `regbot explain` shows: the regression asked for, its representative when it is a
    duplicate (the ``subject`` is the representative then, else the regression itself), the
    subject's group, and the stored series of both (None when not stored: only regressions
    that reach pairwise dedup keep their series)."""

    query: str
    regression: Finding
    representative: Finding | None
    group: GroupView
    series: MemberSeries | None
    regression_series: MemberSeries | None

    @property
    def subject(self) -> Finding:
        return self.representative or self.regression
