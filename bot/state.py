"""The state store (SPEC §5 `state`): regressions, dedup groups, runs, the deploy log, the PR
comments regbot posted and the feedback read from them, kept across runs in SQLite.

One run's writes are one transaction: a run that fails leaves the store as it was. Arrays
(a group member's series around its change, its stack share) are stored as little-endian
float64/int64 blobs. The reports of past runs are kept whole, so `regbot explain` can show any
regression, filtered ones included; a run's report is recorded before regbot publishes anything
and updated afterwards with what was published (``update_run_report``).

Comments are keyed by (dedup group, pull request): one comment per pair, as on GitHub.
Feedback rows are unique per (group, pull request, user, kind, source): the source is the
regbot comment a 👎 was given to, or the reply that carried ``/regbot false-positive``, so
reading the same reactions and replies again records nothing new.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from regbot.detection.dedup.same_regression import KnownRegression
from regbot.detection.dedup_context import Group, GroupMember, StackShare
from regbot.errors import InputError
from regbot.report.decode import read_regression, read_report
from regbot.report.model import RegressionEntry, Report

SCHEMA = """
CREATE TABLE IF NOT EXISTS regressions (
    id TEXT PRIMARY KEY,
    series_id TEXT NOT NULL,
    detector TEXT NOT NULL,
    change_time_s REAL NOT NULL,
    group_id TEXT NOT NULL,
    first_seen_s REAL NOT NULL,
    last_seen_s REAL NOT NULL,
    entry TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS regressions_by_series ON regressions (series_id, change_time_s);
CREATE TABLE IF NOT EXISTS group_members (
    group_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    regression_id TEXT NOT NULL,
    series_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    change_time_s REAL NOT NULL,
    times BLOB NOT NULL,
    vals BLOB NOT NULL,
    stack_ids BLOB,
    stack_weights BLOB,
    PRIMARY KEY (group_id, regression_id)
);
CREATE TABLE IF NOT EXISTS runs (
    run_at_s REAL NOT NULL,
    report TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS deploys (
    sha TEXT PRIMARY KEY,
    previous TEXT,
    deployed_at_s REAL NOT NULL,
    recorded_at_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS comments (
    group_id TEXT NOT NULL,
    pull_request INTEGER NOT NULL,
    comment_id INTEGER NOT NULL,
    url TEXT NOT NULL,
    regression_id TEXT NOT NULL,
    posted_at_s REAL NOT NULL,
    body_sha256 TEXT NOT NULL,
    updated_at_s REAL NOT NULL,
    PRIMARY KEY (group_id, pull_request)
);
CREATE TABLE IF NOT EXISTS feedback (
    regression_id TEXT NOT NULL,
    group_id TEXT NOT NULL,
    pull_request INTEGER NOT NULL,
    user TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('reaction', 'command')),
    reason TEXT NOT NULL,
    at_s REAL NOT NULL,
    source_id INTEGER NOT NULL,
    comment_id INTEGER NOT NULL,
    UNIQUE (group_id, pull_request, user, kind, source_id)
);
"""


@dataclass(frozen=True, slots=True)
class StoredRegression:
    """A regression row: what the report said of it, and when it was first and last seen."""

    id: str
    series_id: str
    detector: str
    change_time_s: float
    group_id: str
    first_seen_s: float
    last_seen_s: float
    entry: RegressionEntry


@dataclass(frozen=True, slots=True)
class StoredComment:
    """A PR comment regbot posted about dedup group ``group_id``: ``posted_at_s`` is when it was
    first posted (GitHub's creation time when known), ``updated_at_s`` when regbot last wrote or
    confirmed it, ``body_sha256`` the hash of the body last written."""

    group_id: str
    pull_request: int
    comment_id: int
    url: str
    regression_id: str
    posted_at_s: float
    body_sha256: str
    updated_at_s: float


FeedbackKind = Literal["reaction", "command"]


@dataclass(frozen=True, slots=True)
class FeedbackEntry:
    """One "false positive" from a developer: a 👎 on regbot's comment (``kind="reaction"``,
    ``source_id`` = that comment) or a ``/regbot false-positive [reason]`` reply
    (``kind="command"``, ``source_id`` = the reply). ``comment_id`` is regbot's comment it is
    about; ``at_s`` the reply's time, or for a reaction when regbot first saw it."""

    regression_id: str
    group_id: str
    pull_request: int
    user: str
    kind: FeedbackKind
    reason: str
    at_s: float
    source_id: int
    comment_id: int


class StateStore:
    """An open state database; use as a context manager or call ``close``."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    # -- reading -----------------------------------------------------------------------------
    def known_regressions(self) -> list[KnownRegression]:
        rows = self._db.execute(
            "SELECT id, series_id, change_time_s, group_id FROM regressions ORDER BY id"
        )
        return [KnownRegression(*row) for row in rows]

    def regression(self, regression_id: str) -> StoredRegression | None:
        row = self._db.execute(
            "SELECT id, series_id, detector, change_time_s, group_id, first_seen_s, last_seen_s,"
            " entry FROM regressions WHERE id = ?",
            (regression_id,),
        ).fetchone()
        if row is None:
            return None
        rid, series_id, detector, change_time_s, group_id, first_seen_s, last_seen_s, entry = row
        return StoredRegression(
            rid,
            series_id,
            detector,
            change_time_s,
            group_id,
            first_seen_s,
            last_seen_s,
            read_regression(json.loads(entry), f"regression {rid}"),
        )

    def groups(self, since_s: float = float("-inf")) -> list[Group]:
        """Groups with a member whose change is at or after ``since_s``, members in order."""
        rows = self._db.execute(
            "SELECT group_id, regression_id, series_id, kind, change_time_s, times, vals,"
            " stack_ids, stack_weights FROM group_members WHERE group_id IN"
            " (SELECT group_id FROM group_members WHERE change_time_s >= ?)"
            " ORDER BY group_id, position",
            (since_s,),
        )
        members: dict[str, list[GroupMember]] = {}
        for gid, rid, sid, kind, t, times, vals, ids, weights in rows:
            stacks = (
                StackShare(np.frombuffer(ids, "<i8").copy(), np.frombuffer(weights, "<f8").copy())
                if ids is not None
                else None
            )
            members.setdefault(gid, []).append(
                GroupMember(
                    rid,
                    sid,
                    kind,
                    t,
                    np.frombuffer(times, "<f8").copy(),
                    np.frombuffer(vals, "<f8").copy(),
                    stacks,
                )
            )
        return [Group(gid, tuple(m)) for gid, m in members.items()]

    def reports(self) -> list[Report]:
        """Every stored run's report, oldest first, read back once (``regbot.report.decode``)."""
        rows = self._db.execute("SELECT rowid, report FROM runs ORDER BY rowid")
        return [read_report(json.loads(text), f"stored report of run {run}") for run, text in rows]

    def deploy_time(self, sha: str) -> float | None:
        """When the deploy of ``sha`` happened, from the deploy log (a sha prefix of at least
        7 characters is enough)."""
        row = self._db.execute(
            "SELECT deployed_at_s FROM deploys WHERE sha = ? OR (length(?) >= 7 AND sha LIKE ? || '%')"
            " ORDER BY deployed_at_s DESC LIMIT 1",
            (sha, sha, sha),
        ).fetchone()
        return float(row[0]) if row else None

    def previous_deploy(self, before_s: float) -> tuple[str, float] | None:
        """The newest logged deploy before ``before_s``: its sha and time."""
        row = self._db.execute(
            "SELECT sha, deployed_at_s FROM deploys WHERE deployed_at_s < ?"
            " ORDER BY deployed_at_s DESC LIMIT 1",
            (before_s,),
        ).fetchone()
        return (str(row[0]), float(row[1])) if row else None

    def comments(self) -> list[StoredComment]:
        """Every comment regbot recorded, by pull request then group."""
        rows = self._db.execute(
            "SELECT group_id, pull_request, comment_id, url, regression_id, posted_at_s,"
            " body_sha256, updated_at_s FROM comments ORDER BY pull_request, group_id"
        )
        return [StoredComment(*row) for row in rows]

    def comment(self, group_id: str, pull_request: int) -> StoredComment | None:
        row = self._db.execute(
            "SELECT group_id, pull_request, comment_id, url, regression_id, posted_at_s,"
            " body_sha256, updated_at_s FROM comments WHERE group_id = ? AND pull_request = ?",
            (group_id, pull_request),
        ).fetchone()
        return StoredComment(*row) if row else None

    def feedback(self, group_id: str | None = None) -> list[FeedbackEntry]:
        """Recorded feedback (of one group, or all), oldest first."""
        query = (
            "SELECT regression_id, group_id, pull_request, user, kind, reason, at_s, source_id,"
            " comment_id FROM feedback"
        )
        params: tuple = ()
        if group_id is not None:
            query += " WHERE group_id = ?"
            params = (group_id,)
        rows = self._db.execute(query + " ORDER BY at_s, rowid", params)
        return [FeedbackEntry(*row) for row in rows]

    def false_positive_groups(self) -> dict[str, tuple[str, ...]]:
        """Group id → the users who marked it a false positive (sorted, each once)."""
        users: dict[str, set[str]] = {}
        for group_id, user in self._db.execute("SELECT group_id, user FROM feedback"):
            users.setdefault(group_id, set()).add(user)
        return {group: tuple(sorted(names)) for group, names in sorted(users.items())}

    def record_deploy(
        self, sha: str, previous: str | None, deployed_at_s: float, now_s: float
    ) -> None:
        with self._db:
            self._db.execute(
                "INSERT INTO deploys VALUES (?, ?, ?, ?) ON CONFLICT(sha) DO UPDATE SET"
                " previous = excluded.previous, deployed_at_s = excluded.deployed_at_s",
                (sha, previous, deployed_at_s, now_s),
            )

    # -- writing -----------------------------------------------------------------------------
    def record_comment(self, comment: StoredComment) -> None:
        """Insert or update the comment of (group, pull request); an update keeps the first
        ``posted_at_s`` (replies are read from when the comment first appeared)."""
        with self._db:
            self._db.execute(
                "INSERT INTO comments VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(group_id, pull_request) DO UPDATE SET"
                " comment_id = excluded.comment_id, url = excluded.url,"
                " regression_id = excluded.regression_id, body_sha256 = excluded.body_sha256,"
                " updated_at_s = excluded.updated_at_s,"
                " posted_at_s = CASE WHEN comments.comment_id = excluded.comment_id"
                " THEN comments.posted_at_s ELSE excluded.posted_at_s END",
                astuple(comment),
            )

    def record_feedback(self, entries: Iterable[FeedbackEntry]) -> list[FeedbackEntry]:
        """Record feedback in one transaction; returns the entries that were new (an entry
        already recorded, by group, pull request, user, kind and source, is skipped)."""
        new = []
        with self._db:
            for entry in entries:
                cursor = self._db.execute(
                    "INSERT OR IGNORE INTO feedback VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    astuple(entry),
                )
                if cursor.rowcount:
                    new.append(entry)
        return new

    def update_run_report(self, run_id: int, report: Report) -> None:
        """Replace the stored report of run ``run_id`` (what ``record_run`` returned)."""
        with self._db:
            self._db.execute(
                "UPDATE runs SET report = ? WHERE rowid = ?", (json.dumps(report.to_json()), run_id)
            )

    def record_run(
        self,
        run_at_s: float,
        report: Report,
        groups: Iterable[Group],
    ) -> int:
        """Store one run in one transaction: its report, every group touched (members replaced),
        and its reported regressions. Returns the run's id."""
        with self._db:
            cursor = self._db.execute(
                "INSERT INTO runs VALUES (?, ?)", (run_at_s, json.dumps(report.to_json()))
            )
            run_id = int(cursor.lastrowid or 0)
            for group in groups:
                self._db.execute("DELETE FROM group_members WHERE group_id = ?", (group.id,))
                self._db.executemany(
                    "INSERT INTO group_members VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [_member_row(group.id, i, m) for i, m in enumerate(group.members)],
                )
            for entry in report.regressions:
                self._db.execute(
                    "INSERT INTO regressions VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT(id) DO UPDATE SET last_seen_s = excluded.last_seen_s,"
                    " group_id = excluded.group_id, entry = excluded.entry",
                    (
                        entry.id,
                        entry.series,
                        entry.detector,
                        entry.change_time_s,
                        entry.group,
                        run_at_s,
                        run_at_s,
                        json.dumps(entry.to_json()),
                    ),
                )
        return run_id


def _member_row(group_id: str, position: int, m: GroupMember) -> tuple:
    stacks = m.stacks
    return (
        group_id,
        position,
        m.regression_id,
        m.series_id,
        m.kind,
        m.change_time_s,
        np.asarray(m.times_s, "<f8").tobytes(),
        np.asarray(m.values, "<f8").tobytes(),
        np.asarray(stacks.stack_ids, "<i8").tobytes() if stacks else None,
        np.asarray(stacks.weights, "<f8").tobytes() if stacks else None,
    )


def open_state(path: Path) -> StateStore:
    """Open (creating if needed) the state database at ``path``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path)
        connection.executescript(SCHEMA)
    except (OSError, sqlite3.Error) as error:
        raise InputError(
            str(path), "a writable regbot state database (SQLite)", str(error)
        ) from None
    return StateStore(connection, path)


def open_state_read_only(path: Path) -> StateStore:
    """The state database at ``path`` opened read only (SQLite ``mode=ro``)."""
    if not path.is_file():
        raise InputError(
            f"no state at {path}",
            "the state of an earlier `regbot run` or `regbot detect` (run one first)",
        )
    try:
        connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise InputError(
            str(path), "a readable regbot state database (SQLite)", str(error)
        ) from None
    return StateStore(connection, path)
