"""The comment's "why regbot believes it": one markdown line per filter a regression passed,
with the numbers that decided it, in the stage registry's order (:class:`regbot.detection.stages.Stage`).

Each line declares the verdict numbers it reads (:data:`EVIDENCE`); reading an undeclared one
is an error, and a test checks every declared key against the verdicts the stages really write,
so a renamed number fails a test instead of quietly rendering "passed". A stored verdict that
lacks a number (an older report) falls back to the stage's reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from regbot.bot.github.chart import format_duration
from regbot.bot.github.markdown_safe import code_span, inline
from regbot.bot.views.numbers import format_delta, format_percent, format_share
from regbot.detection.stages import Stage
from regbot.report.model import RegressionEntry, VerdictEntry
from regbot.report.plain import JSONValue, finite_number

__all__ = ["EVIDENCE", "MAX_EVIDENCE_LINES", "evidence_lines"]

MAX_EVIDENCE_LINES = 20
REASON_CHARS = 300


class _Numbers:
    """A verdict's numbers as one evidence line may read them: only its declared keys."""

    def __init__(self, verdict: VerdictEntry, declared: frozenset[str]) -> None:
        self._verdict = verdict
        self._declared = declared

    @property
    def reason(self) -> str:
        reason = self._verdict.reason
        return inline(reason, REASON_CHARS) if reason else "passed"

    def get(self, key: str) -> JSONValue:
        if key not in self._declared:
            raise KeyError(f"evidence line reads undeclared verdict number {key!r}")
        return self._verdict.numbers.get(key)

    def num(self, key: str) -> float | None:
        return finite_number(self.get(key))


Render = Callable[[_Numbers, RegressionEntry], str]


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """How one stage's passing verdict is written: the numbers it reads, and the line."""

    keys: frozenset[str]
    render: Render


def _went_away(verdict: _Numbers, view: RegressionEntry) -> str:
    facts = []
    share, n_post = verdict.num("post_invalid_share"), verdict.num("n_post")
    if share is not None and verdict.get("new_pattern") is True:
        of = f" of the {n_post:,.0f}" if n_post is not None else ""
        facts.append(
            f"{format_share(share)}{of} points after the change sit at levels not seen before it"
        )
    last = verdict.num("gone_away_points")
    if verdict.get("regression_gone_away") is False and last is not None:
        facts.append(f"the last {last:,.0f} points have not returned to the baseline")
    text = "; ".join(facts) if facts else verdict.reason
    return f"**Lasting, not a blip** (went-away check): {text}."


def _seasonality(verdict: _Numbers, view: RegressionEntry) -> str:
    period = verdict.num("period_s")
    if period is None:
        tried = verdict.get("periods_tried_s")
        cycles = (
            " or ".join(format_duration(p) for p in tried if isinstance(p, (int, float)))
            if isinstance(tried, list)
            else ""
        )
        text = f"no {cycles + ' ' if cycles else ''}cycle explains it"
    else:
        zs = [verdict.num("z_analysis"), verdict.num("z_extended")]
        z = max((v for v in zs if v is not None), default=None)
        threshold = verdict.num("threshold")
        text = f"still there after removing the {format_duration(period)} cycle"
        if z is not None:
            text += f" (z = {z:.1f}" + (f" ≥ {threshold:g})" if threshold is not None else ")")
    return f"**Not seasonal** (seasonality check): {text}."


def _threshold(verdict: _Numbers, view: RegressionEntry) -> str:
    measured, threshold = verdict.num("measured"), verdict.num("threshold")
    if measured is None or threshold is None:
        return f"**Big enough** (threshold): {verdict.reason}."
    if verdict.get("mode") == "relative":
        text = f"relative change {format_percent(measured)} ≥ the {format_percent(threshold)} threshold"
    else:
        shown = format_delta(view, measured).lstrip("+")
        limit = format_delta(view, threshold).lstrip("+")
        text = f"absolute change {shown} ≥ the {limit} threshold"
    return f"**Big enough** (threshold): {text}."


def _cost_shift(verdict: _Numbers, view: RegressionEntry) -> str:
    names = verdict.get("domain_names")
    checked = len(names) if isinstance(names, list) else 0
    if checked:
        text = f"{checked} cost domain{'s' if checked != 1 else ''} checked, none moved this cost"
        text += " from elsewhere"
    else:
        text = verdict.reason
    return f"**Not a cost shift** (cost-shift check): {text}."


def _same_regression(verdict: _Numbers, view: RegressionEntry) -> str:
    seen = verdict.get("regression_id")
    if verdict.get("seen_before") is True and isinstance(seen, str):
        return f"**Seen before** as {code_span(seen, 80)}: the regression is still there."
    return "**New**: not reported before for this series."


def _som_dedup(verdict: _Numbers, view: RegressionEntry) -> str:
    members = verdict.get("members")
    if isinstance(members, list) and len(members) > 1:
        return (
            f"**Representative** (SOM dedup): stands for {len(members)} series that regressed "
            "together."
        )
    return f"**Representative** (SOM dedup): {verdict.reason}."


def _long_term(verdict: _Numbers, view: RegressionEntry) -> str:
    text = verdict.reason
    z = verdict.num("z")
    if z is not None:
        text += f" (z = {z:.1f})"
    return f"**Long-term rise** (long-term detector): {text}."


def _generic(label: str) -> Render:
    def line(verdict: _Numbers, view: RegressionEntry) -> str:
        return f"**{label}**: {verdict.reason}."

    return line


def _line(keys: str, render: Render) -> EvidenceLine:
    return EvidenceLine(frozenset(keys.split()), render)


EVIDENCE: dict[Stage, EvidenceLine] = {
    Stage.LONG_TERM: _line("z", _long_term),
    Stage.WENT_AWAY: _line(
        "post_invalid_share n_post new_pattern gone_away_points regression_gone_away", _went_away
    ),
    Stage.SEASONALITY: _line(
        "period_s periods_tried_s z_analysis z_extended threshold", _seasonality
    ),
    Stage.THRESHOLD: _line("measured threshold mode", _threshold),
    Stage.SAME_REGRESSION: _line("regression_id seen_before", _same_regression),
    Stage.SOM_DEDUP: _line("members", _som_dedup),
    Stage.COST_SHIFT: _line("domain_names", _cost_shift),
    Stage.STACK_DEDUP: _line("", _generic("Root of its stack (stack dedup)")),
}
"""The stages with their own evidence line, in the order the lines are written."""
_GROUP_STAGES = frozenset({Stage.PAIRWISE_DEDUP})


def evidence_lines(view: RegressionEntry) -> list[str]:
    """One markdown list item per filter the regression passed, known stages in pipeline order
    with their key numbers, then the dedup group with its duplicates, then any other stage with
    its reason (at most :data:`MAX_EVIDENCE_LINES`)."""
    lines = []
    passed = {s: v for s, v in view.verdicts.items() if v.passed}
    for stage, evidence in EVIDENCE.items():
        if stage in passed:
            lines.append(f"- {evidence.render(_Numbers(passed[stage], evidence.keys), view)}")
    n = len(view.duplicates)
    lines.append(
        f"- **Deduplicated**: group {code_span(view.group, 80)} with {n} duplicate"
        f"{'s' if n != 1 else ''} merged into this report."
    )
    for name, verdict in passed.items():
        if name not in EVIDENCE and name not in _GROUP_STAGES and name != "group":
            reason = _Numbers(verdict, frozenset()).reason
            lines.append(f"- **{inline(name, 40)}**: {reason}.")
    return lines[:MAX_EVIDENCE_LINES]
