"""Tail probabilities as ``scipy.stats`` returns them (the same special functions on the same
arguments, the same values at the support's ends and for NaN), without the per-call argument
handling of its distribution objects, which costs tens of microseconds a call.

Scalars in, Python floats out. O(1).
"""

from __future__ import annotations

import math

from scipy import special

__all__ = ["chi2_sf", "norm_ppf", "norm_sf", "t_sf"]


def norm_sf(x: float) -> float:
    """``scipy.stats.norm.sf(x)``."""
    return float(special.ndtr(-x))


def norm_ppf(q: float) -> float:
    """``scipy.stats.norm.ppf(q)`` for ``0 <= q <= 1`` (NaN elsewhere)."""
    if not 0.0 <= q <= 1.0:
        return math.nan
    return float(special.ndtri(q))


def chi2_sf(x: float, df: float) -> float:
    """``scipy.stats.chi2.sf(x, df)``."""
    if math.isnan(x) or not df > 0:
        return math.nan
    if x <= 0.0:
        return 1.0
    if x == math.inf:
        return 0.0
    return float(special.chdtrc(df, x))


def t_sf(x: float, df: float) -> float:
    """``scipy.stats.t.sf(x, df)``."""
    if math.isnan(x) or not df > 0:
        return math.nan
    if x == math.inf:
        return 0.0
    if x == -math.inf:
        return 1.0
    return float(special.stdtr(df, -x))
