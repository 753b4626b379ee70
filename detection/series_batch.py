"""Series batches of the detection pipeline: the run's window edges, a batch of series on
their time axes, and the change points found in it.

Conventions, used by every stage:

* **Orientation.** Stages see *oriented* values where higher is worse: a series whose kind is
  higher-is-better (throughput, qps by default) is negated once, when the batch is built
  (``SeriesBatch.sign`` is -1 for it), and reports convert back with ``sign``.
* **Indices.** A change point's ``index`` is the first point of the new segment (TCPDBench's
  convention): ``values[:index]`` is before, ``values[index:]`` after.
* **Times** are epoch seconds (float). A window ``[start_s, end_s)`` is half-open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from regbot.detection.presets import Windows
from regbot.profiles.model import Series

__all__ = ["ChangePoints", "SeriesBatch", "WindowBounds"]


@dataclass(frozen=True, slots=True)
class WindowBounds:
    """Absolute window edges for one run: historical ``[historical_start_s, analysis_start_s)``,
    analysis ``[analysis_start_s, extended_start_s)``, extended ``[extended_start_s, end_s]``."""

    historical_start_s: float
    analysis_start_s: float
    extended_start_s: float
    end_s: float

    @staticmethod
    def ending_at(end_s: float, windows: Windows) -> WindowBounds:
        """`regbot detect`'s windows: the extended window ends at ``end_s`` (``--now``)."""
        extended_start = end_s - windows.extended_s
        analysis_start = extended_start - windows.analysis_s
        return WindowBounds(
            analysis_start - windows.historical_s, analysis_start, extended_start, end_s
        )

    @staticmethod
    def starting_at(deploy_s: float, windows: Windows) -> WindowBounds:
        """`regbot run`'s windows: the analysis window starts at the deploy time."""
        extended_start = deploy_s + windows.analysis_s
        return WindowBounds(
            deploy_s - windows.historical_s,
            deploy_s,
            extended_start,
            extended_start + windows.extended_s,
        )

    def for_series(self, times_s: np.ndarray, windows: Windows) -> WindowBounds:
        """These bounds for one series, each window reaching further back until it holds
        ``windows.min_points`` of the series' points; the run's bounds when they already do.

        ``times_s``: the series' distinct timestamps, ascending (series readers average repeated
        timestamps into one point, ``profiles.series_files.normalise_points``, so a point is a
        distinct time: one build, however many times it was measured). Points after ``end_s``
        do not count. Worked from ``end_s`` backwards: the extended window ``[e, end_s]``
        starts at the earlier of its own start and its ``extended``-th last point (only when
        the workload has an extended window); the analysis window keeps its duration, ending at
        ``e``, and starts earlier still if it holds fewer than ``analysis`` points; the same for
        the historical window. A series with fewer points than asked for reaches back to its
        first point. Edges only ever move earlier, so a dense series gets the run's bounds
        unchanged (``self``). O(log n)."""
        need = windows.min_points
        times = np.asarray(times_s, np.float64)
        n_end = int(np.searchsorted(times, self.end_s, "right"))
        e = self.extended_start_s
        if self.end_s > self.extended_start_s:
            e = _reach_back(times, e, n_end, need.extended)
        a = self.analysis_start_s
        if e != self.extended_start_s:
            a = e - (self.extended_start_s - self.analysis_start_s)
        a = _reach_back(times, a, int(np.searchsorted(times, e, "left")), need.analysis)
        h = self.historical_start_s
        if a != self.analysis_start_s:
            h = a - (self.analysis_start_s - self.historical_start_s)
        h = _reach_back(times, h, int(np.searchsorted(times, a, "left")), need.historical)
        if (h, a, e) == (self.historical_start_s, self.analysis_start_s, self.extended_start_s):
            return self
        return WindowBounds(h, a, e, self.end_s)


def _reach_back(times: np.ndarray, start_s: float, stop: int, need: int) -> float:
    """The start of a window ending before index ``stop`` that holds at least ``need`` points:
    ``start_s`` when ``[start_s, times[stop])`` already does, else the time of the ``need``-th
    point before ``stop`` (or the first point when there are fewer)."""
    held = stop - int(np.searchsorted(times, start_s, "left"))
    if held >= need or stop == 0:
        return start_s
    return min(start_s, float(times[max(stop - need, 0)]))


@dataclass(frozen=True, slots=True)
class SeriesBatch:
    """Many series as padded 2-D arrays for vectorised stages.

    Row ``i`` holds ``lengths[i]`` valid points, left-aligned and in ascending time order;
    the rest of the row is padding (``times_s`` = +inf, ``values`` = 0.0, never read when masks
    are respected). When every series has the same timestamps, ``times_s`` is a read-only
    broadcast of one row (a fleet of 100,000 series costs one time axis, not 100,000).
    ``values`` are oriented (higher is worse, see the module docstring).
    """

    ids: list[str]
    kinds: list[str]
    times_s: np.ndarray  # (n, T) float64
    values: np.ndarray  # (n, T) float64, oriented
    lengths: np.ndarray  # (n,) int64
    sign: np.ndarray  # (n,) float64: +1, or -1 for higher-is-better kinds

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def valid(self) -> np.ndarray:
        """(n, T) bool: the points that exist."""
        return np.arange(self.values.shape[1])[None, :] < self.lengths[:, None]

    def rows(self, start: int, stop: int) -> SeriesBatch:
        """Rows ``start:stop`` as a batch of views (no copy)."""
        return SeriesBatch(
            self.ids[start:stop],
            self.kinds[start:stop],
            self.times_s[start:stop],
            self.values[start:stop],
            self.lengths[start:stop],
            self.sign[start:stop],
        )

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Times and oriented values of series ``i``, without padding."""
        n = int(self.lengths[i])
        return self.times_s[i, :n], self.values[i, :n]

    @staticmethod
    def from_series(
        series: Sequence[Series],
        higher_is_better: frozenset[str] = frozenset({"throughput", "qps"}),
        *,
        start_s: float = -np.inf,
        end_s: float = np.inf,
    ) -> SeriesBatch:
        """Pack series (already normalised: sorted, finite, unique times) keeping the points in
        ``[start_s, end_s]``; data after ``end_s`` (``--now``) is ignored as if not yet arrived."""
        ids, kinds = [s.id for s in series], [s.kind for s in series]
        sign = np.array([-1.0 if s.kind in higher_is_better else 1.0 for s in series])
        shared = _shared_timestamps(series)
        if shared is not None:
            # One time axis for every series (a fleet's buckets): a broadcast view, no copy.
            keep = (shared >= start_s) & (shared <= end_s)
            row_times = shared[keep]
            lengths = np.full(len(series), len(row_times), dtype=np.int64)
            times = np.broadcast_to(row_times, (len(series), len(row_times)))
            values = np.empty((len(series), len(row_times)))
            every = bool(keep.all())
            for i, s in enumerate(series):
                row = np.asarray(s.values, np.float64)
                np.multiply(row if every else row[keep], sign[i], out=values[i])
            return SeriesBatch(ids, kinds, times, values, lengths, sign)
        kept = []
        for s in series:
            keep = (s.timestamps_s >= start_s) & (s.timestamps_s <= end_s)
            kept.append(
                (
                    np.asarray(s.timestamps_s, np.float64)[keep],
                    np.asarray(s.values, np.float64)[keep],
                )
            )
        lengths = np.array([len(t) for t, _ in kept], dtype=np.int64)
        width = int(lengths.max()) if len(lengths) else 0
        times = np.full((len(series), width), np.inf)
        values = np.zeros((len(series), width))
        for i, (t, v) in enumerate(kept):
            times[i, : len(t)] = t
            values[i, : len(v)] = v * sign[i]
        return SeriesBatch(
            [s.id for s in series], [s.kind for s in series], times, values, lengths, sign
        )


def _shared_timestamps(series: Sequence[Series]) -> np.ndarray | None:
    """The one timestamp array all series have, or None when they differ."""
    if not series:
        return None
    first = np.asarray(series[0].timestamps_s, np.float64)
    for s in series[1:]:
        same = s.timestamps_s is series[0].timestamps_s
        if not same and not np.array_equal(s.timestamps_s, first):
            return None
    return first


@dataclass(frozen=True, slots=True)
class ChangePoints:
    """The most likely single change point of every series in a batch (FBDetect §5.2.1).

    Per row: ``index`` (first point after the change; -1 when the series could not be tested),
    ``mean_before``/``mean_after`` (oriented), ``llr`` (likelihood-ratio statistic),
    ``p_value`` (chi-squared, 2 degrees of freedom), ``iterations`` and ``stable`` (the
    CUSUM/EM iteration converged before its budget), the segment ``[segment_start,
    segment_end)`` the single-change model was fitted to (the whole row unless older changes were
    cut off), and ``interval_start``/``interval_end``: the first and last index of the change
    position's highest-posterior-density set (``change_time.py``; -1 when ``index`` is -1).
    """

    index: np.ndarray
    mean_before: np.ndarray
    mean_after: np.ndarray
    llr: np.ndarray
    p_value: np.ndarray
    iterations: np.ndarray
    stable: np.ndarray
    segment_start: np.ndarray
    segment_end: np.ndarray
    window_share: np.ndarray
    interval_start: np.ndarray
    interval_end: np.ndarray
