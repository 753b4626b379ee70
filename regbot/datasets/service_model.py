"""The scenario service's model (``regbot.datasets.service``): functions with their work and
calls, modules, and the repository's content at one commit (``State``); the scenario's
timeline and plant constants.

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ScenarioKind = Literal["slower", "caller_calls_more"]
SCENARIO_KINDS: tuple[ScenarioKind, ...] = ("slower", "caller_calls_more")

BUCKET_S = 600
HISTORICAL_S = 3 * 86_400
ANALYSIS_S = 4 * 3_600
EXTENDED_S = 6 * 3_600
HOST = "web01"
FIRST_DAY_S = 1_789_948_800  # 2026-09-21T00:00:00Z; each seed starts a few days later
CALLER_CALLS_MORE_SHARE = 0.25
SAME_FUNCTION_SHARE = 0.3
REGRESSED_FUNCTION_SHARE = 0.25
MIN_FUNCTIONS = 40
MAX_STACKS = 200  # call paths of one deploy's service (×2 lines per leaf in the folded files)
DAY_S = 86_400


@dataclass
class Call:
    """One call site: ``count`` calls per call of the caller, or, for ``handle_request``'s
    dispatch, ``tenths`` of the requests."""

    callee: str
    count: int = 1
    tenths: int | None = None

    @property
    def per_call(self) -> float:
        return self.tenths / 10 if self.tenths is not None else float(self.count)


@dataclass
class Function:
    """A function or method; ``work`` is its loop count (its self cost in work units)."""

    key: str
    module: str
    name: str
    cls: str | None
    work: int
    calls: list[Call]
    doc: str
    notes: list[str] = field(default_factory=list)
    salt: int = 31
    local: str = "total"
    guard: bool = False

    @property
    def qualname(self) -> str:
        return f"{self.cls}.{self.name}" if self.cls else self.name

    @property
    def path(self) -> str:
        return f"app/{self.module}.py"

    @property
    def subroutine(self) -> str:
        return f"{self.qualname} ({self.path})"


@dataclass
class Module:
    name: str
    doc: str
    cls: str | None
    functions: list[str]

    @property
    def instance(self) -> str | None:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.cls).upper() if self.cls else None


@dataclass
class State:
    """The repository's content at one commit: the service model and the other files."""

    service: str
    modules: dict[str, Module]  # in call order: a module calls only later ones
    functions: dict[str, Function]
    files: dict[str, str]


SERVER, HANDLE = "server", "server:handle_request"

# What a function's text is drawn from, and what neutral edits change it to.
SALTS = (31, 37, 41, 43, 47, 53)
LOCALS = ("total", "acc", "result", "value")
DOC_FORMS = 4


def doc_of(name: str, variant: int = 0) -> str:
    """Docstring form ``variant`` (of ``DOC_FORMS``) of the function ``name``."""
    words = name.replace("_", " ")
    forms = (
        f"{words.capitalize()} for one request.",
        f"{words.capitalize()}; called once per request on the hot path.",
        f"{words.capitalize()} (see docs/ for the data model).",
        f"Return the {words} of the request.",
    )
    return forms[variant % len(forms)]
