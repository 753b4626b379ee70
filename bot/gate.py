"""The gate: one pure decision from a run's report and the config's gate policy (issue 6 §3).

Decision table, first match wins:

1. ``failure`` when a reported regression fails the policy: ``fail_on: any`` (the default) —
   any regression with ``|delta| >= min_delta``; ``fail_on: high-confidence`` — such a
   regression whose attribution confidence is ``high``; ``fail_on: never`` — none. A reported
   regression has already passed the detector's test, its filters and the workload's threshold,
   so by default its size and evidence decide; attribution's confidence decides whom the
   comment names, and a tie between two suspects (confidence ``low``, both named) must not let
   a lasting regression through. A regression an earlier run already reported (its
   ``same_regression`` verdict: ``seen_before``) whose change lies before this run's analysis
   window never fails this run's gate: it is an earlier deploy's, and that deploy's gate judged
   it (a re-run of the same deploy still fails on it). ``delta`` is in the series'
   own unit (a gCPU share for gCPU series); a regression whose delta is unknown (null in the
   report) is counted only when ``min_delta`` is 0, since its size cannot be compared.
2. A missing baseline (:mod:`regbot.bot.sources.baseline`) applies ``on_missing_baseline``:
   ``neutral`` (the default) → ``neutral`` with a warning, ``fail`` → ``failure``, ``pass`` →
   ``success`` — but the title and summary still say that the baseline was missing: a missing
   baseline is never a silent pass.
3. ``success`` otherwise.

Feedback does not change the gate. A 👎 or ``/regbot false-positive`` reply can come from anyone
who can comment on the pull request, without any check of their rights on the repository, so
letting it unblock a required check would hand the gate to every commenter; regressions with
such feedback are named in the summary instead (and are not commented on again).

The title is plain text made of regbot's own words and numbers only (it becomes a check run
title or a commit status description, cut to 140 characters there); the summary is markdown with
every piece of report text escaped through :mod:`regbot.bot.github.markdown_safe`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from regbot.bot.config import GateSettings
from regbot.bot.github.markdown_safe import code_span, inline
from regbot.bot.views.numbers import format_delta, format_number, format_relative, format_value
from regbot.detection.stages import Stage
from regbot.report.model import GateSection, MissingBaseline, RegressionEntry, Report

GateState = Literal["success", "failure", "neutral"]  # a check run's conclusion, a status's state

__all__ = ["GateDecision", "GateState", "decide_gate", "fails_policy", "MAX_LISTED"]

MAX_LISTED = 50  # rows per section of the summary; a check run summary holds at most 65,535


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The gate's state, its title (plain text) and summary (markdown); ``failing`` lists the
    ids of the regressions that fail the policy, ``missing_baseline`` how many sources or series
    had no baseline, ``warning`` a one-line warning for stderr (None when there is none),
    ``policy`` the policy in one markdown line (also the summary's second paragraph)."""

    state: GateState
    title: str
    summary: str
    failing: tuple[str, ...]
    missing_baseline: int
    warning: str | None
    policy: str = ""

    def section(self, name: str, enforced: bool) -> GateSection:
        """The report's ``gate`` for this decision (not yet published)."""
        return GateSection(
            name=name,
            state=self.state,
            title=self.title,
            summary=self.summary,
            failing=self.failing,
            missing_baseline=self.missing_baseline,
            enforced=enforced,
        )


_MISSING_BASELINE_STATE: dict[str, GateState] = {
    "neutral": "neutral",
    "fail": "failure",
    "pass": "success",
}


def fails_policy(
    view: RegressionEntry, settings: GateSettings, analysis_start_s: float | None = None
) -> bool:
    """Whether one reported regression fails the gate policy (rule 1 of the module docstring);
    ``analysis_start_s``: where this run's analysis window starts (the deploy)."""
    if settings.fail_on == "never" or earlier_deploys(view, analysis_start_s):
        return False
    if view.delta is None:
        big_enough = settings.min_delta == 0
    else:
        big_enough = abs(view.delta) >= settings.min_delta
    if not big_enough:
        return False
    return settings.fail_on == "any" or view.confidence == "high"


def earlier_deploys(view: RegressionEntry, analysis_start_s: float | None) -> bool:
    """Whether an earlier run already reported this regression (its ``same_regression`` verdict
    says so) with its change before this run's analysis window: it belongs to an earlier
    deploy, which that deploy's gate judged. A re-run of the same deploy still judges it."""
    verdict = view.verdict(Stage.SAME_REGRESSION)
    seen = verdict is not None and verdict.number("seen_before") is True
    return seen and analysis_start_s is not None and view.change_time_s < analysis_start_s


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _policy_line(settings: GateSettings) -> str:
    fails = {
        "any": "any reported regression",
        "high-confidence": "a reported regression attributed with high confidence",
        "never": "nothing (the gate never fails on regressions)",
    }[settings.fail_on]
    size = (
        f" whose |delta| is at least {format_number(settings.min_delta)}"
        if settings.min_delta > 0 and settings.fail_on != "never"
        else ""
    )
    return (
        f"**Policy**: fail on {fails}{size}; a missing baseline makes the gate "
        f"**{settings.on_missing_baseline}**."
    )


def _regression_line(view: RegressionEntry) -> str:
    change = (
        f"{format_value(view, view.before)} → {format_value(view, view.after)} "
        f"({format_delta(view, view.delta)}, {format_relative(view.relative_delta)})"
    )
    line = f"- {code_span(view.series, 120)}: {change}, confidence **{view.confidence}**"
    if view.candidates:
        top = view.candidates[0]
        pr = f" #{top.pull_request}" if top.pull_request is not None else ""
        line += f"; top suspect {code_span(top.commit[:7])}{pr} {inline(top.title, 80)}"
    line += f" — `regbot explain {view.id}`" if _plain_id(view.id) else ""
    if view.feedback == "false-positive":
        users = view.feedback_from or ()
        line += f" (marked false positive by {_plural(len(users), 'user')})"
    return line


def _plain_id(text: str) -> bool:
    return text.replace("-", "").replace("_", "").isalnum()


def _section(title: str, lines: Sequence[str]) -> list[str]:
    shown = list(lines[:MAX_LISTED])
    if len(lines) > MAX_LISTED:
        shown.append(f"- … and {len(lines) - MAX_LISTED:,} more in the JSON report")
    return [f"### {title}", "", *shown, ""]


def _missing_line(item: MissingBaseline) -> str:
    return f"- {item.scope} {code_span(item.name, 120)}: {inline(item.reason, 200)}"


def decide_gate(report: Report, settings: GateSettings) -> GateDecision:
    """The gate for one run's report (SPEC §4 plus ``missing_baseline``; entries may carry
    ``feedback``), under ``settings`` (module docstring)."""
    views = report.regressions
    start = report.window.analysis_start_s
    failing = [v for v in views if fails_policy(v, settings, start)]
    others = [v for v in views if not fails_policy(v, settings, start)]
    missing = report.missing_baseline or ()
    n_missing = len(missing)
    missing_text = (
        f"missing baseline for {_plural(n_missing, 'series or source', 'series or sources')}"
    )
    warning = None
    if failing:
        state: GateState = "failure"
        title = f"{_plural(len(failing), 'performance regression')} fail the gate"
        if len(failing) == 1:
            title = "1 performance regression fails the gate"
        if n_missing:
            title += f"; {missing_text}"
    elif n_missing:
        state = _MISSING_BASELINE_STATE[settings.on_missing_baseline]
        title = {
            "neutral": f"Not judged: {missing_text}",
            "fail": f"Failed: {missing_text}",
            "pass": f"Passed by policy despite a {missing_text}",
        }[settings.on_missing_baseline]
    else:
        state = "success"
        title = (
            "No performance regressions"
            if not views
            else f"{_plural(len(views), 'regression')} reported, none fails the gate"
        )
    if n_missing:
        names = ", ".join(m.name for m in missing[:5])
        more = f" and {n_missing - 5} more" if n_missing > 5 else ""
        warning = (
            f"{missing_text} ({names}{more}): changes there were not judged; "
            f"gate {state} (gate.on_missing_baseline: {settings.on_missing_baseline})"
        )
    policy = _policy_line(settings)
    summary = [f"**{inline(title, 300)}**", "", policy, ""]
    if n_missing:
        summary += _section(
            f"⚠️ Missing baseline ({n_missing})",
            [
                "Too little history before the deploy to judge a change here:",
                "",
                *[_missing_line(m) for m in missing],
            ],
        )
    if failing:
        summary += _section(
            f"Regressions that fail the gate ({len(failing)})",
            [_regression_line(v) for v in failing],
        )
    if others:
        summary += _section(
            f"Other reported regressions ({len(others)})",
            [_regression_line(v) for v in others],
        )
    flagged = sum(1 for v in views if v.feedback == "false-positive")
    if flagged:
        summary += [
            f"{_plural(flagged, 'regression')} marked false positive by developers; "
            "feedback is recorded but does not change the gate.",
            "",
        ]
    return GateDecision(
        state=state,
        title=title,
        summary="\n".join(summary).rstrip() + "\n",
        failing=tuple(v.id for v in failing),
        missing_baseline=n_missing,
        warning=warning,
        policy=policy,
    )
