"""The comment's evidence lines read verdict numbers by name (``bot/github/evidence.py``,
``EVIDENCE``). Each name a line declares must be one the stage really writes: the stages run
here on a profiled service with two regression cascades (every short-term filter and dedup
stage) and on a creeping series (the long-term detector), and a declared key that no verdict
of its stage carries fails — a renamed number cannot quietly render as "passed"."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from cascade_runs import run_once

from regbot.bot.github.evidence import EVIDENCE
from regbot.datasets.cascades import simulate_cascades
from regbot.detection.long_term import detect_long_term
from regbot.detection.model import Candidate
from regbot.detection.presets import Threshold
from regbot.detection.series_batch import WindowBounds
from regbot.detection.stage_settings import LongTermSettings
from regbot.detection.stages import Stage

HOUR_S = 3600.0


def _written_keys(candidates: list[Candidate]) -> dict[str, set[str]]:
    keys: dict[str, set[str]] = defaultdict(set)
    for candidate in candidates:
        for stage, verdict in candidate.verdicts.items():
            keys[stage] |= set(verdict.numbers)
    return keys


def _creep() -> Candidate:
    rng = np.random.default_rng(0)
    n = 240 + 48 + 12
    i = np.arange(n)
    values = 1.0 + rng.normal(0.0, 0.1, n) + np.clip((i - 240) / 48, 0.0, 1.0)
    windows = WindowBounds(0.0, 240 * HOUR_S, 288 * HOUR_S, n * HOUR_S)
    threshold = Threshold("absolute", 0.5)
    found = detect_long_term(
        "s", "gcpu", i * HOUR_S, values, 1.0, windows, threshold, LongTermSettings()
    )
    assert found is not None
    return found


def test_every_declared_evidence_number_is_written_by_its_stage() -> None:
    service = simulate_cascades(7, depth=5, changes=2)
    result, dedup = run_once(service)
    written = _written_keys([*result.reported, *dedup.representatives, *dedup.removed, _creep()])
    for stage, line in EVIDENCE.items():
        if stage == Stage.STACK_DEDUP:  # KDD'18's dedup: its line reads no number
            assert not line.keys
            continue
        assert stage in written, f"no {stage} verdict was written"
        missing = line.keys - written[stage]
        assert not missing, f"{stage} evidence reads numbers its stage never writes: {missing}"


def test_a_renamed_number_is_caught() -> None:
    """The check above is not vacuous: a key the stages do not write is reported missing."""
    service = simulate_cascades(7, depth=5, changes=2)
    result, _ = run_once(service)
    written = _written_keys(result.reported)
    assert "measured" in written[Stage.THRESHOLD]
    assert "measured_change" not in written[Stage.THRESHOLD]
