"""The lines ``regbot run`` prints on stderr about what it did beyond the report's tables: the
feedback it recorded, and per comment, per comment not posted and for the gate, the outcome.
Plain text from the typed report; the caller prints it (no markup)."""

from __future__ import annotations

from regbot.report.model import Report

__all__ = ["feedback_line", "outcome_lines"]


def feedback_line(recorded: int) -> str:
    """The line for ``recorded`` new false-positive feedback entries (at least one)."""
    return (
        f"recorded {recorded} new false-positive feedback entr"
        f"{'y' if recorded == 1 else 'ies'} (see `regbot feedback`)"
    )


def outcome_lines(report: Report) -> list[str]:
    """One line per comment (its outcome and url), per comment not posted (the reason), then the
    gate: its state and title, and whether it was set on GitHub or only decides the exit code."""
    lines = [f"comment {c.outcome} on #{c.pull_request}: {c.url}" for c in report.comments or ()]
    for skipped in report.comments_skipped or ():
        pr = f" on #{skipped.pull_request}" if skipped.pull_request else ""
        lines.append(f"no comment for {skipped.regression_id}{pr}: {skipped.reason}")
    gate = report.gate
    assert gate is not None  # a run's report always has its gate
    if gate.published_as:
        where = f" (set as a {gate.published_as.replace('_', ' ')})"
    elif not gate.enforced:
        where = " (dry run: not set on GitHub, exit code unaffected)"
    else:
        where = " (not set on GitHub: publishing is off; the exit code follows it)"
    lines.append(f"gate {gate.name}: {gate.state} — {gate.title}{where}")
    return lines
