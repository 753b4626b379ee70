"""Planning the scenario's last deploy: the culprit (a slower function or a caller that calls a
leaf more), its decoys, the cost-shift false alarm and fillers, in a random commit order.

Design: docs/design/datasets_service.md
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from regbot.datasets.service_edits import (
    NEUTRAL_VARIANTS,
    Change,
    Edit,
    append_file_edit,
    calls_more_edit,
    neutral_edit,
    shift_edit,
    slower_edit,
)
from regbot.datasets.service_messages import Messages
from regbot.datasets.service_model import (
    CALLER_CALLS_MORE_SHARE,
    HANDLE,
    REGRESSED_FUNCTION_SHARE,
    SAME_FUNCTION_SHARE,
    Function,
    ScenarioKind,
    State,
)
from regbot.datasets.service_stacks import call_paths, costs_of


class Planner:
    """Draws the changes of the scenario's commits from the service at its first deploy: the
    culprit, decoys, the cost shift and fillers (each a ``Change``)."""

    def __init__(
        self, rng: np.random.Generator, state: State, messages: Messages, kappa: float
    ) -> None:
        self.rng = rng
        self.kappa = kappa
        self.state = state
        self.messages = messages
        self.costs = costs_of(state)
        self.paths = [keys for keys, _, _ in call_paths(state)]
        self.counter = 0

    def _seed(self) -> int:
        self.counter += 1
        return int(self.rng.integers(1 << 30)) + self.counter

    def fn(self, key: str) -> Function:
        return self.state.functions[key]

    def names(self, key: str) -> dict[str, str]:
        return {"f": self.fn(key).name, "m": self.fn(key).module}

    def change(
        self,
        role: str,
        phrase: str,
        edit: Edit,
        touches: set[str],
        names: Mapping[str, str],
        must_name: bool = False,
    ) -> Change:
        """A change of ``role``; ``names`` fill its message's phrase (f, g, t, m)."""
        title, body = self.messages.message(phrase, must_name, **names)
        author = int(self.rng.integers(len(self.messages.authors)))
        return Change(role, edit, title, body, author, frozenset(touches))

    def neutral(self, role: str, key: str) -> Change:
        variant = str(self.rng.choice(NEUTRAL_VARIANTS))
        return self.change(
            role, variant, neutral_edit(key, variant, self._seed()), {key}, self.names(key)
        )

    def paths_through(self, key: str) -> list[tuple[str, ...]]:
        return [p[: p.index(key) + 1] for p in self.paths if p[-1] == key]

    def descendants(self, key: str) -> set[str]:
        return {k for p in self.paths if key in p for k in p[p.index(key) + 1 :]}

    def share(self, work: float) -> float:
        return self.kappa * work

    # --- culprit -------------------------------------------------------------------------------
    def slower(self, avoid: set[str]) -> tuple[str, Change, dict[str, object]] | None:
        """F (not in ``avoid``): its work rises so that its gCPU rises by 0.5-3 points
        (factor 1.25-4)."""
        for _ in range(40):
            rise = float(self.rng.uniform(0.005, 0.03))
            options = []
            for key in self.state.functions:
                if key == HANDLE or key in avoid:
                    continue
                own = self.share(self.costs.self_work(self.state, key))
                if own > 0 and 1.25 <= 1 + rise / own <= 4.0:
                    options.append(key)
            if options:
                key = str(self.rng.choice(options))
                f = self.fn(key)
                own = self.share(self.costs.self_work(self.state, key))
                work = int(round(f.work * (1 + rise / own)))
                note = (
                    "Recheck every field: upstream data is not always clean."
                    if self.rng.random() < 0.4
                    else None
                )
                change = self.change(
                    "culprit", "slower", slower_edit(key, work, note), {key}, self.names(key)
                )
                real = self.share(self.costs.calls[key] * (work - f.work))
                return key, change, {"factor": work / f.work, "gcpu_rise": real}
        return None

    def calls_more(self, avoid: set[str]) -> tuple[str, str, Change, dict[str, object]] | None:
        """A caller A calls a leaf B more often (neither in ``avoid``), raising B's gCPU by
        0.5-6 points."""
        options = []
        for key, f in self.state.functions.items():
            if key == HANDLE or key in avoid:
                continue
            for call in f.calls:
                callee_fn = self.fn(call.callee)
                if callee_fn.calls or call.callee in avoid:
                    continue
                step = self.share(self.costs.calls.get(key, 0.0) * callee_fn.work)
                if step <= 0:
                    continue
                extra = max(1, int(np.ceil(0.005 / step)))
                if extra <= 2 * call.count + 1 and extra * step <= 0.06:
                    options.append((key, call.callee, call.count + extra, extra * step))
        if not options:
            return None
        caller, callee, count, rise = options[int(self.rng.integers(len(options)))]
        names = {"f": self.fn(caller).name, "g": self.fn(callee).name, "m": self.fn(caller).module}
        change = self.change(
            "culprit", "calls_more", calls_more_edit(caller, callee, count), {caller}, names
        )
        before = next(c.count for c in self.fn(caller).calls if c.callee == callee)
        shared = any(caller not in p for p in self.paths_through(callee))
        details = {"calls": (before, count), "gcpu_rise": rise, "callee_has_other_callers": shared}
        return caller, callee, change, details

    # --- decoys --------------------------------------------------------------------------------
    def decoys(
        self, target: str, culprit_fn: str, kind: ScenarioKind, same: bool, regressed: bool
    ) -> list[Change]:
        paths = self.paths_through(target)
        above = [p[:-1] for p in paths]
        every = set(above[0]).intersection(*map(set, above[1:])) if above else set()
        some = set().union(*map(set, above)) - every if above else set()
        excluded = {culprit_fn, target}
        out: list[Change] = []
        every_order = [k for k in reversed(above[0]) if k in every and k not in excluded]
        if every_order:
            out.append(self.neutral("caller_all_stacks", every_order[0]))
        partial = sorted(some - excluded)
        if partial:
            out.append(self.neutral("caller", str(self.rng.choice(partial))))
        ancestors = every | some
        below = self.descendants(target)
        siblings = sorted(
            {c.callee for p in paths if len(p) > 1 for c in self.fn(p[-2]).calls}
            - ancestors
            - below
            - excluded
        )
        if siblings:
            out.append(self.neutral("sibling", str(self.rng.choice(siblings))))
        callees = sorted({c.callee for c in self.fn(target).calls} - excluded)
        if kind == "slower" and callees:
            out.append(self.neutral("callee", str(self.rng.choice(callees))))
        unrelated = sorted(set(self.state.functions) - ancestors - below - excluded - {HANDLE})
        same_module = [k for k in unrelated if self.fn(k).module == self.fn(target).module]
        pool = same_module if same_module and self.rng.random() < 0.5 else unrelated
        if pool:
            other = str(self.rng.choice(pool))
            variant = str(self.rng.choice(NEUTRAL_VARIANTS))
            out.append(
                self.change(
                    "names_function",
                    "names_function",
                    neutral_edit(other, variant, self._seed()),
                    {other},
                    {
                        "t": self.fn(target).name,
                        "g": self.fn(other).name,
                        "m": self.fn(other).module,
                    },
                    must_name=True,
                )
            )
        if same:
            out.append(self.neutral("same_function", culprit_fn))
        if regressed:
            out.append(self.neutral("regressed_function", target))
        return out

    def cost_shift(self) -> tuple[str, str, Change, float] | None:
        """Work moves from leaf X to leaf Y inside their only caller P: Y's gCPU rises by
        0.3-1.2 points (at most 60% of X's) while P's inclusive cost stays flat. Returns P, Y,
        the change and Y's rise; the culprit is then planted outside P's subtree, so that P
        stays flat."""
        callers: dict[str, set[str]] = {}
        for f in self.state.functions.values():
            for c in f.calls:
                callers.setdefault(c.callee, set()).add(f.key)
        options = []
        for key, f in self.state.functions.items():
            if key == HANDLE:
                continue
            leaves = [
                c for c in f.calls if not self.fn(c.callee).calls and callers[c.callee] == {key}
            ]
            for x in leaves:
                for y in leaves:
                    if x is not y:
                        options.append((key, x, y))
        self.rng.shuffle(options)
        for parent, x, y in options:
            per_call = self.costs.calls.get(parent, 0.0)
            unit = self.share(per_call * x.count * y.count)
            most = min(0.012, 0.6 * self.share(per_call * x.count * self.fn(x.callee).work))
            if unit <= 0 or most < 0.003:
                continue
            k = max(1, int(round(float(self.rng.uniform(0.003, most)) / unit)))
            less, more = k * y.count, k * x.count
            names = {"f": self.fn(x.callee).name, "g": self.fn(y.callee).name}
            names["m"] = self.fn(parent).module
            change = self.change(
                "cost_shift",
                "cost_shift",
                shift_edit(x.callee, y.callee, less, more),
                {x.callee, y.callee},
                names,
            )
            return parent, y.callee, change, k * unit
        return None

    # --- fillers -------------------------------------------------------------------------------
    def filler(self, avoid: set[str]) -> Change:
        draw = self.rng.random()
        keys = [k for k in self.state.functions if k not in avoid]
        if draw < 0.4 and keys:
            return self.neutral("filler", str(self.rng.choice(keys)))
        key = str(self.rng.choice(list(self.state.functions)))
        f = self.fn(key)
        seed = self._seed()
        if draw < 0.6:
            path = str(self.rng.choice(["README.md", "docs/operations.md", f"docs/{f.module}.md"]))
            text = (
                f"\n## {f.module} notes ({seed % 1000})\n\n`{f.qualname}` is part of {f.module}.\n"
            )
            return self.change(
                "filler", "docs", append_file_edit(path, text), {path}, self.names(key)
            )
        if draw < 0.85:
            path = f"tests/test_{f.module}.py"
            call = f"{f.module}.{f.name}" if not f.cls else f"{f.module}.{f.cls}().{f.name}"
            text = f"\n\ndef test_{f.name}_{seed % 1000}():\n    assert {call}(1) >= 0\n"
            header = f"from app import {f.module}\n"
            return self.change(
                "filler", "tests", append_file_edit(path, text, header), {path}, self.names(key)
            )
        path = "config/service.yaml"
        text = f"# tuned {seed % 1000}\nworkers_{seed % 97}: {seed % 16 + 1}\n"
        return self.change(
            "filler", "config", append_file_edit(path, text), {path}, {"m": "config"}
        )


@dataclass
class LastDeploy:
    """The last deploy's plan: the culprit's kind, the regressed function T, the function the
    culprit commit edits, the changes in commit order, the cost shift's Y and rise."""

    kind: ScenarioKind
    target: str
    culprit_function: str
    changes: list[Change]
    shifted: str | None
    shift_rise: float | None
    ambiguous: bool
    details: dict[str, object]


def plan_last_deploy(
    rng: np.random.Generator,
    planner: Planner,
    kind: ScenarioKind | None,
    same_function: bool | None,
    commits: tuple[int, int],
) -> LastDeploy:
    """Culprit, decoys, cost shift and fillers of the last deploy, in a random order. A forced
    ``caller_calls_more`` that the call graph cannot carry falls back to ``slower``."""
    share = rng.random()
    chosen: ScenarioKind = kind or (
        "caller_calls_more" if share < CALLER_CALLS_MORE_SHARE else "slower"
    )
    drawn_same = bool(rng.random() < SAME_FUNCTION_SHARE)  # drawn even when forced: same stream
    same = drawn_same if same_function is None else same_function
    regressed = bool(rng.random() < REGRESSED_FUNCTION_SHARE)
    shift = planner.cost_shift()
    off_limits = {shift[0], *planner.descendants(shift[0])} if shift is not None else set()
    plant = planner.calls_more(off_limits) if chosen == "caller_calls_more" else None
    if plant is not None:
        culprit_fn, target, culprit, details = plant
    else:
        chosen = "slower"
        slow = planner.slower(off_limits) or planner.slower(set())
        if slow is None:
            raise AssertionError("no function can carry the planted regression")
        target, culprit, details = slow
        culprit_fn = target
    if target in off_limits:
        shift = None  # the only function able to regress is below P: no cost shift
    regressed = regressed and chosen == "caller_calls_more"
    plan = [culprit, *planner.decoys(target, culprit_fn, chosen, same, regressed)]
    if shift is not None:
        plan.append(shift[2])
    count = int(rng.integers(commits[0], commits[1] + 1))
    avoid = {target, culprit_fn}.union(*(c.touches for c in plan[1:]))
    plan += [planner.filler(avoid) for _ in range(max(0, count - len(plan)))]
    order = rng.permutation(len(plan))
    return LastDeploy(
        chosen,
        target,
        culprit_fn,
        [plan[int(i)] for i in order],
        shift[1] if shift else None,
        shift[3] if shift else None,
        same or regressed,
        details,
    )
