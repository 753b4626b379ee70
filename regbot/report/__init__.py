"""The SPEC §4 report: one dataclass tree (:mod:`.model`), written as JSON once
(``Report.to_json``) and read back once (:mod:`.decode`); JSON-plain values (:mod:`.plain`)."""

from regbot.report.decode import read_regression, read_report
from regbot.report.model import (
    CommentOutcome,
    DeploySection,
    Funnel,
    GateSection,
    MissingBaseline,
    Publishing,
    RegressionEntry,
    Report,
    SkippedComment,
    SuspectCommit,
    VerdictEntry,
    Windows,
    WindowSection,
    WindowUseSection,
)
from regbot.report.plain import JSONValue, json_plain

__all__ = [
    "CommentOutcome",
    "DeploySection",
    "Funnel",
    "GateSection",
    "JSONValue",
    "MissingBaseline",
    "Publishing",
    "RegressionEntry",
    "Report",
    "SkippedComment",
    "SuspectCommit",
    "VerdictEntry",
    "WindowSection",
    "WindowUseSection",
    "Windows",
    "json_plain",
    "read_regression",
    "read_report",
]
