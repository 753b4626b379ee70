"""The error types every regbot package raises; only the command line turns them into exit codes."""

from __future__ import annotations


class RegbotError(Exception):
    """Root of every error regbot raises on purpose."""


class InputError(RegbotError):
    """Bad input or configuration: names where (file, line or field), what was expected, what was found.

    The command line prints ``str(error)`` as one line on stderr and exits with code 2.
    """

    def __init__(self, where: str, expected: str, found: object | None = None) -> None:
        self.where = where
        self.expected = expected
        self.found = found
        message = f"{where}: expected {expected}"
        if found is not None:
            shown = found if isinstance(found, str) else repr(found)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            message += f", found {shown!r}" if isinstance(found, str) else f", found {shown}"
        super().__init__(message)
