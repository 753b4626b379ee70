"""Relative changes: none where the level before was zero or near it (a new cost)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from regbot.bot.views.numbers import format_relative
from regbot.detection.model import Candidate
from regbot.detection.ratios import relative_change
from regbot.detection.report import regression_entry
from regbot.detection.series_batch import WindowBounds


@pytest.mark.parametrize(
    ("before", "delta", "expected"),
    [
        (0.2, 0.05, 0.25),
        (-4.0, -1.0, -0.25),  # a throughput drop: delta over |before|
        (0.01, 0.5, 50.0),  # a 50x rise is still a ratio
        (0.0, 0.003, None),
        (1e-20, 3.3e-4, None),  # the +3.3e16 case
        (0.004, 0.5, None),  # more than 100x: the level was not there before
        (float("nan"), 0.1, None),
        (0.1, float("inf"), None),
    ],
)
def test_relative_change(before: float, delta: float, expected: float | None) -> None:
    got = relative_change(before, delta)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_a_new_cost_is_null_in_json_and_new_in_text() -> None:
    times = np.arange(100) * 600.0
    values = np.where(np.arange(100) >= 80, 3.3e-4, 1e-20)
    windows = WindowBounds(0.0, times[80], times[90], times[-1])
    cand = Candidate(
        "gcpu:setup (lib/boot.py)", "gcpu", times, values, 1.0, 80, float(times[80]),
        1e-20, 3.3e-4, 50.0, 1e-9, windows,
    )  # fmt: skip
    entry = json.loads(json.dumps(regression_entry(cand).to_json(), allow_nan=False))
    assert entry["relative_delta"] is None
    assert entry["delta"] == pytest.approx(3.3e-4)
    assert format_relative(entry["relative_delta"]) == "new"
