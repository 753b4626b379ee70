"""Mann–Kendall's S and its test against time order, computed as scipy's ``kendalltau(arange(n),
values)`` computes them, without its per-call overhead: the same integers (S, the ties), the same
floating-point expressions for tau-b and the p-value (exact null distribution for small tie-free
samples, else the normal approximation with the tie-corrected variance), so every number equals
scipy's.

``mann_kendall_counts`` counts S from the signs of all pairs at once (O(n²), vectorised); windows
longer than ``PAIRWISE_MAX`` points are left to scipy (O(n log n)), whose numbers these are.
Complexity: O(n²) for S, O(n log n) for the ties.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy import special, stats

__all__ = [
    "PAIRWISE_MAX",
    "KendallTest",
    "kendall_test",
    "mann_kendall_counts",
    "tie_terms",
]

PAIRWISE_MAX = 2048  # points; longer windows go to scipy's O(n log n) count


@lru_cache(maxsize=64)
def _pairs(n: int) -> npt.NDArray[np.intp]:
    """Flat indices of the pairs (i, j), i < j, in an (n, n) array."""
    i, j = np.triu_indices(n, 1)
    flat: npt.NDArray[np.intp] = i * n + j
    return flat


def mann_kendall_counts(values: np.ndarray) -> tuple[int, int, int]:
    """(S, tied pairs, Σ t(t−1)(2t+5)) of a 1-D window of finite values: the pairs' signs
    counted at once (O(n²)), the tie groups only when some pairs tie."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    later = (v[None, :] - v[:, None]).ravel()[_pairs(n)]  # v[j] − v[i], i < j
    up = int(np.count_nonzero(later > 0))
    down = int(np.count_nonzero(later < 0))
    ties = len(later) - up - down
    return up - down, ties, tie_terms(v)[1] if ties else 0


def tie_terms(values: np.ndarray) -> tuple[int, int]:
    """(pairs tied, Σ t(t−1)(2t+5)) over the groups of ``t`` equal values, as scipy counts them."""
    _, counts = np.unique(values, return_counts=True)
    cnt = counts.astype(np.int64, copy=False)
    cnt = cnt[cnt > 1]
    return int((cnt * (cnt - 1) // 2).sum()), int((cnt * (cnt - 1.0) * (2 * cnt + 5)).sum())


@lru_cache(maxsize=4096)
def _exact_two_sided_p(n: int, concordant: int) -> float:
    """scipy's exact two-sided p-value of Kendall's tau (``_kendall_p_exact``: Kendall's
    recursion, ``n`` < 171), for ``concordant`` concordant pairs of ``n`` tie-free points."""
    c = int(min(concordant, (n * (n - 1)) // 2 - concordant))
    if n <= 2:
        prob = 1.0
    elif c == 0:
        prob = 2.0 / math.factorial(n) if n < 171 else 0.0
    elif c == 1:
        prob = 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    elif 4 * c == n * (n - 1):
        prob = 1.0
    else:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new)
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = 2.0 * np.sum(new) / math.factorial(n)
    return float(np.clip(prob, 0, 1))


class KendallTest:
    """Kendall's tau-b of values against time order and its two-sided p-value."""

    __slots__ = ("p_value", "s", "tau")

    def __init__(self, s: int, tau: float, p_value: float) -> None:
        self.s = s
        self.tau = tau
        self.p_value = p_value


def kendall_test(n: int, s: int, ties: int, tie_variance: int) -> KendallTest:
    """tau-b and p-value of ``n`` points (n ≥ 3, not all equal) against their order, from S,
    the tied pairs and Σ t(t−1)(2t+5) of the values' ties; scipy's expressions
    (``stats.kendalltau``, method "auto", two-sided)."""
    tot = (n * (n - 1)) // 2
    # math.sqrt and np.sqrt both round correctly; min/max as np.minimum on these non-NaN floats
    tau = min(1.0, max(-1.0, s / math.sqrt(tot) / math.sqrt(tot - ties)))
    discordant = (tot - ties - s) // 2
    if ties == 0 and (n <= 33 or min(discordant, tot - discordant) <= 1):
        p = _exact_two_sided_p(n, tot - discordant)
    else:
        m = n * (n - 1.0)
        # scipy's variance with time's tie terms (zero) left out: subtracting 0 and adding 0.0
        # change no float
        var = (m * (2 * n + 5) - tie_variance) / 18
        z = s / math.sqrt(var)
        p = float(2 * special.ndtr(-abs(z)))
    return KendallTest(s, tau, p)


def scipy_test(values: np.ndarray) -> KendallTest:
    """The same numbers from scipy itself (long windows): S recovered from tau-b."""
    n = values.size
    res = stats.kendalltau(np.arange(n), values)
    tau, p = float(res.statistic), float(res.pvalue)
    ties, _ = tie_terms(values)
    n0 = n * (n - 1) / 2
    s = int(round(tau * np.sqrt(n0 * (n0 - ties))))
    return KendallTest(s, tau, p)
