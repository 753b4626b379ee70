"""The whole `regbot run --dry-run`, in-process and silenced, and where a series went in its
report (reported, removed by a stage, or merged into another regression) — for the attribution
benchmark's ``--full`` and ``--real`` modes."""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Callable
from pathlib import Path


def run_quietly(
    arguments: Callable[[Path], list[str]], folder: Path, label: str
) -> tuple[dict, float]:
    """`regbot run` in-process with its output silenced: its report and wall seconds."""
    from regbot.bot.cli import main

    output = folder / "report.json"
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(arguments(output))
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{label}: regbot run exited {code}")
    return json.loads(output.read_text()), seconds


def series_fate(report: dict, series: str, depth: int = 0) -> str:
    """Where a series went in a run's report: REPORTED, "no change point", the stage that
    removed it, or the dedup stage that merged it into another regression (and that one's
    fate, when it was not reported either)."""
    if any(entry["series"] == series for entry in report["regressions"]):
        return "REPORTED"
    entry = next((e for e in report.get("filtered", []) if e["series"] == series), None)
    if entry is None:
        return "no change point"
    for stage, verdict in entry["verdicts"].items():
        if not isinstance(verdict, dict) or verdict.get("passed") is not False:
            continue
        reason = str(verdict.get("reason", ""))
        if not reason.startswith("duplicate of ") or depth > 3:
            return stage
        into = reason.removeprefix("duplicate of ").strip()
        fate = series_fate(report, into, depth + 1)
        if fate == "REPORTED":
            return f"{stage} into a reported regression"
        return f"{stage} into {into.split(' (')[0]}, itself {fate}"
    return "filtered"


def representative_of(report: dict, series: str, depth: int = 0) -> str | None:
    """The reported regression that stands for ``series``: itself, or the one a dedup stage
    merged it into (following the chain); None when it was not reported or merged."""
    if any(entry["series"] == series for entry in report["regressions"]):
        return series
    entry = next((e for e in report.get("filtered", []) if e["series"] == series), None)
    if entry is None or depth > 3:
        return None
    for verdict in entry["verdicts"].values():
        if isinstance(verdict, dict) and verdict.get("passed") is False:
            reason = str(verdict.get("reason", ""))
            if reason.startswith("duplicate of "):
                return representative_of(
                    report, reason.removeprefix("duplicate of ").strip(), depth + 1
                )
            return None
    return None


def short_name(series: str) -> str:
    return series.split(" (")[0].removeprefix("gcpu:").rsplit("/", 1)[-1]
