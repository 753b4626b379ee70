"""Binary segmentation with the change-point core: split where the likelihood-ratio test says so.

Greedy, as R changepoint's BinSeg (TCPDBench's binseg): every segment's most likely change point
is found (``detect_change_points``, direction "both"); of the splits whose test rejects H0 at
``alpha`` (and leave ``min_points_each_side`` on both sides), the one with the largest
likelihood ratio is made, its two halves are examined, and so on until no split is significant
or ``max_change_points`` are found. The test is the stopping rule. Each step examines two new
segments in one batch; O(change points × n).

``correct_for_search``: the χ² p-value is that of one fixed split, but the split tested is the
best of every position in the segment, so on long segments of real (autocorrelated) data the
raw test keeps splitting. With the correction the p-value is multiplied by the number of
positions searched (Bonferroni), a conservative bound on the maximum's p-value. The paper's
test is the default; the corrected rule is offered for segmentation of long series.
"""

from __future__ import annotations

import numpy as np

from regbot.detection.changepoint import detect_change_points
from regbot.detection.stage_settings import ChangePointSettings


def binary_segmentation(
    values: np.ndarray,
    settings: ChangePointSettings = ChangePointSettings(),
    *,
    max_change_points: int | None = None,
    correct_for_search: bool = False,
) -> list[int]:
    """Change points of one series (indices of the first point of each new segment), sorted."""
    values = np.asarray(values, dtype=np.float64)
    # segment (begin, end) -> (split index or -1, llr) for segments still open
    open_segments: dict[tuple[int, int], tuple[int, float]] = {}

    def examine(segments: list[tuple[int, int]]) -> None:
        width = max(end - begin for begin, end in segments)
        batch = np.zeros((len(segments), width))
        lengths = np.array([end - begin for begin, end in segments], dtype=np.int64)
        for row, (begin, end) in enumerate(segments):
            batch[row, : end - begin] = values[begin:end]
        points = detect_change_points(batch, lengths, settings, direction="both")
        for row, (begin, end) in enumerate(segments):
            k = int(points.index[row])
            searched = max(1, (end - begin) - 2 * settings.min_points_each_side + 1)
            p_value = points.p_value[row] * (searched if correct_for_search else 1)
            significant = k > 0 and p_value < settings.alpha
            open_segments[(begin, end)] = (begin + k if significant else -1, float(points.llr[row]))

    found: list[int] = []
    examine([(0, len(values))])
    while max_change_points is None or len(found) < max_change_points:
        splittable = [(llr, seg, at) for seg, (at, llr) in open_segments.items() if at > 0]
        if not splittable:
            break
        _, (begin, end), at = max(splittable)
        del open_segments[(begin, end)]
        found.append(at)
        examine([(begin, at), (at, end)])
    return sorted(found)
