"""A SPEC §2 long-format series CSV (``timestamp,series,value,kind``) built series by series, as
the detect, explain and comment tests write their inputs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np


class LongCsv:
    """Rows of one CSV: ``add`` a series (its times and values), or ``add_row`` a single row as
    written (a NaN, a duplicate timestamp); ``write`` puts the file in place."""

    def __init__(self) -> None:
        self.rows = ["timestamp,series,value,kind"]

    def add(
        self, series_id: str, kind: str, times: Iterable[float], values: Iterable[float]
    ) -> None:
        self.rows.extend(
            f"{t:.0f},{series_id},{float(v)!r},{kind}"
            for t, v in zip(np.asarray(times), np.asarray(values), strict=True)
        )

    def add_row(self, time_s: float, series_id: str, value: str, kind: str) -> None:
        self.rows.append(f"{time_s:.0f},{series_id},{value},{kind}")

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(self.rows) + "\n")
        return path
