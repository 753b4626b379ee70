"""Candidates on a regular grid for the filter tests: values, a change index and the window
sizes in points, as the change-point stage would hand them on."""

from __future__ import annotations

import numpy as np

from regbot.detection.model import Candidate
from regbot.detection.series_batch import WindowBounds


def grid_candidate(
    values: np.ndarray,
    change: int,
    *,
    n_hist: int,
    n_analysis: int,
    bucket_s: float,
    t0_s: float,
    series_id: str = "gcpu:Feed.rank",
    kind: str = "gcpu",
) -> Candidate:
    """Points ``bucket_s`` apart from ``t0_s``: historical ``[0, n_hist)``, analysis
    ``[n_hist, n_hist + n_analysis)``, extended to the last point."""
    values = np.asarray(values, dtype=np.float64)
    times = t0_s + bucket_s * np.arange(values.size)
    windows = WindowBounds(
        t0_s, t0_s + n_hist * bucket_s, t0_s + (n_hist + n_analysis) * bucket_s, float(times[-1])
    )
    return Candidate(
        series_id=series_id,
        kind=kind,
        times_s=times,
        values=values,
        sign=1.0,
        change_index=change,
        change_time_s=float(times[change]),
        mean_before=float(values[:change].mean()),
        mean_after=float(values[change:].mean()),
        llr=0.0,
        p_value=0.0,
        windows=windows,
    )
