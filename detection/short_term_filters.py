"""The detection pipeline's short-term filters (FBDetect §5.2.2, §5.1): went-away, seasonality
and thresholds on each candidate in order, in a process pool when there are many.

Complexity: the filters' own, per candidate; candidates are independent (the seasonality
stage's STL runs over a batch of them at once, each one's numbers its own).
"""

from __future__ import annotations

import itertools
import marshal
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import fields

from regbot.detection.model import Candidate, Verdict
from regbot.detection.seasonality import (
    PeriodMemo,
    decompose_many,
    seasonality_verdict,
    stl_job,
)
from regbot.detection.stage_settings import DetectionSettings
from regbot.detection.stages import Stage
from regbot.detection.thresholds import threshold_verdict
from regbot.detection.went_away import went_away_verdict
from regbot.detection.went_away_batch import AxisKey, axis_key, went_away_verdicts
from regbot.detection.window_plan import enough_data_verdict
from regbot.report.plain import JSONValue

__all__ = ["judge_candidate", "judge_candidates"]

# Candidates per worker at least. A worker adds CPU (its fork, its first use of fresh memory,
# the verdicts' way back: ~0.1 s, and ~0.05 ms a candidate) to save wall time; from about a
# thousand candidates each, that is a few per cent of their judging.
PARALLEL_FROM = 1024


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
    candidate, so the result is the same however they are batched or spread: within a process
    the candidates on one time axis go through went-away together and the seasonality stage's
    STL runs over all its candidates at once (``went_away_verdicts``, ``decompose_many``: a
    candidate's numbers do not depend on the others). With many candidates the work is spread
    over ``settings.workers`` forked processes (0: one per core), each judging one run of
    candidates grouped by time axis (so that the batches stay large) which it reads from the
    memory it was forked with: only the verdicts travel back."""
    workers = min(settings.workers or os.cpu_count() or 1, len(candidates) // PARALLEL_FROM)
    if workers <= 1:
        return _judge_batch(candidates, settings)
    axes: dict[AxisKey, int] = {}
    order = sorted(
        range(len(candidates)),
        key=lambda i: axes.setdefault(axis_key(candidates[i]), len(axes)),
    )
    job = next(_JOB_IDS)
    _JOBS[job] = ([candidates[i] for i in order], settings)
    cuts = [len(order) * k // workers for k in range(workers + 1)]
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_judge_job, [(job, lo, hi) for lo, hi in zip(cuts, cuts[1:])]))
    finally:
        del _JOBS[job]
    out: list[list[Verdict]] = [[] for _ in candidates]
    judged = (verdicts for part in parts for verdicts in marshal.loads(part))
    for i, states in zip(order, judged):
        out[i] = [_restored(state) for state in states]
    return out


# The candidates each running pool judges, by job: a forked worker finds them in its copy of
# this module, so they are not pickled to it.
_JOBS: dict[int, tuple[list[Candidate], DetectionSettings]] = {}
_JOB_IDS = itertools.count()


def _judge_job(part: tuple[int, int, int]) -> bytes:
    """``_judge_batch`` of candidates ``lo:hi`` of pool job ``job`` (in a forked worker), each
    verdict as its fields with the stage's name, marshalled: verdicts hold JSON values only,
    which marshal writes and reads several times faster than pickle writes objects."""
    job, lo, hi = part
    candidates, settings = _JOBS[job]
    verdicts = _judge_batch(candidates[lo:hi], settings)
    return marshal.dumps(
        [[(v.stage.value, v.passed, v.reason, v.numbers) for v in found] for found in verdicts]
    )


def _restored(state: tuple[str, bool, str, dict[str, JSONValue]]) -> Verdict:
    """The verdict a worker sent, its fields set as pickle sets them (its numbers are already
    JSON-plain: the constructor made them so in the worker)."""
    verdict: Verdict = object.__new__(Verdict)
    for name, value in zip(_VERDICT_FIELDS, (Stage(state[0]), *state[1:])):
        object.__setattr__(verdict, name, value)
    return verdict


_VERDICT_FIELDS = tuple(field.name for field in fields(Verdict))


def _judge_batch(candidates: list[Candidate], settings: DetectionSettings) -> list[list[Verdict]]:
    """``judge_candidate`` of each candidate, stage by stage over the batch: went-away on all
    at once (``went_away_verdicts``), then one vectorised STL for the seasonality stage of all
    that went-away kept, then the rest of each one's seasonality and threshold stages."""
    out: list[list[Verdict]] = []
    judged: list[tuple[int, Candidate, PeriodMemo]] = []
    for candidate in candidates:
        enough = enough_data_verdict(candidate, settings.workload.windows)
        out.append([enough])
        if enough.passed:
            judged.append((len(out) - 1, candidate, {}))
    wents = went_away_verdicts(
        [candidate for _, candidate, _ in judged],
        settings.went_away,
        [memo for _, _, memo in judged],
    )
    kept: list[tuple[int, Candidate, PeriodMemo]] = []
    for (i, candidate, memo), went in zip(judged, wents):
        out[i] = [went]
        if went.passed:
            kept.append((i, candidate, memo))
    jobs = [stl_job(candidate, settings.seasonality, memo) for _, candidate, memo in kept]
    fits = iter(decompose_many([job for job in jobs if job is not None]))
    for (i, candidate, memo), job in zip(kept, jobs):
        fit = None if job is None else next(fits)
        verdict = seasonality_verdict(candidate, settings.seasonality, memo=memo, fit=fit)
        out[i].append(verdict)
        if verdict.passed:
            out[i].append(threshold_verdict(candidate, settings.workload.threshold))
    return out
