"""Tables that fit the console they are printed on.

A :class:`FittedTable` is a rich renderable that lays itself out when printed, so a caller prints
it as it prints a ``Table`` and the width comes from the console (a terminal, ``COLUMNS``, or the
``Console(width=...)`` a test injects). Its columns are of two sorts:

- fixed columns take the width of their widest cell and never wrap; a column with a
  ``drop_rank`` may be left out, lowest rank first, while the table does not fit;
- one flexible column (it has ``wanted`` set) takes the width left over, and its cells shorten
  themselves to that width (:class:`Shortened`, or a ``Text`` with an ellipsis).

Droppable columns go, in rank order, until the rest fit with ``wanted`` cells for the flexible
column; when none is left to drop, the flexible column gets what is left. Only on a very narrow
console, where that is under the column's ``floor``, do the ``last_resort`` columns go too (in
their rank order) until it is not. The caption then points to ``regbot explain`` for what was
left out or shortened ("`regbot explain <id>` shows the rest: p-value, group, series in full").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

__all__ = ["FitColumn", "FittedTable", "Shortened"]

EXPLAIN_HINT = "`regbot explain <id>` shows the rest"
_UNBOUNDED = 100_000
"""A width no table reaches: measuring against it gives a table's natural (unwrapped) width."""


@dataclass(frozen=True, slots=True)
class Shortened:
    """A cell holding one line of text that shortens itself to the width its column is given,
    with ``shorten(text, width)`` (e.g. :func:`regbot.bot.views.names.shorten_series`)."""

    text: str
    shorten: Callable[[str, int], str]
    style: str = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        shown = self.shorten(self.text, options.max_width)
        yield Text(shown, style=self.style, no_wrap=True, overflow="ellipsis")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(1, cell_len(self.text))


@dataclass(frozen=True, slots=True, eq=False)
class FitColumn:
    """One column of a :class:`FittedTable` (compared by identity): its header, one cell per
    row, and how it gives way to a narrow console. ``drop_rank``: None for a column that is
    always shown, else its place in the drop order (1 goes first); a ``last_resort`` column goes
    only when the flexible column would get less than its ``floor``. ``wanted`` is set on the
    flexible column only: the cells it asks for before a droppable column is kept."""

    header: str
    cells: tuple[RenderableType, ...]
    justify: JustifyMethod = "left"
    drop_rank: int | None = None
    last_resort: bool = False
    wanted: int | None = None
    floor: int = 16

    @property
    def flexible(self) -> bool:
        return self.wanted is not None


@dataclass(frozen=True, slots=True)
class FittedTable:
    """A table (title, columns, and a caption for when it has no rows) that picks its columns and
    the width of its flexible column when printed; see the module docstring."""

    title: str
    columns: tuple[FitColumn, ...]
    empty_caption: str | None = None
    note: str | None = None  # a line under the table (e.g. that it shows only some rows)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.layout(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.layout(console, options))

    def layout(self, console: Console, options: ConsoleOptions) -> Table:
        """The rich ``Table`` this table is at ``options.max_width``."""
        shown = self.shown_columns(console, options)
        hidden = [c.header for c in self.columns if c not in shown]
        table = self._table(shown, None)
        natural = _natural_width(console, options, table)
        if any(c.flexible for c in shown):
            table.expand = True
            table.width = min(options.max_width, natural)
        shortened = [c.header for c in shown if c.flexible and natural > options.max_width]
        table.caption = self._caption(hidden, shortened)
        return table

    def shown_columns(self, console: Console, options: ConsoleOptions) -> list[FitColumn]:
        """The columns kept at ``options.max_width``: all of them when they fit with the flexible
        column at its ``wanted`` width, else without the droppable ones in ``drop_rank`` order
        until they do (or none is left to drop); then without ``last_resort`` ones while the
        flexible column would get less than its ``floor``."""
        shown = list(self.columns)
        flexible = next((c for c in shown if c.flexible), None)
        wanted = None if flexible is None else flexible.wanted
        floor = None if flexible is None or wanted is None else min(flexible.floor, wanted)
        for last_resort, width in ((False, wanted), (True, floor)):
            droppable = sorted(
                (c for c in shown if c.drop_rank is not None and c.last_resort == last_resort),
                key=_rank,
            )
            for column in [None, *droppable]:
                if column is not None:
                    shown.remove(column)
                if _natural_width(console, options, self._table(shown, width)) <= options.max_width:
                    return shown
        return shown

    def _table(self, columns: Sequence[FitColumn], flexible_width: int | None) -> Table:
        table = Table(
            *(_rich_column(c, flexible_width) for c in columns), title=self.title, show_edge=False
        )
        for row in zip(*(c.cells for c in columns)):
            table.add_row(*row)
        return table

    def _caption(self, hidden: Iterable[str], shortened: Iterable[str]) -> Text | None:
        rows = len(self.columns[0].cells) if self.columns else 0
        if not rows:
            return None if self.empty_caption is None else Text(self.empty_caption)
        parts = list(hidden) + [f"{header} in full" for header in shortened]
        lines = [f"{EXPLAIN_HINT}: {', '.join(parts)}"] if parts else []
        lines += [self.note] if self.note else []
        return Text("\n".join(lines)) if lines else None


def _rank(column: FitColumn) -> int:
    return column.drop_rank if column.drop_rank is not None else 0


def _rich_column(column: FitColumn, flexible_width: int | None) -> Column:
    """A column that never wraps (cells cut with ``…`` at worst); the flexible one takes a share
    (``ratio``) of the width the fixed ones leave, or ``flexible_width`` when measuring."""
    return Column(
        column.header,
        justify=column.justify,
        no_wrap=True,
        overflow="ellipsis",
        ratio=1 if column.flexible else None,
        width=flexible_width if column.flexible else None,
    )


def _natural_width(console: Console, options: ConsoleOptions, table: Table) -> int:
    """The cells ``table`` takes with nothing wrapped or cut (rich's own measurement)."""
    return Measurement.get(console, options.update_width(_UNBOUNDED), table).maximum
