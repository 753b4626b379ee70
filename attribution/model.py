"""Data types of the attribution package: a deploy's commits, the subroutines each one modifies,
and the scored candidates of one regression (FBDetect §5.6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ChangeKind = Literal["modified", "added", "deleted", "cosmetic"]
Confidence = Literal["high", "low", "none"]


@dataclass(frozen=True, slots=True)
class ModifiedSubroutine:
    """A function or method whose body a commit changed.

    ``path`` is the file's path in the repository after the commit (before it, for a deleted
    file); ``old_path`` is the path before the commit when the file was renamed or moved.
    ``qualname`` is the dotted name inside the file (``Class.method``, ``outer.inner``);
    ``module`` the dotted module path for Python (``app.views``), else None. ``exact`` is True
    when the function was found by parsing the source (Python's ``ast``), False when it comes
    from git's hunk-header function context (other languages: approximate). ``change`` is
    ``cosmetic`` for a function whose lines were touched without changing what it does
    (docstrings, comments, layout, consistent renames of locals: ``attribution.cosmetic``); such
    a touch is listed but gets no gCPU credit. ``unchanged_anonymous``: for a modified Python
    function, the kinds of its anonymous code (``<listcomp>``, ``<lambda>``…) that did not change
    (``attribution.cosmetic.unchanged_anonymous``); profile frames of those kinds inside it are
    not modified frames.
    """

    path: str
    qualname: str
    change: ChangeKind = "modified"
    old_path: str | None = None
    module: str | None = None
    exact: bool = True
    unchanged_anonymous: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        """The innermost name: ``method`` of ``Class.method``."""
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def full_name(self) -> str:
        """``module.Class.method`` when the module is known, else ``Class.method``."""
        return f"{self.module}.{self.qualname}" if self.module else self.qualname


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of ``previous..deploy`` with what attribution reads from it.

    ``pull_request`` is the PR number the history shows (a merge commit's ``Merge pull request
    #N`` or a squash title's ``(#N)``), None when it does not. ``diff`` is the unified diff
    against the first parent (capped in size); ``identifiers`` the identifiers on the added and
    removed lines; ``functions`` every function of each Python file it changed, at either
    side of the diff (path → qualnames), so that frame matching knows which frames name a
    function that exists.
    """

    sha: str
    title: str
    body: str = ""
    author: str = ""
    authored_at_s: float = 0.0
    files: tuple[str, ...] = ()
    pull_request: int | None = None
    diff: str = ""
    subroutines: tuple[ModifiedSubroutine, ...] = ()
    identifiers: tuple[str, ...] = ()
    is_merge: bool = False
    functions: tuple[tuple[str, frozenset[str]], ...] = ()


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """A candidate's score parts, each in [0, 1] (SPEC §4 ``parts``)."""

    gcpu_attribution: float = 0.0
    text_similarity: float = 0.0
    correlation: float = 0.0


@dataclass(frozen=True, slots=True)
class ScoredCommit:
    """A commit with its weighted score and the parts behind it; ``matched`` names the profile
    subroutines the commit's modified functions were matched to."""

    commit: Commit
    score: float
    parts: ScoreParts
    matched: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Attribution:
    """One regression's ranking: every scored commit (best first), the ones named as candidates
    (empty when the evidence is not strong enough) and the confidence."""

    ranked: tuple[ScoredCommit, ...]
    candidates: tuple[ScoredCommit, ...]
    confidence: Confidence
    notes: tuple[str, ...] = field(default=())
