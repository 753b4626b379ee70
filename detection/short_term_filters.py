"""The detection pipeline's short-term filters (FBDetect §5.2.2, §5.1): went-away, seasonality
and thresholds on each candidate in order, in a process pool when there are many.

Complexity: the filters' own, per candidate; candidates are independent (the seasonality
stage's STL runs over a batch of them at once, each one's numbers its own).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from regbot.detection.model import Candidate, Verdict
from regbot.detection.seasonality import (
    PeriodMemo,
    decompose_many,
    seasonality_verdict,
    stl_job,
)
from regbot.detection.stage_settings import DetectionSettings
from regbot.detection.thresholds import threshold_verdict
from regbot.detection.went_away import went_away_verdict
from regbot.detection.window_plan import enough_data_verdict

__all__ = ["judge_candidate", "judge_candidates"]

PARALLEL_FROM = 256  # candidates; fewer are judged in-process (a pool costs more than it saves)


def judge_candidate(candidate: Candidate, settings: DetectionSettings) -> list[Verdict]:
    """The short-term filters in order (went-away, seasonality, threshold), stopping at the first
    that removes the candidate: the verdicts it collected. A change still waiting for data gets
    only its ``enough_data`` verdict (recorded only when it fails: it is a precondition of
    judging, like the change-point test's points on each side, not a filter of its own)."""
    enough = enough_data_verdict(candidate, settings.workload.windows)
    if not enough.passed:
        return [enough]
    memo: PeriodMemo = {}  # the pre-change period, chosen once for both stages
    verdicts = [went_away_verdict(candidate, settings.went_away, memo=memo)]
    if verdicts[-1].passed:
        verdicts.append(seasonality_verdict(candidate, settings.seasonality, memo=memo))
    if verdicts[-1].passed:
        verdicts.append(threshold_verdict(candidate, settings.workload.threshold))
    return verdicts


def judge_candidates(
    candidates: list[Candidate], settings: DetectionSettings
) -> list[list[Verdict]]:
    """``judge_candidate`` for every candidate, in order. Each is a pure function of its
    candidate, so with many candidates the work is spread over ``settings.workers`` processes
    (0: one per core); the result is the same as in one process. Within a process the
    seasonality stage's STL runs over all its candidates at once (``decompose_many``, whose
    numbers for a candidate do not depend on the others)."""
    workers = settings.workers or os.cpu_count() or 1
    if workers <= 1 or len(candidates) < PARALLEL_FROM:
        return _judge_batch(candidates, settings)
    judge = partial(_judge_batch, settings=settings)
    size = max(16, len(candidates) // (workers * 8))
    chunks = [candidates[lo : lo + size] for lo in range(0, len(candidates), size)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return [verdicts for part in pool.map(judge, chunks) for verdicts in part]


def _judge_batch(candidates: list[Candidate], settings: DetectionSettings) -> list[list[Verdict]]:
    """``judge_candidate`` of each candidate, stage by stage over the batch: went-away on each,
    then one vectorised STL for the seasonality stage of all that went-away kept, then the
    rest of each one's seasonality and threshold stages."""
    out: list[list[Verdict]] = []
    kept: list[tuple[int, Candidate, PeriodMemo]] = []
    for candidate in candidates:
        enough = enough_data_verdict(candidate, settings.workload.windows)
        if not enough.passed:
            out.append([enough])
            continue
        memo: PeriodMemo = {}
        went = went_away_verdict(candidate, settings.went_away, memo=memo)
        out.append([went])
        if went.passed:
            kept.append((len(out) - 1, candidate, memo))
    jobs = [stl_job(candidate, settings.seasonality, memo) for _, candidate, memo in kept]
    fits = iter(decompose_many([job for job in jobs if job is not None]))
    for (i, candidate, memo), job in zip(kept, jobs):
        fit = None if job is None else next(fits)
        verdict = seasonality_verdict(candidate, settings.seasonality, memo=memo, fit=fit)
        out[i].append(verdict)
        if verdict.passed:
            out[i].append(threshold_verdict(candidate, settings.workload.threshold))
    return out
