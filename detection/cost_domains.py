"""Cost domains of the cost-shift check (FBDetect §5.4): which series a regression's cost may
have moved within, and their summed cost on the regression's time axis.

Complexity: the indexes are built once per ``DomainIndex``,
O(series); each distinct domain total once, O(members × points); a domain's member matrix (for
the search of members that fell, ``regbot.detection.cost_shift``) once, O(members × points),
then O(members) per candidate; O(|S's stacks| · log |C's stacks|) per caller whose enclosure is
checked.
Design: docs/design/cost_domains.md
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Literal

import numpy as np
import numpy.typing as npt

from regbot.detection.dedup_context import DedupContext, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.stage_settings import CostShiftSettings
from regbot.profiles.model import parse_frame

__all__ = ["CostDomain", "DomainIndex", "class_qualifier", "cost_domains"]

# A caller whose inclusive gCPU is this close to 1 is on every sample (the program's root): its
# total cannot change, so as a cost domain it would make every regression below it a "shift".
WHOLE_PROGRAM = 0.999

DomainKind = Literal["callers", "class", "metadata", "endpoint", "commit", "custom"]


@dataclass(frozen=True, slots=True)
class CostDomain:
    """A group of series within which cost may have shifted. ``members``: sorted series ids,
    the candidate's included; ``summed``: the series whose sum is the domain's cost when that is
    not all the members (the ``callers`` domain: the caller's inclusive series alone)."""

    kind: DomainKind
    name: str
    members: tuple[str, ...]
    summed: tuple[str, ...] = ()

    @property
    def cost_series(self) -> tuple[str, ...]:
        return self.summed or self.members


def cost_domains(
    candidate: Candidate, context: DedupContext, settings: CostShiftSettings
) -> list[CostDomain]:
    """The candidate's cost domains with at least one member besides itself (docs/design/cost_domains.md)."""
    return DomainIndex(context, settings).domains(candidate)


def class_qualifier(function: str) -> str | None:
    """The enclosing class of a parsed function name, or None (see docs/design/cost_domains.md)."""
    if "::" in function:
        parts = _split_top(function, "::")
        return "::".join(parts[:-1]) if len(parts) > 1 and parts[0] else None
    head, slash, tail = function.rpartition("/")
    parts = _split_top(tail, ".")
    if len(parts) < 2 or not all(parts[:-1]):
        return None
    if slash and len(parts) == 2 and not parts[0].startswith("("):
        return None  # a Go package-level function: its qualifier is a package, not a class
    return head + slash + ".".join(parts[:-1])


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets (C++ templates and arguments, Go receivers)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _family(series_id: str) -> tuple[str, str]:
    family, colon, key = series_id.partition(":")
    return (family + colon, key) if colon else ("", series_id)


def _with(series_id: str, members: Iterable[str]) -> tuple[str, ...]:
    """Sorted members, the candidate's series always among them (it may lack a context series)."""
    return tuple(sorted({*members, series_id}))


def _endpoint_prefix(key: str) -> str | None:
    path = key.rstrip("/")
    cut = path.rfind("/") if "/" in path else path.rfind(".")
    return path[: cut + 1] if cut >= 0 else None


class DomainIndex:
    """Indexes and domain totals shared by all candidates of one call (built lazily)."""

    def __init__(self, context: DedupContext, settings: CostShiftSettings) -> None:
        self.context, self.settings = context, settings
        self.extra: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.families: dict[str, list[str]] = {}
        self.known = frozenset(context.all_series_ids())
        for sid in context.all_series_ids():
            self.families.setdefault(_family(sid)[0], []).append(sid)
        self.sub_commits: dict[str, list[str]] = {}
        for commit in sorted(context.commit_subroutines):
            for sub in context.commit_subroutines[commit]:
                self.sub_commits.setdefault(sub, []).append(commit)
        self.patterns = [(d.name, re.compile(d.regex)) for d in settings.domains]
        self.classes: dict[tuple[str, str | None], list[str]] | None = None
        self.prefixed: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self.custom: dict[tuple[int, str], dict[object, list[str]]] = {}
        self.curves: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
        self.matrices: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray] | None] = {}

    # --- domains ---------------------------------------------------------------------------

    def domains(self, cand: Candidate) -> list[CostDomain]:
        sid, ctx = cand.series_id, self.context
        if sid not in ctx.series:
            self.extra[sid] = (cand.times_s, cand.values)
        family, key = _family(sid)
        found: list[CostDomain] = []
        sub = subroutine_of_series(sid)
        if sub is not None:
            caller = self._tightest_caller(cand, sub)
            if caller is not None:
                found.append(
                    CostDomain("callers", caller[5:], tuple(sorted((sid, caller))), (caller,))
                )
            info = parse_frame(sub)
            qualifier = class_qualifier(info.function)
            if qualifier is not None:
                members: Sequence[str] = self._class_index().get((qualifier, info.file), ())
                name = f"{qualifier} ({info.file})" if info.file else qualifier
                found.append(CostDomain("class", name, _with(sid, members)))
            for commit in self.sub_commits.get(sub, ()):
                subs = {f"gcpu:{s}" for s in ctx.commit_subroutines[commit]}
                members = [s for s in subs if s in self.known]
                found.append(CostDomain("commit", commit, _with(sid, members)))
        meta = ctx.metadata.get(sid, "")
        cut = max(meta.rfind("/"), meta.rfind(":"))
        if cut >= 0:
            prefix = meta[: cut + 1]
            members = self._prefixed("metadata", family, prefix)
            found.append(CostDomain("metadata", prefix, _with(sid, members)))
        if family == "endpoint:" or cand.kind == "endpoint":
            endpoint = _endpoint_prefix(key)
            if endpoint is not None:
                members = self._prefixed("endpoint", family, endpoint)
                found.append(CostDomain("endpoint", endpoint, _with(sid, members)))
        for i, (name, pattern) in enumerate(self.patterns):
            match = pattern.search(key)
            if match is not None:
                value = match.group(1) if pattern.groups else None
                members = self._custom_index(i, family).get(value, ())
                label = f"{name}[{value}]" if pattern.groups else name
                found.append(CostDomain("custom", label, _with(sid, members)))
        return [d for d in found if len(d.members) > 1]

    def member_ids(self, cand: Candidate) -> set[str]:
        """Every series any of the candidate's domains could hold, found from ids alone: the
        series whose values the domains need (all callers stand in for the tightest)."""
        sid = cand.series_id
        family, key = _family(sid)
        wanted = {sid}
        sub = subroutine_of_series(sid)
        if sub is not None:
            wanted |= {f"gcpu:{c}" for c in self.context.callers.get(sub, ())} & self.known
            qualifier = class_qualifier(parse_frame(sub).function)
            if qualifier is not None:
                wanted.update(self._class_index().get((qualifier, parse_frame(sub).file), ()))
            for commit in self.sub_commits.get(sub, ()):
                subs = {f"gcpu:{s}" for s in self.context.commit_subroutines[commit]}
                wanted |= subs & self.known
        meta = self.context.metadata.get(sid, "")
        cut = max(meta.rfind("/"), meta.rfind(":"))
        if cut >= 0:
            wanted.update(self._prefixed("metadata", family, meta[: cut + 1]))
        if family == "endpoint:" or cand.kind == "endpoint":
            endpoint = _endpoint_prefix(key)
            if endpoint is not None:
                wanted.update(self._prefixed("endpoint", family, endpoint))
        for i, (_, pattern) in enumerate(self.patterns):
            match = pattern.search(key)
            if match is not None:
                value = match.group(1) if pattern.groups else None
                wanted.update(self._custom_index(i, family).get(value, ()))
        return wanted

    def _tightest_caller(self, cand: Candidate, sub: str) -> str | None:
        own: tuple[float, float] | None = None  # S's means, once a caller needs them
        best: tuple[float, str] | None = None
        for caller in self.context.callers.get(sub, ()):
            cid = f"gcpu:{caller}"
            if cid == cand.series_id or cid not in self.context.series:
                continue
            if not self._encloses(caller, sub):
                continue
            before, after = self._means((cid,), cand)
            if before >= WHOLE_PROGRAM and after >= WHOLE_PROGRAM:
                continue  # on every sample (gCPU 1 by definition): no cost can shift into it
            own = own or self._means((cand.series_id,), cand)
            if before >= own[0] and after >= own[1] and (best is None or (before, cid) < best):
                best = (before, cid)
        return None if best is None else best[1]

    def _encloses(self, caller: str, sub: str) -> bool:
        """``caller`` is on every stack carrying ``sub``'s samples (docs/design/cost_domains.md)."""
        own = self.context.stacks.get(sub)
        if own is None or len(own.stack_ids) == 0:
            return True  # no stack evidence for S: the callers set stands as given
        share = self.context.stacks.get(caller)
        if share is None:
            return False
        theirs = np.asarray(share.stack_ids, np.int64)  # sorted (StackShare)
        if len(theirs) == 0:
            return False
        mine = np.asarray(own.stack_ids, np.int64)
        at = np.minimum(np.searchsorted(theirs, mine), len(theirs) - 1)
        return bool(np.array_equal(theirs[at], mine))

    def _class_index(self) -> dict[tuple[str, str | None], list[str]]:
        if self.classes is None:
            self.classes = {}
            for sid in self.families.get("gcpu:", []):
                info = parse_frame(sid[5:])
                qualifier = class_qualifier(info.function)
                if qualifier is not None:
                    self.classes.setdefault((qualifier, info.file), []).append(sid)
        return self.classes

    def _prefixed(self, kind: str, family: str, prefix: str) -> tuple[str, ...]:
        """The family's series whose metadata (or endpoint key) starts with ``prefix``."""
        cache_key = (kind, family, prefix)
        if cache_key not in self.prefixed:
            meta = self.context.metadata
            ids = self.families.get(family, [])
            if kind == "metadata":
                hits = [s for s in ids if meta.get(s, "").startswith(prefix)]
            else:
                hits = [s for s in ids if _family(s)[1].startswith(prefix)]
            self.prefixed[cache_key] = tuple(sorted(hits))
        return self.prefixed[cache_key]

    def _custom_index(self, i: int, family: str) -> dict[object, list[str]]:
        if (i, family) not in self.custom:
            pattern = self.patterns[i][1]
            index: dict[object, list[str]] = {}
            for sid in self.families.get(family, []):
                match = pattern.search(_family(sid)[1])
                if match is not None:
                    value = match.group(1) if pattern.groups else None
                    index.setdefault(value, []).append(sid)
            self.custom[(i, family)] = index
        return self.custom[(i, family)]

    # --- domain costs on the candidate's axis ----------------------------------------------

    def _series(self, series_id: str) -> tuple[np.ndarray, np.ndarray]:
        return self.context.series.get(series_id) or self.extra[series_id]

    def _curve(self, ids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(times, total) of the sum of ``ids``' series on the timestamps they share."""
        if ids not in self.curves:
            arrays = [self._series(s) for s in ids]
            t0 = np.asarray(arrays[0][0], np.float64)
            if len(arrays) == 1:
                total = np.asarray(arrays[0][1], np.float64)
            elif all(t is arrays[0][0] or np.array_equal(t, t0) for t, _ in arrays):
                total = np.sum([np.asarray(v, np.float64) for _, v in arrays], axis=0)
            else:
                t0 = reduce(np.intersect1d, (np.asarray(t, np.float64) for t, _ in arrays))
                total = sum(
                    (np.asarray(v, np.float64)[np.searchsorted(t, t0)] for t, v in arrays),
                    np.zeros(len(t0)),
                )
            self.curves[ids] = (t0, total)
        return self.curves[ids]

    def on_axis(
        self, ids: tuple[str, ...], cand: Candidate
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """The sum of ``ids`` on the candidate's points it shares: (positions, values).
        ``positions`` is None when every point of the candidate's axis is shared (``values``
        then align with ``cand.values``), else the sorted indices into the candidate's axis."""
        times, total = self._curve(ids)
        tc = cand.times_s
        n = len(tc)
        lo = int(np.searchsorted(times, tc[0])) if n else 0
        hi = lo + n
        if hi <= len(times) and (times is tc or np.array_equal(times[lo:hi], tc)):
            return None, total[lo:hi]
        on = np.isin(times, tc)
        return np.searchsorted(tc, times[on]), total[on]

    def _means(self, ids: tuple[str, ...], cand: Candidate) -> tuple[float, float]:
        """Mean of the summed series before and after the candidate's change, on its axis."""
        positions, values = self.on_axis(ids, cand)
        split = _split_of(positions, cand.change_index)
        if split <= 0 or split >= len(values):
            return float("nan"), float("nan")
        return float(values[:split].mean()), float(values[split:].mean())

    def member_changes(
        self, members: tuple[str, ...], cand: Candidate, positions: np.ndarray | None
    ) -> np.ndarray:
        """Each member's change (after mean - before mean) at the candidate's change, on the
        domain's shared points ``positions`` (``on_axis``). With the whole axis shared, from a
        (members, points + 1) cumulative-sum matrix cached per domain: O(members) per
        candidate."""
        c = cand.change_index
        if positions is None:
            matrix = self._matrix(members)
            if matrix is not None:
                times, cums = matrix
                lo = int(np.searchsorted(times, cand.times_s[0]))
                n = len(cand.times_s)
                before = (cums[:, lo + c] - cums[:, lo]) / c
                changes: npt.NDArray[np.float64] = (cums[:, lo + n] - cums[:, lo + c]) / (
                    n - c
                ) - before
                return changes
        on = [self.member_on(m, cand, positions) for m in members]
        return np.array([_change(values, positions, c) for values in on])

    def member_on(self, member: str, cand: Candidate, positions: np.ndarray | None) -> np.ndarray:
        """One member's values on the domain's shared points (which its own points include)."""
        own, values = self.on_axis((member,), cand)
        if positions is None:
            return values
        shared: npt.NDArray[np.float64] = values[
            positions if own is None else np.searchsorted(own, positions)
        ]
        return shared

    def _matrix(self, members: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        """(times, cumulative sums with a leading 0 column) of the members on one shared time
        array, or None when their time arrays differ."""
        if members not in self.matrices:
            arrays = [self._series(s) for s in members]
            t0 = arrays[0][0]
            if all(t is t0 or np.array_equal(t, t0) for t, _ in arrays):
                rows = np.array([np.asarray(v, np.float64) for _, v in arrays])
                cums = np.zeros((len(members), rows.shape[1] + 1))
                np.cumsum(rows, axis=1, out=cums[:, 1:])
                self.matrices[members] = (np.asarray(t0, np.float64), cums)
            else:
                self.matrices[members] = None
        return self.matrices[members]


def _split_of(positions: np.ndarray | None, change_index: int) -> int:
    """The number of shared points before the candidate's change."""
    if positions is None:
        return change_index
    return int(np.searchsorted(positions, change_index))


def _change(values: np.ndarray, positions: np.ndarray | None, change_index: int) -> float:
    split = _split_of(positions, change_index)
    if split <= 0 or split >= len(values):
        return float("nan")
    return float(values[split:].mean() - values[:split].mean())
