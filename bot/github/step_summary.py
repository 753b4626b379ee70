"""The job summary of a ``regbot run``: the report's markdown summary
(:func:`regbot.bot.github.summary.render_summary`), the gate and what was published, appended
to the file ``--summary`` names, else to ``$GITHUB_STEP_SUMMARY`` (GitHub Actions shows it on
the run's page); no summary is written when neither is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from regbot.bot.gate import GateDecision
from regbot.bot.github.markdown_safe import inline
from regbot.bot.github.summary import render_summary
from regbot.bot.sources.baseline import missing_names
from regbot.errors import InputError
from regbot.report.model import Report

__all__ = ["STEP_SUMMARY_ENV", "append_job_summary", "job_summary", "summary_path"]

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def summary_path(
    explicit: str | Path | None, environ: Mapping[str, str] = os.environ
) -> Path | None:
    """Where the job summary goes: ``explicit`` (``--summary``), else ``$GITHUB_STEP_SUMMARY``
    when set and not blank, else None."""
    if explicit is not None:
        return Path(explicit)
    from_env = environ.get(STEP_SUMMARY_ENV, "").strip()
    return Path(from_env) if from_env else None


def job_summary(report: Report, decision: GateDecision) -> str:
    """The job summary: the report's missing baselines, funnel and regressions
    (``render_summary``), the gate's state, title and policy (its full summary is the check
    run's), and what was published."""
    text = render_summary(report, missing=missing_names(report.missing_baseline or ()))
    text += f"\n### Gate: {decision.state}\n\n**{inline(decision.title, 300)}**\n\n"
    text += f"{decision.policy}\n"
    if decision.failing:
        text += f"\nFailing: {', '.join(f'`{rid}`' for rid in decision.failing[:50])}\n"
    comments = report.comments or ()
    if comments:
        text += "\n### PR comments\n\n" + "".join(
            f"- #{c.pull_request}: {c.outcome} ({c.url})\n" for c in comments
        )
    skipped = report.comments_skipped or ()
    if skipped:
        text += f"\n{len(skipped)} comment(s) not posted; see `comments_skipped` in the report.\n"
    error = report.publishing.error if report.publishing is not None else None
    if error:
        text += f"\n**Publishing failed**: {inline(str(error), 500)}\n"
    return text


def append_job_summary(path: Path, report: Report, decision: GateDecision) -> None:
    """Appends :func:`job_summary` to ``path``; an unwritable file is bad input (exit 2)."""
    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(job_summary(report, decision))
    except OSError as error:
        raise InputError(str(path), "a writable job summary file", error.strerror) from None
