"""What one commit of the scenario does to the service (an ``Edit`` of its ``State``): neutral
edits that keep every cost, a slower function, a caller that calls more, a cost shift, an
appended file; and ``Change``, one planned non-merge commit.

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from regbot.datasets.service_model import DOC_FORMS, LOCALS, SALTS, State, doc_of

Edit = Callable[[State], None]

NEUTRAL_VARIANTS = ("note", "doc", "local", "salt", "guard")


def neutral_edit(key: str, variant: str, seed: int) -> Edit:
    """A change to a function's text that leaves its cost as it is."""

    def edit(state: State) -> None:
        f = state.functions[key]
        chosen = "note" if variant == "guard" and f.guard else variant
        if chosen == "note":
            f.notes.append(
                (
                    "Keep this loop branch-free: it runs once per request.",
                    "The modulus keeps the accumulator small (see docs/operations.md).",
                    "Order matters here: callers rely on a stable result.",
                    f"Checked against production traces (ticket {seed % 900 + 100}).",
                )[(seed + len(f.notes)) % 4]
            )
        elif chosen == "doc":
            forms = [doc_of(f.name, i) for i in range(DOC_FORMS)]
            current = forms.index(f.doc) if f.doc in forms else -1
            f.doc = forms[(current + 1 + seed % (DOC_FORMS - 1)) % DOC_FORMS]
        elif chosen == "local":
            f.local = LOCALS[(LOCALS.index(f.local) + 1 + seed % 3) % len(LOCALS)]
        elif chosen == "salt":
            others = [s for s in SALTS if s != f.salt]
            f.salt = others[seed % len(others)]
        else:
            f.guard = True

    return edit


def slower_edit(key: str, work: int, note: str | None) -> Edit:
    def edit(state: State) -> None:
        state.functions[key].work = work
        if note:
            state.functions[key].notes.append(note)

    return edit


def calls_more_edit(caller: str, callee: str, count: int) -> Edit:
    def edit(state: State) -> None:
        for call in state.functions[caller].calls:
            if call.callee == callee:
                call.count = count

    return edit


def shift_edit(source: str, target: str, less: int, more: int) -> Edit:
    def edit(state: State) -> None:
        state.functions[source].work -= less
        state.functions[target].work += more

    return edit


def append_file_edit(path: str, text: str, header: str = "") -> Edit:
    """Append ``text`` to a file, which starts with ``header`` when this creates it."""

    def edit(state: State) -> None:
        state.files[path] = state.files.get(path, header) + text

    return edit


@dataclass
class Change:
    """One non-merge commit of the plan."""

    role: str
    edit: Edit
    title: str
    body: str
    author: int
    touches: frozenset[str]  # function keys and file paths, for conflict-free interleaving
