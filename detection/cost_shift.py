"""Cost-shift check (FBDetect §5.4): drop regressions that only moved cost within a domain.

A regression is a cost shift when, in one of its cost domains (``cost_domains``), the domain's
total changed significantly less than the regression did, judged against the domain's own noise
(``cost_shift_stats``), and by no more than a negligible share of its change.

Complexity: domain discovery as in ``cost_domains``; then per candidate and domain O(points) to
gather rows; the statistics run vectorised over all rows of a chunk of candidates that share an
axis length and a split, O(rows × points). ``cost_shift_verdict`` builds the indexes for its one
candidate, so loops should call ``cost_shift_verdicts``.
Design: docs/design/cost_shift.md
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np

from regbot.detection.cost_domains import CostDomain, DomainIndex
from regbot.detection.cost_shift_stats import ChangeBatch
from regbot.detection.dedup_context import DedupContext, subroutine_of_series
from regbot.detection.model import Candidate, Verdict
from regbot.detection.shift_timing import same_time
from regbot.detection.stage_settings import CostShiftSettings
from regbot.detection.stages import Stage

__all__ = ["cost_shift_verdict", "cost_shift_verdicts"]

STAGE = Stage.COST_SHIFT
Span = tuple[float, float] | None
CHUNK = 1024  # candidates whose rows are held at once


Check = Literal[
    "new domain",
    "too large",
    "too noisy",
    "cannot move",
    "shift",
    "other time",
    "real increase",
    "no overlap",
    "no change",
]


def cost_shift_verdict(
    candidate: Candidate, context: DedupContext, settings: CostShiftSettings
) -> Verdict:
    """§5.4 on one candidate: passed = not a cost shift (keep)."""
    return cost_shift_verdicts([candidate], context, settings)[0]


def cost_shift_verdicts(
    candidates: Sequence[Candidate], context: DedupContext, settings: CostShiftSettings
) -> list[Verdict]:
    """§5.4 on many candidates, sharing indexes, domain totals and batched statistics."""
    judge = _Judge(DomainIndex(context, settings), settings)
    verdicts: list[Verdict] = []
    for start in range(0, len(candidates), CHUNK):
        verdicts += judge.run(candidates[start : start + CHUNK])
    return verdicts


@dataclass(slots=True)
class _Row:
    """One domain (or its fallen members) checked for one candidate."""

    domain: CostDomain
    scope: Literal["total", "fallen"] = "total"
    fallen: tuple[str, ...] = ()
    before: float = math.nan
    after: float = math.nan
    jobs: tuple[int, int, int] | None = None  # candidate, domain, difference
    screened: list[tuple[str, int]] = field(default_factory=list)  # (member, job)
    check: Check = "no change"
    numbers: tuple[float, ...] = ()  # a, SE_a, d, SE_d, SE_diff, z_diff, z_negligible, e
    moved: np.ndarray | None = None  # what fell as S rose (the rest, or the fallen members)
    positions: np.ndarray | None = None  # the shared points on the candidate's axis
    spans: tuple[Span, Span] = (None, None)  # when S and ``moved`` most likely changed


class _Judge:
    def __init__(self, index: DomainIndex, settings: CostShiftSettings) -> None:
        self.index, self.settings = index, settings
        self.z = NormalDist().inv_cdf(1.0 - settings.alpha)
        self.batch = ChangeBatch()

    def run(self, candidates: Sequence[Candidate]) -> list[Verdict]:
        rows = [self._gather(c) for c in candidates]
        self.batch.run()
        for cand, cand_rows in zip(candidates, rows):
            cand_rows += self._fallen_rows(cand, cand_rows)
        self.batch.run()
        return [self._verdict(c, r) for c, r in zip(candidates, rows)]

    # --- rows ------------------------------------------------------------------------------

    def _gather(self, cand: Candidate) -> list[_Row]:
        rows, own = [], {}
        usable = math.isfinite(cand.delta) and cand.delta != 0.0
        for domain in self.index.domains(cand):
            row = _Row(domain)
            rows.append(row)
            positions, total = self.index.on_axis(domain.cost_series, cand)
            split = cand.change_index if positions is None else _split(positions, cand)
            if not 0 < split < len(total):
                row.check = "no overlap"
                continue
            if not usable:
                row.before, row.after = float(total[:split].mean()), float(total[split:].mean())
                continue
            x = cand.values if positions is None else cand.values[positions]
            axis = _axis(cand, positions, split)
            if axis not in own:
                own[axis] = self.batch.add(x, split)
            total_job = self.batch.add(total, split, (domain.cost_series, *axis))
            row.jobs = (own[axis], total_job, self.batch.add(x - total, split))
            row.moved, row.positions = total - x, positions
            if not domain.summed and len(domain.members) >= 3:
                row.screened = self._screen(cand, domain, positions, split)
        return rows

    def _screen(
        self, cand: Candidate, domain: CostDomain, positions: np.ndarray | None, split: int
    ) -> list[tuple[str, int]]:
        """Members whose change opposes the candidate's by at least a negligible share of
        ``|delta|``, queued for their standard errors."""
        members = domain.members
        changes = math.copysign(1.0, cand.delta) * self.index.member_changes(
            members, cand, positions
        )
        picked = np.flatnonzero(changes <= -self.settings.negligible_share * abs(cand.delta))
        axis = _axis(cand, positions, split)
        return [
            (m, self.batch.add(self.index.member_on(m, cand, positions), split, ((m,), *axis)))
            for m in (members[i] for i in picked.tolist())
            if m != cand.series_id
        ]

    def _fallen_rows(self, cand: Candidate, rows: list[_Row]) -> list[_Row]:
        """For each summed domain, the sub-domain of ``S`` and the members that fell."""
        out = []
        sign = math.copysign(1.0, cand.delta)
        for row in rows:
            if not row.screened or row.jobs is None:
                continue
            tested = len(row.domain.members) - 1
            z_fallen = NormalDist().inv_cdf(1.0 - self.settings.fallen_alpha / tested)
            fallen = tuple(
                m
                for m, job in row.screened
                if sign * self.batch.delta(job) < -z_fallen * self.batch.se[job]
            )
            if not fallen or len(fallen) == tested:
                continue
            positions, _ = self.index.on_axis(row.domain.cost_series, cand)
            split = cand.change_index if positions is None else _split(positions, cand)
            parts = [self.index.member_on(m, cand, positions) for m in fallen]
            moved = sum(parts, np.zeros_like(parts[0]))  # as sum()'s 0 start: 0 + -0.0 is 0.0
            x = cand.values if positions is None else cand.values[positions]
            total = x + moved
            sub = _Row(row.domain, "fallen", fallen)
            sub.jobs = (row.jobs[0], self.batch.add(total, split), self.batch.add(-moved, split))
            sub.moved, sub.positions = moved, positions
            out.append(sub)
        return out

    # --- decision --------------------------------------------------------------------------

    def _decide(self, cand: Candidate, row: _Row) -> None:
        s, scale = self.settings, abs(cand.delta)
        if row.check == "no overlap" or row.jobs is None:
            row.check = "no overlap" if row.check == "no overlap" else "no change"
            return
        b = self.batch
        sign = math.copysign(1.0, cand.delta)
        row.before, row.after = b.before[row.jobs[1]], b.after[row.jobs[1]]
        a, se_a = sign * b.delta(row.jobs[0]), b.se[row.jobs[0]]
        d, se_d = sign * b.delta(row.jobs[1]), b.se[row.jobs[1]]
        se_diff = b.se[row.jobs[2]]
        e = _expected_rise(cand, a, row.before)
        z_diff = _ratio(e - d, se_diff)
        z_negligible = _ratio(abs(d) - s.negligible_share * a, se_d)
        row.numbers = (a, se_a, d, se_d, se_diff, z_diff, z_negligible, e)
        tiny = s.new_share * scale
        if not a > 0:
            row.check = "no change"
        elif abs(cand.mean_before) <= tiny or abs(row.before) <= tiny:
            row.check = "new domain"
        elif abs(row.before) > s.domain_cost_ratio * scale:
            row.check = "too large"
        elif e <= se_d:
            row.check = "cannot move" if e < a / 2 else "too noisy"
        else:
            slack = 1e-9 * (abs(a) + abs(d))  # exact data: the boundary itself is negligible
            significant = e - d > self.z * se_diff + slack
            negligible = abs(d) - s.negligible_share * a <= self.z * se_d + slack
            nearer_none = d < e / 2 + slack
            row.check = "shift" if significant and negligible and nearer_none else "real increase"
            if row.check == "shift" and row.moved is not None:
                meet, *spans = same_time(cand, row.positions, row.moved, s.same_time_mass)
                row.spans = (spans[0], spans[1])
                if not meet:
                    row.check = "other time"

    def _verdict(self, cand: Candidate, rows: list[_Row]) -> Verdict:
        s = self.settings
        for row in rows:
            self._decide(cand, row)
        delta = cand.delta
        col = [r.numbers or (math.nan,) * 8 for r in rows]
        numbers: dict[str, object] = {
            "subroutine": subroutine_of_series(cand.series_id),
            "candidate_before": _plain(cand.mean_before),
            "candidate_after": _plain(cand.mean_after),
            "candidate_delta": _plain(delta),
            "domain_cost_ratio": s.domain_cost_ratio,
            "negligible_share": s.negligible_share,
            "new_share": s.new_share,
            "alpha": s.alpha,
            "z": self.z,
            "fallen_alpha": s.fallen_alpha,
            "same_time_mass": s.same_time_mass,
            "domain_kinds": [r.domain.kind for r in rows],
            "domain_names": [r.domain.name for r in rows],
            "domain_scopes": [r.scope for r in rows],
            "domain_fallen": [", ".join(r.fallen) for r in rows],
            "domain_members": [_members(r) for r in rows],
            "domain_before": [_plain(r.before) for r in rows],
            "domain_after": [_plain(r.after) for r in rows],
        }
        sign = math.copysign(1.0, delta) if math.isfinite(delta) else 1.0
        numbers["domain_candidate_delta"] = [_plain(sign * c[0]) for c in col]
        numbers["domain_candidate_delta_se"] = [_plain(c[1]) for c in col]
        numbers["domain_delta"] = [
            _plain(sign * c[2] if r.numbers else r.after - r.before) for r, c in zip(rows, col)
        ]
        for i, name in enumerate(("delta_se", "difference_se", "difference_z", "negligible_z")):
            numbers[f"domain_{name}"] = [_plain(c[3 + i]) for c in col]
        numbers["domain_expected_change"] = [_plain(sign * c[7]) for c in col]
        numbers["domain_checks"] = [r.check for r in rows]
        numbers["domain_change_spans"] = [
            [None if span is None else list(span) for span in r.spans] for r in rows
        ]
        shift = next((r for r in rows if r.check == "shift"), None)
        numbers["shift_domain"] = None if shift is None else _label(shift)
        if shift is not None:
            a, se_a, d, se_d, _, z_diff, z_neg, _ = shift.numbers
            reason = (
                f"cost shift within {_label(shift, quoted=True)} ({_members(shift)} members): "
                f"domain change {d:+.4g} ± {se_d:.2g} vs the regression's {a:+.4g} ± {se_a:.2g} "
                f"(oriented, same points); difference z {_text(z_diff)} > {self.z:.2f} and "
                f"|domain change| within {s.negligible_share:g} x the regression's change "
                f"(z {_text(z_neg)} <= {self.z:.2f})"
            )
            return Verdict(STAGE, False, reason, numbers)
        if not math.isfinite(delta) or delta == 0.0:
            return Verdict(STAGE, True, "kept: no change to explain", numbers)
        if not rows:
            what = "metric kind" if numbers["subroutine"] is None else "subroutine"
            return Verdict(STAGE, True, f"no cost domains for this {what}", numbers)
        checks = [r.check for r in rows]
        tally = ", ".join(f"{checks.count(k)} {k}" for k in _CHECKS if k in checks)
        return Verdict(STAGE, True, f"kept: no domain shows a cost shift ({tally})", numbers)


_CHECKS: tuple[Check, ...] = (
    "shift",
    "other time",
    "real increase",
    "too noisy",
    "cannot move",
    "too large",
    "new domain",
    "no overlap",
    "no change",
)


def _expected_rise(cand: Candidate, a: float, domain_before: float) -> float:
    """How much the domain's share would rise if the candidate's rise ``a`` were real (oriented
    units). CPU shares are normalised: extra work of ``x`` (a share of the old total) raises a
    share ``b`` by ``x(1 − b)`` to first order, so the domain ``c`` that holds it rises by
    ``a(1 − c)/(1 − b)``: ``a`` for small shares, nothing for a domain on every sample (a caller
    near 1 cannot rise, so its flat share is no evidence of a shift). Other kinds: ``a``."""
    if cand.kind != "gcpu" or not 0 <= cand.mean_before < 1 or not 0 <= domain_before <= 1:
        return a
    return a * min(1.0, (1.0 - domain_before) / (1.0 - cand.mean_before))


def _split(positions: np.ndarray, cand: Candidate) -> int:
    return int(np.searchsorted(positions, cand.change_index))


def _axis(cand: Candidate, positions: np.ndarray | None, split: int) -> tuple[object, ...]:
    """What identifies a series' row besides its id: the candidate's axis, the shared points
    and the split."""
    times = cand.times_s
    first = float(times[0]) if len(times) else math.nan
    return (first, len(times), None if positions is None else positions.tobytes(), split)


def _members(row: _Row) -> int:
    return 1 + len(row.fallen) if row.fallen else len(row.domain.members)


def _label(row: _Row, quoted: bool = False) -> str:
    name = repr(row.domain.name) if quoted else row.domain.name
    text = f"{row.domain.kind} domain {name}" if quoted else f"{row.domain.kind} {name}"
    return text + (f" (fallen: {', '.join(row.fallen)})" if row.fallen else "")


def _ratio(num: float, den: float) -> float:
    if den > 0:
        return num / den
    return math.copysign(math.inf, num) if num != 0 else math.nan


def _text(x: float) -> str:
    return f"{x:.2f}" if math.isfinite(x) else str(x)


def _plain(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
