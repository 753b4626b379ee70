"""The command line: one module per command (``regbot <command>``), each only orchestrating the
rooms beside it; ``main`` parses the arguments and dispatches."""

from regbot.bot.cli.main import main

__all__ = ["main"]
