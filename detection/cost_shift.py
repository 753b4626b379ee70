"""Cost-shift detector (FBDetect §5.4): drop regressions that only moved cost within a domain.

A *cost domain* is a group of series within which a refactoring can move cost; the regression is
a cost shift when a domain's total hardly changed while the regressed series rose. Every series
belongs to a *family* (its id up to and including the first ``:``, e.g. ``gcpu:``; "" without
one) and has a *key* (the rest: the subroutine for ``gcpu:`` series, the path for ``endpoint:``).
Domains only ever sum series of the candidate's own family. Domains of a candidate ``S``:

* ``callers`` (gCPU): members ``S`` and one caller ``C``, FBDetect's tightest *enclosing*
  caller. ``C`` must be among ``context.callers[S]``, have a series, not be the program's root
  (see ``WHOLE_PROGRAM``), and enclose ``S``: be present on every one of the stacks that carry
  ``S``'s samples in the windows, i.e. ``context.stacks[S].stack_ids`` ⊆
  ``context.stacks[C].stack_ids``. A caller on only some of ``S``'s stacks holds only part of a
  rise of ``S``: a helper called from several places that really got slower rises in each
  caller by that caller's share only, which would pass for "flat". A caller without a
  ``StackShare`` in the context is not shown to enclose ``S`` and is not used (the context
  should carry the callers' shares, not only the candidates'); only when ``S`` itself has no
  stack samples (no sample store, plain data in tests) does the callers set stand as given.
  Of the enclosing callers, those whose inclusive before-mean and after-mean (on the
  candidate's axis) are both >= ``S``'s, the smallest by before-mean, ties by name, is the
  tightest (enclosing callers nest: the closest one has the fewest samples). The domain cost
  is ``C``'s inclusive series alone (it already contains ``S``; summing would double count).
  Cost moved from ``C``'s own code, or from a sibling under ``C``, into ``S`` leaves it flat.
  Moves from a further ancestor's own code are not seen (that ancestor is not the tightest).
* ``class`` (gCPU): the subroutines whose parsed function has ``S``'s qualifier (the name
  without its last component: ``Svc`` for ``Svc.serve``, ``ns::Class`` for
  ``ns::Class::method(int)``, ``pkg.Class`` for Java's ``pkg.Class.method``,
  ``net/http.(*conn)`` for Go's ``net/http.(*conn).serve``; a Go name with a ``/`` whose
  qualifier is only its package has no class; a C++ free function's namespace and a ``/``-less
  Go package, e.g. ``std`` and ``main``, cannot be told from a class and count as one) and the
  same file when ``S`` has one. The cost is
  the sum of their inclusive series: a method that calls a sibling counts the sibling twice, so
  a real regression in the callee moves the total by 2x (still a real increase), and cost moved
  from a caller's own code into a sibling callee moves it by 1x (missed here; the callers domain
  sees it).
* ``metadata``: ``context.metadata[S]`` up to and including its last ``/`` or ``:`` is the
  prefix; members are the series whose metadata starts with it (the whole subtree).
* ``endpoint`` (ids ``endpoint:<path>`` or kind ``endpoint``): the key up to and including its
  last ``/`` (a trailing ``/`` ignored), else its last ``.`` (RPC ``Service.method``); members
  are the family's series whose key starts with that prefix.
* ``commit``: one domain per commit of ``context.commit_subroutines`` modifying ``S``: ``S``
  and the other subroutines it modifies (nested ones double count, as for ``class``).
* ``custom``: per ``(name, regex)`` of ``settings.custom_domains`` whose ``re.search`` matches
  ``S``'s key: the family's keys it matches; with a capture group, only those whose first
  group's value (None when it did not take part) equals ``S``'s, named ``name[value]``.

Domains with ``S`` as their only member are skipped. Each domain's cost series is the sum of its
summed members on the timestamps they share, read on the candidate's axis (the intersection of
the two when they differ); before = points earlier than ``times_s[change_index]``, after = the
rest. With ``Δ`` the candidate's ``delta`` and ``tiny = NEW_SHARE × |Δ|`` (oriented values, so
levels are compared by magnitude), per domain, in order (§5.4's three checks):

1. ``new domain``: ``|S before| <= tiny`` or ``|domain before| <= tiny`` — not a shift here;
2. ``too large``: ``|domain before| > domain_cost_ratio × |Δ|`` — skipped, its own noise and
   season would hide the regression;
3. ``shift``: ``|domain after − domain before| <= negligible_share × |Δ|`` — a cost shift;
4. otherwise ``real increase``. (``no overlap``: no shared point on one side; ``no change``:
   ``Δ`` is 0 or not finite, nothing to explain.)

The verdict fails (filtered) when any domain says ``shift``; its numbers list every domain
checked as parallel lists. Complexity: the indexes are built once per call, O(series); each
distinct domain total once, O(members × points); then O(points) per candidate and domain, and
O(|S's stacks| · log |C's stacks|) per caller whose enclosure is checked.
``cost_shift_verdict`` builds the indexes for its one candidate, so loops should call
``cost_shift_verdicts`` (10,000 candidates over 10,000 series: under a second).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Literal

import numpy as np

from regbot.detection.model import (
    Candidate,
    CostShiftSettings,
    DedupContext,
    Verdict,
    subroutine_of_series,
)
from regbot.profiles.model import parse_frame

__all__ = [
    "CostDomain",
    "class_qualifier",
    "cost_domains",
    "cost_shift_verdict",
    "cost_shift_verdicts",
]

STAGE = "cost_shift"
NEW_SHARE = 0.01  # a level within 1% of |Δ| of zero did not exist before the change

# A caller whose inclusive gCPU is this close to 1 is on every sample (the program's root): its
# total cannot change, so as a cost domain it would make every regression below it a "shift".
WHOLE_PROGRAM = 0.999

DomainKind = Literal["callers", "class", "metadata", "endpoint", "commit", "custom"]
Check = Literal["new domain", "too large", "shift", "real increase", "no overlap", "no change"]


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
    """The candidate's cost domains with at least one member besides itself (module docstring)."""
    return _Run(context, settings).domains(candidate)


def cost_shift_verdict(
    candidate: Candidate, context: DedupContext, settings: CostShiftSettings
) -> Verdict:
    """§5.4 on one candidate: passed = not a cost shift (keep)."""
    return cost_shift_verdicts([candidate], context, settings)[0]


def cost_shift_verdicts(
    candidates: Sequence[Candidate], context: DedupContext, settings: CostShiftSettings
) -> list[Verdict]:
    """§5.4 on many candidates, sharing indexes and domain totals between them."""
    run = _Run(context, settings)
    return [run.verdict(c) for c in candidates]


def class_qualifier(function: str) -> str | None:
    """The enclosing class of a parsed function name, or None (see the module docstring)."""
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


class _Run:
    """Indexes and domain totals shared by all candidates of one call (built lazily)."""

    def __init__(self, context: DedupContext, settings: CostShiftSettings) -> None:
        self.context, self.settings = context, settings
        self.extra: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.families: dict[str, list[str]] = {}
        for sid in context.series:
            self.families.setdefault(_family(sid)[0], []).append(sid)
        self.sub_commits: dict[str, list[str]] = {}
        for commit in sorted(context.commit_subroutines):
            for sub in context.commit_subroutines[commit]:
                self.sub_commits.setdefault(sub, []).append(commit)
        self.patterns = [(name, re.compile(rx)) for name, rx in settings.custom_domains]
        self.classes: dict[tuple[str, str | None], list[str]] | None = None
        self.prefixed: dict[tuple[str, str, str], tuple[str, ...]] = {}
        self.custom: dict[tuple[int, str], dict[object, list[str]]] = {}
        self.curves: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

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
                members = self._class_index().get((qualifier, info.file), ())
                name = f"{qualifier} ({info.file})" if info.file else qualifier
                found.append(CostDomain("class", name, _with(sid, members)))
            for commit in self.sub_commits.get(sub, ()):
                subs = {f"gcpu:{s}" for s in ctx.commit_subroutines[commit]}
                members = [s for s in subs if s in ctx.series]
                found.append(CostDomain("commit", commit, _with(sid, members)))
        meta = ctx.metadata.get(sid, "")
        cut = max(meta.rfind("/"), meta.rfind(":"))
        if cut >= 0:
            prefix = meta[: cut + 1]
            members = self._prefixed("metadata", family, prefix)
            found.append(CostDomain("metadata", prefix, _with(sid, members)))
        if family == "endpoint:" or cand.kind == "endpoint":
            prefix = _endpoint_prefix(key)
            if prefix is not None:
                members = self._prefixed("endpoint", family, prefix)
                found.append(CostDomain("endpoint", prefix, _with(sid, members)))
        for i, (name, pattern) in enumerate(self.patterns):
            match = pattern.search(key)
            if match is not None:
                value = match.group(1) if pattern.groups else None
                members = self._custom_index(i, family).get(value, ())
                label = f"{name}[{value}]" if pattern.groups else name
                found.append(CostDomain("custom", label, _with(sid, members)))
        return [d for d in found if len(d.members) > 1]

    def _tightest_caller(self, cand: Candidate, sub: str) -> str | None:
        s_before, s_after = self._means((cand.series_id,), cand)
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
            if before >= s_before and after >= s_after and (best is None or (before, cid) < best):
                best = (before, cid)
        return None if best is None else best[1]

    def _encloses(self, caller: str, sub: str) -> bool:
        """``caller`` is on every stack carrying ``sub``'s samples (module docstring)."""
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
            pattern, index = self.patterns[i][1], {}
            for sid in self.families.get(family, []):
                match = pattern.search(_family(sid)[1])
                if match is not None:
                    value = match.group(1) if pattern.groups else None
                    index.setdefault(value, []).append(sid)
            self.custom[(i, family)] = index
        return self.custom[(i, family)]

    # --- domain costs ----------------------------------------------------------------------

    def _curve(self, ids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(times, total, cumulative sum with a leading 0) of the sum of ``ids``' series."""
        if ids not in self.curves:
            arrays = [self.context.series.get(s) or self.extra[s] for s in ids]
            t0 = np.asarray(arrays[0][0], np.float64)
            if all(t is arrays[0][0] or np.array_equal(t, t0) for t, _ in arrays):
                total = np.sum([np.asarray(v, np.float64) for _, v in arrays], axis=0)
            else:
                t0 = reduce(np.intersect1d, (np.asarray(t, np.float64) for t, _ in arrays))
                total = sum(
                    (np.asarray(v, np.float64)[np.searchsorted(t, t0)] for t, v in arrays),
                    np.zeros(len(t0)),
                )
            self.curves[ids] = (t0, total, np.concatenate(([0.0], np.cumsum(total))))
        return self.curves[ids]

    def _means(self, ids: tuple[str, ...], cand: Candidate) -> tuple[float, float]:
        """Mean of the summed series before and after the candidate's change, on its axis."""
        times, total, csum = self._curve(ids)
        tc, c = cand.times_s, cand.change_index
        n = len(tc)
        if not 0 < c < n:
            return math.nan, math.nan
        lo = int(np.searchsorted(times, tc[0]))
        hi = lo + n
        if hi <= len(times) and (times is tc or np.array_equal(times[lo:hi], tc)):
            return (csum[lo + c] - csum[lo]) / c, (csum[hi] - csum[lo + c]) / (n - c)
        on_axis = np.isin(times, tc)
        early = times < tc[c]
        before, after = total[on_axis & early], total[on_axis & ~early]
        return (
            float(before.mean()) if before.size else math.nan,
            float(after.mean()) if after.size else math.nan,
        )

    # --- verdict ---------------------------------------------------------------------------

    def verdict(self, cand: Candidate) -> Verdict:
        s = self.settings
        delta = cand.delta
        scale = abs(delta)
        domains = self.domains(cand)
        numbers: dict[str, object] = {
            "subroutine": subroutine_of_series(cand.series_id),
            "candidate_before": _plain(cand.mean_before),
            "candidate_after": _plain(cand.mean_after),
            "candidate_delta": _plain(delta),
            "domain_cost_ratio": s.domain_cost_ratio,
            "negligible_share": s.negligible_share,
            "new_share": NEW_SHARE,
        }
        rows = [(d, *self._means(d.cost_series, cand)) for d in domains]
        checks = [self._check(cand, before, after, scale) for _, before, after in rows]
        numbers.update(
            domain_kinds=[d.kind for d in domains],
            domain_names=[d.name for d in domains],
            domain_members=[len(d.members) for d in domains],
            domain_before=[_plain(b) for _, b, _ in rows],
            domain_after=[_plain(a) for _, _, a in rows],
            domain_delta=[_plain(a - b) for _, b, a in rows],
            domain_checks=list(checks),
        )
        shift = next((i for i, check in enumerate(checks) if check == "shift"), None)
        numbers["shift_domain"] = (
            None if shift is None else f"{domains[shift].kind} {domains[shift].name}"
        )
        if shift is not None:
            d, before, after = rows[shift]
            reason = (
                f"cost shift within {d.kind} domain {d.name!r} ({len(d.members)} members): "
                f"domain cost {before:.4g} -> {after:.4g} (change {after - before:+.4g}) vs "
                f"regression change {delta:+.4g}; |domain change| <= {s.negligible_share:g} x "
                f"regression change"
            )
            return Verdict(STAGE, False, reason, numbers)
        if not math.isfinite(delta) or delta == 0.0:
            return Verdict(STAGE, True, "kept: no change to explain", numbers)
        if not domains:
            what = "metric kind" if numbers["subroutine"] is None else "subroutine"
            return Verdict(STAGE, True, f"no cost domains for this {what}", numbers)
        tally = ", ".join(f"{checks.count(k)} {k}" for k in _CHECKS if k in checks)
        return Verdict(STAGE, True, f"kept: no domain shows a cost shift ({tally})", numbers)

    def _check(self, cand: Candidate, before: float, after: float, scale: float) -> Check:
        if not math.isfinite(scale) or scale == 0.0:
            return "no change"
        if not (math.isfinite(before) and math.isfinite(after)):
            return "no overlap"
        tiny = NEW_SHARE * scale
        if abs(cand.mean_before) <= tiny or abs(before) <= tiny:
            return "new domain"
        if abs(before) > self.settings.domain_cost_ratio * scale:
            return "too large"
        if abs(after - before) <= self.settings.negligible_share * scale:
            return "shift"
        return "real increase"


_CHECKS: tuple[Check, ...] = (
    "shift",
    "real increase",
    "too large",
    "new domain",
    "no overlap",
    "no change",
)


def _plain(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
