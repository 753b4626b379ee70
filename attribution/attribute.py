"""Root-cause analysis for one deploy (FBDetect §5.6): every remaining regression against the
deploy's commits, each commit scored by gCPU attribution, text similarity and time-series
correlation, then ranked and named only when confident.

The work shared by all regressions is done once per deploy: matching the commits' modified
functions to the profile's subroutines, and the commits' text documents.

Merge commits are not candidates: the history's PR number is already carried by the commits
they bring in, and their own diff repeats those commits' changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from regbot.attribution.cosmetic import ANONYMOUS_KINDS
from regbot.attribution.deploy_lines import DeployLines
from regbot.attribution.frame_match import match_subroutines
from regbot.attribution.gcpu_attribution import (
    TimeSplit,
    attributed_shares,
    service_wide_shares,
)
from regbot.attribution.line_credit import LineEvidence
from regbot.attribution.model import Attribution, Commit, ModifiedSubroutine
from regbot.attribution.rank import rank_commits
from regbot.attribution.settings import AttributionSettings, Scope
from regbot.attribution.signal_correlation import Signal, correlation_parts
from regbot.attribution.stack_paths import heaviest_paths
from regbot.attribution.text_similarity import (
    commit_document,
    regression_document,
    text_similarities,
)
from regbot.profiles.sample_index import SampleIndex


@dataclass(frozen=True, slots=True)
class RegressionEvidence:
    """What attribution needs of one regression: its id and series, the subroutine it measures
    (None for a series that is not gCPU), its change time, the run's window edges, its points
    (oriented: higher is worse), and the common ratio of the deploy's unmoved gCPU shares when
    a speed-up elsewhere inflated them (rises are measured against it)."""

    id: str
    series_id: str
    kind: str
    subroutine: str | None
    change_time_s: float
    window_start_s: float
    window_end_s: float
    times_s: np.ndarray
    values: np.ndarray
    share_ratio: float = 1.0  # the deploy's share inflation (detection's common ratio)


@dataclass(frozen=True, slots=True)
class DeployChanges:
    """The deploy's candidate commits, and for each the profile subroutines it modified;
    ``paths``: each such subroutine's file in the repository; ``lines``: the deploy's line
    facts of the files where two commits modified one subroutine (read by
    ``attribution.deploy_lines``; None until read), which split such ties."""

    commits: tuple[Commit, ...]
    modified: tuple[tuple[str, ...], ...]
    documents: tuple[str, ...]
    paths: Mapping[str, str] = field(default_factory=dict)
    lines: DeployLines | None = None

    def shared_paths(self) -> set[str]:
        """Files holding a subroutine that two or more commits modified (where ties can be)."""
        seen: dict[str, int] = {}
        for names in self.modified:
            for name in names:
                seen[name] = seen.get(name, 0) + 1
        return {self.paths[name] for name, n in seen.items() if n > 1 and name in self.paths}

    def line_evidence(self) -> LineEvidence | None:
        if self.lines is None:
            return None
        return LineEvidence(self.lines, self.paths, tuple(c.sha for c in self.commits))

    def commit_subroutines(self) -> dict[str, frozenset[str]]:
        """Commit sha → the profile subroutines it modified (SOMDedup's root-cause bitmap and
        the cost-shift commit domain)."""
        return {c.sha: frozenset(m) for c, m in zip(self.commits, self.modified, strict=True) if m}


def prepare_changes(
    commits: Sequence[Commit], index: SampleIndex | None, fuzzy_floor: float = 90.0
) -> DeployChanges:
    """Candidates (merge commits left out), their matches in the profile (cosmetic touches
    left out: they changed no behaviour, ``attribution.cosmetic``), their documents."""
    candidates = tuple(c for c in commits if not c.is_merge)
    modified: list[tuple[str, ...]] = [() for _ in candidates]
    paths: dict[str, str] = {}
    if index is not None:
        every = [m for c in candidates for m in c.subroutines if m.change != "cosmetic"]
        known: dict[str, frozenset[str]] = {}
        for c in candidates:
            for path, names in c.functions:
                known[path] = known.get(path, frozenset()) | names
        matches = match_subroutines(
            index.subroutines, every, fuzzy_floor=fuzzy_floor, known_functions=known
        )
        owner: dict[ModifiedSubroutine, list[int]] = {}
        for k, c in enumerate(candidates):
            for m in c.subroutines:
                owner.setdefault(m, []).append(k)
        found: list[set[str]] = [set() for _ in candidates]
        for name, hits in matches.items():
            anonymous = _anonymous_kind(name)
            for sub, _score in hits:
                if anonymous in sub.unchanged_anonymous:
                    continue  # an untouched comprehension of an edited function
                for k in owner.get(sub, ()):
                    found[k].add(name)
                paths.setdefault(name, sub.path)
        modified = [tuple(sorted(f)) for f in found]
    documents = tuple(commit_document(c) for c in candidates)
    return DeployChanges(candidates, tuple(modified), documents, paths)


def with_lines(
    changes: DeployChanges, read_lines: Callable[[set[str]], DeployLines | None] | None
) -> DeployChanges:
    """``changes`` with the line facts of the files where two commits modified one subroutine,
    from ``read_lines`` (a reader of ``attribution.deploy_lines``; None: no line facts)."""
    paths = changes.shared_paths()
    if read_lines is None or not paths:
        return changes
    return replace(changes, lines=read_lines(paths))


_ANONYMOUS = frozenset(ANONYMOUS_KINDS.values())


def _anonymous_kind(frame: str) -> str | None:
    """``<listcomp>`` for a profile subroutine ``f.<locals>.<listcomp> (path)``, else None."""
    last = frame.split(" (", 1)[0].rsplit(".", 1)[-1]
    return last if last in _ANONYMOUS else None


def _gcpu_parts(
    evidence: RegressionEvidence,
    changes: DeployChanges,
    index: SampleIndex | None,
    scope: Scope,
) -> list[float | None]:
    n = len(changes.commits)
    if index is None:
        return [None] * n
    split = TimeSplit(evidence.window_start_s, evidence.change_time_s, evidence.window_end_s)
    if evidence.subroutine is None:
        return service_wide_shares(index, changes.modified, split)
    parts = [
        share.fraction
        for share in attributed_shares(
            index,
            evidence.subroutine,
            list(changes.modified),
            split,
            scope,
            evidence.share_ratio,
            changes.line_evidence(),
        )
    ]
    if all(p is None for p in parts):
        return parts
    return [p if p is not None else 0.0 for p in parts]


def attribute(
    evidence: RegressionEvidence,
    changes: DeployChanges,
    index: SampleIndex | None,
    signals: Sequence[Signal],
    settings: AttributionSettings,
) -> Attribution:
    """One regression's ranking and decision."""
    if not changes.commits:
        return Attribution((), (), "none", ("no commits between the deploys",))
    gcpu = _gcpu_parts(evidence, changes, index, settings.scope)
    frames: list[str] = []
    if index is not None and evidence.subroutine is not None:
        for path in heaviest_paths(
            index,
            evidence.subroutine,
            evidence.change_time_s,
            evidence.window_end_s,
            settings.text_frames,
        ):
            frames.extend(path)
    document = regression_document(
        evidence.series_id, evidence.kind, frames, evidence.change_time_s
    )
    text = text_similarities(document, list(changes.documents))
    correlation = correlation_parts(
        evidence.times_s,
        evidence.values,
        changes.commits,
        signals,
        (evidence.window_start_s, evidence.window_end_s),
    )
    parts = [
        {"gcpu_attribution": g, "text_similarity": float(t), "correlation": c}
        for g, t, c in zip(gcpu, text, correlation, strict=True)
    ]
    notes = () if any(g is not None for g in gcpu) else ("gCPU attribution does not apply",)
    ranked = rank_commits(changes.commits, parts, settings, changes.modified)
    return Attribution(ranked.ranked, ranked.candidates, ranked.confidence, notes)


def attribute_all(
    regressions: Sequence[RegressionEvidence],
    commits: Sequence[Commit],
    index: SampleIndex | None,
    signals: Sequence[Signal],
    settings: AttributionSettings,
    read_lines: Callable[[set[str]], DeployLines | None] | None = None,
) -> tuple[DeployChanges, Mapping[str, Attribution]]:
    """Every regression of one deploy. ``read_lines``: reads the deploy's line facts of the
    files given (``with_lines``)."""
    changes = with_lines(prepare_changes(commits, index, settings.fuzzy_floor), read_lines)
    return changes, {r.id: attribute(r, changes, index, signals, settings) for r in regressions}
