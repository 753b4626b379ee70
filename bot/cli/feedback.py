"""`regbot feedback`: the false-positive feedback kept in the state, as a table or JSON
(the feedback itself: :mod:`regbot.bot.github.feedback`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from regbot.bot.cli.exit_codes import EXIT_OK
from regbot.bot.config import load_config
from regbot.bot.state import FeedbackEntry, open_state
from regbot.errors import InputError
from regbot.timefmt import format_time

__all__ = ["run"]


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
        return EXIT_OK
    if not rows:
        out.print(f"no feedback recorded in {escape(str(path))}", highlight=False)
        return EXIT_OK
    out.print(feedback_table(rows))
    return EXIT_OK
