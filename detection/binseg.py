"""Binary segmentation with the change-point core: split where the likelihood-ratio test says so.

Every segment still to examine goes through ``detect_change_points`` (direction "both") in one
batch per level; a segment is split at its most likely change point when the test rejects H0 at
``alpha`` and both halves keep ``min_points_each_side`` points, and its halves are examined at
the next level. The test itself is the stopping rule. O(levels × n) array work.
"""

from __future__ import annotations

import numpy as np

from regbot.detection.changepoint import detect_change_points
from regbot.detection.model import ChangePointSettings


def binary_segmentation(
    values: np.ndarray,
    settings: ChangePointSettings = ChangePointSettings(),
    *,
    max_change_points: int | None = None,
) -> list[int]:
    """Change points of one series (indices of the first point of each new segment), sorted."""
    values = np.asarray(values, dtype=np.float64)
    segments = [(0, len(values))]
    found: list[int] = []
    while segments:
        width = max(end - begin for begin, end in segments)
        batch = np.zeros((len(segments), width))
        lengths = np.array([end - begin for begin, end in segments], dtype=np.int64)
        for row, (begin, end) in enumerate(segments):
            batch[row, : end - begin] = values[begin:end]
        points = detect_change_points(batch, lengths, settings, direction="both")
        next_segments = []
        for row, (begin, end) in enumerate(segments):
            k = int(points.index[row])
            if k <= 0 or points.p_value[row] >= settings.alpha:
                continue
            if max_change_points is not None and len(found) >= max_change_points:
                break
            found.append(begin + k)
            next_segments += [(begin, begin + k), (begin + k, end)]
        segments = next_segments
    return sorted(found)
