"""The command line as a test drives it: ``regbot <argv>`` in-process, printing to consoles of a
chosen width, with the exit code and both outputs returned."""

from __future__ import annotations

import io

from rich.console import Console

from regbot.bot.cli import main


def run_cli(
    *argv: str, width: int = 200, color: bool = False, terminal: bool = False
) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``regbot *argv`` on ``width``-column consoles (colour
    and terminal control codes off unless asked for)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(
        list(argv),
        out=Console(file=out, width=width, no_color=not color, force_terminal=terminal),
        err=Console(file=err, width=width, no_color=not color),
    )
    return code, out.getvalue(), err.getvalue()
