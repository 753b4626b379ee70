"""The run-level sections of the SPEC §4 report: the windows, the funnel, and what `regbot run`
adds (the deploy, missing baselines, the gate, publishing and the comments it wrote), as frozen
dataclasses that write their own JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Literal

from regbot.detection.stages import FUNNEL_KEYS, Stage
from regbot.report.entry import Bounds
from regbot.report.plain import JSONValue

__all__ = [
    "CommentOutcome",
    "DeploySection",
    "Funnel",
    "GateSection",
    "MissingBaseline",
    "Outcome",
    "Publishing",
    "SkippedComment",
    "WindowSection",
    "WindowUseSection",
    "Windows",
]

Outcome = Literal["created", "edited", "unchanged"]


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
