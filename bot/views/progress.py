"""Progress of a long run on stderr (rich): one line per stage (reading, detection by
partition, filters, dedup, attribution), each ticking as its parts finish.

Shown only when stderr is a terminal and the user did not ask for ``--quiet``; otherwise every
call does nothing, so the commands call it unconditionally. The display is transient: when the
run ends the lines go and the command's own output stays.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

__all__ = ["RunProgress"]


class RunProgress:
    """Context manager: ``stage(name, total)`` starts a stage (finishing the one before) and
    returns the callback that counts one of its ``total`` parts done (``total`` None: a stage
    without parts, done when the next starts)."""

    def __init__(self, console: Console, quiet: bool = False) -> None:
        self.enabled = console.is_terminal and not quiet
        self._progress = (
            Progress(
                TextColumn("{task.description:<28}"),
                BarColumn(),
                TextColumn("{task.completed:>6.0f}/{task.total:<6.0f}"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            if self.enabled
            else None
        )
        self._current: TaskID | None = None

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def stage(self, name: str, total: int | None = None) -> Callable[[int], None]:
        """Start the stage ``name``; the returned callback marks one part done."""
        progress = self._progress
        if progress is None:
            return _nothing
        if self._current is not None:
            task = progress.tasks[self._current]
            progress.update(self._current, completed=task.total or 1, total=task.total or 1)
        self._current = progress.add_task(name, total=total if total is not None else 1)
        current = self._current

        def done(_: int) -> None:
            progress.advance(current)

        return done


def _nothing(_: int) -> None:
    return None
