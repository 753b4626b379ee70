"""The fleet-wide load (``fleet_load.py``, docs/design/fleet_load.md): a shared load term is found
and taken out of the rows it drives, a row's own step is left in place, rows that do not follow
the load are left alone, and the in-place row medians are ``np.median`` exactly."""

from __future__ import annotations

import numpy as np
import pytest

from regbot.detection.fleet_load import (
    MAD_NORMAL,
    _robust_centre_scale,
    remove_fleet_load,
)
from regbot.detection.series_batch import SeriesBatch
from regbot.detection.stage_settings import FleetLoadSettings

POINTS, HISTORY = 600, 500
STEP_S = 600.0


def _batch(values: np.ndarray) -> SeriesBatch:
    n, t = values.shape
    times = np.broadcast_to(np.arange(t) * STEP_S, (n, t))
    return SeriesBatch(
        [f"s{i}" for i in range(n)],
        ["gcpu"] * n,
        times,
        values,
        np.full(n, t, np.int64),
        np.ones(n),
    )


def _fleet(seed: int, n: int = 400, driven: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of level 10 and noise 1; the first ``driven`` follow a wandering load with
    loadings between 1 and 3; returns the values and the load."""
    rng = np.random.default_rng(seed)
    load = np.cumsum(rng.normal(0, 0.3, POINTS))
    load -= load[:HISTORY].mean()
    loading = np.zeros(n)
    loading[:driven] = rng.uniform(1.0, 3.0, driven)
    values = 10 + loading[:, None] * load[None, :] + rng.normal(0, 1, (n, POINTS))
    return values, load


def test_shared_load_is_removed_from_the_rows_it_drives() -> None:
    values, load = _fleet(1)
    batch, removal = remove_fleet_load(_batch(values.copy()), HISTORY * STEP_S, FleetLoadSettings())
    assert removal.factor is not None
    assert abs(np.corrcoef(removal.factor, load)[0, 1]) > 0.98
    driven = np.abs(removal.loading) > 0
    assert driven[:300].mean() > 0.95 and driven[300:].mean() < 0.02
    # what is left of a driven row no longer follows the load
    left = batch.values[:300] - batch.values[:300].mean(axis=1, keepdims=True)
    before = values[:300] - values[:300].mean(axis=1, keepdims=True)
    assert np.abs(left @ load).mean() < 0.1 * np.abs(before @ load).mean()
    # rows the load does not drive are returned as they were
    np.testing.assert_array_equal(batch.values[300:][~driven[300:]], values[300:][~driven[300:]])


def test_a_rows_own_step_stays_after_the_load_is_removed() -> None:
    values, _ = _fleet(2)
    values[7, HISTORY + 20 :] += 6.0  # one row's regression in the analysis window
    batch, _ = remove_fleet_load(_batch(values.copy()), HISTORY * STEP_S, FleetLoadSettings())
    row = batch.values[7]
    step = row[HISTORY + 20 :].mean() - row[HISTORY - 100 : HISTORY].mean()
    assert step == pytest.approx(6.0, abs=1.0)


def test_too_few_rows_or_too_little_history_removes_nothing() -> None:
    values, _ = _fleet(3, n=20, driven=20)
    batch = _batch(values)
    assert remove_fleet_load(batch, HISTORY * STEP_S, FleetLoadSettings())[0] is batch
    values, _ = _fleet(4)
    batch = _batch(values)
    assert remove_fleet_load(batch, 20 * STEP_S, FleetLoadSettings())[0] is batch
    off = FleetLoadSettings(enabled=False)
    assert remove_fleet_load(batch, HISTORY * STEP_S, off)[0] is batch


@pytest.mark.parametrize("width", [1, 2, 7, 500, 501])
@pytest.mark.parametrize("shape", ["normal", "ties", "counts", "with_nan"])
def test_centre_and_scale_are_numpys_median_and_mad(width: int, shape: str) -> None:
    rng = np.random.default_rng(width)
    history = rng.normal(size=(40, width))
    if shape == "ties":
        history = np.round(history * 2) / 2
    elif shape == "counts":
        history = np.floor(np.abs(history) * 1.3)  # mostly 0: MAD 0, the std instead
    elif shape == "with_nan":
        history[3, width // 2] = np.nan
    view = history[:, ::-1]  # not C-ordered: the working copy must not change the input
    kept = view.copy()
    centre, scale = _robust_centre_scale(view)
    expect_centre = np.median(kept, axis=1)
    expect_scale = MAD_NORMAL * np.median(np.abs(kept - expect_centre[:, None]), axis=1)
    flat = expect_scale <= 0
    expect_scale[flat] = kept[flat].std(axis=1)
    np.testing.assert_array_equal(centre, expect_centre)
    np.testing.assert_array_equal(scale, expect_scale)
    np.testing.assert_array_equal(view, kept)
