"""Cost-shift check (FBDetect §5.4): drop regressions that only moved cost within a domain.

A regression of series ``S`` is a cost shift when, in one of its cost domains
(``regbot.detection.cost_domains``: callers, class, metadata, endpoint, commit, custom), the
domain's total changed *significantly less* than ``S`` did, judged against the domain's own
noise, and by no more than a negligible share of ``S``'s change. Point estimates alone are not
enough: a class total sums several noisy series and the fleet-wide load term, so its change has
a standard error that can exceed a small regression's whole size, and "the total barely moved"
is then no evidence of anything.

**Changes and their standard errors.** Every change is measured the same way, at the
candidate's change and on the points the candidate and the domain share (before = points
earlier than ``times_s[change_index]``, after = the rest): ``Δ = mean(after) - mean(before)``.
Its standard error (``change_with_se``) comes from the series' own residuals after each side's
mean, estimated twice, the larger kept:

* *white noise with a lag-1 correction*: scale = 1.4826 × median |residual| (the MAD; the root
  mean square when that is 0, e.g. integer counts); residuals winsorised at 5 × that scale;
  σ = the larger of the scale and the winsorised root mean square (means move with heavy tails
  that the MAD alone ignores); ρ = lag-1 autocorrelation of the winsorised residuals (pairs
  within one side), clamped to [0, 0.95]; ``SE = σ · sqrt((1+ρ)/(1-ρ) · (1/n_b + 1/n_a))``,
  the AR(1) effective-sample-size inflation;
* *batch means*: a lag-1 factor misses slow structure — a load term wandering over hours on
  top of white noise, a daily cycle — that moves a mean of ``n_a`` points far more than white
  noise does. The long-run variance is measured directly: sums of blocks of ``b = min(n_a, n /
  8)`` consecutive residuals (a block starting every ``b / 8`` points, across both sides),
  ``σ²_LR = mean(sum²) / b`` times ``K / (K - 2)`` (K = n / b blocks, two means removed), and
  ``SE = σ_LR · sqrt(1/n_b + 1/n_a)``. With the after window as the block this is the spread
  of ``n_a``-point means in the history, the quantity the after mean is compared with.

Checked without any change (``tests/detection/test_cost_shift_noise.py``): z = Δ / SE has a
standard deviation of 0.9-1.05 on white noise, AR(1), white + AR(0.95) + a daily cycle at the
split after the history; heavy tails (Student t, 3 degrees of freedom) leave z's tails heavier
(0.5% above 3.09 instead of 0.1%), and a split in the middle of a series with a slow load term
underestimates by ~20% (few blocks).

**Per domain**, with ``a`` the candidate's change, ``d`` the domain's, both oriented by the sign
of the candidate's ``delta`` (so a drop is judged like a rise), and ``SE_d`` the domain's, in
order:

1. ``no change``: ``delta`` is 0 or not finite, or ``a <= 0`` on the shared points;
   ``no overlap``: no shared point on one side;
2. ``new domain``: ``|S before| <= tiny`` or ``|domain before| <= tiny``, ``tiny = new_share ×
   |delta|`` (``CostShiftSettings.new_share``, 1%) — not a shift here (§5.4's first check);
3. ``too large``: ``|domain before| > domain_cost_ratio × |delta|`` (§5.4's second check, as
   documented in ``CostShiftSettings``);
4. ``e``, the domain's rise if ``S``'s were real: ``a`` for most series, and for CPU shares
   (normalised: extra work raises a share ``b`` by ``a`` and the domain ``c`` holding it by
   ``a(1 − c)/(1 − b)``) less for a big domain, nothing for one on every sample.
   ``cannot move``: ``e <= SE_d`` and ``e < a / 2`` — the domain is too close to the whole
   program to show the rise, so its flat share is no evidence of a shift; ``too noisy``:
   ``e <= SE_d`` otherwise — the domain's change cannot be told from the candidate's own
   within one standard error, so the domain says nothing (the noise-based form of the second
   check: a big domain with a quiet total stays usable, a small noisy one does not);
5. ``shift`` when both hold (§5.4's third check as a test): the difference is significant,
   ``z_diff = (e - d) / SE_diff > z`` with ``SE_diff`` measured on the difference series
   ``S - domain`` itself (minus the rest of the domain, so the load term they share cancels as
   it does in the data), one-sided at ``alpha``; and the domain's change is consistent with
   negligible, ``z_negligible = (|d| - negligible_share × a) / SE_d <= z`` (a domain that fell
   by far more than ``S`` rose lost cost, it did not move it into ``S``); and its change is
   nearer to none than to the regression's (``d < e / 2``: of the two readings, "the domain
   is unchanged" and "the regression reached the domain's total", the likelier one under
   normal noise of one scale — a noisy domain's "consistent with negligible" alone let a
   sibling's chance dip to half of a real step turn the step into a "shift");
6. otherwise ``real increase``.

**Members that fell.** A shift between two methods of a ten-method class hides in the class
total: the eight bystanders add their noise and nothing else. So in a summed domain (all but
``callers``) with at least two members besides ``S``, each member whose own change opposes
``S``'s by at least ``negligible_share × |delta|`` is tested: it *fell* when its z (change over its
standard error, as above) is below ``-z_fallen``, one-sided at ``fallen_alpha`` split over the
members tested against (Bonferroni over all members but ``S``, so that a genuine step meets a
chance "fallen" sibling with probability at most ``fallen_alpha`` whatever the class size; for
a negative ``delta`` "fell" means rose: oriented values).
When some but not all members fell, ``S`` plus the fallen members form a sub-domain (scope
``fallen``) judged by checks 2-6 like any domain. Limits: a sibling's improvement at another
time of the same window can pass for a mover, as it can move the total; a shift from a member
whose noise dwarfs the moved cost cannot be seen by any test.

The verdict fails (filtered) when any domain row says ``shift``; its numbers list every row as
parallel lists (kinds, names, scopes, fallen members, member counts, domain before/after, both
changes with their standard errors, the difference's standard error and z, the negligible z
and the check). Complexity: domain discovery as in ``cost_domains``; then per candidate and
domain O(points) to gather rows; the statistics run vectorised over all rows of a chunk of
candidates that share an axis length and a split, O(rows × points). 10,000 candidates over
10,000 series: a few seconds (``benchmarks/dedup.py`` times it). ``cost_shift_verdict`` builds
the indexes for its one candidate, so loops should call ``cost_shift_verdicts``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np

from regbot.detection.cost_domains import CostDomain, DomainIndex, class_qualifier, cost_domains
from regbot.detection.model import Candidate, CostShiftSettings, DedupContext, Verdict
from regbot.detection.model import subroutine_of_series
from regbot.detection.shift_timing import same_time

__all__ = [
    "CostDomain",
    "change_with_se",
    "class_qualifier",
    "cost_domains",
    "cost_shift_verdict",
    "cost_shift_verdicts",
]

STAGE = "cost_shift"
Span = tuple[float, float] | None
MAD_TO_SD = 1.4826
WINSOR_SD = 5.0
MAX_RHO = 0.95  # the lag-1 autocorrelation's cap: at most a 39x variance inflation
MIN_BLOCKS = 8  # batch means: blocks of min(n_a, n / 8) points
WINDOW_STEPS = 8  # batch means start a block every block / 8 points
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


def change_with_se(rows: np.ndarray, split: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean before, mean after, standard error of their difference) at ``split`` (the first
    after-point), per row of a ``(k, n)`` array with ``1 <= split < n`` (module docstring)."""
    rows = np.asarray(rows, np.float64)
    k, n = rows.shape
    nb, na = split, n - split
    cums = np.zeros((k, n + 1))
    np.cumsum(rows, axis=1, out=cums[:, 1:])
    mean_b, mean_a = cums[:, nb] / nb, (cums[:, n] - cums[:, nb]) / na
    resid = rows.copy()
    resid[:, :nb] -= mean_b[:, None]
    resid[:, nb:] -= mean_a[:, None]
    rms = np.sqrt(np.einsum("ij,ij->i", resid, resid) / n)
    scale = MAD_TO_SD * _median(np.abs(resid))
    scale = np.where(scale > 0, scale, rms)
    bound = WINSOR_SD * scale[:, None]
    np.minimum(resid, bound, out=resid)
    np.maximum(resid, -bound, out=resid)
    square = np.einsum("ij,ij->i", resid, resid)
    sigma = np.maximum(scale, np.sqrt(square / n))  # heavy tails move means: not the MAD alone
    lag = np.einsum("ij,ij->i", resid[:, :-1], resid[:, 1:])
    lag -= resid[:, nb - 1] * resid[:, nb]  # the pair across the split is not a lag
    rho = np.clip(np.divide(lag, square, out=np.zeros(k), where=square > 0), 0.0, MAX_RHO)
    inverse_n = 1 / nb + 1 / na
    se = sigma * np.sqrt((1 + rho) / (1 - rho) * inverse_n)
    block = min(na, n // MIN_BLOCKS)
    if block >= 2:
        step = max(1, block // WINDOW_STEPS)  # neighbouring windows share all but a few points
        np.cumsum(resid, axis=1, out=cums[:, 1:])
        sums = cums[:, block::step] - cums[:, : n - block + 1 : step]
        blocks = n / block  # each side's mean was removed: two of them are not free
        square = np.einsum("ij,ij->i", sums, sums) / (sums.shape[1] * block)
        long_run = np.sqrt(square * blocks / max(blocks - 2, 1))
        se = np.maximum(se, long_run * math.sqrt(inverse_n))
    return mean_b, mean_a, se


def _median(values: np.ndarray) -> np.ndarray:
    """Row medians (the upper one for an even count), partitioning ``values`` in place."""
    half = values.shape[1] // 2
    values.partition(half, axis=1)
    return values[:, half].copy()


class _Batch:
    """Rows waiting for ``change_with_se``, grouped by (length, split) and run together."""

    def __init__(self) -> None:
        self.groups: dict[tuple[int, int], list[tuple[int, np.ndarray]]] = {}
        self.known: dict[tuple[object, ...], int] = {}
        self.before: list[float] = []
        self.after: list[float] = []
        self.se: list[float] = []

    def add(self, values: np.ndarray, split: int, key: tuple[object, ...] | None = None) -> int:
        """Queue a row; rows with the same ``key`` (a series, an axis and a split) run once."""
        if key is not None and key in self.known:
            return self.known[key]
        job = len(self.se)
        if key is not None:
            self.known[key] = job
        self.before.append(math.nan)
        self.after.append(math.nan)
        self.se.append(math.nan)
        self.groups.setdefault((len(values), split), []).append((job, values))
        return job

    def run(self) -> None:
        for (n, split), rows in self.groups.items():
            step = max(1, 4_000_000 // max(n, 1))  # bound the stacked block's size
            for start in range(0, len(rows), step):
                part = rows[start : start + step]
                before, after, se = change_with_se(np.stack([v for _, v in part]), split)
                for (job, _), b, a, s in zip(part, before.tolist(), after.tolist(), se.tolist()):
                    self.before[job], self.after[job], self.se[job] = b, a, s
        self.groups = {}

    def delta(self, job: int) -> float:
        return self.after[job] - self.before[job]


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
        self.batch = _Batch()

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
            moved = sum(self.index.member_on(m, cand, positions) for m in fallen)
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
