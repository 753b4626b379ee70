"""The short-term filters over a batch (one vectorised STL for all the seasonality stage's
candidates, a process pool when there are many) give each candidate exactly the verdicts it gets
alone."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from factories import build_candidate

from regbot.detection import short_term_filters
from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds
from regbot.detection.short_term_filters import judge_candidate, judge_candidates
from regbot.detection.stage_settings import DetectionSettings

BUCKET_S = 600.0
DAY = 144  # points
T0_S = 1_700_000_000.0


def candidate(seed: int, kind: str, *, history: int = 10 * DAY) -> Candidate:
    """Ten-minute points: ``history`` of them, then 24 in the analysis window and 36 extended;
    the change 6 points into the analysis window."""
    rng = np.random.default_rng(seed)
    n = history + 24 + 36
    t = np.arange(n)
    values = 100.0 + rng.normal(0.0, 1.0, n)
    change = history + 6
    if kind in ("daily", "daily step"):
        values += rng.uniform(2, 6) * np.sin(2 * np.pi * (t - history - 8) / DAY)
    if kind in ("step", "daily step"):
        values[change:] += rng.uniform(1.0, 4.0)
    if kind == "spike":
        values[change : change + 5] += 8.0
    if kind == "heavy":
        values += rng.standard_t(2, n)
        values[change:] += 3.0
    if kind == "flat":
        values = np.full(n, 7.0)
        values[change:] = 8.0
    times = T0_S + BUCKET_S * t
    analysis = T0_S + BUCKET_S * history
    extended = analysis + 24 * BUCKET_S
    windows = WindowBounds(T0_S, analysis, extended, extended + 36 * BUCKET_S)
    return build_candidate(f"{kind}-{seed}", values, change, times=times, windows=windows)


def candidates() -> list[Candidate]:
    kinds = ["daily", "daily step", "step", "spike", "heavy", "flat"]
    out = [candidate(seed, kind) for seed in range(4) for kind in kinds]
    out += [candidate(seed, "daily step", history=9 * DAY + 7 * seed) for seed in range(3)]
    out.append(candidate(9, "step", history=8))  # waiting for data: 12 points of history needed
    return out


def settings() -> DetectionSettings:
    return replace(DetectionSettings(), workers=1)


def test_a_batch_judges_each_candidate_as_alone():
    batch = candidates()
    together = judge_candidates(batch, settings())
    alone = [judge_candidate(c, settings()) for c in batch]
    assert together == alone
    stages = [[v.stage for v in verdicts] for verdicts in together]
    assert any(len(s) == 3 for s in stages) and any(len(s) == 1 for s in stages)
    decomposed = [v for verdicts in together for v in verdicts if "residual_std" in v.numbers]
    assert sum(v.numbers["residual_std"] is not None for v in decomposed) >= 6


def test_the_process_pool_judges_as_one_process(monkeypatch: pytest.MonkeyPatch):
    batch = candidates() * 2
    monkeypatch.setattr(short_term_filters, "PARALLEL_FROM", 4)
    pooled = judge_candidates(batch, replace(settings(), workers=2))
    assert pooled == judge_candidates(batch, settings())
