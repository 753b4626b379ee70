"""The scenario's history as it will be written: changes grouped into direct pushes, squash merges
and merged PR branches (``group_events``), dated (``commit_times``), and rendered into commits
with the files each one changes (``History``).

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np

from regbot.datasets.service_edits import Change
from regbot.datasets.service_messages import Messages
from regbot.datasets.service_model import State
from regbot.datasets.service_source import render


@dataclass
class Event:
    """How changes reach main: a direct push, a squash merge, or a PR merged with a merge
    commit (``interleaved``: a direct push that landed while the PR was open)."""

    kind: Literal["direct", "squash", "merge"]
    changes: list[Change]
    pr: int | None = None
    interleaved: Change | None = None


@dataclass
class RepoCommit:
    """One commit as ``git fast-import`` writes it (``mark``: its number in the stream)."""

    mark: int
    parents: list[int]
    author: tuple[str, str]
    time_s: int
    message: str
    changed: dict[str, str | None]  # path -> new text (None: deleted)


class History:
    """Commits as they will be written, with the state and files at each mark."""

    def __init__(self, messages: Messages) -> None:
        self.messages = messages
        self.commits: list[RepoCommit] = []
        self.files: dict[int, dict[str, str]] = {0: {}}
        self.main_mark = 0
        self.main_state: State | None = None
        self.roles: dict[str, int] = {}  # role -> mark
        self.order: list[int] = []  # non-merge marks in creation order

    def _write(
        self,
        parents: list[int],
        state: State,
        author: tuple[str, str],
        time_s: int,
        message: str,
    ) -> int:
        mark = len(self.commits) + 1
        files = render(state).files
        before = self.files[parents[0]] if parents else {}
        changed: dict[str, str | None] = {p: t for p, t in files.items() if before.get(p) != t}
        changed.update({p: None for p in before if p not in files})
        self.files[mark] = files
        self.commits.append(RepoCommit(mark, parents, author, time_s, message, changed))
        return mark

    def _author(self, change: Change) -> tuple[str, str]:
        return self.messages.authors[change.author]

    def initial(self, state: State, time_s: int) -> None:
        author = self.messages.authors[0]
        title = f"Initial import of the {state.service} service"
        self.main_mark = self._write([], state, author, time_s, title + "\n")
        self.main_state = state
        self.order.append(self.main_mark)

    def _apply(self, base: State, change: Change) -> State:
        state = copy.deepcopy(base)
        change.edit(state)
        return state

    def _direct(self, change: Change, time_s: int, title: str) -> None:
        assert self.main_state is not None
        state = self._apply(self.main_state, change)
        message = title + ("\n\n" + change.body if change.body else "") + "\n"
        mark = self._write(
            [self.main_mark] if self.main_mark else [], state, self._author(change), time_s, message
        )
        self.main_mark, self.main_state = mark, state
        self.roles.setdefault(change.role, mark)
        self.order.append(mark)

    def event(self, event: Event, times: list[int]) -> None:
        """Write one event's commits, taking their times from the front of ``times``."""
        assert self.main_state is not None
        if event.kind == "direct":
            self._direct(event.changes[0], times.pop(0), event.changes[0].title)
            return
        if event.kind == "squash":
            change = event.changes[0]
            self._direct(change, times.pop(0), f"{change.title} (#{event.pr})")
            return
        base_mark, branch_state = self.main_mark, self.main_state
        for change in event.changes:
            branch_state = self._apply(branch_state, change)
            message = change.title + ("\n\n" + change.body if change.body else "") + "\n"
            base_mark = self._write(
                [base_mark], branch_state, self._author(change), times.pop(0), message
            )
            self.roles.setdefault(change.role, base_mark)
            self.order.append(base_mark)
        if event.interleaved is not None:
            self._direct(event.interleaved, times.pop(0), event.interleaved.title)
        merged = self.main_state
        for change in event.changes:
            merged = self._apply(merged, change)
        first = event.changes[0]
        words = re.sub(r"[^a-z0-9]+", " ", first.title.lower()).split()
        slug = "-".join(words[:6])
        handle = self._author(first)[1]
        message = (
            f"Merge pull request #{event.pr} from {handle}/{slug or 'patch'}\n\n{first.title}\n"
        )
        mark = self._write(
            [self.main_mark, base_mark], merged, self._author(first), times.pop(0), message
        )
        self.main_mark, self.main_state = mark, merged


def commit_count(events: list[Event]) -> int:
    return sum(len(e.changes) + (e.kind == "merge") + (e.interleaved is not None) for e in events)


class PullRequests:
    """PR numbers as a repository hands them out: increasing, with gaps (issues, closed PRs)."""

    def __init__(self, first: int) -> None:
        self.last = first

    def next(self, rng: np.random.Generator) -> int:
        self.last += int(rng.integers(1, 4))
        return self.last


def group_events(rng: np.random.Generator, changes: list[Change], prs: PullRequests) -> list[Event]:
    """Group changes, in order, into direct pushes, squash merges and merged PR branches."""
    merge_share, squash_share = rng.uniform(0.2, 0.5), rng.uniform(0.15, 0.4)
    events: list[Event] = []
    i = 0
    while i < len(changes):
        draw = rng.random()
        if draw < merge_share:
            size = min(int(rng.integers(1, 4)), len(changes) - i)
            group = changes[i : i + size]
            i += size
            interleaved = None
            if i < len(changes) and rng.random() < 0.3:
                touched = frozenset().union(*(c.touches for c in group))
                if not (changes[i].touches & touched):
                    interleaved = changes[i]
                    i += 1
            events.append(Event("merge", group, prs.next(rng), interleaved))
        elif draw < merge_share + squash_share:
            events.append(Event("squash", [changes[i]], prs.next(rng)))
            i += 1
        else:
            events.append(Event("direct", [changes[i]]))
            i += 1
    return events


def commit_times(rng: np.random.Generator, count: int, start_s: int, end_s: int) -> list[int]:
    """``count`` increasing commit times inside ``(start_s, end_s)``."""
    raw = np.sort(rng.uniform(start_s + 300, end_s - 300, count)).astype(np.int64)
    return [int(t) + i for i, t in enumerate(raw)]
