"""Did the cost leave the domain when the regression arrived? The timing half of a cost shift.

A cost shift moves cost at one moment: the commit that made ``S`` dearer made the rest of its
domain cheaper in the same deploy, so the rest's drop and ``S``'s rise fall at the same point.
§5.4 compares only the sizes of the two changes, and on a fleet where one deploy brings many
independent changes that is not enough: a sibling's own improvement an hour after ``S``'s
regression (or before it) also leaves the domain's total flat across ``S``'s change point, and
the two unrelated changes pass for one shift (on the benchmark fleets, two real 2× and 4× steps
were removed that way).

So a domain row that the size test calls a shift is kept only when the moved part (the rest of
the domain, oriented: what fell as ``S`` rose) could have changed when ``S`` did: the
``same_time_mass`` highest-posterior-density span of a single level shift in it must meet the
same span of ``S`` (``change_time.credible_span``: one noise scale, flat prior over the
analysis window and one window's length on each side — the change-point search's margin —
fitted to the data within ``LOCAL_WINDOWS`` window lengths of the window, so that structure far
away in the history does not make the span falsely sure). A rest that is noisy, or changed
little, has a wide span and is not excluded; only a rest that clearly changed at another moment
is. Default ``same_time_mass`` 0.99: a true shift's rest is refused about 1% of the time or less.
"""

from __future__ import annotations

import numpy as np

from regbot.detection.change_time import credible_span
from regbot.detection.model import Candidate
from regbot.detection.stage_settings import ChangePointSettings

LOCAL_WINDOWS = 3  # the shift is fitted to this many window lengths of data on each side
SIDE_POINTS = ChangePointSettings().min_points_each_side  # as the change-point test's


def change_spans(
    cand: Candidate, positions: np.ndarray | None, rows: np.ndarray, mass: float
) -> list[tuple[float, float] | None]:
    """For each row of ``rows`` (values on the candidate's axis, or on its points
    ``positions``), the times (first, last) of the ``mass`` span in which it most likely
    changed level, fitted to the analysis window and ``LOCAL_WINDOWS`` window lengths on each
    side; None when the axis leaves no position to test."""
    times = cand.times_s if positions is None else cand.times_s[positions]
    windows = cand.windows
    start = int(np.searchsorted(times, windows.analysis_start_s))
    end = int(np.searchsorted(times, windows.extended_start_s))
    width = max(end - start, 1)
    lo = max(start - LOCAL_WINDOWS * width, 0)
    hi = min(end + LOCAL_WINDOWS * width, len(times))
    low = max(start - width, lo + SIDE_POINTS)
    high = min(end + width, hi - SIDE_POINTS + 1)
    if high <= low:
        return [None] * len(rows)
    first, last = credible_span(rows[:, lo:hi], low - lo, high - lo, SIDE_POINTS, mass)
    return [
        None if f < 0 else (float(times[lo + f]), float(times[min(lo + g, len(times) - 1)]))
        for f, g in zip(first.tolist(), last.tolist())
    ]


def same_time(
    cand: Candidate, positions: np.ndarray | None, moved: np.ndarray, mass: float
) -> tuple[bool, tuple[float, float] | None, tuple[float, float] | None]:
    """Whether the candidate and ``moved`` could have changed at one moment: their ``mass``
    spans (``change_spans``, the same model for both) meet. Returns (meet, the candidate's
    span, the moved part's span); no span on either side (nothing to test) counts as meeting."""
    own = cand.values if positions is None else cand.values[positions]
    mine, theirs = change_spans(cand, positions, np.stack([own, moved]), mass)
    if mine is None or theirs is None:
        return True, mine, theirs
    return mine[0] <= theirs[1] and theirs[0] <= mine[1], mine, theirs
