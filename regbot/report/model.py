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
from dataclasses import dataclass, field, fields, replace
from typing import Literal

from regbot.detection.stages import FUNNEL_KEYS, Stage
from regbot.report.plain import JSONValue

__all__ = [
    "Bounds",
    "CommentOutcome",
    "Confidence",
    "DeploySection",
    "Funnel",
    "GateSection",
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
]

Bounds = tuple[float, float]
Confidence = Literal["high", "low", "none"]
CONFIDENCES: tuple[Confidence, ...] = ("high", "low", "none")
Outcome = Literal["created", "edited", "unchanged"]


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
        return {
            "commit": self.commit,
            "pull_request": self.pull_request,
            "title": self.title,
            "score": self.score,
            "parts": {
                "gcpu_attribution": self.gcpu_attribution,
                "text_similarity": self.text_similarity,
                "correlation": self.correlation,
            },
            "author": self.author,
            "matched": list(self.matched),
        } | ({} if self.pull_request_from is None else {"pull_request_from": self.pull_request_from})


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


@dataclass(frozen=True, slots=True)
class Windows:
    """The three windows of a run (SPEC §4 ``window``), each [start, end) in epoch seconds."""

    historical: Bounds
    analysis: Bounds
    extended: Bounds

    def to_json(self) -> dict[str, JSONValue]:
        return {name: list(getattr(self, name)) for name in ("historical", "analysis", "extended")}


@dataclass(frozen=True, slots=True)
class WindowUseSection:
    """What the windows held: the ``min_points`` asked for, per window the fewest and most
    ``points`` a series held, how many series reached further back (``widened_series``) and the
    earliest bounds any series used."""

    min_points: Mapping[str, int]
    points: Mapping[str, tuple[int, int]]
    widened_series: int
    earliest: Windows


@dataclass(frozen=True, slots=True)
class WindowSection:
    """SPEC §4 ``window``: the run's nominal bounds, and what was used beside them (None when
    the run's batch was cut by its caller)."""

    nominal: Windows
    use: WindowUseSection | None = None

    @property
    def analysis_start_s(self) -> float:
        return self.nominal.analysis[0]

    def to_json(self) -> dict[str, JSONValue]:
        section = self.nominal.to_json()
        if self.use is not None:
            section["min_points"] = dict(self.use.min_points)
            section["points"] = {k: list(v) for k, v in self.use.points.items()}
            section["widened_series"] = self.use.widened_series
            section["earliest"] = self.use.earliest.to_json()
        return section


@dataclass(frozen=True, slots=True)
class Funnel:
    """SPEC §4 ``funnel``: how many series came in, and each stage's entry (the stage registry,
    :class:`regbot.detection.stages.Stage`, says which entry a stage owns)."""

    series: int = 0
    change_points: int = 0
    after_went_away: int = 0
    after_seasonality: int = 0
    after_threshold: int = 0
    after_share_inflation: int = 0
    after_same_regression_merge: int = 0
    after_som_dedup: int = 0
    after_cost_shift: int = 0
    after_pairwise_dedup: int = 0
    long_term: int = 0

    def counted(self, stage: Stage, count: int) -> Funnel:
        """This funnel with ``stage``'s entry set to ``count``."""
        key = stage.funnel_key
        if key is None:
            raise ValueError(f"stage {stage} has no funnel entry")
        return replace(self, **{key: int(count)})

    def to_json(self) -> dict[str, JSONValue]:
        return {key: getattr(self, key) for key in FUNNEL_KEYS}


assert tuple(f.name for f in fields(Funnel)) == FUNNEL_KEYS


@dataclass(frozen=True, slots=True)
class DeploySection:
    """The deploy ``regbot run`` analysed: its sha, the sha it replaced, when it happened, how
    many commits ``previous..sha`` holds, and whether the run was a dry run."""

    sha: str
    previous: str
    deployed_at: float
    commits: int
    dry_run: bool

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "sha": self.sha,
            "previous": self.previous,
            "deployed_at": self.deployed_at,
            "commits": self.commits,
            "dry_run": self.dry_run,
        }


@dataclass(frozen=True, slots=True)
class MissingBaseline:
    """A source or a series without enough history. ``points`` is what the historical window
    held (None for a source that returned no series), ``needed`` the minimum."""

    scope: Literal["source", "series"]
    name: str
    reason: str
    points: int | None
    needed: int

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "scope": self.scope,
            "name": self.name,
            "reason": self.reason,
            "points": self.points,
            "needed": self.needed,
        }


@dataclass(frozen=True, slots=True)
class GateSection:
    """The gate's decision as the report keeps it: the check's name, its state, title and
    summary, the failing regressions, how many baselines were missing, whether the decision was
    enforced (not a dry run) and how it was published (``check_run``, ``commit_status``, None)."""

    name: str
    state: str
    title: str
    summary: str
    failing: tuple[str, ...]
    missing_baseline: int
    enforced: bool
    published_as: str | None = None

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "name": self.name,
            "state": self.state,
            "title": self.title,
            "summary": self.summary,
            "failing": list(self.failing),
            "missing_baseline": self.missing_baseline,
            "enforced": self.enforced,
            "published_as": self.published_as,
        }


@dataclass(frozen=True, slots=True)
class Publishing:
    """Whether the run published to GitHub and why (not); ``error``: what failed, if anything."""

    enabled: bool
    reason: str | None
    error: str | None = None

    def to_json(self) -> dict[str, JSONValue]:
        section: dict[str, JSONValue] = {"enabled": self.enabled, "reason": self.reason}
        if self.error is not None:
            section["error"] = self.error
        return section


@dataclass(frozen=True, slots=True)
class CommentOutcome:
    """A comment regbot wrote (or found up to date) in this run."""

    group_id: str
    regression_id: str
    pull_request: int
    comment_id: int
    url: str
    outcome: Outcome

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "group": self.group_id,
            "regression": self.regression_id,
            "pull_request": self.pull_request,
            "comment_id": self.comment_id,
            "url": self.url,
            "outcome": self.outcome,
        }


@dataclass(frozen=True, slots=True)
class SkippedComment:
    """A regression (on a pull request, when one was known) regbot did not comment on, and why."""

    group_id: str
    regression_id: str
    pull_request: int | None
    reason: str

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "group": self.group_id,
            "regression": self.regression_id,
            "pull_request": self.pull_request,
            "reason": self.reason,
        }


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
