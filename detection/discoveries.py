"""Many series, one run: which change points are discoveries (Benjamini–Hochberg).

FBDetect §5.2.1 tests each series' change point at the 0.01 level. A run tests every series of a
service at once, thousands of them, so the level alone lets ~1% of the quiet series through as
"regressions" (30 on a fleet of 3,000) while the deploy's real ones are a few dozen. regbot
keeps the paper's level as the *false discovery rate* of the run instead: with the run's m
tests ordered by p-value, the changes kept are the k smallest, k the largest rank with
``p_(k) ≤ k·alpha/m`` (Benjamini & Hochberg 1995; valid for independent tests and for the
positively dependent ones a shared load leaves). Of the changes reported, at most a share
alpha are expected to be noise, whether the deploy brought one regression or fifty: the more
real changes a run holds, the more lenient the cut (with 100 discoveries among 3,000 series it is
``p ≤ 3.3e-4``), and for a run of one series it is the paper's test itself.

``multiple_testing: none`` in ``detection.change_point`` restores the per-series test.
"""

from __future__ import annotations

import numpy as np

__all__ = ["discovery_cut"]


def discovery_cut(p_values: np.ndarray, tests: int, alpha: float) -> float:
    """The largest p-value that is a discovery among ``tests`` tests at false discovery rate
    ``alpha``, given the p-values of (at least) every test with p < alpha (the others cannot
    be discoveries); 0.0 when none is. ``p ≤ cut`` is a discovery."""
    p = np.sort(np.asarray(p_values, np.float64))
    if tests <= 0 or len(p) == 0:
        return 0.0
    ranks = np.arange(1, len(p) + 1)
    ok = np.flatnonzero(p <= ranks * alpha / max(tests, len(p)))
    return float(p[ok[-1]]) if len(ok) else 0.0
