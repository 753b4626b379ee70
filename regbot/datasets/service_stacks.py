"""The scenario service's cost model: every call path from ``handle_request``, each function's
calls and work per request, and one deploy's folded stacks with their work (what the profiles
are drawn from). O(call paths × depth).

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from regbot.datasets.service_model import HANDLE, State
from regbot.datasets.service_source import Rendered

_LOOP_LINE_SHARE = 0.2  # of a function's self samples, on its `for` line; the rest on the body


def call_paths(state: State) -> list[tuple[tuple[str, ...], tuple[int, ...], float]]:
    """Every call path from handle_request: (function keys, call-site index taken at each
    step, calls per request of its last function)."""
    paths: list[tuple[tuple[str, ...], tuple[int, ...], float]] = []

    def visit(keys: tuple[str, ...], sites: tuple[int, ...], per_request: float) -> None:
        paths.append((keys, sites, per_request))
        for i, call in enumerate(state.functions[keys[-1]].calls):
            visit((*keys, call.callee), (*sites, i), per_request * call.per_call)

    visit((HANDLE,), (), 1.0)
    return paths


@dataclass(frozen=True)
class Costs:
    """Per request: each function's calls and self work; per call: its inclusive work."""

    calls: dict[str, float]
    inclusive: dict[str, float]
    total: float

    def self_work(self, state: State, key: str) -> float:
        return self.calls.get(key, 0.0) * state.functions[key].work


def costs_of(state: State) -> Costs:
    calls: dict[str, float] = {}
    for keys, _, per_request in call_paths(state):
        calls[keys[-1]] = calls.get(keys[-1], 0.0) + per_request
    inclusive: dict[str, float] = {}

    def inclusive_of(key: str) -> float:
        if key not in inclusive:
            f = state.functions[key]
            inclusive[key] = f.work + sum(c.per_call * inclusive_of(c.callee) for c in f.calls)
        return inclusive[key]

    return Costs(calls, {k: inclusive_of(k) for k in state.functions}, inclusive_of(HANDLE))


@dataclass(frozen=True)
class Stacks:
    """One deploy's folded stacks: text, work per request, the handle_request call each runs
    under (0: its own code, i + 1: call site i) for the request-mix noise."""

    texts: list[str]
    work: np.ndarray
    group: np.ndarray
    idle: str
    total_work: float


def stacks_of(state: State, rendered: Rendered) -> Stacks:
    root = [
        f"<module> (app/main.py:{rendered.module_line})",
        f"main (app/main.py:{rendered.main_line})",
    ]
    serve = f"serve_forever (app/server.py:{rendered.serve_line})"
    texts: list[str] = []
    work: list[float] = []
    group: list[int] = []
    for keys, sites, per_request in call_paths(state):
        frames = [*root, serve]
        for key, site in zip(keys[:-1], sites, strict=True):
            f = state.functions[key]
            frames.append(f"{f.qualname} ({f.path}:{rendered.lines[key].calls[site]})")
        leaf = state.functions[keys[-1]]
        lines = rendered.lines[keys[-1]]
        own = per_request * leaf.work
        for line, share in ((lines.loop, _LOOP_LINE_SHARE), (lines.body, 1 - _LOOP_LINE_SHARE)):
            texts.append(";".join([*frames, f"{leaf.qualname} ({leaf.path}:{line})"]))
            work.append(own * share)
            group.append(sites[0] + 1 if sites else 0)
    idle = ";".join([*root, f"serve_forever (app/server.py:{rendered.idle_line})"])
    return Stacks(texts, np.array(work), np.array(group), idle, float(sum(work)))
