"""The SPEC §4 report as one tree of frozen dataclasses: built by detection
(``regbot.detection.report``), extended by ``regbot run`` with ``dataclasses.replace``, written
as JSON once (:meth:`Report.to_json`) and read back once (:mod:`regbot.report.decode`).

Each class writes its own JSON object with SPEC §4's keys in SPEC §4's order; the extras regbot
adds (``change_time_interval``, ``ranking``, ``stack_paths``, ``feedback``, ``deploy``, ``gate``…)
follow them. An optional part that is None is left out of the JSON, never written as null, so a
``detect`` report has no ``deploy`` and an unattributed entry no ``ranking``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from regbot.report.entry import (
    CONFIDENCES,
    Bounds,
    Confidence,
    RegressionEntry,
    SuspectCommit,
    VerdictEntry,
)
from regbot.report.plain import JSONValue
from regbot.report.sections import (
    CommentOutcome,
    DeploySection,
    Funnel,
    GateSection,
    MissingBaseline,
    Outcome,
    Publishing,
    SkippedComment,
    Windows,
    WindowSection,
    WindowUseSection,
)

__all__ = [
    "CONFIDENCES",
    "Bounds",
    "CommentOutcome",
    "Confidence",
    "DeploySection",
    "Funnel",
    "GateSection",
    "MissingBaseline",
    "Outcome",
    "Publishing",
    "RegressionEntry",
    "Report",
    "SkippedComment",
    "SuspectCommit",
    "VerdictEntry",
    "WindowSection",
    "WindowUseSection",
    "Windows",
]


@dataclass(frozen=True, slots=True)
class Report:
    """SPEC §4: only representatives in ``regressions`` (one per dedup group touched in the run);
    the candidates a filter or a dedup stage removed in the extra ``filtered`` list with the
    verdicts that removed them (for ``regbot explain``). ``regbot run`` adds the deploy, the
    sources' series counts, the missing baselines, the gate and what was published."""

    regbot_version: str
    window: WindowSection
    funnel: Funnel
    regressions: tuple[RegressionEntry, ...] = ()
    filtered: tuple[RegressionEntry, ...] = ()
    deploy: DeploySection | None = None
    sources: Mapping[str, int] | None = None
    missing_baseline: tuple[MissingBaseline, ...] | None = None
    gate: GateSection | None = None
    publishing: Publishing | None = None
    comments: tuple[CommentOutcome, ...] | None = None
    comments_skipped: tuple[SkippedComment, ...] | None = None

    def to_json(self) -> dict[str, JSONValue]:
        """The report as JSON-ready data, keys in SPEC §4's order (the one serialisation)."""
        report: dict[str, JSONValue] = {
            "regbot_version": self.regbot_version,
            "window": self.window.to_json(),
            "funnel": self.funnel.to_json(),
            "regressions": [e.to_json() for e in self.regressions],
            "filtered": [e.to_json() for e in self.filtered],
        }
        if self.deploy is not None:
            report["deploy"] = self.deploy.to_json()
        if self.sources is not None:
            report["sources"] = dict(self.sources)
        if self.missing_baseline is not None:
            report["missing_baseline"] = [m.to_json() for m in self.missing_baseline]
        if self.gate is not None:
            report["gate"] = self.gate.to_json()
        if self.publishing is not None:
            report["publishing"] = self.publishing.to_json()
        if self.comments is not None:
            report["comments"] = [c.to_json() for c in self.comments]
        if self.comments_skipped is not None:
            report["comments_skipped"] = [c.to_json() for c in self.comments_skipped]
        return report
