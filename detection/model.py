"""Candidates and verdicts of the detection pipeline: a series with a change point on its way
through the filters, and each stage's decision on it.

Conventions, used by every stage:

* **Orientation.** Stages see *oriented* values where higher is worse: a series whose kind is
  higher-is-better (throughput, qps by default) is negated once, when the batch is built
  (``SeriesBatch.sign`` is -1 for it), and reports convert back with ``sign``.
* **Indices.** A change point's ``index`` is the first point of the new segment (TCPDBench's
  convention): ``values[:index]`` is before, ``values[index:]`` after.
* **Times** are epoch seconds (float). A window ``[start_s, end_s)`` is half-open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from regbot.detection.series_batch import WindowBounds
from regbot.detection.stages import Stage
from regbot.report.plain import JSONValue, json_plain

__all__ = ["Candidate", "Verdict"]


@dataclass(frozen=True, slots=True, init=False)
class Verdict:
    """One stage's decision on one candidate, with the numbers it compared.

    ``numbers`` are made JSON-plain here, once for every stage (``regbot.report.plain``:
    numpy scalars and arrays as JSON values, NaN and infinities as None), and shown as they are
    by the report and by ``regbot explain``. The constructor therefore takes any numbers
    ``json_plain`` reads (and a stage's name as text, or a numpy bool for ``passed``) and the
    fields hold their plain forms.
    """

    stage: Stage
    passed: bool
    reason: str
    numbers: Mapping[str, JSONValue]

    def __init__(
        self,
        stage: Stage | str,
        passed: bool | np.bool_,
        reason: str,
        numbers: Mapping[str, object] | None = None,
    ) -> None:
        object.__setattr__(self, "stage", Stage(stage))
        object.__setattr__(self, "passed", bool(passed))
        object.__setattr__(self, "reason", reason)
        plain = {str(k): json_plain(v) for k, v in (numbers or {}).items()}
        object.__setattr__(self, "numbers", plain)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A series with a change point, on its way through the filters.

    ``times_s``/``values`` are the series' points within the run's windows (oriented values);
    ``sign`` converts back to the series' own direction. ``verdicts`` maps a stage name to its
    verdict, in pipeline order.
    """

    series_id: str
    kind: str
    times_s: np.ndarray
    values: np.ndarray
    sign: float
    change_index: int
    change_time_s: float
    mean_before: float
    mean_after: float
    llr: float
    p_value: float
    windows: WindowBounds
    detector: Literal["short-term", "long-term"] = "short-term"
    verdicts: Mapping[Stage, Verdict] = field(default_factory=dict)
    regression_id: str = ""  # set by the same-regression merge: stable across runs
    # the change time's posterior interval [first, last] in epoch seconds (change_time.py): the
    # deploy lies after the point before ``first`` and at or before ``last``; None when the
    # detector gives no interval (long-term)
    change_interval_s: tuple[float, float] | None = None

    @property
    def delta(self) -> float:
        """Oriented change (positive = worse)."""
        return self.mean_after - self.mean_before

    def with_verdict(self, verdict: Verdict) -> Candidate:
        return replace(self, verdicts={**self.verdicts, verdict.stage: verdict})

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts.values())
