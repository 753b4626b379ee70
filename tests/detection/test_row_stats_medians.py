"""Row-wise medians (row_stats) against numpy's, bit for bit: even and odd lengths, ties, NaN (some, all,
none) and single columns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from regbot.detection.row_stats import nan_row_medians, row_medians_in_place


@pytest.mark.parametrize("width", [1, 2, 3, 10, 11, 601])
def test_row_medians_in_place_is_numpys_median(width: int) -> None:
    rng = np.random.default_rng(width)
    for values in (rng.normal(size=(50, width)), np.round(rng.normal(size=(50, width)))):
        expected = np.median(values, axis=1)
        np.testing.assert_array_equal(row_medians_in_place(values.copy()), expected)


@pytest.mark.parametrize("width", [1, 2, 3, 10, 11, 601])
@pytest.mark.parametrize("nan_share", [0.0, 0.3, 0.9])
def test_nan_row_medians_is_numpys_nanmedian(width: int, nan_share: float) -> None:
    rng = np.random.default_rng(width)
    values = rng.normal(size=(80, width))
    values[5] = np.round(values[5])
    values[rng.random(values.shape) < nan_share] = np.nan
    values[0] = np.nan  # a row without values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.nanmedian(values, axis=1)
    np.testing.assert_array_equal(nan_row_medians(values), expected)
