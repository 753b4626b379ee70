"""False-positive feedback (KDD'18 §3.3's feedback loop): read from GitHub at the start of each
publishing run, kept in the state, listed by ``regbot feedback``.

What counts as feedback on a comment regbot recorded in the state:

* a 👎 (``-1``) reaction on it, one per user (a reaction removed later stays recorded: the
  state is a history of what developers said);
* a comment on the same pull request, created at or after regbot's comment was first posted,
  with a line ``/regbot false-positive [reason]`` (the command first on its line, any case;
  quoted lines ``> …`` do not count, nor do comments carrying a regbot marker, so regbot's own
  comment, which explains the command, never counts). The reason is the rest of the line. When
  its first word is the group or regression id of one of regbot's comments on that pull
  request, the reply is about that one only; otherwise it is about every regbot comment on the
  pull request posted before it.

Reading costs one listing of each pull request's comments (reactions are read for the comments
carrying a regbot marker): the listing carries every comment's creation time, so replies need no
request of their own. Entries already in the state are not recorded again.

What feedback does: a group marked false positive is not commented on again (its comment is left
as it is), and every later report lists its regressions with ``"feedback": "false-positive"``
and ``"feedback_from"`` (the users), in the JSON, the gate summary and ``regbot explain``. It
never removes a regression from the report and never changes the gate (see
:mod:`regbot.bot.gate`): detection keeps reporting what it sees, and the labels are the data set
the KDD'18 loop uses to find systematic false positives.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace

from regbot.bot.github.api import CommentInfo, GitHubClient
from regbot.bot.github.comment import find_marker
from regbot.bot.state import FeedbackEntry, StateStore, StoredComment
from regbot.report.model import Report

MARKER_PREFIX = "<!-- regbot:v1 group="


REASON_CHARS = 500


_COMMAND = re.compile(
    r"^[ \t]*/regbot[ \t]+false-positive(?![\w-])[ \t]*(?P<reason>[^\r\n]*)$",
    re.IGNORECASE | re.MULTILINE,
)


def parse_false_positive(body: str) -> str | None:
    """The reason of the first ``/regbot false-positive [reason]`` line of a comment (``""``
    without one), or None when the comment holds no such command."""
    match = _COMMAND.search(body)
    if match is None:
        return None
    return " ".join(match.group("reason").split())[:REASON_CHARS]


def _targets(
    reason: str, stored: Sequence[StoredComment], created_s: float
) -> tuple[list[StoredComment], str]:
    """The comments one reply is about, and its reason without a leading target id."""
    first, _, rest = reason.partition(" ")
    named = [c for c in stored if first and first in (c.group_id, c.regression_id)]
    if named:
        return named, rest.strip()
    return [c for c in stored if c.posted_at_s <= created_s], reason


def feedback_from_listing(
    stored: Sequence[StoredComment], listing: Sequence[CommentInfo], now_s: float
) -> list[FeedbackEntry]:
    """The feedback on one pull request's recorded comments, from its comment listing (read
    with reactions for regbot's marked comments)."""
    entries: list[FeedbackEntry] = []
    by_id = {c.id: c for c in listing}
    for comment in stored:
        seen = by_id.get(comment.comment_id)
        for user in seen.minus_one_users if seen is not None else ():
            entries.append(
                FeedbackEntry(
                    comment.regression_id,
                    comment.group_id,
                    comment.pull_request,
                    user,
                    "reaction",
                    "",
                    now_s,
                    comment.comment_id,
                    comment.comment_id,
                )
            )
    since = min((c.posted_at_s for c in stored), default=float("inf"))
    for reply in listing:
        created = reply.created_at_s
        if created is None or created < since or find_marker(reply.body) is not None:
            continue
        reason = parse_false_positive(reply.body)
        if reason is None:
            continue
        targets, reason = _targets(reason, stored, created)
        for comment in targets:
            entries.append(
                FeedbackEntry(
                    comment.regression_id,
                    comment.group_id,
                    comment.pull_request,
                    reply.author,
                    "command",
                    reason,
                    created,
                    reply.id,
                    comment.comment_id,
                )
            )
    return entries


def collect_feedback(client: GitHubClient, state: StateStore, now_s: float) -> list[FeedbackEntry]:
    """Read the feedback on every comment recorded in ``state`` and record what is new;
    returns the new entries."""
    by_pull: dict[int, list[StoredComment]] = defaultdict(list)
    for comment in state.comments():
        by_pull[comment.pull_request].append(comment)
    found: list[FeedbackEntry] = []
    for pull_request, stored in sorted(by_pull.items()):
        listing = client.list_comments(pull_request, with_reactions_for=MARKER_PREFIX)
        found += feedback_from_listing(stored, listing, now_s)
    return state.record_feedback(found)


def annotate_report(report: Report, flagged_groups: Mapping[str, Sequence[str]]) -> Report:
    """The report with its regressions whose group developers called a false positive marked
    (``feedback``, ``feedback_from``)."""
    return replace(
        report,
        regressions=tuple(
            replace(e, feedback="false-positive", feedback_from=tuple(flagged_groups[e.group]))
            if e.group in flagged_groups
            else e
            for e in report.regressions
        ),
    )
