"""The comment's chart: a fenced Mermaid ``xychart-beta`` line of a series' bucket means
around the change, with a one-line caption, and the points it is drawn from (each reported
regression's series, :func:`series_points`). O(points)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from regbot.bot.views.numbers import format_number
from regbot.detection.model import Candidate
from regbot.errors import InputError
from regbot.report.decode import read_finite, read_list

__all__ = ["CHART_MAX_POINTS", "format_duration", "mermaid_chart", "read_point", "series_points"]

CHART_MAX_POINTS = 60
_MERMAID_TEXT = re.compile(r"[^A-Za-z0-9 ._:/()%+,-]+")


@dataclass(frozen=True, slots=True)
class _TimeUnit:
    name: str
    seconds: float


_MINUTES, _HOURS, _DAYS = (
    _TimeUnit("minutes", 60.0),
    _TimeUnit("hours", 3600.0),
    _TimeUnit("days", 86400.0),
)
_EIGHTH = 0.125


def _ceil_eighth(value: float) -> float:
    return max(_EIGHTH, math.ceil(value / _EIGHTH - 1e-9) * _EIGHTH)


def _mermaid_text(text: str, max_chars: int = 60) -> str:
    """Text for a quoted mermaid string: a conservative character set (no quote, backtick,
    ``<``, ``>`` or ``%%`` comment), one line, cut to ``max_chars``."""
    shown = " ".join(_MERMAID_TEXT.sub(" ", text).split()).replace("%%", "%")
    return shown[:max_chars].strip()


def _decimal(value: float, decimals: int) -> str:
    """A plain decimal (mermaid's number syntax has no exponent), without a negative zero."""
    shown = f"{value:.{decimals}f}"
    return shown[1:] if shown.startswith("-") and float(shown) == 0 else shown


def _plain(value: float) -> str:
    """A multiple of 1/16 as the shortest plain decimal (``-27.5``, ``0.0625``, ``3``)."""
    return _decimal(value, 4).rstrip("0").rstrip(".") or "0"


@dataclass(frozen=True, slots=True)
class _Buckets:
    unit: _TimeUnit
    width: float  # in ``unit``
    first: int  # bucket index of the first bucket; bucket k spans [k, k+1) * width from the change
    means: np.ndarray
    filled: int  # buckets that held points (the others are interpolated)
    points: int


def _bucket_series(
    points: Sequence[tuple[float, float]], change_time_s: float, max_points: int
) -> _Buckets | None:
    """Bucket means of the series around the change, or None when fewer than two buckets.

    The chart shows everything after the change and up to ``max(3 x that, 1 day)`` before it,
    so the level after the change takes at least a quarter of the width. Buckets are aligned on
    the change (one bucket boundary is the change time, so the step falls between two points)
    and are a multiple of 1/8 of the time unit wide, at least the median point spacing and just
    wide enough for ``max_points`` buckets; their centres are then exact binary fractions, which
    mermaid's evenly spaced x positions reproduce without rounding. Empty buckets (gaps in the
    data) are linearly interpolated from their neighbours, as mermaid needs a value per point.
    """
    data = np.asarray(
        [(float(t), float(v)) for t, v in points if math.isfinite(t) and math.isfinite(v)],
        dtype=np.float64,
    ).reshape(-1, 2)
    if len(data) < 2:
        return None
    data = data[np.argsort(data[:, 0], kind="stable")]
    times, values = data[:, 0], data[:, 1]
    after_s = max(0.0, float(times[-1]) - change_time_s)
    keep = times >= change_time_s - max(3.0 * after_s, 86400.0)
    times, values = times[keep], values[keep]
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    span_s = float(times[-1] - times[0])
    unit = _MINUTES if span_s <= 3 * 3600 else _HOURS if span_s <= 4 * 86400 else _DAYS
    offsets = (times - change_time_s) / unit.seconds
    gaps = np.diff(offsets)
    spacing = float(np.median(gaps[gaps > 0])) if np.any(gaps > 0) else 0.0
    width = _ceil_eighth(max(spacing, (offsets[-1] - offsets[0]) / max_points))

    def count(w: float) -> int:
        return math.floor(offsets[-1] / w) - math.floor(offsets[0] / w) + 1

    while count(width) > max_points:  # at most a few steps: n <= span / w + 2
        width += _EIGHTH
    first = math.floor(offsets[0] / width)
    index = np.floor(offsets / width).astype(np.int64) - first
    n = int(index[-1]) + 1
    if n < 2:
        return None
    sums = np.bincount(index, weights=values, minlength=n)
    counts = np.bincount(index, minlength=n)
    has = counts > 0
    means = np.empty(n, dtype=np.float64)
    means[has] = sums[has] / counts[has]
    slots = np.arange(n)
    means[~has] = np.interp(slots[~has], slots[has], means[has])
    return _Buckets(unit, width, first, means, int(has.sum()), len(times))


def _fenced(text: str, info: str) -> str:
    """regbot's own text (the mermaid chart, built from numbers and :func:`_mermaid_text`) as a
    fenced block, kept verbatim: :func:`~regbot.bot.github.markdown_safe.code_block` would break the
    ``-->`` that mermaid's axis syntax needs."""
    if "`" in text:
        raise ValueError("regbot's own fenced text must not hold a backtick")
    return f"```{info}\n{text}\n```"


def format_duration(seconds: float) -> str:
    for name, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{format_number(seconds / size)} {name}"
    return f"{format_number(seconds)} s"


def mermaid_chart(
    points: Sequence[tuple[float, float]],
    *,
    change_time_s: float,
    y_title: str,
    scale: float = 1.0,
    max_points: int = CHART_MAX_POINTS,
) -> str | None:
    """A fenced ``mermaid`` ``xychart-beta`` line chart of ``points`` (epoch seconds, value;
    values multiplied by ``scale``) downsampled to at most ``max_points`` bucket means around
    the change (:func:`_bucket_series`), then a one-line caption; None when there is too little
    data to draw a line.

    The x-axis is numeric, in minutes, hours or days from the change (0 is the change; mermaid
    labels a few ticks). A categorical ``x-axis [...]`` would need one label per point: mermaid
    pairs line values with categories one to one and drops the values beyond the last category,
    so a few time labels would leave a few points. The y-axis spans the values padded by 10% of
    their range on each side (not below zero for a series that never goes negative).
    """
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 3:
        raise InputError("chart points", "a whole number of at least 3", max_points)
    change_time_s = read_finite(change_time_s, "change_time_s", "a finite time")
    checked = [read_point(p, i) for i, p in enumerate(read_list(points, "series_points"))]
    buckets = _bucket_series(checked, change_time_s, max_points)
    if buckets is None:
        return None
    values = buckets.means * scale
    lo, hi = float(values.min()), float(values.max())
    pad = 0.1 * (hi - lo) if hi > lo else 0.1 * abs(hi) or 1.0
    bottom = lo - pad
    if lo >= 0:
        bottom = max(0.0, bottom)
    top = hi + pad
    decimals = min(12, max(0, 3 - math.floor(math.log10(top - bottom))))
    step = 10.0**-decimals
    bottom = math.floor(bottom / step) * step
    top = math.ceil(top / step) * step
    w, first = buckets.width, buckets.first
    x_lo, x_hi = (first + 0.5) * w, (first + len(values) - 0.5) * w
    when = datetime.fromtimestamp(change_time_s, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    x_title = _mermaid_text(f"{buckets.unit.name} from the change at {when}")
    line = ", ".join(_decimal(float(v), decimals) for v in values)
    chart = "\n".join(
        [
            "xychart-beta",
            f'    x-axis "{x_title}" {_plain(x_lo)} --> {_plain(x_hi)}',
            f'    y-axis "{_mermaid_text(y_title)}" {_decimal(bottom, decimals)} --> '
            f"{_decimal(top, decimals)}",
            f"    line [{line}]",
        ]
    )
    gaps = len(values) - buckets.filled
    caption = (
        f"Means of {buckets.points:,} points in {len(values)} buckets of "
        f"{format_duration(w * buckets.unit.seconds)}"
        + (f" ({gaps} empty, interpolated)" if gaps else "")
        + "; the change is at 0."
    )
    return _fenced(chart, "mermaid") + "\n\n" + caption


def read_point(point: object, i: int) -> tuple[float, float]:
    """``series_points[i]``: a (time, value) pair of numbers."""
    where = f"series_points[{i}]"
    if isinstance(point, (str, bytes)) or not isinstance(point, Sequence) or len(point) != 2:
        raise InputError(where, "a (time, value) pair", point)
    t, v = point
    for x in (t, v):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise InputError(where, "numbers", point)
    return float(t), float(v)


def series_points(by_id: Mapping[str, Candidate]) -> dict[str, list[tuple[float, float]]]:
    """Each reported regression's series within the run's windows, in the series' own direction
    (the detection candidate holds oriented values), for the comment's chart."""
    return {
        rid: [
            (float(t), float(c.sign * v))
            for t, v in zip(np.asarray(c.times_s), np.asarray(c.values))
        ]
        for rid, c in by_id.items()
    }
