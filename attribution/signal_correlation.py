"""Time-series correlation (FBDetect §5.6): series that describe a set-up rather than performance
(a feature flag's rollout share, a configuration version, an experiment's arm) correlated with a
regression's series, credited to the commits that name them.

A commit names a signal when its title, body or diff contains one of the signal's names as a whole
identifier, case-insensitively. A signal's names are its series id, the id's last part after
``:`` (``flag:new_parser`` → ``new_parser``), and the values of its ``name``, ``flag``,
``feature``, ``config``, ``experiment`` and ``key`` labels; names shorter than three characters
are ignored (they would match everywhere).

The part is the largest |Pearson r| between the regression's series and a signal the commit
names, over the run's windows, points paired by nearest time (half a spacing at most, the rule of
PairwiseDedup). The sign is dropped: switching a flag off can cause a regression as well as
switching it on. Fewer than three paired points, or a constant series, give r = 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from regbot.attribution.model import Commit
from regbot.detection.dedup.shared_cause import paired_points

NAME_LABELS = ("name", "flag", "feature", "config", "experiment", "key")
MIN_NAME_CHARS = 3
MIN_PAIRED_POINTS = 3


@dataclass(frozen=True, slots=True)
class Signal:
    """A non-performance series: its id, the names a commit may use for it, and its points."""

    id: str
    names: tuple[str, ...]
    times_s: np.ndarray
    values: np.ndarray


def signal_names(series_id: str, labels: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The names by which a commit can refer to a signal (see the module docstring)."""
    names = [series_id, series_id.rsplit(":", 1)[-1].split("{", 1)[0]]
    names += [str(v) for k, v in (labels or {}).items() if k in NAME_LABELS]
    unique = dict.fromkeys(n.strip() for n in names if len(n.strip()) >= MIN_NAME_CHARS)
    return tuple(unique)


def _name_pattern(names: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)


def signals_named_by(commit: Commit, signals: Sequence[Signal]) -> list[int]:
    """Indices of the signals the commit's title, body or diff names."""
    text = "\n".join((commit.title, commit.body, commit.diff))
    return [
        i
        for i, signal in enumerate(signals)
        if signal.names and _name_pattern(signal.names).search(text)
    ]


def pearson(
    times_a: np.ndarray, values_a: np.ndarray, times_b: np.ndarray, values_b: np.ndarray
) -> float:
    """Pearson r over the points paired by nearest time; 0 when it is not defined."""
    ia, ib = paired_points(np.asarray(times_a, np.float64), np.asarray(times_b, np.float64))
    if len(ia) < MIN_PAIRED_POINTS:
        return 0.0
    a = np.asarray(values_a, np.float64)[ia]
    b = np.asarray(values_b, np.float64)[ib]
    a, b = a - a.mean(), b - b.mean()
    scale = np.sqrt((a * a).sum() * (b * b).sum())
    if scale <= 1e-12 * max(1.0, float(np.abs(a).max() * np.abs(b).max())):
        return 0.0
    return float(np.clip((a * b).sum() / scale, -1.0, 1.0))


def correlation_parts(
    times_s: np.ndarray,
    values: np.ndarray,
    commits: Sequence[Commit],
    signals: Sequence[Signal],
    window: tuple[float, float],
) -> list[float | None]:
    """Each commit's correlation part for one regression's series (points in ``window``,
    ``[start, end]``). None for every commit when no signal is configured (the part does not
    apply); 0 for a commit that names none."""
    if not signals:
        return [None] * len(commits)
    start, end = window
    times_s = np.asarray(times_s, np.float64)
    keep = (times_s >= start) & (times_s <= end)
    r_of: dict[int, float] = {}
    parts: list[float | None] = []
    for commit in commits:
        best = 0.0
        for i in signals_named_by(commit, signals):
            if i not in r_of:
                s = signals[i]
                in_window = (s.times_s >= start) & (s.times_s <= end)
                r_of[i] = abs(
                    pearson(
                        times_s[keep],
                        np.asarray(values)[keep],
                        s.times_s[in_window],
                        s.values[in_window],
                    )
                )
            best = max(best, r_of[i])
        parts.append(best)
    return parts
