"""PairwiseDedup's correlation evidence (FBDetect §5.5.2): the load-free residual noise of
every row, which members may anchor a candidate's evidence, whether the rises agree, and per
block of candidates each group's member with the strongest evidence.

Complexity: noise statistics per pair of distinct time axes, in blocks of rows; memory
O(block rows × members).
Design: docs/design/pairwise_dedup.md ("correlation").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from regbot.detection.dedup.pairwise_groups import GroupState
from regbot.detection.dedup.shared_cause import LoadFactor, delta_with_se, noise_of, pair_stats
from regbot.detection.dedup_context import Group, GroupMember, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.stage_settings import PairwiseSettings

__all__ = ["CorrelationEvidence", "EvidenceBlock", "finite_or_none"]


class CorrelationEvidence:
    """The noise of every row — the past members (their stored windows), then the new
    candidates (their whole series in the run's windows, for the most points) — for the
    correlation feature: load-free residuals (``shared_cause.noise_of``), each row's residual
    scale, its delta with standard error, whether it is a gCPU series, and which member columns
    are their group's representative."""

    def __init__(
        self,
        past: Sequence[GroupMember],
        candidates: Sequence[Candidate],
        groups: Sequence[Group],
        load: LoadFactor | None,
        settings: PairwiseSettings,
    ) -> None:
        rows: list[GroupMember | Candidate] = [*past, *candidates]
        self.new = len(candidates)
        self.ids = [m.series_id for m in rows]
        self.rise_z = settings.rise_z
        self.noise = noise_of(
            [m.times_s for m in rows],
            [m.values for m in rows],
            [m.change_time_s for m in rows],
            load,
            settings.guard_points,
        )
        self.raw_sd = self.noise.raw_sd()
        self.gcpu = np.array([subroutine_of_series(s) is not None for s in self.ids])
        self.series = np.unique(self.ids, return_inverse=True)[1]
        self.is_representative = np.zeros(len(rows), dtype=bool)
        first = 0
        for group in groups:
            if group.members:
                self.is_representative[first] = True
            first += len(group.members)
        self.rises = [
            delta_with_se(m.values, int(np.searchsorted(m.times_s, m.change_time_s)))
            if isinstance(m, GroupMember)
            else delta_with_se(m.values, m.change_index)
            for m in rows
        ]
        self.rise_delta = np.array([d for d, _ in self.rises])
        self.rise_se = np.array([e for _, e in self.rises])

    def anchors(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """(rows, columns) bool: the member in the column may carry the evidence for the
        candidate in the row (docs/design/pairwise_dedup.md, "correlation")."""
        contained = self.raw_sd[rows][:, None] > self.raw_sd[columns][None, :]
        anchors: npt.NDArray[np.bool_] = (
            (self.series[rows][:, None] == self.series[columns][None, :])
            | self.is_representative[columns][None, :]
            | ~self.gcpu[rows][:, None]
            | (self.gcpu[columns][None, :] & contained)
        )
        return anchors

    def rises_agree(self, rows: np.ndarray, columns: np.ndarray, r: np.ndarray) -> np.ndarray:
        """(rows, columns) bool: for two gCPU series, one cause can explain both rises. The
        upper series (the larger residual noise: the caller) holds ``share = r·sd_u/sd_l``
        (clipped to [0, 1]) of the lower one's samples, so a cause at or below the lower one
        raises the upper by ``share × Δ_lower``. A candidate *above* its member must have risen
        by at least that (less than ``rise_z`` standard errors short; more is allowed: other
        callees may add to it). A candidate *below* its member (it joins through the group's
        representative, its caller) must account for the caller's rise (within ``rise_z``
        standard errors both ways): a callee whose noise the regressed caller holds, while the
        caller rose through another callee, is a cause of its own, not this group's. Pairs
        with a non-gCPU side always agree (no common unit)."""
        delta, se, sd = self.rise_delta, self.rise_se, self.raw_sd
        row_upper = sd[rows][:, None] >= sd[columns][None, :]
        d_u = np.where(row_upper, delta[rows][:, None], delta[columns][None, :])
        d_l = np.where(row_upper, delta[columns][None, :], delta[rows][:, None])
        se_u = np.where(row_upper, se[rows][:, None], se[columns][None, :])
        se_l = np.where(row_upper, se[columns][None, :], se[rows][:, None])
        sd_u = np.maximum(sd[rows][:, None], sd[columns][None, :])
        sd_l = np.maximum(np.minimum(sd[rows][:, None], sd[columns][None, :]), 1e-300)
        with np.errstate(invalid="ignore"):
            share = np.clip(np.nan_to_num(r) * sd_u / sd_l, 0.0, 1.0)
            gap = d_u - share * d_l
            limit = self.rise_z * np.sqrt(se_u**2 + (share * se_l) ** 2)
            agree = np.where(row_upper, gap >= -limit, np.abs(gap) <= limit)
        both = self.gcpu[rows][:, None] & self.gcpu[columns][None, :]
        agreed: npt.NDArray[np.bool_] = ~both | agree
        return agreed

    def block(self, lo: int, hi: int, state: GroupState) -> EvidenceBlock:
        return EvidenceBlock(self, lo, hi, state)


class EvidenceBlock:
    """Rows ``lo:hi`` against every row before ``hi``: the noise statistics, and per row and
    group the member column with the strongest evidence (largest z among its anchors)."""

    def __init__(self, evidence: CorrelationEvidence, lo: int, hi: int, state: GroupState) -> None:
        self.evidence, self.lo = evidence, lo
        self.stats = pair_stats(evidence.noise, range(lo, hi), range(hi))
        rows, columns = np.arange(lo, hi), np.arange(hi)
        anchored = evidence.anchors(rows, columns) & evidence.rises_agree(
            rows, columns, self.stats.r
        )
        self.score = np.where(anchored, self.stats.z, np.nan)
        self.best = state.argmax(self.score, hi - lo)

    def admit(self, row: int, group: int, column: int, starts_group: bool) -> None:
        """A new member (``column``) joined ``group`` at ``row``: later rows of the block may
        take their evidence from it."""
        self.evidence.is_representative[column] = starts_group
        later = np.arange(self.lo + row + 1, self.lo + self.score.shape[0])
        if later.size == 0:
            return
        one = np.array([column])
        anchored = (
            self.evidence.anchors(later, one)
            & self.evidence.rises_agree(later, one, self.stats.r[row + 1 :, column : column + 1])
        )[:, 0]
        new = np.where(anchored, self.stats.z[row + 1 :, column], np.nan)
        current = self.best[row + 1 :, group]
        at = np.arange(row + 1, row + 1 + later.size)
        held = np.where(current >= 0, self.score[at, np.maximum(current, 0)], np.nan)
        better = ~np.isnan(new) & (np.isnan(held) | (new > held))
        self.score[row + 1 :, column] = new
        self.best[row + 1 :, group] = np.where(better, column, current)

    def _take(self, values: np.ndarray, row: int, n_groups: int) -> np.ndarray:
        columns = self.best[row, :n_groups]
        return np.where(columns >= 0, values[row, np.maximum(columns, 0)], np.nan)

    def r(self, row: int, n_groups: int) -> np.ndarray:
        return self._take(self.stats.r, row, n_groups)

    def p(self, row: int, n_groups: int) -> np.ndarray:
        columns = self.best[row, :n_groups]
        p = self.stats.p_at(np.full(columns.shape, row), np.maximum(columns, 0))
        return np.where(columns >= 0, p, np.nan)

    def both_gcpu(self, row: int, n_groups: int) -> np.ndarray:
        columns = self.best[row, :n_groups]
        both: npt.NDArray[np.bool_] = (
            self.evidence.gcpu[self.lo + row] & self.evidence.gcpu[np.maximum(columns, 0)]
        )
        return both

    def numbers(self, row: int, group: int) -> dict[str, object]:
        """The evidence behind the group's correlation score, as plain numbers."""
        column = int(self.best[row, group])
        own = self.evidence.rises[self.lo + row]
        if column < 0:
            return {
                "correlation_member": None,
                "delta": finite_or_none(own[0]),
                "delta_se": finite_or_none(own[1]),
            }
        other = self.evidence.rises[column]
        s = self.stats
        return {
            "correlation_member": self.evidence.ids[column],
            "correlation_z": finite_or_none(s.z[row, column]),
            "correlation_p": finite_or_none(s.p_at(np.array([row]), np.array([column]))[0]),
            "correlation_points": finite_or_none(s.n_eff[row, column]),
            "delta": finite_or_none(own[0]),
            "delta_se": finite_or_none(own[1]),
            "member_delta": finite_or_none(other[0]),
            "member_delta_se": finite_or_none(other[1]),
        }


def finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if np.isfinite(value) else None
