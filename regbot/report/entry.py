"""One regression of the SPEC §4 report (``regressions`` and ``filtered``): its numbers, each
stage's verdict and its suspect commits, as frozen dataclasses that write their own JSON (keys in
SPEC §4's order, an optional part that is None left out)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from regbot.detection.stages import Stage
from regbot.report.plain import JSONValue

__all__ = [
    "CONFIDENCES",
    "Bounds",
    "Confidence",
    "RegressionEntry",
    "SuspectCommit",
    "VerdictEntry",
]

Bounds = tuple[float, float]
Confidence = Literal["high", "low", "none"]
CONFIDENCES: tuple[Confidence, ...] = ("high", "low", "none")


@dataclass(frozen=True, slots=True)
class VerdictEntry:
    """One stage's verdict in an entry: passed, the reason, and the numbers it compared
    (JSON-plain; written beside ``passed`` and ``reason`` in one object)."""

    passed: bool
    reason: str
    numbers: Mapping[str, JSONValue] = field(default_factory=dict)

    def number(self, key: str) -> JSONValue:
        """The number ``key``; a KeyError naming the key when the stage did not write it (a
        renamed key fails loudly instead of reading as absent)."""
        if key not in self.numbers:
            raise KeyError(f"verdict has no number {key!r} (it has {', '.join(self.numbers)})")
        return self.numbers[key]

    def to_json(self) -> dict[str, JSONValue]:
        return {"passed": self.passed, "reason": self.reason, **self.numbers}


@dataclass(frozen=True, slots=True)
class SuspectCommit:
    """One suspect commit of a regression (SPEC §4 ``candidates``, and the wider ``ranking``),
    with each score part; ``rank`` is its 1-based place in the list that holds it (not written:
    the list's order is the rank)."""

    commit: str
    pull_request: int | None
    title: str
    score: float
    gcpu_attribution: float
    text_similarity: float
    correlation: float
    author: str = ""
    matched: tuple[str, ...] = ()
    rank: int = 1
    pull_request_from: str | None = None
    """``github`` when the pull request was found through GitHub (not in the commit message)."""

    def to_json(self) -> dict[str, JSONValue]:
        parts: dict[str, JSONValue] = {
            "gcpu_attribution": self.gcpu_attribution,
            "text_similarity": self.text_similarity,
            "correlation": self.correlation,
        }
        suspect: dict[str, JSONValue] = {
            "commit": self.commit,
            "pull_request": self.pull_request,
            "title": self.title,
            "score": self.score,
            "parts": parts,
            "author": self.author,
            "matched": list(self.matched),
        }
        if self.pull_request_from is not None:
            suspect["pull_request_from"] = self.pull_request_from
        return suspect


@dataclass(frozen=True, slots=True)
class RegressionEntry:
    """One regression (SPEC §4). ``before``/``after``/``delta`` are in the series' own direction
    and unit; each is None where it is not finite (null in the JSON). ``unit`` is written only
    when a source gave one. ``ranking``, ``attribution_notes`` and ``stack_paths`` are set by
    attribution (``regbot run``), ``feedback`` and ``feedback_from`` when developers called the
    regression's group a false positive."""

    id: str
    series: str
    kind: str
    detector: str
    change_time_s: float
    before: float | None
    after: float | None
    delta: float | None
    relative_delta: float | None
    p_value: float | None
    group: str
    change_time_interval: Bounds | None = None
    duplicates: tuple[str, ...] = ()
    verdicts: Mapping[str, VerdictEntry] = field(default_factory=dict)
    candidates: tuple[SuspectCommit, ...] = ()
    confidence: Confidence = "none"
    unit: str | None = None
    ranking: tuple[SuspectCommit, ...] | None = None
    attribution_notes: tuple[str, ...] | None = None
    stack_paths: tuple[tuple[str, ...], ...] | None = None
    feedback: str | None = None
    feedback_from: tuple[str, ...] | None = None

    @property
    def is_gcpu(self) -> bool:
        return self.kind == "gcpu"

    def verdict(self, stage: Stage) -> VerdictEntry | None:
        return self.verdicts.get(stage)

    def to_json(self) -> dict[str, JSONValue]:
        entry: dict[str, JSONValue] = {"id": self.id, "series": self.series, "kind": self.kind}
        if self.unit is not None:
            entry["unit"] = self.unit
        interval = self.change_time_interval
        entry |= {
            "detector": self.detector,
            "change_time": self.change_time_s,
            "change_time_interval": None if interval is None else [interval[0], interval[1]],
            "before": self.before,
            "after": self.after,
            "delta": self.delta,
            "relative_delta": self.relative_delta,
            "p_value": self.p_value,
            "group": self.group,
            "duplicates": list(self.duplicates),
            "verdicts": {str(stage): v.to_json() for stage, v in self.verdicts.items()},
            "candidates": [c.to_json() for c in self.candidates],
            "confidence": self.confidence,
        }
        if self.ranking is not None:
            entry["ranking"] = [c.to_json() for c in self.ranking]
        if self.attribution_notes is not None:
            entry["attribution_notes"] = list(self.attribution_notes)
        if self.stack_paths is not None:
            entry["stack_paths"] = [list(p) for p in self.stack_paths]
        if self.feedback is not None:
            entry["feedback"] = self.feedback
        if self.feedback_from is not None:
            entry["feedback_from"] = list(self.feedback_from)
        return entry
