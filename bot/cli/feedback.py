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

import argparse
import json
import re
from collections import defaultdict
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from regbot.bot.github.comment import find_marker
from regbot.bot.config import load_config
from regbot.bot.github.api import CommentInfo, GitHubClient
from regbot.bot.state import FeedbackEntry, StateStore, StoredComment, open_state
from regbot.errors import InputError
from regbot.timefmt import format_time

__all__ = [
    "MARKER_PREFIX",
    "annotate_report",
    "collect_feedback",
    "feedback_from_listing",
    "parse_false_positive",
    "run",
]

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


def annotate_report(
    report: Mapping[str, object], flagged_groups: Mapping[str, Sequence[str]]
) -> int:
    """Mark the report's regressions whose group developers called a false positive
    (``feedback``, ``feedback_from``); returns how many were marked."""
    marked = 0
    for entry in report.get("regressions", []) or []:
        if isinstance(entry, MutableMapping) and entry.get("group") in flagged_groups:
            entry["feedback"] = "false-positive"
            entry["feedback_from"] = list(flagged_groups[str(entry["group"])])
            marked += 1
    return marked


# ---------------------------------------------------------------------------------------------
# `regbot feedback`


def _state_path(args: argparse.Namespace) -> Path:
    if args.state is not None:
        return Path(args.state)
    return load_config(args.config).state


def _entry_json(entry: FeedbackEntry, url: str | None) -> dict[str, object]:
    return {
        "regression": entry.regression_id,
        "group": entry.group_id,
        "pull_request": entry.pull_request,
        "user": entry.user,
        "kind": entry.kind,
        "reason": entry.reason,
        "at": format_time(entry.at_s),
        "at_s": entry.at_s,
        "comment_id": entry.comment_id,
        "comment_url": url,
    }


def feedback_table(rows: Sequence[dict[str, object]]) -> Table:
    table = Table(title="false-positive feedback", show_edge=False)
    for name in ("at", "regression", "group", "PR", "user", "kind", "reason"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(
            str(row["at"]),
            escape(str(row["regression"])),
            escape(str(row["group"])),
            f"#{row['pull_request']}",
            escape(str(row["user"])),
            "👎" if row["kind"] == "reaction" else "/regbot false-positive",
            escape(str(row["reason"])) or "-",
        )
    groups = len({row["group"] for row in rows})
    table.caption = (
        f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'} on {groups} "
        f"group{'' if groups == 1 else 's'}"
    )
    return table


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    """``regbot feedback``: the feedback recorded in the state, oldest first."""
    path = _state_path(args)
    if not path.is_file():
        raise InputError(str(path), "a regbot state database (written by `regbot run`)")
    with open_state(path) as state:
        urls = {c.comment_id: c.url for c in state.comments()}
        rows = [_entry_json(e, urls.get(e.comment_id)) for e in state.feedback()]
    if args.json:
        payload = json.dumps({"state": str(path), "feedback": rows}, indent=2)
        out.print(payload, markup=False, highlight=False, soft_wrap=True)
        return 0
    if not rows:
        out.print(f"no feedback recorded in {escape(str(path))}", highlight=False)
        return 0
    out.print(feedback_table(rows))
    return 0
