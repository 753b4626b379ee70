"""Publishing a run on GitHub: one comment per (dedup group, pull request) of the suspect commits,
then the gate on the deploy commit. Runs only without ``--dry-run`` and with
``repository.github`` set (:func:`publishing_plan` says why not otherwise).

Which regressions are commented on, in this order of priority (high confidence first, then the
larger relative change, then the id, so a capped run spends its comments on the clearest
findings):

* confidence at least ``github.comments.min_confidence`` (high > low; ``none`` names no commit);
* not in a group developers marked as a false positive (feedback, see
  :mod:`regbot.bot.cli.feedback`): such a group is not commented on again, and its earlier
  comment is left as it is;
* on every distinct pull request of its named candidates: the PR number from the git history
  (merge and squash titles), else GitHub's pull requests of the commit (the merged ones when
  there are any; a commit GitHub does not know gives none).

Every reported regression ends up in the report's ``comments`` (pull request, url, and
``created``/``edited``/``unchanged``) or ``comments_skipped`` (with the reason): none is dropped
silently.

The comment is upserted by its hidden marker (``comment_marker(group, pr)``), so re-runs and
re-deploys edit instead of adding. ``max_per_run`` caps the writes (creates plus edits): to know
whether a comment would be edited or is already up to date, the pull request's comments are
listed once per run first (``GitHubClient.upsert_comment`` alone cannot tell an edit from an
unchanged comment); an unchanged comment costs no write and does not count. Each comment is
recorded in the state as soon as it is written, so a failure later in the run keeps it.

Retries: ``REGBOT_GITHUB_RETRY_SCALE`` (a number ≥ 0, default 1) multiplies every wait of the
GitHub client's request policy (backoff, secondary-rate-limit wait, longest rate-limit wait,
spacing of writes); tests set it to 0 to retry without sleeping.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from regbot.attribution.stack_paths import path_to
from regbot.bot.config import CommentPolicy, Config
from regbot.bot.gate import GateDecision
from regbot.bot.github.api import (
    CommentInfo,
    GateKind,
    GitHubClient,
    GitHubError,
    PullRequestInfo,
    RequestPolicy,
)
from regbot.bot.github.comment import comment_marker, render_comment
from regbot.bot.state import StateStore, StoredComment
from regbot.detection.dedup_context import subroutine_of_series
from regbot.errors import InputError
from regbot.report.model import CommentOutcome, Outcome, RegressionEntry, Report, SkippedComment

__all__ = [
    "CONFIDENCE_RANK",
    "RETRY_SCALE_ENV",
    "CommentOutcome",
    "PublishResult",
    "PublishingPlan",
    "SkippedComment",
    "comment_order",
    "details_url",
    "open_client",
    "planned_outcome",
    "publish_comments",
    "publish_gate",
    "publishing_plan",
    "request_policy",
    "stack_path_of",
]

RETRY_SCALE_ENV = "REGBOT_GITHUB_RETRY_SCALE"
CONFIDENCE_RANK = {"none": 0, "low": 1, "high": 2}


# ---------------------------------------------------------------------------------------------
# Whether and how to talk to GitHub


@dataclass(frozen=True, slots=True)
class PublishingPlan:
    """Whether this run publishes (comments and gate) and, when not, why."""

    enabled: bool
    reason: str


def publishing_plan(config: Config, dry_run: bool) -> PublishingPlan:
    if dry_run:
        return PublishingPlan(False, "--dry-run: no PR comments and no gate status")
    if config.repository.github is None:
        where = config.source or "regbot.yml"
        return PublishingPlan(
            False, f"repository.github is not set in {where}: no PR comments and no gate status"
        )
    return PublishingPlan(True, f"publishing to {config.repository.github}")


def request_policy(environ: Mapping[str, str] = os.environ) -> RequestPolicy:
    """The client's request policy, its waits scaled by ``$REGBOT_GITHUB_RETRY_SCALE``."""
    text = (environ.get(RETRY_SCALE_ENV) or "").strip()
    if not text:
        return RequestPolicy()
    try:
        scale = float(text)
    except ValueError:
        scale = -1.0
    if not scale >= 0 or scale == float("inf"):
        raise InputError(f"${RETRY_SCALE_ENV}", "a finite number >= 0", text)
    base = RequestPolicy()
    return replace(
        base,
        backoff_factor_s=base.backoff_factor_s * scale,
        secondary_rate_wait_s=base.secondary_rate_wait_s * scale,
        max_rate_limit_wait_s=base.max_rate_limit_wait_s * scale,
        seconds_between_writes_s=base.seconds_between_writes_s * scale,
    )


def open_client(config: Config, environ: Mapping[str, str] = os.environ) -> GitHubClient:
    """A client for ``repository.github`` with the token from ``github.token_env``
    (``$GITHUB_API_URL`` overrides ``github.api_url``)."""
    repository = config.repository.github
    if repository is None:
        raise InputError("repository.github", "owner/name of the GitHub repository")
    return GitHubClient.from_environment(
        repository,
        config.github.api_url,
        config.github.token_env,
        environ,
        policy=request_policy(environ),
    )


def details_url(environ: Mapping[str, str] = os.environ) -> str | None:
    """The GitHub Actions run page (``$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/
    $GITHUB_RUN_ID``) when regbot runs in Actions, for the check run's details link."""
    parts = [environ.get(k, "").strip() for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY")]
    run_id = environ.get("GITHUB_RUN_ID", "").strip()
    if all(parts) and run_id.isdigit() and parts[0].startswith(("http://", "https://")):
        return f"{parts[0].rstrip('/')}/{parts[1]}/actions/runs/{run_id}"
    return None


# ---------------------------------------------------------------------------------------------
# Comments


@dataclass(slots=True)
class PublishResult:
    """What publishing did so far: comments written or found up to date, regressions not
    commented on, and the entries whose suspects' pull requests were found through GitHub
    (``entries``, by regression id: the report's entries to replace)."""

    comments: list[CommentOutcome] = field(default_factory=list)
    skipped: list[SkippedComment] = field(default_factory=list)
    entries: dict[str, RegressionEntry] = field(default_factory=dict)

    @property
    def writes(self) -> int:
        return sum(1 for c in self.comments if c.outcome != "unchanged")


def comment_order(entries: Sequence[RegressionEntry]) -> list[RegressionEntry]:
    """Regressions in the order comments are spent on them (module docstring)."""

    def key(entry: RegressionEntry) -> tuple[int, float, str]:
        size = abs(entry.relative_delta) if entry.relative_delta is not None else 0.0
        return (-CONFIDENCE_RANK.get(entry.confidence, 0), -size, entry.id)

    return sorted(entries, key=key)


def stack_path_of(entry: RegressionEntry) -> list[str]:
    """The comment's stack path: the heaviest of the entry's ``stack_paths``, from the root down
    to the regressed subroutine's outermost frame (the comment labels it "root → regressed
    frame"); empty without stack paths."""
    paths = entry.stack_paths or ()
    if not paths:
        return []
    first = list(paths[0])
    subroutine = subroutine_of_series(entry.series)
    return path_to(first, subroutine) if subroutine else first


def _normalized(body: str) -> str:
    """As ``GitHubClient.upsert_comment`` compares bodies: line endings and outer space aside."""
    return body.replace("\r\n", "\n").strip()


def planned_outcome(
    listing: Sequence[CommentInfo], marker: str, body: str
) -> tuple[Literal["create", "edit", "unchanged"], CommentInfo | None]:
    """What upserting ``body`` under ``marker`` will do given the pull request's comments, and
    the comment it would touch (the first one carrying the marker, as the upsert picks)."""
    existing = next((c for c in listing if marker in c.body), None)
    if existing is None:
        return "create", None
    if _normalized(existing.body) == _normalized(body):
        return "unchanged", existing
    return "edit", existing


def _pull_numbers(pulls: Sequence[PullRequestInfo]) -> list[int]:
    merged = [p.number for p in pulls if p.merged]
    return sorted(set(merged or [p.number for p in pulls]))


class _PullLookup:
    """Pull requests of a commit from GitHub, once per commit per run; a commit GitHub does not
    know (404, or 422 "No commit found") has none."""

    def __init__(self, client: GitHubClient) -> None:
        self._client = client
        self._found: dict[str, list[int]] = {}

    def __call__(self, sha: str) -> list[int]:
        if sha not in self._found:
            try:
                self._found[sha] = _pull_numbers(self._client.pulls_for_commit(sha))
            except GitHubError as error:
                if error.status not in (404, 422):
                    raise
                self._found[sha] = []
        return self._found[sha]


def pull_requests_of(
    entry: RegressionEntry, lookup: Callable[[str], list[int]]
) -> tuple[RegressionEntry, list[int], list[str]]:
    """The entry with the pull requests found through GitHub written into its candidates
    (``pull_request``, with ``pull_request_from: "github"``, so the comment marks "this PR"),
    the distinct pull requests of its named candidates in candidate order, and the shas of
    candidates without any."""
    numbers: list[int] = []
    without: list[str] = []
    candidates = []
    for candidate in entry.candidates:
        found = [candidate.pull_request] if candidate.pull_request is not None else []
        if not found:
            found = lookup(candidate.commit)
            if found:
                candidate = replace(candidate, pull_request=found[0], pull_request_from="github")
        if not found:
            without.append(candidate.commit)
        candidates.append(candidate)
        numbers += [n for n in found if n not in numbers]
    return replace(entry, candidates=tuple(candidates)), numbers, without


def _skip(entry: RegressionEntry, reason: str, pr: int | None = None) -> SkippedComment:
    return SkippedComment(entry.group, entry.id, pr, reason)


def publish_comments(
    client: GitHubClient,
    report: Report,
    *,
    points: Mapping[str, Sequence[tuple[float, float]]],
    policy: CommentPolicy,
    repository: str | None,
    state: StateStore,
    now_s: float,
    flagged_groups: Mapping[str, Sequence[str]] = {},
    result: PublishResult | None = None,
) -> PublishResult:
    """Upsert the comments of one run's report (module docstring); ``points`` maps a regression
    id to its series around the change as (epoch seconds, value in the series' direction).
    Outcomes are added to ``result`` (a new one when None) as they happen, so a caller that
    passes its own keeps what was done before a failure."""
    result = PublishResult() if result is None else result
    floor = CONFIDENCE_RANK[policy.min_confidence]
    listings: dict[int, list[CommentInfo]] = {}
    lookup = _PullLookup(client)
    for entry in comment_order(report.regressions):
        group, rid, confidence = entry.group, entry.id, entry.confidence
        if not policy.enabled:
            result.skipped.append(_skip(entry, "github.comments.enabled is false"))
            continue
        if not entry.candidates:
            result.skipped.append(_skip(entry, "no suspect commit named (confidence none)"))
            continue
        if CONFIDENCE_RANK.get(confidence, 0) < floor:
            result.skipped.append(
                _skip(
                    entry,
                    f"confidence {confidence} is below github.comments.min_confidence "
                    f"{policy.min_confidence}",
                )
            )
            continue
        if group in flagged_groups:
            result.skipped.append(_skip(entry, "feedback: false-positive (not commented on again)"))
            continue
        found, numbers, without = pull_requests_of(entry, lookup)
        if found != entry:
            entry = result.entries[rid] = found
        for sha in without:
            result.skipped.append(_skip(entry, f"commit {sha[:12]} has no pull request"))
        for pr in numbers:
            marker = comment_marker(group, pr)
            body = render_comment(
                entry,
                pull_request=pr,
                marker=marker,
                series_points=list(points.get(rid, ())),
                stack_path=stack_path_of(entry),
                explain_command=f"regbot explain {rid}",
                repository=repository,
            )
            if pr not in listings:
                listings[pr] = client.list_comments(pr)
            plan, existing = planned_outcome(listings[pr], marker, body)
            outcome: Outcome
            if plan == "unchanged" and existing is not None:
                info, outcome = existing, "unchanged"
            elif result.writes >= policy.max_per_run:
                reason = f"github.comments.max_per_run ({policy.max_per_run}) reached"
                result.skipped.append(_skip(entry, reason, pr))
                continue
            else:
                info, created = client.upsert_comment(pr, marker, body)
                outcome = "created" if created else "edited"
            state.record_comment(
                StoredComment(
                    group_id=group,
                    pull_request=pr,
                    comment_id=info.id,
                    url=info.url,
                    regression_id=rid,
                    posted_at_s=info.created_at_s if info.created_at_s is not None else now_s,
                    body_sha256=hashlib.sha256(body.encode()).hexdigest(),
                    updated_at_s=now_s,
                )
            )
            result.comments.append(CommentOutcome(group, rid, pr, info.id, info.url, outcome))
    return result


# ---------------------------------------------------------------------------------------------
# The gate


def publish_gate(
    client: GitHubClient,
    sha: str,
    name: str,
    decision: GateDecision,
    environ: Mapping[str, str] = os.environ,
) -> GateKind:
    """Set the gate on the deploy commit: a check run ``name``, or a commit status when check
    runs are refused (see ``GitHubClient.set_gate``). Returns which was used."""
    return client.set_gate(
        sha, name, decision.state, decision.title, decision.summary, details_url(environ)
    )
