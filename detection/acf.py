"""The autocorrelation function and its Bartlett band as ``statsmodels.tsa.stattools.acf``
(``fft=True``, ``alpha``) computes them — the same FFT, divisions and cumulative sum, so the same
floats — without its argument handling and the Ljung–Box statistics it adds.

Complexity: O(n log n) (one FFT of the next 5-smooth length ≥ 2n + 1); ``acf_band_rows`` does
the same for each row of a batch of equal-length series in one call.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from regbot.detection.dist import norm_ppf

__all__ = ["acf_band", "acf_band_rows", "next_regular"]

# numpy computes ``a * temporary`` in the temporary's memory from this many bytes on
# (NPY_MIN_ELIDE_BYTES); tests/detection/test_went_away_batch.py checks both sides of it
ELIDE_BYTES = 256 * 1024


@lru_cache(maxsize=256)
def next_regular(target: int) -> int:
    """The smallest 5-smooth number (2^a·3^b·5^c) ≥ ``target``; ``target`` itself up to 6."""
    if target <= 6:
        return target
    best = 1 << (target - 1).bit_length()  # the next power of two
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            n = p35
            while n < target:
                n *= 2
            best = min(best, n)
            p35 *= 3
        p5 *= 5
    return best


def acf_band(x: np.ndarray, nlags: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(acf at lags 0..nlags, the half-width of its ``1 - alpha`` Bartlett band) of ``x``
    (1-D, at least ``nlags + 1`` points): statsmodels' ``acf(x, nlags, alpha=alpha, fft=True)``
    returns the band as ``acf ∓ half-width``."""
    x = np.asarray(x, dtype=np.float64)
    nobs = len(x)
    xo = x - x.mean()
    d = nobs * np.ones(2 * nobs - 1)
    n = next_regular(2 * nobs + 1)
    frf = np.fft.fft(xo, n=n)
    acov = (np.fft.ifft(frf * np.conjugate(frf))[:nobs] / d[nobs - 1 :]).real
    acf = acov[: nlags + 1] / acov[0]
    varacf = np.ones_like(acf) / nobs
    varacf[0] = 0
    varacf[1] = 1.0 / nobs
    varacf[2:] *= 1 + 2 * np.cumsum(acf[1:-1] ** 2)
    interval = norm_ppf(1 - alpha / 2.0) * np.sqrt(varacf)
    return acf, interval


def acf_band_rows(x: np.ndarray, nlags: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``acf_band`` of each row of ``x`` (rows, n): (rows, nlags + 1) coefficients and
    half-widths. The same operations along each row (its mean, its FFT, the cumulative sum of
    its squared coefficients), so each row's numbers are the ones ``acf_band`` gives it."""
    x = np.asarray(x, dtype=np.float64)
    nobs = x.shape[1]
    xo = x - x.mean(axis=1, keepdims=True)
    d = nobs * np.ones(2 * nobs - 1)
    n = next_regular(2 * nobs + 1)
    frf = np.fft.fft(xo, n=n, axis=1)
    # A complex product's last bits depend on its operands' order, and numpy swaps them when it
    # reuses a large temporary: ``acf_band``'s ``frf * np.conjugate(frf)`` is computed as
    # ``conj *= frf`` from ELIDE_BYTES on. Rows that long are multiplied as it writes them.
    if frf.shape[1] * frf.itemsize < ELIDE_BYTES:
        power = np.multiply(frf, np.conjugate(frf))
    else:
        power = np.stack([row * np.conjugate(row) for row in frf])
    acov = (np.fft.ifft(power, axis=1)[:, :nobs] / d[nobs - 1 :]).real
    acf = acov[:, : nlags + 1] / acov[:, :1]
    varacf = np.ones_like(acf) / nobs
    varacf[:, 0] = 0
    varacf[:, 1] = 1.0 / nobs
    varacf[:, 2:] *= 1 + 2 * np.cumsum(acf[:, 1:-1] ** 2, axis=1)
    interval = norm_ppf(1 - alpha / 2.0) * np.sqrt(varacf)
    return acf, interval
