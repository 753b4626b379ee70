"""TCPDBench's change point metrics: F1 with a margin and segmentation covering, against all annotators.

Definitions (van den Burg & Williams 2020, arXiv:2003.06222, §4; restated in the datasets README):

* Every change point set (each annotator's T_k and the prediction X) gets index 0 added. An index
  is the first point of a new segment, the convention regbot uses too.
* **F1, margin M.** A true point is detected when an unused prediction lies within ±M of it; the
  closest such prediction is used (the smaller index on a tie) and cannot match another true
  point. True points are taken in ascending order. Precision = detected points of the union of
  all T_k divided by |X|; recall = mean over annotators of detected points of T_k over |T_k|;
  F1 = 2PR / (P + R). O(|T| · |X|).
* **Cover.** Each set becomes a partition of ``0..n_obs-1`` into half-open intervals. For one
  annotator, cover = (1/n_obs) · Σ over its segments A of |A| · max over predicted segments B of
  the Jaccard index |A∩B| / |A∪B|; the score is the mean over annotators. O(|A| · |B|).

Reference implementation notes: TCPDBench walks a Python ``set`` of true points, which iterates
in ascending order for most small index sets; the two orders give the same matching unless two
true points compete for one prediction. Predictions must lie in ``[0, n_obs)`` (a ruptures-style
final breakpoint ``n_obs`` is an error here, not silently ignored).

Run ``python benchmarks/cpd_metrics.py [--datasets DIR]`` for the self-check: the README's worked
examples, and the ``zero`` method (no change points) against the published per-series scores.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

DEFAULT_DATASETS = Path(__file__).resolve().parent.parent / ".." / "shared" / "datasets"

# (annotations, predictions, n_obs, metric, expected) from the datasets README, section 1.
README_EXAMPLES: list[tuple[dict[str, list[int]], list[int], int, str, float]] = [
    ({"1": [10, 20], "2": [11, 20], "3": [10], "4": [0, 5]}, [10, 20], 45, "f1", 1.0),
    ({"1": [], "2": [10], "3": [50]}, [10], 60, "f1", 0.9090909090909091),
    ({"1": [], "2": [10], "3": [40]}, [], 45, "cover", 0.8189300411522634),
]


def _check_predictions(predictions: Iterable[int], n_obs: int) -> set[int]:
    points = {int(p) for p in predictions}
    bad = sorted(p for p in points if not 0 <= p < n_obs)
    if bad:
        raise ValueError(f"predictions must lie in [0, n_obs={n_obs}), got {bad[:5]}")
    return points


def _detected(true_points: Iterable[int], predictions: set[int], margin: int) -> int:
    """How many true points have their own prediction within ±margin (closest unused one)."""
    unused = set(predictions)
    count = 0
    for tau in sorted(true_points):
        close = [(abs(tau - x), x) for x in unused if abs(tau - x) <= margin]
        if close:
            unused.remove(min(close)[1])
            count += 1
    return count


def f1_score(
    annotations: Mapping[str, Sequence[int]],
    predictions: Sequence[int],
    n_obs: int,
    margin: int = 5,
) -> float:
    """TCPDBench's F1 of one prediction against every annotator (``n_obs`` only bounds indices)."""
    truths = [{int(t) for t in points} | {0} for points in annotations.values()]
    found = _check_predictions(predictions, n_obs) | {0}
    union = set().union(*truths)
    precision = _detected(union, found, margin) / len(found)
    recall = sum(_detected(t, found, margin) / len(t) for t in truths) / len(truths)
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _segments(points: Iterable[int], n_obs: int) -> list[tuple[int, int]]:
    """Half-open intervals ``[begin, end)`` covering ``0..n_obs-1``, split at ``points``."""
    edges = sorted({p for p in points if 0 < p < n_obs})
    bounds = [0, *edges, n_obs]
    return list(zip(bounds[:-1], bounds[1:]))


def cover_score(
    annotations: Mapping[str, Sequence[int]], predictions: Sequence[int], n_obs: int
) -> float:
    """Segmentation covering of each annotator's partition by the predicted one, averaged."""
    predicted = _segments(_check_predictions(predictions, n_obs), n_obs)
    scores = []
    for points in annotations.values():
        total = 0.0
        for a0, a1 in _segments(points, n_obs):
            best = 0.0
            for b0, b1 in predicted:
                inter = min(a1, b1) - max(a0, b0)
                if inter > 0:
                    best = max(best, inter / ((a1 - a0) + (b1 - b0) - inter))
            total += (a1 - a0) * best
        scores.append(total / n_obs)
    return sum(scores) / len(scores)


def score(metric: str, annotations: Mapping[str, Sequence[int]], predictions, n_obs) -> float:
    """``metric`` is "f1" or "cover"."""
    if metric == "f1":
        return f1_score(annotations, predictions, n_obs)
    return cover_score(annotations, predictions, n_obs)


def zero_mismatches(datasets: Path, tolerance: float = 1e-9) -> tuple[int, list[str]]:
    """Score the ``zero`` method on every local TCPD series against the published default score.

    Returns (series checked, descriptions of mismatches); an empty list means all reproduced.
    """
    published = json.loads((datasets / "tcpd_published_scores.json").read_text())["default"]
    checked, bad = 0, []
    for path in sorted((datasets / "tcpd").glob("*.json")):
        series = json.loads(path.read_text())
        name, n_obs = series["name"], series["n_obs"]
        for metric in ("f1", "cover"):
            ours = score(metric, series["annotations"], [], n_obs)
            theirs = published[metric][name]["zero"]
            if theirs is None or abs(ours - theirs) > tolerance:
                bad.append(f"{name} {metric}: ours {ours!r}, published {theirs!r}")
        checked += 1
    return checked, bad


class SelfCheckFailed(Exception):
    """A metric disagrees with a worked example or a published score."""


def self_check(datasets: Path | None) -> list[str]:
    """The README's worked examples and (when ``datasets`` exists) the zero reproduction.

    Returns printable lines; raises SelfCheckFailed on the first failure.
    """
    lines = []
    for marks, predictions, n_obs, metric, expected in README_EXAMPLES:
        got = score(metric, marks, predictions, n_obs)
        if abs(got - expected) > 1e-12:
            raise SelfCheckFailed(f"{metric}({marks}, {predictions}) = {got!r}, not {expected!r}")
        lines.append(f"README example {metric}: {got:.6f} (expected {expected:.6f}) ok")
    if datasets is not None and (datasets / "tcpd_published_scores.json").exists():
        checked, bad = zero_mismatches(datasets)
        if bad:
            raise SelfCheckFailed("zero does not reproduce the published scores: " + "; ".join(bad))
        lines.append(f"zero method reproduces the published F1 and cover on {checked} series ok")
    else:
        lines.append(f"zero reproduction skipped: no datasets at {datasets}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    args = parser.parse_args(argv)
    try:
        for line in self_check(args.datasets.resolve()):
            print(line)
    except SelfCheckFailed as error:
        print(f"self-check FAILED: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
