"""What `regbot explain` shows about one regression, as plain data: its findings (where each
detection ended, with every verdict), its dedup group and the member series."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from regbot.detection.stages import Stage
from regbot.report.model import DeploySection, Funnel, RegressionEntry, WindowSection

# Every stage a report entry's verdicts may hold, in the order the pipeline runs them (the stage
# registry), then the group the entry ended in (written by the state, not a stage).
PIPELINE_STAGES: tuple[str, ...] = (*(str(stage) for stage in Stage), "group")

StatusKind = Literal["reported", "filtered", "duplicate"]

# The stages an entry goes through after the change-point test: the short-term filters (or the
# long-term detector), then the dedup stages every method runs.
SHORT_TERM_STAGES: tuple[str, ...] = tuple(str(s) for s in Stage if s.is_short_term_filter)
DEDUP_STAGES: tuple[str, ...] = (
    Stage.SAME_REGRESSION,
    Stage.SOM_DEDUP,
    Stage.COST_SHIFT,
    Stage.PAIRWISE_DEDUP,
)

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
    """One regression as the newest stored report holding it shows it: its SPEC §4 entry (None
    when the report names it only among a representative's duplicates), its status, and that
    report's window, deploy and funnel (None when no stored report holds it and the entry comes
    from the regressions table). ``run`` is the report's position among the stored runs
    (1 = oldest) out of ``runs``."""

    id: str
    entry: RegressionEntry | None
    status: Status
    window: WindowSection | None = None
    deploy: DeploySection | None = None
    funnel: Funnel | None = None
    run: int | None = None
    runs: int = 0
    first_seen_s: float | None = None
    last_seen_s: float | None = None


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
