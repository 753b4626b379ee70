"""The braille line chart `regbot explain` draws of one stored series around its change.

Drawn with braille characters (2 × 4 dots per cell), to the width rich gives it, so it fits any
console: the series as a line (points further apart than five times the median positive
spacing are not joined: a gap in the data stays visible), the means before and after the change
as dotted levels, the change as a dotted vertical line. A cell takes the colour of the most
important thing drawn in it (series, then means, then the change marker). With an ASCII-only
console the same picture is drawn with ``*``, ``-`` and ``|``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from regbot.bot.views.terminal_text import level
from regbot.timefmt import format_time

GAP_FACTOR = 5.0

# Layers of the chart, by importance (a cell shows the style of its most important layer).
_CHANGE, _BEFORE, _AFTER, _SERIES = 1, 2, 3, 4
_LAYER_STYLE = {_CHANGE: "magenta", _BEFORE: "green", _AFTER: "red", _SERIES: "bold cyan"}
_ASCII_MARK = {_CHANGE: "|", _BEFORE: "-", _AFTER: "-", _SERIES: "*"}
# Braille dot bits, indexed [row within the cell (0..3)][column within the cell (0..1)].
_BRAILLE_BITS = np.array([[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]], np.int64)


class SeriesChart:
    """A line chart of one stored series around its change, as wide as the console allows."""

    def __init__(
        self,
        times_s: np.ndarray,
        values: np.ndarray,
        change_time_s: float,
        before: float | None,
        after: float | None,
        kind: str,
        height: int = 10,
    ) -> None:
        self.times_s = np.asarray(times_s, np.float64)
        self.values = np.asarray(values, np.float64)
        self.change_time_s = float(change_time_s)
        self.before = before
        self.after = after
        self.kind = kind
        self.height = max(3, height)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.lines(options.max_width, ascii_only=options.ascii_only)

    def lines(self, width: int, *, ascii_only: bool = False) -> list[Text]:
        keep = np.isfinite(self.times_s) & np.isfinite(self.values)
        times, values = self.times_s[keep], self.values[keep]
        if len(times) == 0:
            return [Text("no finite points stored for this series", style="dim")]
        order = np.argsort(times, kind="stable")
        times, values = times[order], values[order]
        levels = [v for v in (self.before, self.after) if v is not None and math.isfinite(v)]
        low = float(min(values.min(), *levels)) if levels else float(values.min())
        high = float(max(values.max(), *levels)) if levels else float(values.max())
        pad = (high - low) * 0.05 if high > low else (abs(high) * 0.05 or 1e-9)
        low, high = low - pad, high + pad
        rows = self.height
        labels = [
            level(self.kind, high - (r * 4 + 1.5) / (rows * 4 - 1) * (high - low))
            for r in range(rows)
        ]
        label_width = max(len(labels[0]), len(labels[rows // 2]), len(labels[-1]))
        columns = max(8, width - label_width - 2)
        t0 = min(float(times[0]), self.change_time_s)
        t1 = max(float(times[-1]), self.change_time_s)
        grid = self._draw(times, values, t0, t1, low, high, rows * 4, columns * 2)
        change_column = self._x(self.change_time_s, t0, t1, columns * 2) // 2
        out = []
        for r, cell_row in enumerate(self._cells(grid, rows, columns, ascii_only)):
            shown = labels[r] if r in (0, rows // 2, rows - 1) else ""
            line = Text(shown.rjust(label_width) + (" ┤" if not ascii_only else " |"), style="dim")
            line.append_text(cell_row)
            out.append(line)
        axis = ["─" if not ascii_only else "-"] * columns
        axis[change_column] = "┴" if not ascii_only else "+"
        out.append(
            Text(
                " " * label_width + (" └" if not ascii_only else " +") + "".join(axis), style="dim"
            )
        )
        out.append(self._time_labels(t0, t1, label_width + 2, columns))
        out.append(self._legend(len(times), ascii_only))
        return out

    @staticmethod
    def _x(t: float, t0: float, t1: float, dots: int) -> int:
        return int(round((t - t0) / (t1 - t0) * (dots - 1))) if t1 > t0 else 0

    def _draw(
        self,
        times: np.ndarray,
        values: np.ndarray,
        t0: float,
        t1: float,
        low: float,
        high: float,
        height: int,
        width: int,
    ) -> np.ndarray:
        """A (height × width) dot grid holding, per dot, its most important layer (0: empty)."""
        grid = np.zeros((height, width), np.int8)

        def y(v: float) -> int:
            return int(round((high - v) / (high - low) * (height - 1)))

        def mark(row: int, column: int, layer: int) -> None:
            if 0 <= row < height and 0 <= column < width and grid[row, column] < layer:
                grid[row, column] = layer

        xc = self._x(self.change_time_s, t0, t1, width)
        for row in range(0, height, 2):
            mark(row, xc, _CHANGE)
        if self.before is not None and math.isfinite(self.before):
            for column in range(0, xc, 2):
                mark(y(self.before), column, _BEFORE)
        if self.after is not None and math.isfinite(self.after):
            for column in range(xc, width, 2):
                mark(y(self.after), column, _AFTER)
        xs = [self._x(float(t), t0, t1, width) for t in times]
        ys = [y(float(v)) for v in values]
        steps = np.diff(times)
        positive = steps[steps > 0]
        gap = GAP_FACTOR * float(np.median(positive)) if len(positive) else math.inf
        for i in range(len(xs)):
            mark(ys[i], xs[i], _SERIES)
            if i and steps[i - 1] <= gap:
                for row, column in _segment(xs[i - 1], ys[i - 1], xs[i], ys[i]):
                    mark(row, column, _SERIES)
        return grid

    @staticmethod
    def _cells(grid: np.ndarray, rows: int, columns: int, ascii_only: bool) -> list[Text]:
        cells = grid.reshape(rows, 4, columns, 2)
        layers = cells.max(axis=(1, 3))
        bits = ((cells > 0) * _BRAILLE_BITS[None, :, None, :]).sum(axis=(1, 3))
        out = []
        for r in range(rows):
            line = Text()
            for c in range(columns):
                layer = int(layers[r, c])
                if layer == 0:
                    line.append(" ")
                elif ascii_only:
                    line.append(_ASCII_MARK[layer], style=_LAYER_STYLE[layer])
                else:
                    line.append(chr(0x2800 + int(bits[r, c])), style=_LAYER_STYLE[layer])
            out.append(line)
        return out

    def _time_labels(self, t0: float, t1: float, indent: int, columns: int) -> Text:
        start, end = format_time(t0), format_time(t1)
        if columns >= len(start) + len(end) + 1:
            return Text(
                " " * indent + start + " " * (columns - len(start) - len(end)) + end, style="dim"
            )
        return Text(" " * indent + f"{start} → {end}", style="dim")

    def _legend(self, points: int, ascii_only: bool) -> Text:
        dot = "*" if ascii_only else "⠒"
        legend = Text("  ")
        legend.append(dot, style=_LAYER_STYLE[_SERIES])
        legend.append(f" series ({points} points)  ")
        legend.append(dot, style=_LAYER_STYLE[_BEFORE])
        legend.append(f" before {level(self.kind, self.before)}  ")
        legend.append(dot, style=_LAYER_STYLE[_AFTER])
        legend.append(f" after {level(self.kind, self.after)}  ")
        legend.append("|" if ascii_only else "⡇", style=_LAYER_STYLE[_CHANGE])
        legend.append(f" change {format_time(self.change_time_s)}")
        return legend


def _segment(x0: int, y0: int, x1: int, y1: int) -> Iterable[tuple[int, int]]:
    """The dots of a straight line from (x0, y0) to (x1, y1) (Bresenham), as (row, column)."""
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    error = dx + dy
    while True:
        yield y0, x0
        if x0 == x1 and y0 == y1:
            return
        twice = 2 * error
        if twice >= dy:
            error += dy
            x0 += sx
        if twice <= dx:
            error += dx
            y0 += sy
