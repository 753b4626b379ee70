"""SOMDedup's features (FBDetect §5.5.1): one row per candidate, in blocks on fixed scales
(shape, variance, position, root causes, metric ID), each times its weight.

Complexity: O(n · (points + M log M)), M = ``SEGMENT_POINTS``.
Design: docs/design/som_dedup.md ("Features").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from regbot.detection.dedup_context import DedupContext, subroutine_of_series
from regbot.detection.model import Candidate
from regbot.detection.stage_settings import SomSettings

__all__ = ["BLOCK_NAMES", "root_cause_bitmap", "som_features"]

SEGMENT_POINTS = 64
VARIANCE_CLIP = 3.0
GUARD_POINTS = 2
METRIC_COMPONENTS = 16
BLOCK_NAMES = ("shape", "variance", "position", "root_cause", "metric")  # BlockWeights' fields


def som_features(
    candidates: Sequence[Candidate],
    context: DedupContext,
    settings: SomSettings,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(n, d) features: the blocks of docs/design/som_dedup.md, each times its
    ``settings.block_weights`` entry, in the order shape, variance, position, root causes,
    metric ID (``BLOCK_NAMES``); and the (n, commits) root-cause bitmap as booleans. Also
    ``settings.fourier_terms`` magnitudes; ``seed`` drives the metric ID's TruncatedSVD."""
    n = len(candidates)
    terms = max(settings.fourier_terms, 0)
    points = max(SEGMENT_POINTS, 2 * terms + 2)
    shape = np.zeros((n, terms))
    variance = np.zeros((n, 1))
    position = np.zeros((n, 1))
    grid = np.linspace(0.0, 1.0, points)
    for i, c in enumerate(candidates):
        w = c.windows
        analysis_s = max(w.extended_start_s - w.analysis_start_s, 0.0)
        if analysis_s > 0:
            position[i, 0] = min(max((c.change_time_s - w.analysis_start_s) / analysis_s, 0), 1)
        variance[i, 0] = _variance_ratio(c.values, c.change_index)
        start_s, end_s = w.analysis_start_s - analysis_s, max(w.end_s, w.extended_start_s)
        keep = (c.times_s >= start_s) & (c.times_s <= end_s)
        if terms == 0 or np.count_nonzero(keep) < 2 or end_s <= start_s:
            continue
        segment = np.interp(start_s + grid * (end_s - start_s), c.times_s[keep], c.values[keep])
        segment -= segment.mean()
        std = segment.std()
        if std > 0:
            magnitudes = np.abs(np.fft.rfft(segment / std))[1 : terms + 1]
            shape[i] = magnitudes * (math.sqrt(2.0) / points)
    bitmap = root_cause_bitmap(candidates, context)
    used = bitmap[:, bitmap.any(axis=0)]  # a commit no candidate could blame adds nothing
    bits = used / np.sqrt(np.maximum(used.sum(axis=1, keepdims=True), 1))
    blocks = {
        "shape": shape,
        "variance": variance,
        "position": position,
        "root_cause": bits,
        "metric": _metric_block([c.series_id for c in candidates], seed),
    }
    weight = {name: getattr(settings.block_weights, name) for name in BLOCK_NAMES}
    return np.hstack([weight[name] * block for name, block in blocks.items()]), bitmap


def _variance_ratio(values: np.ndarray, change_index: int) -> float:
    before = values[: max(change_index - GUARD_POINTS, 0)]
    after = values[change_index + GUARD_POINTS :]
    if before.size < 2 or after.size < 2:
        return 0.0
    var_before, var_after = float(before.var()), float(after.var())
    floor = 1e-12 * (var_before + var_after) + 1e-300
    ratio = math.log((var_after + floor) / (var_before + floor))
    return min(max(ratio, -VARIANCE_CLIP), VARIANCE_CLIP) / VARIANCE_CLIP


def root_cause_bitmap(candidates: Sequence[Candidate], context: DedupContext) -> np.ndarray:
    """(n, commits) bool: commit ``j`` (in ``context.commit_subroutines`` order) modifies the
    subroutine of candidate ``i``'s gCPU series. Non-gCPU series have no bits."""
    commits_of: dict[str, list[int]] = {}
    for j, modified in enumerate(context.commit_subroutines.values()):
        for modified_subroutine in modified:
            commits_of.setdefault(modified_subroutine, []).append(j)
    bitmap = np.zeros((len(candidates), len(context.commit_subroutines)), dtype=bool)
    for i, c in enumerate(candidates):
        subroutine = subroutine_of_series(c.series_id)
        if subroutine is not None:
            bitmap[i, commits_of.get(subroutine, [])] = True
    return bitmap


def _metric_block(series_ids: list[str], seed: int) -> np.ndarray:
    n = len(series_ids)
    if len(set(series_ids)) < 2:
        return np.zeros((n, 0))
    tfidf = TfidfVectorizer(analyzer="char", ngram_range=(2, 3)).fit_transform(series_ids)
    components = min(METRIC_COMPONENTS, n - 1, tfidf.shape[1] - 1)
    if components < 1:
        return np.zeros((n, 0))
    reduced: npt.NDArray[np.float64] = TruncatedSVD(
        n_components=components, random_state=seed
    ).fit_transform(tfidf)
    return reduced
