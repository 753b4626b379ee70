"""TCPDBench metrics (benchmarks/cpd_metrics.py): the README's worked examples, hand-computed
cases, and the published per-series scores of the ``zero`` method."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATASETS = (REPO / ".." / "shared" / "datasets").resolve()


def _load_metrics():
    spec = importlib.util.spec_from_file_location(
        "cpd_metrics", REPO / "benchmarks" / "cpd_metrics.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("cpd_metrics", module)
    spec.loader.exec_module(module)
    return module


metrics = _load_metrics()


def test_readme_f1_examples():
    annotations = {"1": [10, 20], "2": [11, 20], "3": [10], "4": [0, 5]}
    assert metrics.f1_score(annotations, [10, 20], 45) == 1.0
    assert metrics.f1_score({"1": [], "2": [10], "3": [50]}, [10], 60) == pytest.approx(
        10 / 11, abs=1e-15
    )  # P = 2/2, R = (1 + 1 + 1/2) / 3 = 5/6, F1 = 10/11 = 0.909…


def test_readme_cover_example():
    # annotator 1: one segment of 45 (cover 1); annotator 2: [0,10) and [10,45) against [0,45):
    # (10·10/45 + 35·35/45) / 45; annotator 3: (40·40/45 + 5·5/45) / 45.
    expected = (1 + (100 + 1225) / 45**2 + (1600 + 25) / 45**2) / 3
    got = metrics.cover_score({"1": [], "2": [10], "3": [40]}, [], 45)
    assert got == pytest.approx(expected, abs=1e-15)
    assert round(got, 3) == 0.819


def test_f1_without_predictions_by_hand():
    # X = {0}; union {0, 10, 50}: P = 1/1; R = (1 + 1/2 + 1/2) / 3 = 2/3; F1 = 0.8
    assert metrics.f1_score({"1": [], "2": [10], "3": [50]}, [], 60) == pytest.approx(0.8)


def test_each_prediction_matches_one_true_point_the_closest():
    # true {0, 10, 12}; predictions {0, 11}: 10 takes 11 (distance 1), 12 finds nothing left.
    # P = 2/2, R = 2/3, F1 = 0.8. A second prediction at 13 serves 12: F1 = 1.
    assert metrics.f1_score({"1": [10, 12]}, [11], 20) == pytest.approx(0.8)
    assert metrics.f1_score({"1": [10, 12]}, [11, 13], 20) == 1.0
    # outside the margin: 16 is 6 from 10
    assert metrics.f1_score({"1": [10]}, [16], 20) == pytest.approx(2 * 0.5 * 0.5 / 1.0)


def test_perfect_prediction_covers_fully_and_cover_is_order_free():
    annotations = {"1": [5, 12], "2": [5, 12]}
    assert metrics.cover_score(annotations, [12, 5], 20) == 1.0
    assert metrics.f1_score(annotations, [12, 5], 20) == 1.0


def test_predictions_outside_the_series_are_rejected():
    with pytest.raises(ValueError, match="n_obs=20"):
        metrics.f1_score({"1": [5]}, [5, 20], 20)
    with pytest.raises(ValueError, match="n_obs=20"):
        metrics.cover_score({"1": [5]}, [-1], 20)


@pytest.mark.skipif(
    not (DATASETS / "tcpd_published_scores.json").exists(),
    reason=f"TCPD datasets not found at {DATASETS} (shared/datasets beside the repository)",
)
def test_zero_method_reproduces_published_default_scores_on_every_series():
    published = json.loads((DATASETS / "tcpd_published_scores.json").read_text())["default"]
    paths = sorted((DATASETS / "tcpd").glob("*.json"))
    assert len(paths) == 32
    for path in paths:
        series = json.loads(path.read_text())
        name, n_obs, annotations = series["name"], series["n_obs"], series["annotations"]
        assert metrics.f1_score(annotations, [], n_obs) == pytest.approx(
            published["f1"][name]["zero"], abs=1e-9
        ), name
        assert metrics.cover_score(annotations, [], n_obs) == pytest.approx(
            published["cover"][name]["zero"], abs=1e-9
        ), name
