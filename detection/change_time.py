"""Change-time interval: the positions the data cannot tell apart from the detected change point,
as a range of epoch seconds that attribution picks the deploy from (regbot's addition to
FBDetect §5.2.1, whose change point is one position).

Complexity: O(rows × points) for the posterior plus one sort per row, O(rows × points)
memory.
Design: docs/design/change_time.md
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

RSS_FLOOR = 1e-4

Variances = Literal["pooled", "separate"]


def change_posterior(
    p1: np.ndarray,
    p2: np.ndarray,
    segment_start: np.ndarray,
    segment_end: np.ndarray,
    range_start: np.ndarray,
    range_end: np.ndarray,
    side: int,
    variances: Variances = "pooled",
) -> tuple[np.ndarray, int]:
    """The posterior probability of each change position (``variances``: one noise scale or one
    per side, module docstring), 0 outside the positions the test
    allows on the segment (``side`` points each side) and outside ``[range_start, range_end)``
    (the prior's support); rows with no such position are all zero.

    ``p1``/``p2`` are (rows, T + 1) prefix sums of the (centred) values and of their squares
    with a leading zero. Only the band of columns some row's range covers is computed: the
    result is ``(post, offset)`` with ``post[:, j]`` the probability of position ``offset + j``.
    """
    range_start = np.asarray(range_start, np.int64)
    range_end = np.asarray(range_end, np.int64)
    rows, width = p1.shape
    if not rows:
        return np.zeros((0, 0)), 0
    offset = int(np.clip(range_start.min(), 0, width))
    stop = int(np.clip(range_end.max(), offset, width))
    positions = np.arange(offset, stop)[None, :]
    log_post = _log_posterior(p1, p2, segment_start, segment_end, positions, side, variances)
    inside = (positions >= range_start[:, None]) & (positions < range_end[:, None])
    log_post = np.where(inside, log_post, -np.inf)
    top = log_post.max(axis=1, keepdims=True) if stop > offset else np.zeros((rows, 1))
    post = np.exp(log_post - np.where(np.isfinite(top), top, 0.0))
    total = post.sum(axis=1, keepdims=True)
    return post / np.where(total > 0, total, 1.0), offset


def mass_between(
    posterior: tuple[np.ndarray, int], start: np.ndarray, end: np.ndarray
) -> np.ndarray:
    """(rows,) posterior mass of the positions in ``[start, end)``."""
    post, offset = posterior
    rows, width = post.shape
    cumulative = np.zeros((rows, width + 1))
    np.cumsum(post, axis=1, out=cumulative[:, 1:])
    at = np.arange(rows)
    upper = np.clip(np.asarray(end) - offset, 0, width)
    lower = np.clip(np.asarray(start) - offset, 0, width)
    mass: npt.NDArray[np.float64] = cumulative[at, upper] - cumulative[at, lower]
    return mass


def density_interval(
    posterior: tuple[np.ndarray, int], index: np.ndarray, mass: float
) -> tuple[np.ndarray, np.ndarray]:
    """First and last position of each row's highest-posterior-density set of ``mass``, widened
    to hold ``index`` (the reported change point); -1, -1 for rows with ``index < 0`` or no
    posterior."""
    post, offset = posterior
    rows, width = post.shape
    first = np.full(rows, -1, np.int64)
    last = np.full(rows, -1, np.int64)
    todo = np.flatnonzero((np.asarray(index) >= 0) & (post.sum(axis=1) > 0))
    if not len(todo):
        return first, last
    part, k = post[todo], np.asarray(index, np.int64)[todo]
    order = np.argsort(-part, axis=1, kind="stable")
    held = np.cumsum(np.take_along_axis(part, order, axis=1), axis=1)
    # positions taken, most probable first, until the mass is reached (rounding may leave the
    # total a hair under 1, so at most every position with posterior > 0)
    count = np.minimum((held < mass).sum(axis=1) + 1, (part > 0).sum(axis=1))
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(width), part.shape), axis=1)
    chosen = rank < count[:, None]
    first[todo] = np.minimum(offset + chosen.argmax(axis=1), k)
    last[todo] = np.maximum(offset + width - 1 - chosen[:, ::-1].argmax(axis=1), k)
    return first, last


def _log_posterior(
    p1: np.ndarray,
    p2: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    positions: np.ndarray,
    side: int,
    variances: Variances,
) -> np.ndarray:
    """(rows, len(positions)) unnormalised log posterior of the change at ``positions`` (a
    (1, P) array), -inf where the test does not allow a change."""
    rows = p1.shape[0]
    lo, hi = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    at = np.arange(rows)
    n = (hi - lo).astype(np.float64)[:, None]
    allowed = (positions >= (lo + side)[:, None]) & (positions <= (hi - side)[:, None])
    base1, base2 = p1[at, lo][:, None], p2[at, lo][:, None]
    total1 = p1[at, hi][:, None] - base1
    total2 = p2[at, hi][:, None] - base2
    m = np.where(allowed, positions - lo[:, None], 1).astype(np.float64)
    rest = np.where(allowed, n - m, 1.0)
    before = p1[:, positions[0]] - base1
    rss_before = p2[:, positions[0]] - base2 - before * before / m
    rss_after = total2 - (p2[:, positions[0]] - base2) - (total1 - before) ** 2 / rest
    ss0 = np.maximum(total2 - total1 * total1 / n, 0.0)
    floor = np.maximum(RSS_FLOOR * ss0, np.finfo(np.float64).tiny)
    if variances == "pooled":
        rss = np.maximum(rss_before + rss_after, floor)
        log_post = -0.5 * np.log(m * rest) - 0.5 * np.maximum(n - 2, 1) * np.log(rss)
    else:
        log_post = _side_term(m, np.maximum(rss_before, floor * m / n)) + _side_term(
            rest, np.maximum(rss_after, floor * rest / n)
        )
    return np.where(allowed, log_post, -np.inf)


def _side_term(count: np.ndarray, rss: np.ndarray) -> np.ndarray:
    """One side's log marginal likelihood with its own mean and scale integrated out (flat and
    Jeffreys' priors): ``−½·log m + log Γ((m − 1)/2) − (m − 1)/2 · log(RSS/2)``."""
    dof = np.maximum(count - 1, 1)
    term: npt.NDArray[np.float64] = (
        -0.5 * np.log(count) + gammaln(dof / 2) - 0.5 * dof * np.log(rss / 2)
    )
    return term


def credible_span(
    values: np.ndarray, range_start: int, range_end: int, side: int, mass: float
) -> tuple[np.ndarray, np.ndarray]:
    """Where each row of ``values`` (rows, n; one shared axis, no padding) most likely changed
    its level, as the first and last position of the ``mass`` highest-posterior-density set of
    a single shift (one noise scale: a run of equal counts on one side would make a scale of
    its own falsely sure) with positions in ``[range_start, range_end)``:
    a row that changed sharply at one moment gets a narrow span there, a row with no change (or
    a small one) a span over most of the range. -1, -1 for rows with no allowed position."""
    values = np.asarray(values, np.float64)
    rows, n = values.shape
    centred = values - values.mean(axis=1, keepdims=True)
    p1 = np.zeros((rows, n + 1))
    p2 = np.zeros((rows, n + 1))
    np.cumsum(centred, axis=1, out=p1[:, 1:])
    np.cumsum(centred * centred, axis=1, out=p2[:, 1:])
    lo, hi = np.zeros(rows, np.int64), np.full(rows, n, np.int64)
    support = np.full(rows, range_start, np.int64), np.full(rows, range_end, np.int64)
    posterior = change_posterior(p1, p2, lo, hi, *support, side, "pooled")
    post, offset = posterior
    if post.shape[1] == 0:
        return np.full(rows, -1, np.int64), np.full(rows, -1, np.int64)
    index = np.where(post.sum(axis=1) > 0, offset + post.argmax(axis=1), -1)
    return density_interval(posterior, index, mass)
